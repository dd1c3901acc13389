"""RED queues and ECN through the whole simulator."""

import statistics

import pytest

import netbraid as nb


def red_dumbbell(ecn: bool, n: int = 10) -> nb.Scenario:
    s = nb.Scenario(name="red", duration="120s")
    s.add_host("s", count=n).add_host("d", count=n).add_router("r1").add_router("r2")
    s.add_link("s", "r1", rate="1Gbps", delay="1ms", queue="1000p")
    s.add_link("r1", "r2", rate="10Mbps", delay="20ms", queue="100p",
               ab={"red": {"min_th": 5, "max_th": 15, "ecn": ecn}})
    s.add_link("r2", "d", rate="1Gbps", delay="1ms", queue="1000p")
    s.add_flow("f", "s", "d", ecn=ecn, start_jitter="1s")
    s.measure = nb.Measure(start="20s", interval="100ms")
    return s


def test_red_holds_the_queue_near_its_thresholds():
    r = nb.simulate(red_dumbbell(ecn=False))
    q = next(l for l in r["series"]["links"] if l["name"] == "r1->r2")["queue_packets"]
    mean_q = statistics.mean(q[200:])  # after the measurement start
    # Drop-tail would sit near its 100-packet limit; RED keeps the average
    # between the thresholds (gentle mode lets it reach 2·max_th at most).
    assert 5 <= mean_q <= 30, mean_q
    bn = next(l for l in r["links"] if l["name"] == "r1->r2")
    assert bn["utilisation"] >= 0.9 and bn["queue_drops"] > 0


def test_ecn_replaces_drops_with_marks():
    r = nb.simulate(red_dumbbell(ecn=True))
    bn = next(l for l in r["links"] if l["name"] == "r1->r2")
    assert bn["ecn_marks"] > 100
    assert bn["queue_drops"] <= bn["ecn_marks"] / 20  # only rare forced drops remain
    flows = r["flows"]
    assert sum(f["ecn_reductions"] for f in flows) > 50
    assert sum(f["retransmits"] for f in flows) <= bn["queue_drops"] + 5
    assert bn["utilisation"] >= 0.9


def test_red_parameters_are_checked():
    with pytest.raises(nb.ScenarioError, match="max_th"):
        nb.Scenario(name="x", duration="1s").add_link("a", "b", rate="1Mbps", red={"min_th": 10, "max_th": 5})
