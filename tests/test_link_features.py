"""Link-layer framing and outages (sim), against arithmetic from outside the
code: Ethernet's 38 bytes per frame, and nothing crossing a cut cable."""

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
