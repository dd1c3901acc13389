"""Split-connection TCP relays (proxies) in the simulator.

Expectations come from `protocols.md` §8 and the models it cites: each leg
is its own TCP connection, so a loss-limited flow gets Mathis' rate of its
worst leg (two identical legs with half the RTT and half the loss each:
2·√2 ≈ 2.83 × the direct rate), a window-limited one W / max(RTT_i)
instead of W / ΣRTT; the relay buffer never holds more than its bound, and
back-pressure holds a fast leg to the slowest; every byte arrives once.
"""

import json

import pytest

import netbraid as nb
from conftest import MSS

GBPS = "1Gbps"


def chain(*, legs_ms=(25.0, 25.0), loss=None, rates=(GBPS, GBPS), proxy_buffer=None, proxy_window=None,
          relayed=True, duration="300s", measure_start="30s", **tcp) -> nb.Scenario:
    """src — p — dst: leg i has round trip legs_ms[i] (split over its two
    hops' one-way delays) and, if given, random loss `loss[i]` on the data
    direction of its first hop (ACKs are not lost)."""
    s = nb.Scenario(name="relay", duration=duration)
    s.add_host("src").add_host("dst").add_router("p")
    for i, (a, b) in enumerate((("src", "p"), ("p", "dst"))):
        s.add_link(a, b, rate=rates[i], delay=f"{legs_ms[i] / 2}ms", queue="100000p",
                   ab={"loss": loss[i]} if loss else None)
    via = {}
    if relayed:
        proxy: dict = {}
        if proxy_buffer:
            proxy["buffer"] = proxy_buffer
        if proxy_window:
            proxy["tcp"] = {"window": proxy_window}
        s.add_proxy("p", **proxy)
        via = {"via": ["p"]}
    s.add_flow("f", "src", "dst", **via, **tcp)
    s.measure = nb.Measure(start=measure_start)
    return s


def goodput(s: nb.Scenario, seeds=(1,)) -> float:
    total = 0.0
    for seed in seeds:
        s.seed = seed
        total += nb.simulate(s)["flows"][0]["goodput_bps"]
    return total / len(seeds)


def test_two_identical_loss_limited_legs_give_about_2_83_times_direct():
    p = 5e-4  # per leg: the direct flow crosses both lossy hops (≈ 1e-3)
    common = dict(legs_ms=(50.0, 50.0), loss=(p, p), recovery="sack", window="64MB")
    seeds = (1, 2, 3)
    split = goodput(chain(**common), seeds)
    direct = goodput(chain(**common, relayed=False), seeds)
    assert split / direct == pytest.approx(2 * 2 ** 0.5, rel=0.20), (split, direct)


def test_window_limited_split_runs_at_w_over_the_longest_leg():
    w = 64 * 1024
    common = dict(legs_ms=(10.0, 30.0), recovery="sack", window="64KB", duration="30s", measure_start="5s")
    split = goodput(chain(**common, proxy_window="64KB"))
    direct = goodput(chain(**common, relayed=False))
    # goodput and the window both count payload bytes
    assert direct == pytest.approx(w * 8 / 0.040, rel=0.05)
    assert split == pytest.approx(w * 8 / 0.030, rel=0.05)


def test_back_pressure_holds_the_fast_leg_to_the_slow_one_and_the_buffer_to_its_bound():
    buffer = 100 * 1024
    s = chain(legs_ms=(2.0, 20.0), rates=(GBPS, "10Mbps"), proxy_buffer=f"{buffer}B", proxy_window="256KB",
              duration="30s", measure_start="5s", recovery="sack", window="1MB")
    s.measure = nb.Measure(start="5s", interval="100ms")
    r = nb.simulate(s)
    f = r["flows"][0]
    leg0, leg1 = f["legs"]
    # the slow leg sets the pace of both (payload of a 10 Mb/s link)
    assert leg1["goodput_bps"] <= 10e6
    assert leg0["goodput_bps"] == pytest.approx(leg1["goodput_bps"], rel=0.02)
    assert f["goodput_bps"] == pytest.approx(leg1["goodput_bps"], rel=1e-9)
    # the relay buffer filled to its bound and never beyond
    assert leg1["relay_buffer_max_bytes"] <= buffer
    assert leg1["relay_buffer_max_bytes"] > buffer - 2 * MSS
    series = next(x for x in r["series"]["flows"] if x["name"] == "f")
    assert max(series["relay_buffer_bytes"][0]) <= buffer


def test_every_byte_arrives_once_through_two_lossy_relays():
    n = 20_000_000
    s = nb.Scenario(name="two-relays", duration="60s")
    s.add_host("a").add_host("b").add_router("p1").add_router("m").add_router("p2")
    s.add_link("a", "p1", rate="100Mbps", delay="1ms", ab={"loss": 0.002})
    s.add_link("p1", "m", rate="50Mbps", delay="10ms", queue="100p", ab={"loss": 0.001})
    s.add_link("m", "p2", rate="100Mbps", delay="5ms")
    s.add_link("p2", "b", rate="100Mbps", delay="1ms", ab={"loss": 0.002})
    s.add_proxy("p1", buffer="200KB", tcp={"window": "1MB"}).add_proxy("p2", buffer="50KB", tcp={"window": "512KB"})
    s.add_flow("f", "a", "b", via=["p1", "p2"], bytes=n, recovery="sack", window="128KB")
    r = nb.simulate(s)
    f = r["flows"][0]
    assert f["bytes_delivered"] == n  # read by the destination: once each, in order
    assert all(leg["retransmits"] > 0 for leg in f["legs"])  # each leg recovered on its own
    assert f["completion_time_s"] is not None and f["completion_time_s"] < 60
    a = f["accounting"]
    assert a["sent_bytes"] == a["delivered_bytes"] + a["dropped_bytes"] + a["in_flight_bytes"]
    # each relay buffer stayed within its bound
    peaks = [leg["relay_buffer_max_bytes"] for leg in f["legs"][1:]]
    assert peaks[0] <= 200 * 1024 and peaks[1] <= 50 * 1024, peaks


def test_proxied_and_direct_flows_share_a_bottleneck_deterministically():
    def run() -> dict:
        s = nb.Scenario(name="shared", duration="40s", seed=3)
        s.add_host("s", count=2).add_host("d", count=2).add_router("pa").add_router("pb")
        s.add_link("s", "pa", rate=GBPS, delay="0.5ms")
        s.add_link("pa", "pb", rate="50Mbps", delay="20ms", queue="150p", ab={"loss": 1e-4})
        s.add_link("pb", "d", rate=GBPS, delay="0.5ms")
        s.add_proxy("pa", tcp={"window": "4MB"}).add_proxy("pb", tcp={"window": "4MB"})
        s.add_flow("relayed", "s0", "d0", via=["pa", "pb"], window="64KB", recovery="sack")
        s.add_flow("direct", "s1", "d1", window="64KB", recovery="sack")
        s.measure = nb.Measure(start="5s")
        r = nb.simulate(s)
        r.pop("wall_s")
        return r

    r1, r2 = run(), run()
    assert json.dumps(r1, sort_keys=True) == json.dumps(r2, sort_keys=True)
    g = {f["name"]: f["goodput_bps"] for f in r1["flows"]}
    # the direct flow is window-limited: 64 KiB per 42 ms round trip at most
    assert g["direct"] <= 64 * 1024 * 8 / 0.042 * 1.02
    # the relayed one's middle leg has 4 MB windows: it takes the rest of the 50 Mb/s
    assert g["relayed"] > 2 * g["direct"]
    assert g["relayed"] + g["direct"] <= 50e6


@pytest.mark.parametrize("edit, field, words", [
    (lambda s: s.add_proxy("x"), "proxies[1].node", "no flow passes through the proxy on 'x'"),
    (lambda s: setattr(s.flows[0], "via", ["nowhere"]), "flows[0].via[0]", "unknown node 'nowhere'"),
    (lambda s: setattr(s.flows[0], "via", ["x"]), "flows[0].via[0]", "'x' has no proxy"),
    (lambda s: (s.add_proxy("x"), setattr(s.flows[0], "via", ["x"])), "flow 'f'.via[0]",
     "'x' is not on the route from 'src' to 'dst'"),
    (lambda s: setattr(s.proxies[0], "buffer", 1000), "proxies[0].buffer", "smaller than one segment"),
])
def test_bad_proxy_input_names_the_field(edit, field, words):
    s = chain(duration="2s", measure_start="0s")
    s.add_router("x").add_link("x", "p", rate=GBPS, delay="1ms")
    edit(s)
    with pytest.raises(nb.ScenarioError) as e:
        nb.simulate(s)
    assert field in str(e.value) and words in str(e.value), str(e.value)


def test_a_scenario_tcp_mistake_that_proxies_inherit_is_reported_once():
    # the flow and both proxies take [tcp]: one mistake, one line
    s = nb.load_scenario("examples/split_proxy.toml")
    s.tcp = nb.TcpOptions(cc="hstcp", cc_params={"low_window": 100000})
    with pytest.raises(nb.ScenarioError) as e:
        nb.simulate(s)
    assert e.value.problems == ["tcp.cc_params.low_window: 100000 must be below high_window (83000): "
                                "Low_Window < High_Window"]


def test_emu_proxies_refuse_what_a_real_socket_cannot_set():
    from netbraid.emu.backend import _plan
    from netbraid.emu.topology import forwarding_table
    from netbraid.resolve import resolve

    s = chain(duration="2s", measure_start="0s", proxy_window="1MB")
    s.proxies[0].tcp.rto_min = "50ms"
    resolved = resolve(s, backend="emu")
    with pytest.raises(nb.ScenarioError) as e:
        _plan(resolved, forwarding_table(resolved))
    assert "proxies[0].tcp.rto_min: cannot be set on an emu proxy" in str(e.value)


@pytest.mark.emu
def test_a_real_proxy_on_emu_splits_the_round_trip():
    """Window-limited end hosts: directly W / RTT; through a proxy in the
    middle of the round trip, W / (RTT / 2) — twice as fast (the
    placement model 1 / max(x, 1 - x) at x = 1/2). On the real stacks with
    `netbraid proxy`, and every leg carries the flow's bytes."""
    from netbraid.emu import platform

    if (why := platform.unavailable_reason()) is not None:
        pytest.skip(f"emu backend unavailable: {why}")
    kw = dict(legs_ms=(20.0, 20.0), rates=("50Mbps", "50Mbps"), proxy_window="4MB", window="64KB",
              duration="12s", measure_start="4s")
    direct = nb.simulate(chain(relayed=False, **kw), backend="emu")["flows"][0]
    relayed = nb.simulate(chain(**kw), backend="emu")["flows"][0]
    ratio = relayed["goodput_bps"] / direct["goodput_bps"]
    assert 1.6 < ratio < 2.3, (relayed["goodput_bps"], direct["goodput_bps"])
    assert [leg["name"] for leg in relayed["legs"]] == ["src->p", "p->dst"]
    # The last leg delivers what the receiver reads; the first may run ahead
    # while the proxy's buffers fill (conservation holds over the whole run).
    assert relayed["legs"][-1]["goodput_bps"] == pytest.approx(relayed["goodput_bps"], rel=0.1)
    assert relayed["legs"][0]["goodput_bps"] > 0.9 * relayed["goodput_bps"]


def test_a_small_relay_buffer_still_keeps_the_legs_moving():
    """The relay reads what arrives, up to its room, before the ACK goes back:
    a buffer of a few segments slows the transfer by no more than its bound
    on the data in transit, never to a crawl of delayed-ACK timeouts."""
    def completion(buffer: str) -> float:
        s = nb.Scenario(name="small-relay", duration="60s")
        s.add_host("src").add_host("dst").add_router("p")
        s.add_link("src", "p", rate="100Mbps", delay="5ms", queue="30p")
        s.add_link("p", "dst", rate="10Mbps", delay="5ms", queue="30p")
        s.add_proxy("p", buffer=buffer, tcp={"window": "4KB"})
        s.add_flow("f", "src", "dst", via=["p"], bytes=3_000_000, recovery="sack")
        f = nb.simulate(s)["flows"][0]
        assert f["bytes_delivered"] == 3_000_000, buffer
        return f["completion_time_s"]

    # the second leg is window-limited: 4 KB per ~11 ms round trip
    large = completion("100KB")
    for buffer in ("2920B", "4096B", "5000B", "8192B"):
        assert completion(buffer) <= 1.1 * large, buffer


def test_each_leg_says_which_controller_it_ran():
    # HSTCP between the proxies (the first proxy sends the middle leg), the
    # end hosts' Reno on the legs at either end
    r = nb.simulate("examples/split_proxy.toml", overrides=["proxies.0.tcp.cc=hstcp", "duration=3s", "measure.start=1s"])
    legs = r["flows"][0]["legs"]
    assert [(leg["from"], leg["to"], leg["cc"]) for leg in legs] == [
        ("sender", "proxy_a", "reno"), ("proxy_a", "proxy_b", "hstcp"), ("proxy_b", "receiver", "reno")]
