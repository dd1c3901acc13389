"""The Python API reads like the TOML it stands for."""

import pytest

import netbraid as nb


def test_flows_take_the_toml_names_and_a_scenario_reads_in_its_own_units():
    s = nb.Scenario(name="two", duration="20s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="10Mbps", delay="5ms", name="wan")
    s.add_flow("f", **{"from": "a", "to": "b"})
    s.add_flow("g", "a", to="b", kind="cbr", rate="1Mbps")
    assert [(f.name, f.src, f.dst) for f in s.flows] == [("f", "a", "b"), ("g", "a", "b")]
    assert repr(s) == "Scenario('two': 2 hosts, 0 routers, 1 link, 2 flows, duration 20 s, seed 1)"
    with pytest.raises(nb.ScenarioError, match=r"flows\[2\] \(h\): give where it goes from and to"):
        s.add_flow("h", "a")
    for fn in (nb.Scenario.add_host, nb.Scenario.add_router, nb.Scenario.add_link, nb.Scenario.add_flow,
               nb.Scenario.add_proxy, nb.Scenario.add_route, nb.load, nb.run, nb.sweep, nb.simulate):
        assert fn.__doc__ and len(fn.__doc__.split()) >= 5, fn.__name__
