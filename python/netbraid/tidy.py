"""Tidy tables from raw run results: one row per run × flow (and per
subflow, where a flow has several)."""

from __future__ import annotations

from typing import Any

FLOW_METRICS = [
    "throughput_bps", "goodput_bps", "loss_rate", "retransmits", "packets_sent", "packets_lost",
    "packets_received", "bytes_delivered", "timeouts", "fast_retransmits", "rtt_mean_s", "rtt_min_s",
    "srtt_s", "cwnd_mean_bytes", "completion_time_s",
]


def flow_rows(result: dict[str, Any], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for one run; `context` (run id, seed, swept values, …) leads each row."""
    rows = []
    for f in result["flows"]:
        row = dict(context)
        row.update({"flow": f["name"], "kind": f["kind"], "src": f["src"], "dst": f["dst"], "subflow": None})
        row.update({m: f.get(m) for m in FLOW_METRICS})
        row.update({"events": result["events"], "wall_s": result["wall_s"]})
        rows.append(row)
        for sub in f.get("subflows") or []:
            srow = {**row, "subflow": sub["name"], **{m: None for m in FLOW_METRICS}}
            srow.update(goodput_bps=sub.get("goodput_bps"), bytes_delivered=sub.get("bytes_acked"))
            rows.append(srow)
    return rows


def series_rows(result: dict[str, Any], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Long-format time series rows for one run (empty without measure.interval)."""
    series = result.get("series")
    if not series:
        return []
    rows = []
    for fs in series["flows"]:
        for i, t in enumerate(series["time_s"]):
            rows.append({**context, "time_s": t, "flow": fs["name"], "throughput_bps": fs["throughput_bps"][i],
                         "goodput_bps": fs["goodput_bps"][i], "cwnd_bytes": fs["cwnd_bytes"][i], "srtt_s": fs["srtt_s"][i]})
    return rows
