"""`netbraid paper 000` (SCTP-CMT, FreeBSD 9 through GINE) as printed in the
issue, checked against expectations from outside the code: Ethernet's
goodput ceilings computed from header sizes, CMT's 2 × on two equal paths,
a shared limit's rate, and RFC 9260's failure-detection time."""

import json
import subprocess

import pytest

CEILING = {  # 100 Mb/s Ethernet: payload / (IP packet + 38 B of framing)
    "tcp": 100 * 1448 / (1500 + 38),
    "sctp": 100 * 1452 / (1500 + 38),
    "sctp_1k": 100 * 1024 / (1024 + 48 + 38),
}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("p000")
    r = subprocess.run(["netbraid", "paper", "000", "--quick", "--backend", "sim", "--out", str(out), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout, json.loads((out / "results.json").read_text()), out


def test_table_1_is_printed_beside_the_papers_numbers(quick):
    stdout, _, out = quick
    for row, paper in (("TCP", "93.54"), ("SCTP", "91.69"), ("SCTP-CMT", "134.78")):
        assert any(l.startswith(f"│ {row} ") and paper in l for l in stdout.splitlines()), row
    assert (out / "table1.png").exists() and (out / "failover.png").exists()


def test_tcp_and_sctp_reach_their_ethernet_ceilings(quick):
    _, res, _ = quick
    for case in ("no delay", "delay", "one-path delay"):
        assert res["table1"]["TCP"][case]["mean"] == pytest.approx(CEILING["tcp"], rel=0.005)
        assert res["table1"]["SCTP"][case]["mean"] == pytest.approx(CEILING["sctp"], rel=0.005)
        one_kb = res["candidates"]["1 KB messages"]["SCTP"][case]["mean"]
        assert one_kb == pytest.approx(CEILING["sctp_1k"], rel=0.005)


def test_cmt_gets_two_paths_worth_unless_something_shared_limits_it(quick):
    _, res, _ = quick
    c = res["candidates"]
    for case in ("no delay", "delay", "one-path delay"):
        big = c["4 MB buffers"]["SCTP-CMT"][case]["mean"]
        if case == "delay":
            # the buffer no longer limits it, but in this 15 s window one fast
            # retransmission is lost again and waits for T3 (RTO.Min 1 s)
            assert 0.9 * 2 * CEILING["sctp"] < big <= 2 * CEILING["sctp"] * 1.001
            if big < 0.98 * 2 * CEILING["sctp"]:
                assert c["4 MB buffers"]["SCTP-CMT"][case]["timeouts"] >= 1
        else:
            assert big == pytest.approx(2 * CEILING["sctp"], rel=0.02)
        # a 150 Mb/s IP-level limit shared by both paths: 150 × 1452/1500
        assert c["emulator 150 Mb/s"]["SCTP-CMT"][case]["mean"] == pytest.approx(150 * 1452 / 1500, rel=0.01)
    # FreeBSD's 256 KiB buffer less 256 B per chunk holds less than two
    # delayed paths' bandwidth-delay product (2 × 94.4 Mb/s × 11 ms ≈ 260 KB)
    assert res["table1"]["SCTP-CMT"]["delay"]["mean"] < 0.85 * 2 * CEILING["sctp"]


def test_failover_waits_for_six_timeouts(quick):
    _, res, _ = quick
    start, stop = res["failover"]["down_s"]
    s = res["failover"]["series"]["SCTP"]
    resumed = next(t for t, g in zip(s["time_s"], s["paths_mbps"][1]) if t > start and g > 50)
    # RTO.Min 1 s: the 6th consecutive expiry 1 + 2 + … + 32 = 63 s after the
    # timer last started, within a second of the cut
    assert start + 63 <= resumed <= start + 66, resumed
    back = next(t for t, g in zip(s["time_s"], s["paths_mbps"][0]) if t > stop and g > 50)
    assert back <= stop + 30 + 1.5 * 60 + 2  # a heartbeat within HB.interval + 1.5 RTO (RTO ≤ 60 s)


def test_the_emu_scenarios_use_only_what_the_real_stacks_honour():
    from netbraid.papers.p000 import CASES, PAPER, scenario
    from netbraid.resolve import resolve

    for p in PAPER:
        for case in CASES:
            r = resolve(scenario(p, case, backend="emu"), backend="emu")
            assert all(d["framing_bytes"] == 0 for link in r["links"] for d in (link["ab"], link["ba"]))


def test_an_unknown_backend_is_refused_clearly():
    r = subprocess.run(["netbraid", "paper", "000", "--quick", "--backend", "ns3"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    assert "--backend: 'ns3' is not allowed (sim, emu, both)" in r.stderr + r.stdout
