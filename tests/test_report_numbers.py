"""Summaries a researcher can trust: every metric counts its own runs (a
UDP flow has goodput but no RTT), and intervals stay within what the
quantity can be (a rate is never negative, never above 100 %)."""

import subprocess
from pathlib import Path

import pandas as pd

from netbraid.stats import mean_ci, summarize

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_an_interval_of_a_loss_rate_never_goes_below_zero():
    df = pd.DataFrame({"flow": ["f"] * 3, "loss_rate": [0.0, 0.0, 0.01], "goodput_bps": [1.0, 2.0, 3.0]})
    raw = mean_ci(df["loss_rate"].tolist())
    assert raw["ci95_low"] < 0  # the symmetric Student-t interval reaches below zero
    row = summarize(df, ["flow"], ["loss_rate", "goodput_bps"]).iloc[0]
    assert row["loss_rate_ci95_low"] == 0.0 and row["loss_rate_ci95_high"] == raw["ci95_high"]
    many = pd.DataFrame({"flow": ["f"] * 3, "loss_rate": [1.0, 1.0, 0.99]})
    assert summarize(many, ["flow"], ["loss_rate"]).iloc[0]["loss_rate_ci95_high"] == 1.0


def test_the_report_shows_udp_flows_with_their_runs(tmp_path):
    out = tmp_path / "r"
    for cmd in (["run", str(EXAMPLES / "tcp_and_cbr.toml"), "--reps", "3", "--out", str(out), "-q",
                 "--set", "duration=6s"],
                ["report", str(out)]):
        r = subprocess.run(["netbraid", *cmd], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    table = pd.read_csv(out / "report" / "summary_flows.csv")
    video = table[table["flow"] == "video"].iloc[0]
    assert video["n"] == 3 and video["goodput_bps_n"] == 3 and video["goodput_bps_mean"] > 0
    assert video["rtt_mean_s_n"] == 0  # UDP has no RTT, and says so in its own column
    md = (out / "report" / "summary.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| video |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "3" and cells[2] not in ("–", "")
