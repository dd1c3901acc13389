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


def test_rows_name_the_links_and_addresses_each_flow_used():
    # a — r1 — b over a link named "wan" and a second, unnamed r1–b link
    # (named "r1-b": the first unnamed one between those ends). Data to b's
    # second interface crosses the second link; b's ACKs to a leave by b's
    # first interface, "wan" (routing by destination, ties to the lowest link).
    s = nb.Scenario(name="named", duration="2s")
    s.add_host("a").add_host("b").add_router("r1")
    s.add_link("a", "r1", rate="10Mbps", delay="1ms")
    s.add_link("r1", "b", rate="10Mbps", delay="1ms", name="wan")
    s.add_link("r1", "b", rate="10Mbps", delay="1ms")
    s.add_flow("f", "a", "b", to_iface=1)
    r = nb.simulate(s)
    f = r["flows"][0]
    assert f["links"] == ["a->r1", "r1->a", "b->r1", "r1->b#2"]
    assert f["link_names"] == ["a-r1", "wan", "r1-b"]
    # link l is 10.x.y.0/24 with x.y = l + 1, side a .1, side b .2 (docs/scenario.md)
    assert (f["src_addr"], f["dst_addr"]) == ("10.0.1.1", "10.0.3.2")
    assert {l["name"]: l["link_name"] for l in r["links"]} == {
        "a->r1": "a-r1", "r1->a": "a-r1", "r1->b": "wan", "b->r1": "wan", "r1->b#2": "r1-b", "b->r1#2": "r1-b"}
    runs = nb.run(s)
    assert runs["link_names"].tolist() == ["a-r1, wan, r1-b"]
    assert set(runs.attrs["links"]["link_name"]) == {"a-r1", "wan", "r1-b"}


def test_emu_gives_every_interface_the_simulators_address():
    from netbraid.emu.topology import iface_address
    from netbraid.resolve import resolve

    s = nb.load_scenario("examples/mptcp_two_paths.toml")
    sim = nb.simulate(s)
    resolved = resolve(s)
    paths = resolved["flows"][0]["paths"]
    subs = sim["flows"][0]["subflows"]
    assert [(x["src_addr"], x["dst_addr"]) for x in subs] == [
        (iface_address(p["src_iface"]), iface_address(p["dst_iface"])) for p in paths]
    assert [iface_address(i) for i in (0, 1, 2, 511, 512)] == [
        "10.0.1.1", "10.0.1.2", "10.0.2.1", "10.1.0.2", "10.1.1.1"]


@pytest.mark.parametrize("example", sorted(p.name for p in __import__("pathlib").Path("examples").glob("*.toml")))
def test_a_scenario_saved_as_toml_reads_back_as_the_same_scenario(example, tmp_path):
    from netbraid.resolve import resolve

    s = nb.load_scenario(f"examples/{example}")
    back = nb.load_scenario(s.save(tmp_path / "saved.toml"))
    assert back == s
    assert resolve(back) == resolve(s)  # what the simulator would run
    html = s._repr_html_()
    assert html.count("<tr>") == 3 + len(s.hosts) + len(s.routers) + len(s.links) + len(s.flows)


def test_a_scenario_built_in_python_saves_with_readable_units(tmp_path):
    s = nb.Scenario(name="py", duration="90s")
    s.add_host("a").add_host("b").add_link("a", "b", rate="1.5Mbps", delay="2.5ms", queue="64KB", name="wan")
    s.add_flow("f", "a", "b", window="100KB")
    text = s.to_toml()
    for piece in ('duration = "90s"', 'rate = "1500kbps"', 'delay = "2500us"', 'queue = "64KB"', 'name = "wan"',
                  'window = "100KB"'):
        assert piece in text, text
    assert nb.Scenario.model_validate(__import__("tomllib").loads(text)) == s


def test_results_show_themselves_in_a_notebook(tmp_path):
    nb.sweep("examples/tcp_and_cbr.toml", {"links.r1-r2.delay": ["10ms", "20ms"]}, out=tmp_path / "s", progress=False)
    r = nb.load(tmp_path / "s")
    html = r._repr_html_()
    assert "links.r1-r2.delay" in html and "video" in html and "transfer" in html
    assert "r1-&gt;r2" in html  # the bottleneck is busy
    assert "d1-&gt;r2" not in html  # a CBR stream's reverse direction carries nothing: left out


def test_a_subflow_or_leg_row_has_its_own_addresses_or_none():
    # a relayed flow's legs on emu carry only the nodes they join: their rows
    # must not borrow the flow's end-to-end addresses (compare lines legs up by
    # their nodes, subflows by their addresses)
    import pandas as pd

    from netbraid.compare import _path_key
    from netbraid.tidy import flow_rows

    result = {"events": 0, "wall_s": 0.0, "flows": [{
        "name": "relayed", "kind": "tcp", "src": "s", "dst": "d", "src_addr": "10.0.1.1", "dst_addr": "10.0.4.2",
        "legs": [{"name": "s->a", "from": "s", "to": "a"}, {"name": "a->d", "from": "a", "to": "d"}]}]}
    legs = flow_rows(result, {})[1:]
    assert [(r["src_addr"], r["dst_addr"]) for r in legs] == [(None, None), (None, None)]
    assert [_path_key(pd.Series(r)) for r in legs] == [("relayed", "s", "a"), ("relayed", "a", "d")]
    sim = nb.run("examples/split_proxy.toml", progress=False)
    sim_legs = sim[sim["subflow"].notna()]
    assert sim_legs["src_addr"].notna().all() and sim_legs["src_addr"].nunique() == len(sim_legs)
