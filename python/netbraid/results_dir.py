"""Writing one run's results to a directory, with everything needed to
re-run it exactly: the resolved scenario, the command line, the version, the seed."""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

from ._sim import __version__
from .tidy import FLOW_METRICS, SERIES_COLUMNS, links_text, series_rows

FLOW_COLUMNS = ["name", "kind", "src", "dst", *FLOW_METRICS, "links"]
SUBFLOW_COLUMNS = [
    "flow", "name", "src_addr", "dst_addr", "throughput_bps", "goodput_bps", "loss_rate", "retransmits",
    "packets_sent", "packets_lost", "timeouts", "fast_retransmits", "rtt_mean_s", "srtt_s", "cwnd_mean_bytes",
    "cwnd_bytes", "bytes_acked", "share", "links",
]
LINK_COLUMNS = ["name", "from", "to", "rate_bps", "delay_s", "tx_packets", "tx_bytes", "queue_drops", "loss_drops", "utilisation"]


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})


def write_run(out: Path, result: dict[str, Any], resolved: dict[str, Any], scenario_input: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scenario.resolved.json").write_text(json.dumps(resolved, indent=2))
    (out / "scenario.json").write_text(json.dumps(scenario_input, indent=2))
    (out / "command.json").write_text(json.dumps({
        "argv": sys.argv,
        "netbraid_version": __version__,
        "seed": resolved["seed"],
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }, indent=2))
    series = result.get("series")
    (out / "result.json").write_text(json.dumps({k: v for k, v in result.items() if k != "series"}, indent=2))
    _write_csv(out / "flows.csv", FLOW_COLUMNS, [{**f, "links": links_text(f.get("links"))} for f in result["flows"]])
    subflows = [{**sub, "flow": f["name"], "links": links_text(sub.get("links"))}
                for f in result["flows"] for sub in f.get("subflows") or []]
    if subflows:
        _write_csv(out / "subflows.csv", SUBFLOW_COLUMNS, subflows)
    _write_csv(out / "links.csv", LINK_COLUMNS, [{**l} for l in result["links"]])
    if series:
        _write_csv(out / "series_flows.csv", ["time_s", "flow", "subflow", *SERIES_COLUMNS], series_rows(result, {}))
        rows = []
        for ls in series["links"]:
            for i, t in enumerate(series["time_s"]):
                rows.append({"time_s": t, "link": ls["name"], "queue_packets": ls["queue_packets"][i], "queue_bytes": ls["queue_bytes"][i]})
        _write_csv(out / "series_links.csv", ["time_s", "link", "queue_packets", "queue_bytes"], rows)
