"""Bad input gets a clear error naming the field, the bad value and what is
allowed — through the real command, never a traceback or a panic."""

import json
import subprocess
import textwrap
from pathlib import Path

import pandas as pd
import pytest

GOOD = """
name = "t"
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
delay = "5ms"

[[links]]
a = "r"
b = "b"
rate = "10Mbps"
delay = "5ms"

[[flows]]
name = "f"
from = "a"
to = "b"
"""


def netbraid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["netbraid", *args], capture_output=True, text=True, timeout=60)


def run_toml(tmp_path, text: str, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(text))
    return netbraid("run", str(path), *extra)


def test_the_good_scenario_runs(tmp_path):
    r = run_toml(tmp_path, GOOD)
    assert r.returncode == 0, r.stderr


# (what is changed in GOOD, words the message must contain)
MISTAKES = {
    "unknown node": (GOOD.replace('b = "r"\nrate', 'b = "rr"\nrate', 1), ["links[0].b", "unknown node 'rr'", "known:"]),
    "link to itself": (GOOD.replace('a = "a"\nb = "r"', 'a = "r"\nb = "r"'), ["links[0]", "itself"]),
    "negative delay": (GOOD.replace('delay = "5ms"', 'delay = "-5ms"', 1), ["links[0].delay", "negative"]),
    "unit typo": (GOOD.replace('rate = "10Mbps"', 'rate = "10Mbsp"', 1), ["links[0].rate", "10Mbsp", "Mbps"]),
    "missing field": (GOOD.replace('rate = "10Mbps"\n', "", 1), ["links[0].rate", "required field is missing"]),
    "unknown congestion control": (GOOD + 'cc = "bic"\n', ["flows[0].cc", "'bic'", "cubic"]),
    "unknown field": (GOOD + 'windw = "64KB"\n', ["flows[0]", "unknown field 'windw'", "window"]),
    "loss above one": (GOOD.replace('delay = "5ms"', 'delay = "5ms"\nloss = 1.5', 1), ["links[0].loss", "1.5", "0 to 1"]),
    "unconnected hosts": (GOOD.replace('[[links]]\na = "r"\nb = "b"', '[[hosts]]\nname = "c"\n[[links]]\na = "c"\nb = "b"'),
                          ["flow 'f'", "no route from 'a' to 'b'"]),
    "group size mismatch": (GOOD.replace('[[hosts]]\nname = "a"', '[[hosts]]\nname = "a"\ncount = 3')
                            .replace('[[hosts]]\nname = "b"', '[[hosts]]\nname = "b"\ncount = 2'),
                            ["flows[0]", "cannot pair group 'a' (3 members)", "'b' (2 members)"]),
    "bad TOML": (GOOD.replace('duration = "10s"', 'duration = 10s'), ["invalid TOML", "line 3"]),
    "measure after the end": (GOOD + '\n[measure]\nstop = "20s"\n', ["measure.stop", "after the end"]),
    "cbr without rate": (GOOD + 'kind = "cbr"\n', ["flows[0]", "rate", "required for a cbr flow"]),
    "duplicate names": (GOOD.replace('name = "b"', 'name = "a"', 1), ["hosts[1].name", "'a' is used twice"]),
    "zero duration": (GOOD.replace('duration = "10s"', 'duration = "0s"'), ["duration", "longer than zero"]),
    "queue unit": (GOOD.replace('delay = "5ms"', 'delay = "5ms"\nqueue = "100 pkgs"', 1), ["links[0].queue", "packets"]),
    # found by fuzzing: values that overflowed, hung or were silently changed
    "delay of centuries": (GOOD.replace('delay = "5ms"', 'delay = "18446744073.709s"', 1), ["links[0].delay", "too large"]),
    "infinite rate": (GOOD.replace('rate = "10Mbps"', 'rate = "1e400Gbps"', 1), ["links[0].rate", "finite"]),
    "bytes per second": (GOOD.replace('rate = "10Mbps"', 'rate = "10MB/s"', 1), ["links[0].rate", "bits per second"]),
    "huge udp datagram": (GOOD + 'kind = "cbr"\nrate = "1Mbps"\npacket_size = 4294967290\n', ["flows[0].packet_size", "65507"]),
    "empty udp datagram": (GOOD + 'kind = "cbr"\nrate = "1Mbps"\npacket_size = 0\n', ["flows[0].packet_size", "got 0"]),
    "zero rto": (GOOD + 'rto_min = "0s"\nrto_initial = "0s"\n', ["rto_min", "longer than zero"]),
    "rto_initial above rto_max": (GOOD + 'rto_initial = "100s"\n', ["rto_initial", "rto_max"]),
    "window below one segment": (GOOD + 'window = 1\n', ["rcvbuf", "smaller than one segment"]),
    "zero bytes": (GOOD + 'bytes = 0\n', ["flows[0].bytes", "got 0"]),
    "too many samples": (GOOD + '\n[measure]\ninterval = "1ns"\n', ["measure.interval", "samples"]),
    "no sample at all": (GOOD + '\n[measure]\ninterval = "20s"\n', ["measure.interval", "20 s is longer than the run",
                                                                   "no sample would be taken"]),
    "flow to a router": (GOOD.replace('to = "b"', 'to = "r"'), ["flows[0].to", "'r' is a router"]),
    "later flows after the end": (GOOD + 'count = 3\nstart_step = "6s"\n', ["flows[0].start_step", "12 s", "duration 10 s"]),
    "boolean as a number": (GOOD + 'mss = true\n', ["flows[0].mss", "integer"]),
    "rich markup in a value": (GOOD.replace('rate = "10Mbps"', 'rate = "[/red]"', 1), ["links[0].rate", "[/red]"]),
    "route via a host": (GOOD + '\n[[routes]]\nnode = "r"\nto = "b"\nvia = "a"\n',
                         ["routes[0].via", "'a' is a host", "must be a router"]),
    "unknown semantics": (GOOD + 'semantics = "bsd"\n', ["flows[0].semantics", "'bsd'", "'rfc' or 'ns2'"]),
    # the message names where the setting was made: on the flow, or in [tcp]
    "ns2 semantics beyond tahoe": (GOOD + 'semantics = "ns2"\n', ["flows[0].semantics", "recovery = \"tahoe\"", "got recovery = \"sack\""]),
    "ns2 semantics in [tcp]": (GOOD + '\n[tcp]\nsemantics = "ns2"\n', ["tcp.semantics", "recovery = \"tahoe\"", "got recovery = \"sack\""]),
    "rack without sack": (GOOD + 'rack = true\nrecovery = "newreno"\n', ["flows[0].rack", "recovery = \"sack\""]),
    "tlp without rack": (GOOD + 'tlp = true\n', ["flows[0].tlp", "rack = true"]),
    "prr without sack": (GOOD + 'prr = true\nrecovery = "reno"\n', ["flows[0].prr", "recovery = \"sack\""]),
    "dsack without sack": (GOOD + 'dsack = true\nrecovery = "newreno"\n', ["flows[0].dsack", "recovery = \"sack\""]),
    "scaling ratio above one": (GOOD + 'scaling_ratio = 1.5\n', ["scaling_ratio", "less than or equal to 1", "1.5"]),
    "window in [tcp] below the flow's segment": (GOOD + 'mss = 9000\n\n[tcp]\nwindow = "8KB"\n',
                                                 ["flows[0].rcvbuf", "8192 B", "at least the mss", "mss 9000 B"]),
    "window in [tcp] below one segment": (GOOD + 'cc = "cubic"\n\n[tcp]\nwindow = 100\n',
                                          ["tcp.rcvbuf", "100 B", "at least the mss"]),
    "header bytes below 40": (GOOD + 'header_bytes = 20\n', ["flows[0].header_bytes", "20", "40 to 120"]),
    # found by a review as a new user: the names and spellings of other tools
    "controller in capitals": (GOOD + 'cc = "Cubic"\n', ["flows[0].cc", "'Cubic'", "lowercase", "did you mean 'cubic'"]),
    "ns-3's controller name": (GOOD + 'cc = "TcpNewReno"\n', ["flows[0].cc", "did you mean 'newreno'"]),
    "loss as a percentage": (GOOD.replace('delay = "5ms"', 'delay = "5ms"\nloss = "1%"', 1),
                             ["links[0].loss", "'1%' is text", "loss = 0.01"]),
    "the profile's rack without sack": (GOOD + 'profile = "linux"\nrecovery = "tahoe"\n',
                                        ["flows[0].rack", 'recovery = "sack"', 'comes from profile = "linux"']),
    "size in bits": (GOOD + 'window = "64kb"\n', ["flows[0].window", "lowercase b reads as bits", '"64KB"']),
    "size below a byte": (GOOD + 'window = "0.5B"\n', ["flows[0].window", "not a whole number of bytes"]),
    "unknown loss model": (GOOD.replace('delay = "5ms"', 'delay = "5ms"\nloss = { model = "gilbert" }', 1),
                           ["links[0].loss", "'gilbert'", "gilbert_elliott"]),
    # found by a bad-input review: the field named is the one set, bounds in the user's units, once
    "zero rto_initial alone": (GOOD + 'rto_initial = "0s"\n', ["rto_initial: must be longer than zero"]),
    "sack delay above RFC 9260's": (GOOD + 'kind = "sctp"\nsctp = { sack_delay = "2s" }\n',
                                    ["sack_delay", "at most 500ms", "RFC 9260"]),
    "sctp rto_min above rto_max": (GOOD + 'kind = "sctp"\nsctp = { rto_min = "5s", rto_max = "1s" }\n',
                                   ["rto_min", "5 s is larger than rto_max (1 s)"]),
    "size above its bound": (GOOD + 'kind = "sctp"\nmessage_size = "3GB"\n', ["message_size", "at most 2GB"]),
    "framing keyword": (GOOD.replace('delay = "5ms"', 'delay = "5ms"\nframing = "wifi"', 1),
                        ["links[0].framing", "'wifi'", '"ethernet"']),
    "stop before start": (GOOD + 'start = "2s"\nstop = "1s"\n', ["stop", "1 s is not after the flow's start (2 s)"]),
    "a table where a list goes": (GOOD.replace("[[flows]]", "[flows]"), ["flows: expected a list", "[[flows]]"]),
    "a list where a table goes": (GOOD.replace('name = "t"', 'name = "t"\ntcp = [1, 2]', 1),
                                  ["tcp: expected a table of settings", "[tcp]"]),
    "a rate below 1 bps": (GOOD.replace('rate = "10Mbps"', 'rate = "0.5bps"', 1),
                           ["links[0].rate", "'0.5bps' is not allowed: a rate is at least 1 bps"]),
    "no route, in words": (GOOD.replace('[[links]]\na = "r"\nb = "b"', '[[hosts]]\nname = "c"\n[[links]]\na = "c"\nb = "b"'),
                           ["no route from 'a' to 'b' in both directions", "allowed: hosts joined both ways by links"]),
}


@pytest.mark.parametrize("kind", sorted(MISTAKES))
def test_mistake_gets_a_clear_error(tmp_path, kind):
    text, words = MISTAKES[kind]
    r = run_toml(tmp_path, text)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    message = " ".join(r.stderr.split())
    for w in words:
        assert w in message, f"{w!r} not in: {message}"


@pytest.mark.parametrize("args,words", [
    (["--set", "links.0.rate"], ["expected PATH=VALUE"]),
    (["--set", "flows.nosuch.cc=cubic"], ["no element named 'nosuch'", "have: f"]),
    (["--set", "links.7.rate=1Mbps"], ["index 7 is out of range"]),
    (["--set", "links.a-b.delay=1ms"], ["no element named 'a-b'", "have: a-r, r-b"]),
    (["--set", "links.0.speed=1Mbps"], ["links[0]", "unknown field 'speed'", "rate"]),
    (["--pcap", "r->x"], ["--pcap", "no link direction 'r->x'"]),
    (["--seed", "-1"], ["--seed", "out of range"]),
])
def test_command_line_mistakes(tmp_path, args, words):
    r = run_toml(tmp_path, GOOD, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    message = " ".join(r.stderr.split())
    for w in words:
        assert w in message, f"{w!r} not in: {message}"


def test_links_are_named_by_their_ends_or_their_name_in_set_and_grid(tmp_path):
    # a link without a name is "a-b" as written; the second between the same ends "a-b#2"
    text = GOOD.replace('[[links]]\na = "r"', '[[links]]\nname = "wan"\na = "r"') + (
        '\n[[links]]\na = "a"\nb = "r"\nrate = "10Mbps"\n')
    r = run_toml(tmp_path, text, "--set", "links.wan.delay=40ms", "--set", "links.a-r#2.rate=3Mbps",
                 "--set", "links.a-r.delay=20ms", "--json")
    assert r.returncode == 0, r.stderr
    links = {l["name"]: l for l in json.loads(r.stdout)["links"]}
    assert links["r->b"]["delay_s"] == 0.040 and links["a->r"]["delay_s"] == 0.020
    assert links["a->r#2"]["rate_bps"] == 3e6 and links["a->r"]["rate_bps"] == 10e6
    r = run_toml(tmp_path, text, "--set", "links.wan.rate=1Mbps", "--set", "links.1.name=x", "--set",
                 "links.2.name=a-r")
    assert r.returncode == 2 and "links[2].name: 'a-r' names links[0] too" in r.stderr, r.stderr
    path = tmp_path / "named.toml"
    path.write_text(text)
    out = tmp_path / "sweep"
    r = netbraid("sweep", str(path), "--grid", "links.wan.delay=1ms,30ms", "--out", str(out), "-q",
                 "--set", "duration=3s")
    assert r.returncode == 0, r.stderr
    runs = pd.read_csv(out / "runs.csv")
    assert sorted(runs["links.wan.delay"].astype(str).unique()) == ["1ms", "30ms"]
    r = netbraid("sweep", str(path), "--grid", "links.lan.delay=1ms,30ms", "--out", str(tmp_path / "s2"), "-q")
    assert r.returncode == 2 and "no element named 'lan'" in r.stderr and "have: a-r, wan, a-r#2" in r.stderr


LOOP = """
name = "loop"
duration = "5s"
[[hosts]]
name = "a"
[[hosts]]
name = "b"
[[routers]]
name = "r1"
[[routers]]
name = "r2"
[[links]]
a = "a"
b = "r1"
rate = "10Mbps"
delay = "1ms"
[[links]]
a = "r1"
b = "r2"
rate = "10Mbps"
delay = "1ms"
[[links]]
a = "r2"
b = "b"
rate = "10Mbps"
delay = "1ms"
[[flows]]
name = "f"
from = "a"
to = "b"
[[routes]]
node = "r2"
to = "b"
via = "r1"
"""


def test_validate_runs_the_engine_checks(tmp_path):
    # r1 sends b's packets to r2 (its shortest path), the static route sends
    # them back: the check took the second visit for a join of two
    # multipath branches, and the run delivered nothing without a word
    path = tmp_path / "s.toml"
    path.write_text(LOOP)
    for command in ("validate", "run"):
        r = netbraid(command, str(path))
        assert r.returncode == 2 and "flow 'f': routing loop r1 -> r2 -> r1" in r.stderr, r.stderr


def test_validate_checks_the_declared_sweep(tmp_path):
    # it said "ok" and `sweep` then failed on the first bad axis
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(GOOD) + '\n[sweep]\ngrid = { "links.0.rate" = ["1Mbps", "2Mbs"] }\n')
    r = netbraid("validate", str(path))
    assert r.returncode == 2 and "2Mbs" in r.stderr and "Traceback" not in r.stderr, r.stderr
    path.write_text(textwrap.dedent(GOOD) + '\n[sweep]\ngrid = { "links.0.rate" = ["1Mbps", "2Mbps"] }\n')
    r = netbraid("validate", str(path))
    assert r.returncode == 0 and "[sweep]: 2 points" in r.stdout, r.stdout + r.stderr


def test_an_axis_value_given_twice_is_refused(tmp_path):
    # two equal points were shown as replications ("n = 2", "identical results")
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(GOOD))
    r = netbraid("sweep", str(path), "--grid", "links.0.rate=1Mbps,1Mbps", "--out", str(tmp_path / "o"), "-q")
    assert r.returncode == 2 and "lists '1Mbps' more than once" in r.stderr and "--reps" in r.stderr, r.stderr
    import netbraid as nb

    with pytest.raises(nb.ScenarioError, match=r"grid\['links.0.rate'\]: expected a list of values"):
        nb.sweep(path, grid={"links.0.rate": "1Mbps"})
    with pytest.raises(nb.ScenarioError, match=r"the axis 'links.0.rate' has no values"):
        nb.sweep(path, grid={"links.0.rate": []})
    # zip axes pair value by value: one of them may repeat a value, a repeated pair is a repeated point
    from netbraid.experiment import Axis, make_plan

    s = nb.load_scenario(path)
    plan = make_plan(s, zipped=[Axis("links.0.rate", ("1Mbps", "1Mbps", "2Mbps")), Axis("seed", (1, 2, 1))])
    assert len(plan.points) == 3
    with pytest.raises(nb.ScenarioError, match=r"the zip axes give the point links.0.rate='1Mbps', seed=1 more than"):
        make_plan(s, zipped=[Axis("links.0.rate", ("1Mbps", "1Mbps")), Axis("seed", (1, 1))])


@pytest.mark.parametrize("args,words", [
    (["--out", "FILE"], ["--out", "not a directory"]),
    (["--out", "/proc/netbraid-nope"], ["--out", "cannot create"]),
])
def test_unwritable_output_is_refused_before_running(tmp_path, args, words):
    (tmp_path / "FILE").write_text("x")
    args = [a.replace("FILE", str(tmp_path / "FILE")) for a in args]
    r = run_toml(tmp_path, GOOD, *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr


def test_a_name_used_twice_is_one_problem(tmp_path):
    r = run_toml(tmp_path, GOOD.replace('name = "b"', 'name = "a"', 1))
    assert r.returncode == 2 and r.stderr.count("used twice") == 1, r.stderr


def test_json_given_to_run_says_what_it_is(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "t", "duration": "1s"}))
    r = netbraid("run", str(path))
    assert r.returncode == 2 and "looks like JSON" in r.stderr and "netbraid-sim" in r.stderr, r.stderr


def test_a_sweep_axis_given_twice_is_refused(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(GOOD))
    r = netbraid("sweep", str(path), "--grid", "links.0.rate=1Mbps", "--grid", "links.0.rate=2Mbps", "--out",
                 str(tmp_path / "o"), "-q")
    assert r.returncode == 2 and "links.0.rate is given twice" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args,words", [
    (["--workers", "0"], ["--workers: 0 is not allowed"]),
    (["--workers", "-3"], ["--workers: -3 is not allowed"]),
    (["--seed", "-1"], ["--seed: -1 is not allowed"]),
    (["--tcp", "rto_min"], ["expected KEY=VALUE", "--tcp rto_min=200ms"]),
])
def test_paper_option_mistakes(tmp_path, args, words):
    r = netbraid("paper", "003", "--quick", "-q", "--out", str(tmp_path / "out"), *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_damaged_results_directories_are_named_not_tracebacks(tmp_path):
    good = tmp_path / "good"
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(GOOD).replace('duration = "10s"', 'duration = "1s"')
                    + '\n[measure]\ninterval = "500ms"\n')
    assert netbraid("run", str(path), "--out", str(good)).returncode == 0
    for name, text, words in (("foreign", '{"a": 1}', ["result.json", "not a run's results"]),
                              ("torn", "{bad", ["result.json", "not valid JSON"])):
        d = tmp_path / name
        d.mkdir()
        (d / "result.json").write_text(text)
        for command in (["report", str(d)], ["plot", str(d)]):
            r = netbraid(*command)
            assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
            for w in words:
                assert w in r.stderr, r.stderr
    # a directory of parts (as a paper writes): a damaged part is named, not passed over as unfinished
    import shutil

    parts = tmp_path / "parts"
    shutil.copytree(good, parts / "a")
    shutil.copytree(tmp_path / "torn", parts / "b")
    r = netbraid("report", str(parts))
    assert r.returncode == 2 and "b/result.json" in r.stderr and "not valid JSON" in r.stderr, r.stderr
    sweep = tmp_path / "sweep"
    assert netbraid("sweep", str(path), "--grid", "links.0.rate=1Mbps,2Mbps", "--out", str(sweep), "-q").returncode == 0
    with (sweep / "journal.jsonl").open("a") as f:
        f.write('{"x": 1}\n')
    r = netbraid("report", str(sweep))
    assert r.returncode == 2 and "journal.jsonl, line 3: not a run" in r.stderr, r.stderr
    # writing where it cannot: a clear --out error
    for target in ("/proc/netbraid-nope.png", str(path / "z.png")):
        r = netbraid("plot", str(good), "--out", target)
        assert r.returncode == 2 and "--out: cannot write" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_python_api_revalidates_what_code_changed(tmp_path):
    import netbraid as nb

    def built():
        s = nb.Scenario(name="x", duration="1s")
        return s.add_host("a").add_host("b").add_link("a", "b", rate="1Mbps", delay="1ms").add_flow("f", "a", "b")

    s = built()
    s.hosts.append("c")  # a list changed in place: its elements' checks never ran
    with pytest.raises(nb.ScenarioError, match=r"hosts\[2\]: expected each entry a table"):
        nb.simulate(s)
    with pytest.raises(nb.ScenarioError, match=r"reps: '3' is not allowed \(an integer, at least 1\)"):
        nb.run(built(), reps="3")
    with pytest.raises(nb.ScenarioError, match=r"save: cannot write"):
        built().save(tmp_path / "no" / "such" / "dir" / "s.toml")
    # nb.resolve takes a path, as nb.simulate does
    path = built().save(tmp_path / "s.toml")
    assert nb.resolve(path)["flows"][0]["name"] == "f"


def test_a_udp_rate_typed_far_too_high_is_warned_about(tmp_path):
    # 10 Tb/s of 1000-B datagrams for 1 s is 1.25e9 datagrams, each simulated
    # (and dropped at the 10 Mb/s link): minutes, for a typo. The warning
    # comes before the run; the run is stopped here.
    path = tmp_path / "s.toml"
    path.write_text(textwrap.dedent(GOOD).replace('duration = "10s"', 'duration = "1s"')
                    + 'kind = "cbr"\nrate = "10Tbps"\n')
    try:
        r = subprocess.run(["netbraid", "run", str(path)], capture_output=True, timeout=15)
        said = r.stderr
    except subprocess.TimeoutExpired as e:  # (the run itself is left unfinished: minutes)
        said = e.stderr or b""
    said = " ".join(said.decode().split())
    assert "about 1.2e+09 datagrams" in said and "flow 'f': 10Tbps of 1000-B datagrams" in said, said
    r = run_toml(tmp_path, GOOD + 'kind = "cbr"\nrate = "10Mbps"\n')
    assert r.returncode == 0 and "datagrams" not in r.stderr, r.stderr


def test_missing_file():
    r = netbraid("run", "/nonexistent/scenario.toml")
    assert r.returncode == 2 and "no such scenario file" in r.stderr and "Traceback" not in r.stderr


def test_python_api_raises_scenario_error():
    import netbraid as nb

    s = nb.Scenario(name="x", duration="1s")
    with pytest.raises(nb.ScenarioError, match=r"links\[0\]\.delay: .*negative"):
        s.add_link("a", "b", rate="1Mbps", delay="-1ms")
    with pytest.raises(nb.ScenarioError, match="duration: required field is missing"):
        nb.Scenario()
    with pytest.raises(nb.ScenarioError, match="duration"):
        s.duration = "soon"
    with pytest.raises(nb.ScenarioError, match=r"flows\[0\]: rate: required for a cbr flow"):
        s.add_flow("u", "a", "b", kind="cbr")
    with pytest.raises(nb.ScenarioError, match="expected a netbraid.Scenario"):
        nb.simulate(5)
    with pytest.raises(nb.ScenarioError, match="seed"):
        nb.resolve(nb.load_scenario(Path(__file__).parent.parent / "examples" / "dumbbell.toml"), seed=-1)
    # the API's own arguments (they raised TypeError or were read a character at a time)
    dumbbell = Path(__file__).parent.parent / "examples" / "dumbbell.toml"
    with pytest.raises(nb.ScenarioError, match=r"seed: 'x' is not allowed \(an integer"):
        nb.simulate(dumbbell, seed="x")
    with pytest.raises(nb.ScenarioError, match=r"pcap: expected a list of \(link direction, file\) pairs"):
        nb.simulate(dumbbell, pcap=["r1->r2"])
    with pytest.raises(nb.ScenarioError, match=r"overrides: expected a list of 'PATH=VALUE' strings, e.g. \['dur"):
        nb.simulate(dumbbell, overrides="duration=5s")
    with pytest.raises(nb.ScenarioError, match=r"workers: 0 is not allowed"):
        nb.run(dumbbell, reps=2, workers=0)
    with pytest.raises(nb.ScenarioError, match=r"^TcpOptions: unknown field 'windw'"):
        nb.TcpOptions(cc="cubic", windw="64KB")
    import pandas as pd

    with pytest.raises(ValueError, match=r"summarize: no column 'nope' in the table; its columns: flow"):
        nb.summarize(pd.DataFrame({"flow": ["f"], "goodput_bps": [1.0]}), by=["nope"], metrics=["goodput_bps"])


@pytest.mark.parametrize("override,words", [
    ("semantics=foo", ["--tcp", "semantics", "'foo'", "'rfc' or 'ns2'"]),
    ("recovery=sack", ["tcp.semantics", "recovery = \"tahoe\""]),
    ("rto_min=abc", ["--tcp", "rto_min", "'abc'"]),
    ("bogus=1", ["unknown TCP setting 'bogus'", "allowed:"]),
])
def test_paper_tcp_override_mistakes(tmp_path, override, words):
    out = tmp_path / "out"
    r = netbraid("paper", "003", "--quick", "-q", "--out", str(out), "--tcp", override)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert not out.exists(), "nothing is written for a command that cannot run"
    message = " ".join(r.stderr.split())
    for w in words:
        assert w in message, f"{w!r} not in: {message}"
