"""The emu backend on this machine's real stacks (root, namespaces, TUN).

Expectations come from the link's settings (rate, delay, queue limit, loss
probability with its binomial interval), from analytic TCP models (Mathis),
from capacity (two 50 Mb/s paths) and from the system's own state (no
namespace, device or process left) — never from an earlier run."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from scipy import stats

import netbraid as nb
from netbraid.emu import platform

REASON = platform.unavailable_reason()
pytestmark = [pytest.mark.emu, pytest.mark.skipif(REASON is not None, reason=f"emu backend unavailable: {REASON}")]
#: Only the MPTCP tests need the kernel's MPTCP: the others run without it.
MPTCP_REASON = REASON or platform.unavailable_reason(mptcp=True)
needs_mptcp = pytest.mark.skipif(MPTCP_REASON is not None, reason=f"emu MPTCP unavailable: {MPTCP_REASON}")

IP_UDP = 28


def one_link(rate: str, delay: str, *, queue="1000p", loss=None, duration="3s", measure_start="0s",
             jitter="0ms") -> nb.Scenario:
    s = nb.Scenario(name="one-link", duration=duration)
    s.add_host("a").add_host("b")
    s.add_link("a", "b", rate=rate, delay=delay, queue=queue, jitter=jitter,
               ab={"loss": loss} if loss is not None else None)
    s.measure = nb.Measure(start=measure_start)
    return s


def udp_flow(s: nb.Scenario, rate: str, size: int = 1472, stop: str | None = None) -> dict:
    s.add_flow("u", "a", "b", kind="cbr", rate=rate, packet_size=f"{size}B", stop=stop)
    r = nb.simulate(s, backend="emu")
    return r


# ---- netbraid-linkemu accuracy --------------------------------------------------


@pytest.mark.parametrize("mbps", [10, 100, 300])
def test_delivered_rate_matches_the_link_rate(mbps):
    # offered at 115 % of the rate: the queue stays busy, so arrivals are paced by the link alone
    # a deep queue (80 ms at 300 Mb/s) keeps the link backlogged through the sender's scheduling stalls
    s = one_link(f"{mbps}Mbps", "5ms", queue=f"{max(200, round(mbps * 1e6 * 0.08 / 12000))}p", duration="3s")
    r = udp_flow(s, f"{mbps * 1.15}Mbps")
    f = r["flows"][0]
    assert abs(f["arrival_rate_bps"] / (mbps * 1e6) - 1) < 0.02, f["arrival_rate_bps"]
    assert r["links"][0]["queue_drops"] > 0  # it really was overloaded
    # busy all through the window, which opens with the traffic, and never more than the link can carry
    assert r["links"][0]["counted_over"] == "window"
    assert 0.98 < r["links"][0]["utilisation"] <= 1.0, r["links"][0]


def test_queue_delay_is_the_queue_drained_on_emu_as_on_sim():
    # 1000-byte datagrams at twice 10 Mb/s into a 20-packet queue: once it is
    # full (after ~20 packets), each packet admitted waits behind 19 others
    # and part of the one on the serialiser, (Q − 1) · S < wait ≤ Q · S with
    # S = 1028 B at 10 Mb/s; the simulator's link says the same
    ser = 1028 * 8 / 10e6
    emu = udp_flow(one_link("10Mbps", "5ms", queue="20p", duration="3s"), "20Mbps", size=1000)["links"][0]
    assert emu["queue_drops"] > 0
    assert 19 * ser < emu["queue_delay_s"] <= 20 * ser, emu
    s = one_link("10Mbps", "5ms", queue="20p", duration="3s")
    s.add_flow("u", "a", "b", kind="cbr", rate="20Mbps", packet_size="1000B")
    sim = nb.simulate(s)["links"][0]
    assert abs(emu["queue_delay_s"] / sim["queue_delay_s"] - 1) < 0.02, (emu, sim)


def test_one_way_delay_median_and_tail():
    # 20 Mb/s of 1000-byte datagrams at a constant rate on a 100 Mb/s link:
    # no queueing, so the delay is propagation + one serialisation (1028 B at
    # 100 Mb/s = 82 µs). The median must hold on every run. The tail is also
    # the host's: this VM's hypervisor takes its vCPUs away now and then
    # (steal time in /proc/stat, 0.2-0.7 s per 40 s here), and one such
    # pause of tens of ms late-delivers more than 1 % of a 4 s run; so the
    # 99th percentile must hold on one of three runs, which a linkemu that
    # is itself late cannot do. (At 2 Mb/s, 4 ms between packets, linkemu
    # sleeps between packets and wake-ups add 2-2.5 ms to about 1 %:
    # docs/emu.md.)
    expected = 0.010 + 1028 * 8 / 100e6
    tails = []
    for _ in range(3):
        s = one_link("100Mbps", "10ms", duration="4s")
        f = udp_flow(s, "20Mbps", size=1000)["flows"][0]
        assert abs(f["delay_p50_s"] - expected) < 0.2e-3, f["delay_p50_s"]
        assert f["reordered"] == 0
        tails.append(f["delay_p99_s"])
        if tails[-1] - expected < 2e-3:
            break
    assert min(tails) - expected < 2e-3, tails


def test_jitter_spreads_the_delay_on_emu_as_on_sim():
    # a datagram every 8 ms over 10 ms ± 2 ms (linkemu's jitter_ns, the
    # simulator's rule): the least delay near 8 ms, which linkemu's own
    # lateness (never early) cannot produce, the median near 10 ms, and the
    # datagrams in order
    s = one_link("100Mbps", "10ms", jitter="2ms", duration="8s")
    f = udp_flow(s, "1Mbps", size=1000)["flows"][0]
    serialisation = 1028 * 8 / 100e6
    assert 0.008 + serialisation <= f["delay_min_s"] < 0.0086, f["delay_min_s"]
    assert abs(f["delay_p50_s"] - (0.010 + serialisation)) < 0.3e-3, f["delay_p50_s"]
    assert f["reordered"] == 0


def test_loss_within_the_binomial_interval():
    s = one_link("100Mbps", "1ms", loss=0.05, duration="4s")
    f = udp_flow(s, "8Mbps", size=1000)["flows"][0]
    n = f["packets_sent"]
    lo, hi = stats.binom.interval(0.99, n, 0.05)
    assert lo <= f["packets_lost"] <= hi, (f["packets_lost"], n, lo, hi)


def _one_gigabit_runs(want_on_time: bool) -> None:
    """iperf3 TCP (CUBIC) through a 1 Gb/s, 5 ms link with a 1000-packet
    queue, up to three runs, until one keeps the link busy after slow start
    (the IP rate at the receiver, goodput x 1500 / 1448 for full segments
    with timestamps, within 2 % of the link's rate) and, if `want_on_time`,
    linkemu wrote no more than 1 % of the data packets over 1 ms after their
    due time without a warning. Every run that was late must say so: the
    warning is the user's only clue. (The ACKs' direction is not held to
    the 1 %: with iperf3 on the same two cores the machine is saturated.)
    Fails if none of three did it."""
    attempts = []
    for _ in range(3):
        s = one_link("1Gbps", "5ms", duration="5s", measure_start="2s")
        s.add_flow("t", "a", "b", cc="cubic")
        r = nb.simulate(s, backend="emu")
        f, data = r["flows"][0], r["links"][0]
        on_rate = abs(f["goodput_bps"] * 1500 / 1448 / 1e9 - 1) < 0.02
        on_time = data["late_packets"] <= 0.01 * data["tx_packets"]
        warned = any(w.startswith("link a->b") for w in r["warnings"])
        attempts.append((f["goodput_bps"], data["late_packets"], data["tx_packets"], r["warnings"]))
        assert on_time or warned, attempts[-1]
        if on_rate and (not want_on_time or (on_time and not warned)):
            return
    pytest.fail(f"no run of three carried 1 Gb/s{' on time' if want_on_time else ''}: {attempts}")


def test_one_gigabit_link_carries_its_rate():
    _one_gigabit_runs(want_on_time=False)


@pytest.mark.slow
def test_one_gigabit_link_carries_its_rate_on_time():
    """The same, on time: linkemu's 1 Gb/s target (bench/linkemu.py measures
    it with its method; bench/RESULTS.md). Opt-in (-m slow), as the project's
    other timing targets are benchmarks rather than tests: it holds on a quiet
    moment of this shared machine, and on the Intel host of 2026-12-06 it
    failed in four of five tries of the build before (e78a1c2) and, in a
    full test run, found 1.6 to 3.1 % of the packets late by up to 5.4 ms in
    each of three runs (bench/RESULTS.md, the linkemu section)."""
    _one_gigabit_runs(want_on_time=True)


def test_a_link_faster_than_linkemu_can_emulate_is_named_before_the_run(tmp_path):
    from netbraid.emu.fidelity import EmuFidelityWarning

    s = one_link("5Gbps", "1ms", duration="1s")
    s.add_flow("u", "a", "b", kind="cbr", rate="1Mbps")
    with pytest.warns(EmuFidelityWarning) as caught:
        r = nb.simulate(s, backend="emu")
    # both directions are named before the run; a busy machine may add a
    # late-packet warning after it, which is not what this test is about
    named = [w for w in r["warnings"] if "is above what netbraid-linkemu emulates faithfully" in w]
    assert len(named) == 2 and {str(w.message) for w in caught} >= set(r["warnings"]), r["warnings"]
    assert re.match(r"link a->b: rate 5 Gb/s .* \(2 Gb/s per direction", named[0]), r["warnings"]
    path = tmp_path / "fast.toml"
    path.write_text('duration = "1s"\n[[hosts]]\nname = "a"\n[[hosts]]\nname = "b"\n'
                    '[[links]]\na = "a"\nb = "b"\nrate = "5Gbps"\ndelay = "1ms"\n'
                    '[[flows]]\nname = "u"\nkind = "cbr"\nfrom = "a"\nto = "b"\nrate = "1Mbps"\n')
    cli = subprocess.run(["netbraid", "run", str(path), "--backend", "emu"], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert "warning: link b->a: rate 5 Gb/s is above what netbraid-linkemu emulates faithfully" in cli.stderr
    assert "Traceback" not in cli.stderr and "EmuFidelityWarning" not in cli.stderr


def test_queue_limit_is_honoured_exactly():
    # A 5 ms burst at 1 Gb/s into a 1 Mb/s link (12 ms per 1500-byte packet):
    # one packet on the serialiser plus the 20 the queue holds get through.
    s = one_link("1Mbps", "1ms", queue="20p", duration="2s")
    r = udp_flow(s, "1Gbps", stop="5ms")
    f, link = r["flows"][0], r["links"][0]
    assert f["packets_received"] == 21
    assert link["queue_drops"] == f["packets_sent"] - 21


def test_link_counters_cover_the_measurement_window():
    # 125 datagrams/s (1 Mb/s of 1000 B) from 0 to 1.5 s, measured from 1 s
    # to 3 s: the link carried 0.5 s of them, 62.5 packets, in the window —
    # not the ~187 of the whole run (the simulator's definition; the
    # emulator's counters are read at the window's edges).
    s = one_link("10Mbps", "1ms", duration="3s", measure_start="1s")
    r = udp_flow(s, "1Mbps", size=1000, stop="1.5s")
    link = r["links"][0]
    assert link["counted_over"] == "window"
    assert abs(link["tx_packets"] - 62.5) <= 3, link
    assert abs(link["tx_bytes"] - link["tx_packets"] * (1000 + IP_UDP)) < 2 * (1000 + IP_UDP)  # partly sent at the edges
    assert link["utilisation"] == pytest.approx(62.5 * 1028 * 8 / (10e6 * 2.0), rel=0.06)
    assert r["flows"][0]["packets_received"] == pytest.approx(187.5, abs=3)  # the flow itself counts the whole run
    # the same addresses and links as the simulator's for the same scenario
    sim = nb.simulate(s)["flows"][0]
    assert {k: r["flows"][0][k] for k in ("src_addr", "dst_addr", "links", "link_names")} == {
        k: sim[k] for k in ("src_addr", "dst_addr", "links", "link_names")}


# ---- real TCP ---------------------------------------------------------------------


def mathis_bps(mss: int, rtt: float, p: float) -> float:
    return mss * 8 / rtt * math.sqrt(1.5 / p)


@pytest.mark.parametrize("cc,loss", [("reno", 0.01), ("reno", 0.001), ("cubic", 0.01), ("cubic", 0.001)])
def test_linux_tcp_over_a_lossy_path_against_sim(cc, loss, tmp_path):
    out = subprocess.run(
        ["netbraid", "compare", "examples/linux_tcp_loss.toml", "--json", "--set", f"flows.bulk.cc={cc}",
         "--set", f"links.0.ab.loss={loss}", "--set", "duration=10s", "--set", "measure.start=2s"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    row = next(r for r in doc["rows"] if r["flow"] == "bulk" and r["subflow"] is None and r["metric"] == "goodput_bps")
    emu, sim = row["emu"]["mean"], row["sim"]["mean"]
    model = mathis_bps(1448, 0.020, loss)
    # Mathis is a model of Reno-style AIMD; allow a factor 2 either way. It
    # holds for CUBIC here too: at a 20 ms round trip CUBIC's own window
    # (RFC 9438 §5: (C (3 + β) / (4 (1 − β)))^(1/4) RTT^(3/4) / p^(3/4), 10
    # and 2 segments at these losses) is below the Reno-friendly one (38.7
    # and 12.2), whose AIMD (α = 3 (1 − β) / (1 + β), β = 0.7) averages
    # sqrt(α (1 + β) / (2 (1 − β) p)) = sqrt(1.5 / p): Reno's.
    assert model / 2 < emu < model * 2, (emu, model)
    assert model / 2 < sim < model * 2, (sim, model)
    assert row["rel_diff"] == pytest.approx((sim - emu) / emu)
    assert row["verdict"] is None and row["emu"]["n"] == 1  # one run each: no interval, no verdict


def test_the_kernel_window_from_so_rcvbuf_and_the_simulator_agree():
    # iperf3 -w 64KB over a 100 ms path: Linux 6.6+ doubles SO_RCVBUF and
    # advertises the doubled buffer times its scaling ratio (payload per
    # byte of memory, below 1), so the window is more than asked and less
    # than twice that; the simulator's profile models it (linux_buffers)
    out = subprocess.run(
        ["netbraid", "compare", "examples/window_limited.toml", "--json", "--set", "duration=10s",
         "--set", "measure.start=3s"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    row = next(r for r in doc["rows"] if r["flow"] == "iperf" and r["subflow"] is None and r["metric"] == "goodput_bps")
    emu, sim = row["emu"]["mean"], row["sim"]["mean"]
    asked = 65536 * 8 / 0.1
    assert 1.1 * asked < emu < 2 * asked, (emu, asked)
    assert sim == pytest.approx(emu, rel=0.10)


def test_compare_with_replications_gives_intervals_on_both_sides(tmp_path):
    # 3 runs per backend of one TCP flow at 1 % loss: every metric of the
    # flow has n = 3 and an interval on both sides, and a verdict that
    # follows from the Welch interval of the difference; the link direction
    # shows the random-loss drops both backends counted in the window,
    # about 1 % of the data packets (binomial, 99.9 %).
    out = subprocess.run(
        ["netbraid", "compare", "examples/linux_tcp_loss.toml", "--reps", "3", "--json", "--out", str(tmp_path / "c"),
         "--set", "links.0.ab.loss=0.01", "--set", "duration=4s", "--set", "measure.start=1s"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["reps"] == 3 and doc["seeds"] == [1, 2, 3]
    flow = {r["metric"]: r for r in doc["rows"] if r["flow"] == "bulk" and r["subflow"] is None}
    for m in ("goodput_bps", "retx_rate", "srtt_mean_s"):
        r = flow[m]
        for side in ("sim", "emu"):
            assert r[side]["n"] == 3 and r[side]["ci95_low"] <= r[side]["mean"] <= r[side]["ci95_high"], (m, r)
        low, high = r["diff_ci95"]
        assert r["verdict"] == ("consistent" if low <= 0 <= high else "differs")
    assert flow["retx_rate"]["emu"]["ci95_low"] >= 0  # a rate's interval stays at or above 0
    drops = {r["metric"]: r for r in doc["links"] if r["link"] == "client->server"}["loss_drops"]
    for side in ("sim", "emu"):
        assert drops[side]["n"] == 3 and drops[side]["mean"] > 0
    for side in ("sim", "emu"):  # both sides are results directories nb.load reads
        res = nb.load(tmp_path / "c" / side)
        assert len(res.flows) == 3 and len(res.links) == 3 * 2
        data = res.links[res.links["link"] == "client->server"]
        offered = int((data["tx_packets"] + data["loss_drops"]).sum())  # ACKs go the other way
        lo, hi = stats.binom.interval(0.999, offered, 0.01)
        assert lo <= data["loss_drops"].sum() <= hi, (side, offered, data["loss_drops"].tolist())
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["rows"] == doc["rows"]


def test_kernel_state_over_the_measurement_window():
    """TCP_INFO read every 0.1 s: over a 50 Mb/s link with 1 % loss on the
    data direction, the kernel's retransmissions in the window are about the
    network's loss (binomial bounds on the segments it sent, spurious ones
    allowed on top), its smoothed RTT is at least the 20 ms round trip, the
    data it put on the wire is at least the goodput and at most what the
    link carries, and BBR's pacing and delivery rates are near the link's
    rate (BBR paces at its estimate of the bottleneck, ±25 % over gain phases)."""
    s = one_link("50Mbps", "10ms", queue="100p", loss=0.01, duration="8s", measure_start="2s")
    s.add_flow("t", "a", "b", cc="bbr")
    f = nb.simulate(s, backend="emu")["flows"][0]
    segments = f["throughput_bps"] / 8 * 6 / 1500  # segments sent in the 6 s window
    lo, _ = stats.binom.interval(0.999, int(segments), 0.01)
    assert lo <= f["retransmits"] <= 3 * 0.01 * segments, (f["retransmits"], segments)
    assert 0.020 <= f["rtt_mean_s"] < 0.100 and 0.020 <= f["srtt_s"] < 0.100
    assert f["goodput_bps"] <= f["throughput_bps"] <= 50e6 * 1.02
    assert 10 * 1448 <= f["cwnd_mean_bytes"]
    assert 0.75 * 50e6 * 1448 / 1500 <= f["pacing_rate_bps"] <= 1.25 * 50e6
    assert 0.5 * 50e6 * 1448 / 1500 <= f["delivery_rate_bps"] <= 1.02 * 50e6


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["cubic:20:0.001:1", "bbr:20:0.01:1", "reno:5:0:0.5"])
def test_fidelity_cell_within_twenty_percent(cell, tmp_path):
    """Three cells of bench/fidelity.py's grid (opt-in: -m slow): the
    simulator's Linux profile within ±20 % of this kernel's mean goodput
    over 3 replications of 20 s (issue 16's bound for every cell)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import fidelity

    rows = fidelity.run([cell], reps=3, duration_s=20.0, out=tmp_path / "f.csv", emu=True)
    (entry,) = fidelity.summarize(rows, [cell])
    assert abs(entry["gap"]) <= 0.20, entry


def test_hosts_default_to_a_controller_that_does_not_pace(monkeypatch):
    """Linux never clears the pacing flag BBR's start sets on a socket, and
    iperf3 switches each socket from the namespace's default controller to
    the flow's: with BBR as the default (this machine's), a CUBIC flow ran
    paced and its HyStart waited twice as long (bpftrace: sk_pacing_status
    1, slow start to ~490 segments instead of ~250; docs/emu.md). Each host
    namespace must default to a controller that does not pace."""
    from netbraid.emu import topology

    seen = {}
    build = topology.Topology.build

    def build_and_read(self, *a, **k):
        build(self, *a, **k)
        for ns in self.ns[:2]:  # the two hosts
            out = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", "net.ipv4.tcp_congestion_control"],
                                 capture_output=True, text=True, check=True)
            seen[ns] = out.stdout.strip()

    monkeypatch.setattr(topology.Topology, "build", build_and_read)
    s = one_link("50Mbps", "10ms", duration="1s")
    s.add_flow("t", "a", "b", cc="cubic")
    nb.simulate(s, backend="emu")
    assert len(seen) == 2 and all(cc in ("reno", "cubic") for cc in seen.values()), seen


def test_unknown_congestion_control_lists_what_the_kernel_has():
    out = subprocess.run(["netbraid", "run", "examples/linux_tcp_loss.toml", "--backend", "emu",
                          "--set", "flows.bulk.cc=vegas"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "flows (bulk).cc" in out.stderr and "'vegas'" in out.stderr
    for cc in platform.available_congestion_controls():
        assert cc in out.stderr


# ---- real MPTCP ----------------------------------------------------------------------


def mptcp_run(*sets: str) -> dict:
    cmd = ["netbraid", "run", "examples/mptcp_two_paths.toml", "--backend", "emu", "--json", "--set", "duration=8s"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["flows"][0]


@needs_mptcp
def test_mptcp_aggregates_two_paths():
    f = mptcp_run()
    assert f["goodput_bps"] >= 85e6
    assert len(f["subflows"]) == 2
    assert all(s["bytes_acked"] > 0 for s in f["subflows"])
    assert sum(s["goodput_bps"] for s in f["subflows"]) == pytest.approx(f["goodput_bps"], rel=0.1)
    # each subflow has the simulator's name, addresses and links for its path
    sim = nb.simulate("examples/mptcp_two_paths.toml", overrides=["duration=2s", "measure.start=0s"])["flows"][0]
    keys = ("name", "src_addr", "dst_addr", "links", "link_names")
    assert sorted(tuple(str(s[k]) for k in keys) for s in f["subflows"]) == \
        sorted(tuple(str(s[k]) for k in keys) for s in sim["subflows"])
    assert (f["links"], f["link_names"]) == (sim["links"], sim["link_names"])  # the flow: every path's links


@needs_mptcp
def test_mptcp_shares_with_one_lossy_path():
    f = mptcp_run("links.1.loss=0.1")
    subs = {s["src_iface"]: s for s in f["subflows"]}
    assert set(subs) == {0, 2}
    assert sum(s["share"] for s in subs.values()) == pytest.approx(1.0)
    assert subs[2]["share"] < subs[0]["share"]  # the lossy path carries less
    # what the kernel did on each subflow, from its own TCP_INFO: the lossy
    # one retransmits more than the clean one; both have an RTT and a window
    assert subs[2]["retransmits"] > subs[0]["retransmits"], subs
    assert all(s["rtt_mean_s"] > 0 and s["cwnd_mean_bytes"] > 0 for s in subs.values()), subs


@needs_mptcp
def test_a_backup_subflow_waits_on_emu_as_on_sim():
    # `backup = [1]`: the kernel's endpoint flag; while the initial subflow
    # works, the backup one carries nothing, as on the simulator
    f = mptcp_run("flows.mptcp.backup=[1]")
    subs = {s["src_iface"]: s for s in f["subflows"]}
    assert subs[2]["share"] < 0.02 and subs[0]["share"] > 0.98, subs
    sim = nb.simulate("examples/mptcp_two_paths.toml", overrides=["flows.mptcp.backup=[1]", "duration=8s"])["flows"][0]
    assert f["goodput_bps"] == pytest.approx(sim["goodput_bps"], rel=0.1)


def subflow_pairs(f: dict) -> list[tuple[str, str, str]]:
    return sorted((s["name"], s["src_addr"], s["dst_addr"]) for s in f["subflows"])


@needs_mptcp
def test_the_kernel_path_manager_makes_the_listed_and_the_full_mesh_subflows():
    # explicit paths (the initial subflow from the second interface) become
    # endpoints; a full mesh, endpoints with `fullmesh` and the server's
    # other address announced: the same subflows, by address, as on the
    # simulator, and the two 50 Mb/s paths full
    for sets in (["flows.mptcp.paths=[{from_iface=1},{from_iface=0}]"], ["flows.mptcp.subflows=fullmesh"]):
        f = mptcp_run(*sets)
        sim = nb.simulate("examples/mptcp_two_paths.toml", overrides=sets + ["duration=3s"])["flows"][0]
        assert subflow_pairs(f) == subflow_pairs(sim), sets
        assert len(f["subflows"]) == (4 if "fullmesh" in sets[0] else 2)
        assert f["goodput_bps"] >= 85e6, sets


# ---- clean-up ----------------------------------------------------------------------------


def leftovers() -> dict:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    procs = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    pat = re.compile(r"\bnb[0-9a-f]{6}")
    return {
        "namespaces": [l for l in ns.splitlines() if pat.search(l)],
        "devices": [l for l in links.splitlines() if pat.search(l)],
        "processes": [l for l in procs.splitlines()
                      if ("iperf3" in l or "netbraid.emu" in l or "linkemu" in l or "sctpgen" in l) and "ps -eo" not in l],
        "records": sorted(os.listdir("/run/netbraid")) if os.path.isdir("/run/netbraid") else [],
        "temporary directories": sorted(str(p) for p in Path(tempfile.gettempdir()).glob("netbraid-nb*")),
    }


@needs_mptcp
def test_nothing_is_left_after_twenty_runs_three_killed():
    scenario = "examples/mptcp_two_paths.toml"
    base = ["netbraid", "run", scenario, "--backend", "emu", "--set", "duration=2s", "--set", "measure.start=0s"]
    kills = {4: signal.SIGINT, 9: signal.SIGTERM, 14: signal.SIGKILL}
    for i in range(20):
        if i in kills:
            p = subprocess.Popen(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(2.5)  # mid-run: the namespaces and traffic exist
            p.send_signal(kills[i])
            code = p.wait(30)
            if kills[i] == signal.SIGKILL:
                time.sleep(0.5)  # children die with their parent
                assert leftovers()["temporary directories"], "a killed run's directory is what cleanup must find"
                out = subprocess.run(["netbraid", "emu", "cleanup"], capture_output=True, text=True)
                assert out.returncode == 0 and "removed" in out.stdout, out.stdout + out.stderr
                assert "directory" in out.stdout
            else:
                assert code == 128 + kills[i], (kills[i], code)  # 130 for Ctrl-C, 143 for SIGTERM
        else:
            out = subprocess.run(base, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
    assert leftovers() == {"namespaces": [], "devices": [], "processes": [], "records": [], "temporary directories": []}


def test_cleanup_leaves_other_namespaces_alone():
    subprocess.run(["ip", "netns", "add", "nbtest-keepme"], check=True)
    try:
        subprocess.run(["netbraid", "emu", "cleanup"], check=True, capture_output=True)
        assert "nbtest-keepme" in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    finally:
        subprocess.run(["ip", "netns", "del", "nbtest-keepme"])
