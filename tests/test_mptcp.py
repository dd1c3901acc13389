"""MPTCP on the simulator from the Python side: the example's contract,
the path manager (per interface, full mesh, backup), the scheduler and
controller choices, and clear errors. Expectations come from capacity (two
50 Mb/s paths), from the topology (how many subflows a full mesh has) and
from the model's definitions, not from earlier runs."""

import json
import subprocess
from pathlib import Path

import pytest

import netbraid as nb
from netbraid.errors import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mptcp_two_paths.toml"
MPTCP_PAYLOAD = 1436 / 1500  # an MPTCP data segment: the DSS option's 24 B come out of the payload


def netbraid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["netbraid", *args], capture_output=True, text=True, timeout=120)


def run_json(*args: str) -> dict:
    r = netbraid("run", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def two_paths(delay1: str = "5ms", loss1: float | None = None, **flow) -> nb.Scenario:
    s = nb.Scenario(name="two-paths", duration="6s")
    s.add_host("client").add_host("server")
    s.add_link("client", "server", rate="50Mbps", delay="5ms")
    s.add_link("client", "server", rate="50Mbps", delay=delay1, ab={"loss": loss1} if loss1 else None)
    s.add_flow("m", "client", "server", kind="mptcp", **flow)
    s.measure = nb.Measure(start="1s")
    return s


def test_the_example_uses_both_paths_on_the_simulator():
    # The contract: the default backend, one subflow per path, each
    # with its own goodput, and at least 85 Mb/s over two clean 50 Mb/s paths.
    doc = run_json(str(EXAMPLE))
    (f,) = doc["flows"]
    assert f["kind"] == "mptcp"
    assert len(f["subflows"]) == 2
    assert f["goodput_bps"] >= 85e6
    for sub in f["subflows"]:
        assert sub["goodput_bps"] <= 50e6 * MPTCP_PAYLOAD * 1.001  # no subflow beats its path
        assert sub["goodput_bps"] > 0.4 * f["goodput_bps"]
    # every subflow goes to the server's first address, from its own interface
    assert len({s["src_addr"] for s in f["subflows"]}) == 2
    assert len({s["dst_addr"] for s in f["subflows"]}) == 1
    # subflow goodput counts bytes moved up in subflow order, the connection's
    # bytes read in data order: they differ only by what the connection's
    # buffer held out of order at the window's two edges
    assert sum(s["goodput_bps"] for s in f["subflows"]) == pytest.approx(f["goodput_bps"], rel=1e-3)


def test_full_mesh_makes_a_subflow_per_pair_of_interfaces():
    r = nb.simulate(two_paths(subflows="fullmesh"))
    (f,) = r["flows"]
    assert len(f["subflows"]) == 4
    pairs = {(s["src_addr"], s["dst_addr"]) for s in f["subflows"]}
    assert len(pairs) == 4
    # four subflows still share two 50 Mb/s links
    assert f["goodput_bps"] <= 100e6 * MPTCP_PAYLOAD * 1.001


def test_explicit_paths_make_those_subflows():
    # the second path only, then the first as a backup: the initial subflow
    # leaves from interface 1, and the backup carries nothing
    r = nb.simulate(two_paths(paths=[{"from_iface": 1}, {"from_iface": 0, "backup": True}]))
    f = r["flows"][0]
    assert [s["links"][0] for s in f["subflows"]] == ["client->server#2", "client->server"]
    assert f["subflows"][1]["goodput_bps"] == 0
    assert f["subflows"][0]["goodput_bps"] > 0.9 * 50e6 * MPTCP_PAYLOAD


def test_a_path_that_does_not_exist_is_refused():
    # a router between the hosts with static routes that lead nowhere for one path
    s = nb.Scenario(name="dead-end", duration="1s")
    s.add_host("a").add_host("b").add_host("c").add_router("r")
    s.add_link("a", "r", rate="10Mbps").add_link("a", "c", rate="10Mbps").add_link("r", "b", rate="10Mbps")
    s.add_flow("m", "a", "b", kind="mptcp", paths=[{"from_iface": 0}, {"from_iface": 1}])
    with pytest.raises(ScenarioError) as e:
        nb.simulate(s)
    # the field, the interfaces as the scenario numbers them, what is allowed
    assert "paths[1]" in str(e.value), str(e.value)
    assert "no route from 'a' (its interface 1) to 'b' (its interface 0)" in str(e.value), str(e.value)
    assert "allowed:" in str(e.value), str(e.value)


def test_a_backup_subflow_carries_nothing_while_the_other_can_send():
    r = nb.simulate(two_paths(backup=[1]))
    backup = r["flows"][0]["subflows"][1]
    assert backup["goodput_bps"] == 0
    assert r["flows"][0]["subflows"][0]["goodput_bps"] > 0.9 * 50e6 * MPTCP_PAYLOAD


@pytest.mark.parametrize("scheduler", ["default", "min_rtt", "round_robin", "redundant"])
@pytest.mark.parametrize("cc", ["reno", "cubic", "lia", "olia", "balia"])
def test_every_scheduler_and_controller_fills_two_clean_paths(scheduler, cc):
    f = nb.simulate(two_paths(scheduler=scheduler, cc=cc))["flows"][0]
    # redundant sends every byte on both paths: one path's worth
    paths = 1 if scheduler == "redundant" else 2
    assert f["goodput_bps"] > 0.85 * paths * 50e6 * MPTCP_PAYLOAD, (scheduler, cc, f["goodput_bps"])


def test_impairing_the_initial_subflow_shifts_data_to_the_clean_one():
    # Path 1 (the second subflow) loses 10 %: the clean initial subflow
    # carries most of the data, and the connection still gets nearly one path.
    f = nb.simulate(two_paths(loss1=0.1))["flows"][0]
    shares = [s["share"] for s in f["subflows"]]
    assert shares[0] > 0.8, shares
    assert f["goodput_bps"] > 0.8 * 50e6 * MPTCP_PAYLOAD


def test_receive_buffer_optimisations_can_be_switched_on():
    # a 64 KB buffer over 10 ms and 210 ms round trips: head-of-line blocking;
    # the out-of-tree kernel's optimisations, with its minRTT scheduler,
    # recover part of it (sim only). The fast path's 5-packet queue keeps its
    # cwnd below the buffer, so minRTT spills segments onto the slow path.
    def goodput(**opts):
        s = nb.Scenario(name="hol", duration="8s", tcp={"window": "64KB", "cc": "reno"})
        s.add_host("client").add_host("server")
        s.add_link("client", "server", rate="10Mbps", delay="5ms", queue="5p")
        s.add_link("client", "server", rate="10Mbps", delay="105ms")
        s.add_flow("m", "client", "server", kind="mptcp", scheduler="min_rtt", **opts)
        s.measure = nb.Measure(start="2s")
        return nb.simulate(s)["flows"][0]["goodput_bps"]

    assert goodput(opportunistic_retransmission=True, penalisation=True) > 1.3 * goodput()


def test_reinjection_is_a_switch():
    # 10 % loss on the second path and a 1 MB buffer: upstream's reinjection
    # (32 KB per timer firing) leaves data queued behind the lossy subflow,
    # which holds the shared window; the out-of-tree kernel's (all of a
    # timed-out subflow's data at once) frees it sooner. Over five seeds: one
    # run is one draw of the losses, and a single draw can go either way.
    def goodput(reinjection):
        return sum(nb.simulate(two_paths(loss1=0.1, reinjection=reinjection, window="1MB"), seed=seed)
                   ["flows"][0]["goodput_bps"] for seed in range(1, 6))

    assert goodput("subflow_timeout") > 1.2 * goodput("upstream")


def test_same_seed_same_result():
    a = nb.simulate(two_paths(loss1=0.01, cc="olia"), seed=3)
    b = nb.simulate(two_paths(loss1=0.01, cc="olia"), seed=3)
    assert a["flows"] == b["flows"]


@pytest.mark.parametrize(
    "flow, field, allowed",
    [
        ({"scheduler": "fastest"}, "scheduler", "redundant"),
        ({"subflows": "star"}, "subflows", "fullmesh"),
        ({"backup": [2]}, "backup[0]", "allowed: 0 to 1"),
        ({"backup": [0, 1]}, "backup", "at least one"),
        ({"cc": "vegas"}, "cc", "lia"),
        ({"read_rate": "1Mbps"}, "read_rate", "tcp"),
        ({"penalisation": "yes"}, "penalisation", "bool"),
        ({"reinjection": "eager"}, "reinjection", "subflow_timeout"),
        ({"paths": [{"from_iface": 3}]}, "paths[0].from_iface", "allowed: 0 to 1"),
        ({"paths": [{"from_iface": 0, "backup": True}]}, "paths", "at least one"),
        ({"paths": [{"from_iface": 0}, {"from_iface": 0}]}, "paths[1]", "earlier path"),
        ({"paths": [{"from_iface": 0}], "subflows": "fullmesh"}, "subflows", "not with paths"),
        ({"mss": 24}, "mss", "more than 24 B"),
    ],
)
def test_bad_mptcp_settings_name_the_field(flow, field, allowed):
    with pytest.raises(ScenarioError) as e:
        nb.simulate(two_paths(**flow))
    assert f".{field}" in str(e.value) or f"{field}:" in str(e.value), str(e.value)
    assert allowed in str(e.value)


def test_sim_only_settings_are_refused_for_emu_before_anything_runs():
    from netbraid.resolve import resolve

    with pytest.raises(ScenarioError, match="scheduler: set on sim only"):
        resolve(two_paths(scheduler="min_rtt"), backend="emu")


def test_backup_goes_to_emu_but_not_on_the_initial_subflow():
    # `backup` is the kernel's endpoint flag on emu; the initial subflow
    # comes from no endpoint, so its interface cannot be one there
    from netbraid.resolve import resolve

    resolved = resolve(two_paths(backup=[1]), backend="emu")
    assert resolved["flows"][0]["mptcp"]["backup"] == [False, True]
    with pytest.raises(ScenarioError, match=r"backup: the initial subflow's interface \(0\) cannot be a backup on emu"):
        resolve(two_paths(backup=[0]), backend="emu")


def test_emu_paths_must_go_to_the_initial_destination():
    # Linux's path manager makes subflows from local endpoints to the
    # address the connection went to; other destinations need the full mesh
    from netbraid.resolve import resolve

    resolved = resolve(two_paths(paths=[{"from_iface": 1}, {"from_iface": 0}]), backend="emu")
    assert [p["src_iface"] for p in resolved["flows"][0]["paths"]] == [2, 0]
    with pytest.raises(ScenarioError, match=r"paths\[1\]\.to_iface: on emu every listed path goes to the initial "
                                            r"subflow's destination address \(interface 0\).*fullmesh"):
        resolve(two_paths(paths=[{"from_iface": 0}, {"from_iface": 1, "to_iface": 1}]), backend="emu")


def test_mptcp_settings_on_a_tcp_flow_are_refused():
    s = two_paths()
    with pytest.raises(ScenarioError, match="scheduler: applies only to mptcp flows"):
        s.add_flow("t", "client", "server", kind="tcp", scheduler="min_rtt")


def test_mptcp_on_emu_without_the_kernels_mptcp_names_the_flow(monkeypatch):
    # a kernel without CONFIG_MPTCP, everything else in place: the error names
    # the flow's field and what runs instead, before anything is set up
    from netbraid.emu import backend, platform
    from netbraid.resolve import resolve

    for name in ("require_root", "require_tools", "require_tun", "require_netns"):
        monkeypatch.setattr(platform, name, lambda *a, **k: None)

    def no_mptcp():
        raise platform.EmuUnavailable("this kernel has no MPTCP (no /proc/sys/net/mptcp)")

    monkeypatch.setattr(platform, "require_mptcp", no_mptcp)
    with pytest.raises(platform.EmuUnavailable) as e:
        backend.run(resolve(two_paths(), backend="emu"))
    assert "flows[0].kind" in str(e.value), str(e.value)
    assert "--backend sim" in str(e.value) and "no MPTCP" in str(e.value), str(e.value)
