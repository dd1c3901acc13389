"""Paper 002 (split-TCP proxies over a WAN): the command's contract and its
model. Expectations come from window/RTT (a 64 KB socket buffer over the
path's round trip), from the split-TCP model of `protocols.md` §8 (a
window-limited split connection runs at W / max(RTT_i): 1 / max(x, 1 − x)
times the direct rate for a proxy at share x of the round trip) and from
the bottleneck's capacity — not from earlier runs."""

import subprocess

import pytest

import netbraid as nb

from netbraid import simulate
from netbraid.papers import p002

W = 64 * 1024
PAYLOAD = p002.MSS / (p002.MSS + p002.HEADER)


def test_quick_run_prints_figures_9_to_12_with_intervals(tmp_path):
    r = subprocess.run(["netbraid", "paper", "002", "--quick", "--out", str(tmp_path), "-q"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    for title in ("Figure 9 — direct (no proxy)", "Figure 10 — through the two proxies",
                  "Figure 11 — controller between the proxies", "Figure 12 — Okinawa case",
                  "Placement — one proxy along the Okinawa path"):
        assert title in text, title
    assert "±" in r.stdout
    for name in ("tables.md", "results.json", "fig9-10.png", "placement.png"):
        assert (tmp_path / name).exists(), name
    # the paper's directory reads as one set of results: a part per
    # configuration, each run once, and `report` takes it as it is
    res = nb.load(tmp_path)
    parts = {p.parent.name for p in tmp_path.glob("*/manifest.json")}
    assert set(res.flows["part"]) == parts
    assert set(res.summary()["part"]) == parts and (res.summary()["n"] > 0).all()  # every part, every flow
    journal_runs = sum(len((tmp_path / p / "journal.jsonl").read_text().splitlines()) for p in parts)
    assert res.flows["run_id"].nunique() == journal_runs
    rep = subprocess.run(["netbraid", "report", str(tmp_path)], capture_output=True, text=True, timeout=180)
    assert rep.returncode == 0 and (tmp_path / "report" / "report.html").exists(), rep.stderr


@pytest.mark.parametrize("case", list(p002.CASES))
def test_direct_transfer_is_window_limited(case):
    s = p002.scenario(case=case, duration_s=20)
    s.measure.start = "5s"
    g = simulate(s)["flows"][0]["goodput_bps"]
    bound = W * 8 / p002.rtt_s(case)
    # queueing adds to the round trip only when the window exceeds the BDP (not here)
    assert 0.95 * bound < g <= bound * 1.001


def test_the_proxies_lift_the_window_limit():
    s = p002.scenario(case="okinawa", relayed=True, duration_s=30)
    s.tcp.recovery = "sack"
    s.measure.start = "10s"
    f = simulate(s)["flows"][0]
    # end legs: 64 KB over ~0.4 ms is far above the WAN; the middle leg's 4 MB window is not the limit either
    assert f["goodput_bps"] > 3 * W * 8 / p002.rtt_s("okinawa")
    assert f["goodput_bps"] < 70e6 * PAYLOAD
    assert [leg["from"] for leg in f["legs"]] == ["sender", "proxy_a", "proxy_b"]


@pytest.mark.parametrize("position", [2, 5, 8])
def test_placement_gain_follows_the_longest_leg(position):
    direct = simulate(p002.placement_scenario(None, duration_s=20))["flows"][0]["goodput_bps"]
    split = simulate(p002.placement_scenario(position, duration_s=20))["flows"][0]["goodput_bps"]
    x = position / p002.PLACEMENT_HOPS
    assert split / direct == pytest.approx(1 / max(x, 1 - x), rel=0.10)


@pytest.mark.parametrize("args, words", [
    (["--backend", "emu", "--background", "10Mbps"], "emu tables run without cross traffic"),
    (["--background", "fast"], "--background"),
    (["--tcp", "rto_min=1s"], "--tcp: applies to paper 003"),
])
def test_bad_options_are_named(args, words, tmp_path):
    r = subprocess.run(["netbraid", "paper", "002", "--quick", "--out", str(tmp_path), "-q", *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and words in r.stderr, r.stderr
