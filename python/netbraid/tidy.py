"""Tidy tables from raw run results: one row per run × flow (and per
subflow, where a flow has several)."""

from __future__ import annotations

from typing import Any

FLOW_METRICS = [
    "throughput_bps", "goodput_bps", "loss_rate", "retransmits", "packets_sent", "packets_lost",
    "packets_received", "bytes_delivered", "timeouts", "fast_retransmits", "ecn_reductions", "window_probes",
    "loss_probes", "window_updates", "rtt_mean_s", "rtt_min_s", "srtt_s", "cwnd_mean_bytes", "completion_time_s",
]


def links_text(links: list[str] | None) -> str | None:
    """A flow's link directions as one cell: "src0->r1, r1->src0, …" (None when the backend gives none)."""
    return None if links is None else ", ".join(links)


def flow_rows(result: dict[str, Any], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for one run; `context` (run id, seed, swept values, …) leads each
    row. A subflow row has the flow's name and context, `subflow` set, and
    every metric the subflow has (the flow's own metrics are left empty)."""
    rows = []
    for f in result["flows"]:
        row = dict(context)
        row.update({"flow": f["name"], "kind": f["kind"], "src": f["src"], "dst": f["dst"], "subflow": None})
        row.update({m: f.get(m) for m in FLOW_METRICS})
        row.update({"links": links_text(f.get("links")), "events": result["events"], "wall_s": result["wall_s"]})
        rows.append(row)
        for sub in f.get("subflows") or []:
            srow = {**row, "subflow": sub["name"], "links": None, **{m: None for m in FLOW_METRICS}}
            for k, v in sub.items():
                if k == "name":
                    continue
                if k == "links":
                    v = links_text(v)
                elif isinstance(v, (dict, list)):
                    continue
                srow[k] = v
            if srow.get("bytes_delivered") is None and sub.get("bytes_acked") is not None:
                srow["bytes_delivered"] = sub["bytes_acked"]  # emu: what the kernel counts per subflow
            rows.append(srow)
    return rows


SERIES_COLUMNS = ["throughput_bps", "goodput_bps", "cwnd_bytes", "srtt_s"]


def _series_of(fs: dict[str, Any], times: list[float], flow: str, subflow: str | None,
               context: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**context, "time_s": t, "flow": flow, "subflow": subflow, **{c: fs[c][i] for c in SERIES_COLUMNS}}
            for i, t in enumerate(times)]


def series_rows(result: dict[str, Any], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Long-format time series rows for one run (empty without
    measure.interval): one row per sample × flow, `subflow` empty, then the
    same per subflow of a multi-path flow, `subflow` set."""
    series = result.get("series")
    if not series:
        return []
    rows = []
    for fs in series["flows"]:
        rows += _series_of(fs, series["time_s"], fs["name"], None, context)
        for sub in fs.get("subflows") or []:
            rows += _series_of(sub, series["time_s"], fs["name"], sub["name"], context)
    return rows
