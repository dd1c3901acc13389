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


def test_replications_keep_links_and_load_as_one_results_model(tmp_path):
    """`run --reps 3 --out DIR`, `report DIR` and `nb.load(DIR)` (the
    commands issue 18 names): flows with UDP among them, a row per run and
    link direction, and the queue series; conservation ties the two tables:
    the bottleneck cannot carry more than the flows crossing it received."""
    import netbraid as nb

    out = tmp_path / "reps"
    for cmd in (["run", str(EXAMPLES / "tcp_and_cbr.toml"), "--reps", "3", "--out", str(out), "-q",
                 "--set", "duration=6s", "--set", "measure.interval=0.5s"],
                ["report", str(out)]):
        r = subprocess.run(["netbraid", *cmd], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    res = nb.load(out)
    flows = res.flows[res.flows["subflow"].isna()]
    assert set(flows["kind"]) == {"tcp", "udp"} and flows["run_id"].nunique() == 3
    assert (flows[flows["kind"] == "udp"]["goodput_bps"] > 0).all()
    links = res.links
    assert len(links) == 3 * 2 * 5  # 3 runs x 5 links (2 + 1 + 2 after the groups) x 2 directions
    bottleneck = links[links["link"] == "r1->r2"]
    assert len(bottleneck) == 3 and (bottleneck["utilisation"] > 0.5).all() and (bottleneck["utilisation"] <= 1).all()
    assert set(res.link_series["link"]) >= {"r1->r2"} and res.link_series["run_id"].nunique() == 3
    summary = res.summary()
    video = summary[summary["flow"] == "video"].iloc[0]
    assert video["goodput_bps_n"] == 3 and video["rtt_mean_s_n"] == 0
    assert res.summary("links").set_index("link").loc["r1->r2", "utilisation_n"] == 3
    html = (out / "report" / "report.html").read_text()
    assert "Per link direction" in html and "r1-&gt;r2" in html
    assert (out / "report" / "summary_links.csv").exists() and (out / "links.parquet").exists()
    assert list((out / "report").glob("series_queue_*.png"))


def test_a_single_run_directory_loads_and_reports_like_replications(tmp_path):
    import netbraid as nb

    out = tmp_path / "one"
    for cmd in (["run", str(EXAMPLES / "tcp_and_cbr.toml"), "--out", str(out), "--set", "duration=6s", "-q"],
                ["report", str(out)]):
        r = subprocess.run(["netbraid", *cmd], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    res = nb.load(out)
    assert res.flows["run_id"].nunique() == 1 and set(res.flows["kind"]) == {"tcp", "udp"}
    assert set(res.links["link"]) >= {"r1->r2", "r2->r1"}
    assert "Per link direction" in (out / "report" / "report.html").read_text()


def test_a_sweep_directory_holds_link_rows_and_link_series(tmp_path):
    import netbraid as nb

    out = tmp_path / "sweep"
    r = subprocess.run(["netbraid", "sweep", str(EXAMPLES / "tcp_and_cbr.toml"), "--grid",
                        "links.r1-r2.delay=5ms,20ms", "--out", str(out), "-q", "--set", "duration=7s",
                        "--set", "measure.interval=1s"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = nb.load(out)
    assert res.axes == ["links.r1-r2.delay"]
    assert sorted(res.links["links.r1-r2.delay"].unique()) == ["20ms", "5ms"]
    delays = res.links[res.links["link"] == "r1->r2"].set_index("links.r1-r2.delay")["delay_s"]
    assert delays["5ms"] == 0.005 and delays["20ms"] == 0.020
    assert not res.link_series.empty and (out / "link_series.parquet").exists()


def test_an_interval_sets_its_own_digits():
    # the half-width to one or two significant digits (two when it starts
    # with 1 or 2), the mean to the same decimal place (issue 18's examples)
    from netbraid.stats import interval_text

    def text(mean, half):
        return interval_text({"mean": mean, "ci95_low": mean - half, "ci95_high": mean + half})

    assert text(9.7312, 0.0513) == "9.73 ± 0.05"
    assert text(122.0, 1.4e-14) == "122 ± 0"  # identical runs: no interval, no noise digits
    assert text(250.3, 680.0) == "300 ± 700"
    assert text(0.5, 0.013) == "0.500 ± 0.013"
    assert text(5.0, 1.4) == "5.0 ± 1.4"
    # clipped at zero: no longer symmetric, shown as a range with the same rule
    assert interval_text({"mean": 0.0003, "ci95_low": 0.0, "ci95_high": 0.0009}, 100) == "0.03 (0.00–0.09)"


def test_goodput_never_exceeds_what_arrived_plus_what_the_receiver_could_hold():
    # docs/model.md, "The measurement window": goodput counts bytes read in
    # the window, throughput bytes arriving in it; the difference is at most
    # the receive buffer (data held behind a hole, read when it is filled).
    # A lossy path and a window that opens mid-transfer make it show.
    import netbraid as nb

    rcvbuf = 64 * 1024
    for seed in range(1, 6):
        s = nb.Scenario(name="edge", duration="12s", seed=seed)
        s.add_host("a").add_host("b").add_link("a", "b", rate="20Mbps", delay="20ms", ab={"loss": 0.02})
        s.add_flow("f", "a", "b", window=f"{rcvbuf}B", cc="reno")
        s.measure = nb.Measure(start="3.03s", stop="9.01s")
        f = nb.simulate(s)["flows"][0]
        window = 9.01 - 3.03
        assert f["goodput_bps"] <= f["throughput_bps"] + rcvbuf * 8 / window, (seed, f["goodput_bps"], f["throughput_bps"])
        assert f["goodput_bps"] > 0.5 * f["throughput_bps"]  # and it is not starved: the bound is not vacuous
