"""TCP features the Python side exposes: a slow reader (receive-buffer
back-pressure), controller parameters, TCP_NODELAY, the links a flow used,
and results with subflows in the tidy tables. Expectations come from the
model's definition (the reader sets the pace; RFC 9438's β), not from
earlier runs."""

import csv
import json
import subprocess
from pathlib import Path

import pytest

import netbraid as nb
from conftest import single_path
from netbraid.tidy import flow_rows, series_rows

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def netbraid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["netbraid", *args], capture_output=True, text=True, timeout=120)


def run_json(*args: str) -> dict:
    r = netbraid("run", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---- a slow reader -------------------------------------------------------------


def test_slow_reader_sets_the_pace():
    # The command as the example prints it: a 10 Mb/s path, a reader draining
    # 1 Mb/s. Goodput counts bytes the application read, so it is the reading
    # rate, whatever the path could carry.
    doc = run_json(str(EXAMPLES / "slow_reader.toml"))
    (f,) = doc["flows"]
    assert f["goodput_bps"] == pytest.approx(1e6, rel=0.02)
    # The buffer filled and the window closed: reading had to reopen it.
    assert f["window_updates"] > 0
    assert f["retransmits"] == 0  # back-pressure, not loss, holds the sender


def test_slow_reader_resolves_next_to_bytes():
    s = nb.load_scenario(EXAMPLES / "slow_reader.toml")
    (flow,) = nb.resolve(s)["flows"]
    assert flow["read_rate_bps"] == 1_000_000 and flow["bytes"] is None
    (flow,) = nb.resolve(nb.load_scenario(EXAMPLES / "window_limited.toml"))["flows"]
    assert flow["read_rate_bps"] is None  # default: read as data arrives


def test_read_rate_is_rejected_on_udp_and_on_emu(tmp_path):
    s = nb.load_scenario(EXAMPLES / "slow_reader.toml")
    with pytest.raises(nb.ScenarioError, match=r"flows\[0\]\.read_rate: .*sim only"):
        nb.resolve(s, backend="emu")
    r = netbraid("run", str(EXAMPLES / "slow_reader.toml"), "--backend", "emu")
    assert r.returncode == 2 and "read_rate" in r.stderr and "sim only" in r.stderr, r.stderr
    r = netbraid("run", str(EXAMPLES / "slow_reader.toml"), "--set", "flows.bulk.kind=cbr",
                 "--set", "flows.bulk.rate=1Mbps")
    assert r.returncode == 2, r.stderr
    message = " ".join(r.stderr.split())
    assert "flows[0]" in message and "read_rate: applies only to tcp flows" in message, message


# ---- the links a flow used ---------------------------------------------------------


def test_flow_lists_its_links_by_name():
    doc = run_json(str(EXAMPLES / "dumbbell.toml"), "--set", "duration=5s", "--set", "measure.start=1s")
    bulk0 = next(f for f in doc["flows"] if f["name"] == "bulk0")
    # data one way, ACKs the other
    for name in ("src0->r1", "r1->r2", "r2->dst0", "dst0->r2", "r2->r1", "r1->src0"):
        assert name in bulk0["links"], bulk0["links"]
    assert not any("src1" in l for l in bulk0["links"])
    assert all(name in {l["name"] for l in doc["links"]} for name in bulk0["links"])


def test_parallel_links_have_numbered_names():
    s = nb.Scenario(name="parallel", duration="2s")
    s.add_host("a").add_host("b").add_router("r1", multipath="round_robin").add_router("r2", multipath="round_robin")
    s.add_link("a", "r1", rate="10Mbps", delay="1ms")
    s.add_link("r1", "r2", rate="10Mbps", delay="1ms")
    s.add_link("r1", "r2", rate="10Mbps", delay="1ms")
    s.add_link("r2", "b", rate="10Mbps", delay="1ms")
    s.add_flow("f", "a", "b")
    r = nb.simulate(s)
    names = {l["name"] for l in r["links"]}
    assert {"r1->r2", "r1->r2#2", "r2->r1", "r2->r1#2"} <= names
    # round robin per packet: data and ACKs take both parallel links
    assert {"r1->r2", "r1->r2#2", "r2->r1", "r2->r1#2"} <= set(r["flows"][0]["links"])
    # --pcap names them the same way: channel 4 is the second link's r1->r2
    captures = {c["path"]: c["channel"] for c in nb.resolve(s, pcap=[("r1->r2", "x"), ("r1->r2#2", "y")])["pcap"]}
    assert captures == {"x": 2, "y": 4}


def test_run_table_and_results_directory_carry_links(tmp_path):
    r = netbraid("run", str(EXAMPLES / "dumbbell.toml"), "--set", "duration=5s", "--set", "measure.start=1s",
                 "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "bulk0  src0 <-> r1 <-> r2 <-> dst0" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 100
    with (tmp_path / "flows.csv").open() as f:
        rows = {row["name"]: row for row in csv.DictReader(f)}
    assert "r1->r2" in rows["bulk0"]["links"].split(", ")
    assert rows["bulk0"]["window_updates"] != ""


# ---- controller parameters ----------------------------------------------------------


def first_reduction(**tcp) -> float:
    """cwnd after the first fast retransmit / the flight then (one loss, 10 Mb/s, 50 ms)."""
    s = single_path(rtt_ms=50, rate="10Mbps", data_loss={"model": "list", "indices": [400]}, duration="10s",
                    measure_start="0s", cc="cubic", log_congestion=True, **tcp)
    events = nb.simulate(s)["flows"][0]["congestion_events"]
    e = next(e for e in events if e["kind"] == "fast_retransmit")
    return e["cwnd_after"] / e["flight_bytes"]


def test_cubic_beta_sets_the_reduction():
    # RFC 9438 §4.6: at a congestion event, cwnd = ssthresh = flight × β_cubic.
    assert first_reduction() == pytest.approx(0.7, abs=0.01)
    assert first_reduction(cc_params={"beta": 0.5}) == pytest.approx(0.5, abs=0.01)


def test_cc_params_from_the_command_line(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(single_path_toml())
    base = ["--set", "tcp.cc=cubic", "--set", "tcp.log_congestion=true"]

    def reduction(*extra):
        f = run_json(str(path), *base, *extra)["flows"][0]
        e = next(e for e in f["congestion_events"] if e["kind"] == "fast_retransmit")
        return e["cwnd_after"] / e["flight_bytes"]

    assert reduction() == pytest.approx(0.7, abs=0.01)
    assert reduction("--set", "tcp.cc_params.beta=0.5") == pytest.approx(0.5, abs=0.01)
    assert reduction("--set", "flows.0.cc_params.beta=0.6") == pytest.approx(0.6, abs=0.01)
    # a flow's parameters add to [tcp]'s, key by key
    r = netbraid("resolve", str(path), *base, "--set", "tcp.cc_params.c=0.8", "--set", "flows.f.cc_params.beta=0.6")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["flows"][0]["tcp"]["cc_params"] == {"c": 0.8, "beta": 0.6}


def single_path_toml() -> str:
    return """
name = "one-loss"
duration = "10s"
[[hosts]]
name = "a"
[[hosts]]
name = "b"
[[routers]]
name = "r"
[[links]]
a = "a"
b = "r"
rate = "10Mbps"
delay = "12.5ms"
queue = "10000p"
ab = { loss = { model = "list", indices = [400] } }
[[links]]
a = "r"
b = "b"
rate = "10Mbps"
delay = "12.5ms"
queue = "10000p"
[[flows]]
name = "f"
from = "a"
to = "b"
"""


def test_params_go_with_their_controller():
    # [tcp] parameters are for [tcp]'s controller: a flow that picks another
    # one does not inherit them.
    s = single_path(duration="2s", measure_start="0s")
    s.tcp = nb.TcpOptions(cc="cubic", cc_params={"beta": 0.5})
    s.flows[0].cc = "reno"
    (flow,) = nb.resolve(s)["flows"]
    assert flow["tcp"]["cc"] == "reno" and flow["tcp"]["cc_params"] == {}
    s.flows[0].cc = "cubic"
    assert nb.resolve(s)["flows"][0]["tcp"]["cc_params"] == {"beta": 0.5}


@pytest.mark.parametrize("args,words", [
    (["--set", "flows.f.cc=cubic", "--set", "flows.f.cc_params.gamma=1"],
     ["flows[0].cc_params.gamma", "cubic has no parameter 'gamma'", "allowed: c, beta, fast_convergence, reno_friendly"]),
    (["--set", "tcp.cc=cubic", "--set", "tcp.cc_params.beta=1.5"],
     ["tcp.cc_params.beta", "1.5 is out of range", "0.1 to 0.95"]),
    (["--set", "flows.f.cc_params.beta=0.5"], ["flows[0].cc_params.beta", "reno has no parameter 'beta'", "allowed: none"]),
    (["--set", "tcp.cc=cubic", "--set", "tcp.cc_params.fast_convergence=1"],
     ["tcp.cc_params.fast_convergence", "true or false"]),
    (["--set", "flows.f.cc_params.beta=high"], ["flows[0].cc_params", "beta = 'high'", "a number, or true / false"]),
    (["--set", "tcp.cc=cubic", "--set", "tcp.cc_params.linux_integer=true", "--set", "tcp.cc_params.hz=300"],
     ["tcp.cc_params.hz", "300 jiffies per second do not divide a second", "100, 250 or 1000"]),
    (["--set", "tcp.cc=cubic", "--set", "tcp.cc_params.hz=1000"],
     ["tcp.cc_params.hz", "applies only with linux_integer = true"]),
    (["--set", "tcp.cc=cubic", "--set", "tcp.cc_params.linux_integer=true", "--set", "tcp.cc_params.friendly_ramp=true"],
     ["tcp.cc_params.friendly_ramp", "has no effect with linux_integer = true"]),
])
def test_cc_param_mistakes(tmp_path, args, words):
    path = tmp_path / "s.toml"
    path.write_text(single_path_toml())
    for command in ("run", "validate"):
        r = netbraid(command, str(path), *args)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "panicked" not in r.stderr
        message = " ".join(r.stderr.split())
        for w in words:
            assert w in message, f"{w!r} not in: {message}"


def test_controllers_command_lists_the_simulators_list():
    r = netbraid("controllers", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert [c["name"] for c in listed][:2] == ["reno", "cubic"]
    cubic = next(c for c in listed if c["name"] == "cubic")
    assert {p["name"] for p in cubic["params"]} == {"c", "beta", "fast_convergence", "reno_friendly", "hystart",
                                                   "hystart_low_window", "hystart_ack_delta_ms", "hystart_ack_train",
                                                   "hystart_delay", "target_min_rtt", "alpha_switch", "friendly_ramp",
                                                   "linux_integer", "hz"}
    bbr = next(c for c in listed if c["name"] == "bbr")
    assert {"high_gain", "cwnd_gain", "probe_rtt_ms"} <= {p["name"] for p in bbr["params"]}
    r = netbraid("controllers")
    assert r.returncode == 0 and "beta" in r.stdout and "newreno" in r.stdout


# ---- TCP_NODELAY ---------------------------------------------------------------------


def test_nodelay_reaches_the_simulator_and_leaves_bulk_transfers_alone():
    # (Nagle's hold on short segments is tested on the sender itself, in
    # tcp/tests.rs, against RFC 1122 §4.2.3.4.) An endless bulk transfer
    # only ever sends full segments, which Nagle never holds: the same run
    # with TCP_NODELAY, packet for packet.
    s = single_path(duration="2s", measure_start="0s", nodelay=True)
    (flow,) = nb.resolve(s)["flows"]
    assert flow["tcp"]["nodelay"] is True
    plain = single_path(duration="2s", measure_start="0s")
    assert nb.resolve(plain)["flows"][0]["tcp"]["nodelay"] is False
    with_nodelay, without = nb.simulate(s)["flows"][0], nb.simulate(plain)["flows"][0]
    for key in ("packets_sent", "goodput_bps", "retransmits"):
        assert with_nodelay[key] == without[key], key


# ---- subflows in the tidy tables -----------------------------------------------------

SUB = {"src_addr": "10.0.1.1", "dst_addr": "10.0.3.2", "throughput_bps": 5e6, "goodput_bps": 4.8e6,
       "loss_rate": 0.01, "retransmits": 3, "packets_sent": 400, "packets_lost": 4, "timeouts": 0,
       "fast_retransmits": 2, "rtt_mean_s": 0.05, "srtt_s": 0.05, "cwnd_mean_bytes": 30000.0,
       "cwnd_bytes": 29000, "share": 0.6, "links": ["a->r1", "r1->b"]}


def test_subflow_rows_keep_every_metric():
    result = {"events": 1, "wall_s": 0.1, "flows": [{
        "name": "m", "kind": "mptcp", "src": "a", "dst": "b", "goodput_bps": 8e6, "links": ["a->r1", "r1->b"],
        "subflows": [{"name": "m#0", **SUB}, {"name": "m#1", **SUB, "share": 0.4, "links": ["a->r2", "r2->b"]}],
    }]}
    rows = flow_rows(result, {"run_id": "x"})
    assert [r["subflow"] for r in rows] == [None, "m#0", "m#1"]
    flow, sub0, sub1 = rows
    assert flow["links"] == "a->r1, r1->b"
    for k, v in SUB.items():
        assert sub0[k] == (", ".join(v) if k == "links" else v), k
    assert sub1["links"] == "a->r2, r2->b" and sub0["flow"] == "m" and sub0["run_id"] == "x"


def test_series_rows_include_subflows():
    def fs(name, **extra):
        return {"name": name, "throughput_bps": [1.0, 2.0], "goodput_bps": [1.0, 2.0], "cwnd_bytes": [10, 20],
                "srtt_s": [0.1, 0.1], **extra}

    result = {"series": {"time_s": [1.0, 2.0], "links": [],
                         "flows": [fs("m", subflows=[fs("m#0"), fs("m#1")]), fs("t")]}}
    rows = series_rows(result, {"run_id": "x"})
    assert len(rows) == 8
    assert {(r["flow"], r["subflow"]) for r in rows} == {("m", None), ("m", "m#0"), ("m", "m#1"), ("t", None)}


def test_report_shows_subflows(tmp_path):
    # Three replications of one MPTCP-like flow with two subflows, as a
    # results directory holds them: the report summarises each subflow
    # apart from its flow (mean ± interval of its own metrics), and the
    # flow's totals do not count the subflows' bytes again.
    import pandas as pd

    from netbraid.report import make_report

    rows = []
    for rep, g in enumerate([8e6, 8.2e6, 7.8e6]):
        result = {"events": 1, "wall_s": 0.1, "flows": [{
            "name": "m", "kind": "mptcp", "src": "a", "dst": "b", "goodput_bps": g, "links": ["a->r1"],
            "subflows": [{"name": "m#0", **SUB, "goodput_bps": 0.6 * g}, {"name": "m#1", **SUB, "goodput_bps": 0.4 * g, "share": 0.4}],
        }]}
        rows += flow_rows(result, {"run_id": f"r{rep}", "seed": rep})
    pd.DataFrame(rows).to_parquet(tmp_path / "runs.parquet", index=False)
    out = make_report(tmp_path)
    subs = pd.read_csv(out / "summary_subflows.csv")
    assert list(subs["subflow"]) == ["m#0", "m#1"]
    assert subs["goodput_bps_mean"].tolist() == pytest.approx([0.6 * 8e6, 0.4 * 8e6])
    flows = pd.read_csv(out / "summary_flows.csv")
    assert flows["goodput_bps_mean"].tolist() == pytest.approx([8e6])
    md = (out / "summary.md").read_text()
    html = (out / "report.html").read_text()
    assert "## Per subflow (path)" in md and "m#1" in md and "Per subflow (path)" in html


# ---- HyStart and the linux profile ---------------------------------------------------------


def _slow_start(hystart: bool) -> dict:
    """One CUBIC flow, 100 Mb/s bottleneck, 40 ms RTT, a drop-tail buffer of
    two bandwidth-delay products (BDP = 100 Mb/s × 40 ms = 500 kB = 345
    segments of 1448 B; buffer 700 packets)."""
    from conftest import dumbbell

    s = dumbbell(1, bottleneck="100Mbps", rtt_ms=40, buffer_pkts=700, duration="3s", measure_start="0s",
                 cc="cubic", cc_params={"hystart": hystart}, mss=1448)
    s.measure = nb.Measure(start="0s", interval="10ms")
    return nb.simulate(s)


def test_hystart_leaves_slow_start_before_the_first_loss_on_a_deep_buffer():
    bdp = 100e6 * 0.040 / 8 / 1448  # segments
    # Without HyStart slow start doubles the window until the buffer
    # overflows: cwnd passes BDP + buffer (1045 segments) and packets drop.
    plain = _slow_start(False)
    assert plain["flows"][0]["packets_lost"] > 0
    assert max(plain["series"]["flows"][0]["cwnd_bytes"]) / 1448 > bdp + 700
    # With HyStart it ends when the round's ACK train outlasts half the
    # minimum RTT (cwnd about BDP/2 to BDP) or the RTT rises by 5 ms (40/8):
    # no loss at all, and the window stays below what the path holds.
    hy = _slow_start(True)
    cwnd = [c / 1448 for c in hy["series"]["flows"][0]["cwnd_bytes"]]
    assert hy["flows"][0]["packets_lost"] == 0
    assert bdp / 2 <= max(cwnd) < bdp + 700
    # and the link is still kept busy: most of the 100 Mb/s over the 3 s
    assert hy["flows"][0]["goodput_bps"] > 0.7 * 100e6


def test_linux_profile_fills_what_the_scenario_leaves_unset(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text((EXAMPLES / "dumbbell.toml").read_text())
    s = nb.load_scenario(path, ["tcp.profile=linux"])
    tcp = nb.resolve(s)["flows"][0]["tcp"]
    # dumbbell.toml sets cc, recovery, mss, header_bytes, window and rto_min itself: those stay
    assert (tcp["cc"], tcp["mss"], tcp["rto_min"]) == ("reno", 1448, 1_000_000_000)
    # the rest is Linux's: IW10, 40 ms delayed-ACK timer, RACK-TLP, PRR
    assert tcp["initial_window"] == 10 and tcp["delack_timeout"] == 40_000_000
    assert tcp["rack"] and tcp["tlp"] and tcp["prr"]
    # dumbbell's cc = "newreno" replaced the profile's CUBIC, and its parameters with it
    assert tcp["cc_params"] == {}


def test_sack_compression_is_off_by_default_and_set_on_the_receiving_host_on_emu():
    """The RFCs send every duplicate ACK at once (sack_compression = 0);
    Linux compresses them (net.ipv4.tcp_comp_sack_nr = 44,
    tcp_comp_sack_delay_ns = 1 ms, the kernel's defaults). On emu the
    setting is the receiving host's sysctl (one per namespace), so two flows
    into one host cannot differ."""
    from netbraid.emu.backend import _plan
    from netbraid.emu.topology import forwarding_table

    s = nb.Scenario(name="p", duration="1s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="10Mbps", delay="5ms")
    s.add_flow("rfc", "a", "b")
    s.add_flow("linux", "a", "b", sack_compression=44)
    rfc, linux = (f["tcp"] for f in nb.resolve(s)["flows"])
    assert (rfc["sack_compression"], rfc["sack_compression_delay"]) == (0, 1_000_000)
    assert linux["sack_compression"] == 44
    with pytest.raises(nb.ScenarioError, match="sack_compression"):
        nb.TcpOptions(sack_compression=-1)

    s = nb.Scenario(name="p", duration="1s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="10Mbps", delay="5ms")
    s.add_flow("f", "a", "b", profile="linux", sack_compression=0, sack_compression_delay="500us")
    resolved = nb.resolve(s, backend="emu")
    sysctls = _plan(resolved, forwarding_table(resolved))[1]
    assert sysctls[1]["net.ipv4.tcp_comp_sack_nr"] == 0  # host b receives
    assert sysctls[1]["net.ipv4.tcp_comp_sack_delay_ns"] == 500_000
    s.add_flow("g", "a", "b", profile="linux", sack_compression=10)
    resolved = nb.resolve(s, backend="emu")
    with pytest.raises(nb.ScenarioError, match="needs net.ipv4.tcp_comp_sack_nr=10 for one flow and 0 for another"):
        _plan(resolved, forwarding_table(resolved))


def test_linux_profile_on_a_flow_from_python():
    s = nb.Scenario(name="p", duration="1s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="10Mbps", delay="5ms")
    s.add_flow("linux", "a", "b", profile="linux")
    s.add_flow("rfc", "a", "b")
    linux, rfc = (f["tcp"] for f in nb.resolve(s)["flows"])
    assert linux["cc"] == "cubic"
    assert linux["cc_params"] == {"beta": 717 / 1024, "hystart": True, "linux_integer": True, "hz": 250}
    assert linux["rto_min"] == 200_000_000 and linux["mss"] == 1448 and linux["initial_window"] == 10
    # RFC 6298's 1 s minimum RTO and RFC 5681's initial window for the other
    assert rfc["rto_min"] == 1_000_000_000 and rfc["initial_window"] == 3 and rfc["cc"] == "reno"
    s.tcp = nb.TcpOptions(profile="linux", rto_min="300ms")
    linux, rfc = (f["tcp"] for f in nb.resolve(s)["flows"])
    assert rfc["rto_min"] == linux["rto_min"] == 300_000_000 and rfc["cc"] == "cubic"
    with pytest.raises(nb.ScenarioError, match=r"profile: .*'windows'|profile.*'rfc' or 'linux'"):
        nb.TcpOptions(profile="windows")
    with pytest.raises(nb.ScenarioError, match=r"tcp.profile: 'rfc' cannot run on emu"):
        s.tcp = nb.TcpOptions(profile="rfc")
        nb.resolve(s, backend="emu")
