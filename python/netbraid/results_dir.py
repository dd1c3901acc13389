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

FLOW_COLUMNS = [
    "name", "kind", "src", "dst", "throughput_bps", "goodput_bps", "loss_rate", "retransmits",
    "packets_sent", "packets_lost", "packets_received", "bytes_delivered", "timeouts",
    "fast_retransmits", "rtt_mean_s", "rtt_min_s", "srtt_s", "cwnd_mean_bytes", "completion_time_s",
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
    _write_csv(out / "flows.csv", FLOW_COLUMNS, result["flows"])
    _write_csv(out / "links.csv", LINK_COLUMNS, [{**l} for l in result["links"]])
    if series:
        rows = []
        for fs in series["flows"]:
            for i, t in enumerate(series["time_s"]):
                rows.append({"time_s": t, "flow": fs["name"], "throughput_bps": fs["throughput_bps"][i],
                             "goodput_bps": fs["goodput_bps"][i], "cwnd_bytes": fs["cwnd_bytes"][i], "srtt_s": fs["srtt_s"][i]})
        _write_csv(out / "series_flows.csv", ["time_s", "flow", "throughput_bps", "goodput_bps", "cwnd_bytes", "srtt_s"], rows)
        rows = []
        for ls in series["links"]:
            for i, t in enumerate(series["time_s"]):
                rows.append({"time_s": t, "link": ls["name"], "queue_packets": ls["queue_packets"][i], "queue_bytes": ls["queue_bytes"][i]})
        _write_csv(out / "series_links.csv", ["time_s", "link", "queue_packets", "queue_bytes"], rows)
