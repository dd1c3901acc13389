"""Link-layer framing, outages and delay jitter (sim), against arithmetic
from outside the code: Ethernet's 38 bytes per frame, nothing crossing a
cut cable, a delay uniform within ±jitter that never reorders."""

import pytest

import netbraid as nb
from netbraid.errors import ScenarioError
from netbraid.resolve import resolve


def one_link(**link) -> nb.Scenario:
    s = nb.Scenario(name="l", duration="20s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="100Mbps", delay="1ms", queue="200p", **link)
    s.add_flow("f", "a", "b", window="4MB")
    s.measure = nb.Measure(start="5s", interval="1s")
    return s


def test_ethernet_framing_makes_the_rate_a_line_rate():
    f = nb.simulate(one_link(framing="ethernet"))["flows"][0]
    # 1460 B of payload in 1500 B of IP packet and 38 B of framing
    assert f["goodput_bps"] == pytest.approx(100e6 * 1460 / 1538, rel=0.005)
    link = nb.simulate(one_link(framing="ethernet"))["links"][0]
    assert link["utilisation"] == pytest.approx(1.0, abs=0.01)
    assert nb.simulate(one_link(framing=38))["flows"][0]["goodput_bps"] == f["goodput_bps"]


def test_nothing_crosses_a_link_while_it_is_down():
    r = nb.simulate(one_link(down=[{"start": "8s", "stop": "12s"}]))
    series = r["series"]["flows"][0]["goodput_bps"]
    times = r["series"]["time_s"]
    during = [g for t, g in zip(times, series) if 10 <= t <= 12]  # whole seconds inside the outage
    assert during and all(g == 0 for g in during)
    assert max(g for t, g in zip(times, series) if t >= 18) > 50e6  # back after the outage
    assert r["links"][0]["loss_drops"] > 0


def one_segment_at_a_time(jitter: str = "2ms", seed: int = 1) -> dict:
    """A TCP flow with one segment in flight (each sent when the last is
    ACKed, ACKed at once) over 100 Mb/s, 10 ms ± `jitter` each way: every
    round trip is two independent draws of the delay, 20 ms apart."""
    s = nb.Scenario(name="j", duration="30s", seed=seed)
    s.add_host("a").add_host("b").add_link("a", "b", rate="100Mbps", delay="10ms", jitter=jitter, queue="1000p")
    s.add_flow("f", "a", "b", window="1460B", delayed_ack=False)
    return nb.simulate(s)["flows"][0]


SERIALISATION = (1500 + 40) * 8 / 100e6  # a segment and its ACK at 100 Mb/s


def test_jitter_spreads_the_delay_within_its_bounds():
    f = one_segment_at_a_time()
    # each round trip is 20 ms + the sum of two uniform draws on ±2 ms: never
    # below 16 ms, below 17 ms once in 32 samples, on average 20 ms (1,500
    # samples: the mean's standard error is 0.04 ms)
    assert f["rtt_min_s"] >= 0.016 + SERIALISATION - 1e-6
    assert f["rtt_min_s"] < 0.017
    assert f["rtt_mean_s"] == pytest.approx(0.020 + SERIALISATION, abs=0.2e-3)
    still = one_segment_at_a_time(jitter="0ms")
    assert still["rtt_min_s"] == pytest.approx(0.020 + SERIALISATION, abs=1e-6)


def test_jitter_never_reorders():
    # a full window over 10 ms ± 2 ms: packets 0.12 ms apart, far closer
    # than the delay's 4 ms span, would overtake each other if the draws
    # were applied as they fall, and the receiver's duplicate ACKs would
    # bring fast retransmissions; held in order, nothing is retransmitted
    s = nb.Scenario(name="j", duration="10s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="100Mbps", delay="10ms", jitter="2ms", queue="1000p")
    s.add_flow("f", "a", "b", window="200KB")
    f = nb.simulate(s)["flows"][0]
    assert f["goodput_bps"] > 50e6
    assert f["retransmits"] == 0 and f["fast_retransmits"] == 0 and f["duplicates_received"] == 0


def test_jitter_is_drawn_from_the_seed():
    assert one_segment_at_a_time(seed=1) == one_segment_at_a_time(seed=1)
    assert one_segment_at_a_time(seed=1)["rtt_mean_s"] != one_segment_at_a_time(seed=2)["rtt_mean_s"]


@pytest.mark.parametrize("link, says", [
    ({"jitter": "2ms"}, r"links\[0\]\.jitter: 2ms is more than the delay \(1ms\)"),
    ({"ab": {"jitter": "2ms"}}, r"links\[0\]\.ab\.jitter: 2ms is more than the delay \(1ms\)"),
    ({"jitter": "500us", "ba": {"delay": "100us"}},
     r"links\[0\]\.jitter: 500us is more than links\[0\]\.ba\.delay \(100us\)"),
])
def test_jitter_beyond_the_delay_is_named(link, says):
    with pytest.raises(ScenarioError, match=says):
        resolve(one_link(**link))


@pytest.mark.parametrize("link, says", [
    ({"framing": "token-ring"}, "framing"),
    ({"framing": 2000}, "framing"),
    ({"down": [{"start": "5s", "stop": "2s"}]}, "must be after start"),
])
def test_bad_link_settings_are_named(link, says):
    with pytest.raises(ScenarioError, match=says):
        one_link(**link)


def test_emu_refuses_what_linkemu_does_not_do():
    for link, field in (({"framing": "ethernet"}, "framing"), ({"down": [{"start": "1s", "stop": "2s"}]}, "down")):
        with pytest.raises(ScenarioError, match=rf"links\[0\].{field}: .*sim only"):
            resolve(one_link(**link), backend="emu")


def cbr_into(rate: str, queue: str = "20p") -> dict:
    """CBR packets of 1250 B of data (1278 B with UDP/IP headers) into a
    10 Mb/s link: 1.0224 ms on the wire each."""
    s = nb.Scenario(name="q", duration="10s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="10Mbps", delay="1ms", queue=queue)
    s.add_flow("u", "a", "b", kind="cbr", rate=rate, packet_size="1250B")
    return nb.simulate(s)["links"][0]


def test_queue_delay_of_an_overloaded_link_is_its_queue_drained():
    # Packets offered at twice the rate: each is admitted just after a
    # departure made room, behind the 19 others still waiting and the rest
    # of the one on the transmitter (which the next arrival, half a
    # serialisation later at most, finds more than half done):
    # (Q − 1) · S + S / 2 < wait ≤ Q · S.
    link = cbr_into("20Mbps")
    ser = link["tx_bytes"] / link["tx_packets"] * 8 / 10e6
    assert link["queue_drops"] > 0
    assert 19.5 * ser < link["queue_delay_s"] <= 20 * ser


def test_a_link_below_its_rate_queues_nothing():
    # evenly spaced packets at half the rate each find the transmitter idle
    assert cbr_into("5Mbps")["queue_delay_s"] == 0.0


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_a_flows_mean_srtt_is_the_path_plus_the_bottlenecks_queue(cc):
    # One flow keeps a 10 Mb/s link busy (a standing queue): the time-weighted
    # mean of its smoothed RTT is the path's 20 ms and one data and one ACK
    # serialisation plus the bottleneck's mean queueing delay, give or take
    # the smoothing's lag (an RTT sample per round trip)
    s = nb.Scenario(name="t", duration="30s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="10Mbps", delay="10ms", queue="50p")
    s.add_flow("f", "a", "b", cc=cc)
    s.measure = nb.Measure(start="5s")
    r = nb.simulate(s)
    f, bottleneck = r["flows"][0], r["links"][0]
    assert bottleneck["utilisation"] > 0.99
    path = 0.020 + (1500 + 40) * 8 / 10e6
    assert f["srtt_mean_s"] == pytest.approx(path + bottleneck["queue_delay_s"], rel=0.03)
    assert f["srtt_mean_s"] > path + 0.5 * bottleneck["queue_delay_s"]  # not the path alone


def test_mean_srtt_of_one_segment_at_a_time_is_the_round_trip():
    f = one_segment_at_a_time(jitter="0ms")
    assert f["srtt_mean_s"] == pytest.approx(0.020 + SERIALISATION, rel=1e-3)
