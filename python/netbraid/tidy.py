"""Tidy tables from raw run results: one row per run × flow (and per
subflow, where a flow has several)."""

from __future__ import annotations

from typing import Any

FLOW_METRICS = [
    "throughput_bps", "goodput_bps", "loss_rate", "retransmits", "packets_sent", "packets_lost",
    "packets_received", "bytes_delivered", "timeouts", "fast_retransmits", "ecn_reductions", "window_probes",
    "loss_probes", "dsack_dups", "undos", "window_updates", "duplicates_received", "stack_cpu_s", "rtt_mean_s", "rtt_min_s", "srtt_s", "srtt_mean_s", "cwnd_mean_bytes", "completion_time_s",
]


def links_text(links: list[str] | None) -> str | None:
    """A flow's link directions as one cell: "src0->r1, r1->src0, …" (None when the backend gives none)."""
    return None if links is None else ", ".join(links)


def paths_of(f: dict[str, Any]) -> list[dict[str, Any]]:
    """A flow's per-path results: an MPTCP flow's subflows, or the legs of a
    flow relayed through proxies (these have `from` and `to` nodes)."""
    return (f.get("subflows") or []) + (f.get("legs") or [])


def flow_rows(result: dict[str, Any], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for one run; `context` (run id, seed, swept values, …) leads each
    row. A subflow row has the flow's name and context, `subflow` set, and
    every metric the subflow has (the flow's own metrics are left empty)."""
    rows = []
    for f in result["flows"]:
        row = dict(context)
        row.update({"flow": f["name"], "kind": f["kind"], "src": f["src"], "dst": f["dst"], "subflow": None,
                    "src_addr": f.get("src_addr"), "dst_addr": f.get("dst_addr")})
        row.update({m: f.get(m) for m in FLOW_METRICS})
        row.update({"link_names": links_text(f.get("link_names")), "links": links_text(f.get("links")),
                    "events": result["events"], "wall_s": result["wall_s"], "linkemu_cpu_s": result.get("linkemu_cpu_s")})
        rows.append(row)
        for sub in paths_of(f):
            srow = {**row, "subflow": sub["name"], "links": None, "link_names": None, "src_addr": None, "dst_addr": None,
                    **{m: None for m in FLOW_METRICS}}
            for k, v in sub.items():
                if k == "name":
                    continue
                if k in ("links", "link_names"):
                    v = links_text(v)
                elif isinstance(v, (dict, list)):
                    continue
                srow[k] = v
            if srow.get("bytes_delivered") is None and sub.get("bytes_acked") is not None:
                srow["bytes_delivered"] = sub["bytes_acked"]  # emu: what the kernel counts per subflow
            rows.append(srow)
    return rows


#: Per sample; `relay_buffer_bytes` only on the legs of a relayed flow that
#: leave a proxy (that proxy's relay buffer), empty elsewhere.
SERIES_COLUMNS = ["throughput_bps", "goodput_bps", "cwnd_bytes", "srtt_s", "relay_buffer_bytes"]


def _series_of(fs: dict[str, Any], times: list[float], flow: str, subflow: str | None,
               context: dict[str, Any], relay: list[int] | None = None) -> list[dict[str, Any]]:
    cols = {c: fs[c] for c in SERIES_COLUMNS if c in fs and c != "relay_buffer_bytes"}
    return [{**context, "time_s": t, "flow": flow, "subflow": subflow, **{c: v[i] for c, v in cols.items()},
             "relay_buffer_bytes": relay[i] if relay else None}
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
        relays = fs.get("relay_buffer_bytes") or []
        for k, sub in enumerate(fs.get("subflows") or []):
            # leg k ≥ 1 leaves proxy k − 1
            relay = relays[k - 1] if 0 < k <= len(relays) else None
            rows += _series_of(sub, series["time_s"], fs["name"], sub["name"], context, relay)
    return rows


#: Per run × link direction.
LINK_METRICS = ["rate_bps", "delay_s", "jitter_s", "tx_packets", "tx_bytes", "queue_drops", "loss_drops", "utilisation",
                "queue_delay_s"]


def with_metric_columns(df: "pd.DataFrame", metrics: list[str]) -> "pd.DataFrame":
    """`df` with every metric a column, empty where the runs lack it: results
    written before a metric existed (srtt_mean_s and queue_delay_s came on
    2026-12-06) still make the tables that summaries and reports read."""
    if df.empty:
        return df
    return df.assign(**{m: None for m in metrics if m not in df.columns})


def link_rows(result: dict[str, Any], context: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per link direction of one run; `context` leads each row."""
    return [{**context, "link": l["name"], "link_name": l.get("link_name"), "from": l["from"], "to": l["to"],
             **{m: l.get(m) for m in LINK_METRICS}}
            for l in result["links"]]


def link_series_rows(result: dict[str, Any], context: dict[str, Any]) -> list[dict[str, Any]]:
    """Long-format queue-length rows for one run (empty without
    measure.interval): one row per sample × link direction."""
    series = result.get("series")
    if not series or not series.get("links"):
        return []
    return [{**context, "time_s": t, "link": ls["name"], "queue_packets": ls["queue_packets"][i],
             "queue_bytes": ls["queue_bytes"][i]}
            for ls in series["links"] for i, t in enumerate(series["time_s"])]
