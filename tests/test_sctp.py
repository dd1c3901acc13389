"""SCTP and SCTP-CMT through the scenario layer: the example's contract,
what the paths carry, header overhead, the profiles, and a clear error for
every mistake (protocols.md §6–7; the protocol's own properties are tested
beside the code, in crates/netbraid-sim/src/transport/sctp/tests.rs)."""

import json
import subprocess
from pathlib import Path

import pytest

import netbraid as nb
from netbraid.errors import ScenarioError
from netbraid.resolve import resolve

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sctp_cmt.toml"


def two_paths(rate="20Mbps", **flow) -> nb.Scenario:
    s = nb.Scenario(name="sctp", duration="12s")
    s.add_host("c").add_host("s")
    s.add_link("c", "s", rate=rate, delay="5ms").add_link("c", "s", rate=rate, delay="5ms")
    s.add_flow("a", "c", "s", kind="sctp", **flow)
    s.measure = nb.Measure(start="3s")
    return s


def cli_json(*args: str) -> dict:
    r = subprocess.run(["netbraid", "run", str(EXAMPLE), "--json", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_example_carries_at_least_1_7_times_plain_sctp_with_cmt():
    cmt = cli_json()["flows"][0]
    assert cmt["kind"] == "sctp"
    assert [p["name"] for p in cmt["subflows"]] == ["assoc#0", "assoc#1"]
    for off in ("flows.0.cmt=false", "flows.assoc.cmt=false"):
        plain = cli_json("--set", off)["flows"][0]
        assert cmt["goodput_bps"] >= 1.7 * plain["goodput_bps"], (cmt["goodput_bps"], plain["goodput_bps"])


def test_plain_sctp_sends_new_data_on_the_primary_only():
    for primary in (0, 1):
        r = nb.simulate(two_paths(window="1MB", primary=primary))
        paths = r["flows"][0]["subflows"]
        assert paths[primary]["goodput_bps"] > 0.9 * 20e6 * 1452 / 1500
        assert paths[1 - primary]["goodput_bps"] == 0


def test_goodput_is_1452_of_every_1500_bytes_on_the_wire():
    f = nb.simulate(two_paths(window="1MB", cmt=True))["flows"][0]
    assert f["goodput_bps"] / f["throughput_bps"] == pytest.approx(1452 / 1500, abs=0.003)


def test_profiles_set_their_constants_under_the_users():
    def cfg(**flow):
        return resolve(two_paths(**flow))["flows"][0]["sctp"]

    assert "rto_initial" not in cfg()  # RFC 9260's 1 s: the simulator's default
    assert cfg(sctp={"profile": "rfc4960"})["rto_initial"] == 3_000_000_000
    bsd = cfg(sctp={"profile": "freebsd", "max_burst": 4}, cmt=True)
    assert (bsd["rtx_policy"], bsd["dac"], bsd["max_burst"], bsd["sender_chunk_overhead"]) == ("cwnd", False, 4, 256)
    assert cfg(window="64KB")["rcvbuf"] == 65536
    s = two_paths()
    s.sctp = nb.schema.SctpOptions(profile="freebsd")
    assert resolve(s)["flows"][0]["sctp"]["fr_min_mtus"] == 2


def test_per_path_series_have_windows_and_rtts():
    s = two_paths(window="1MB", cmt=True)
    s.measure = nb.Measure(start="3s", interval="1s")
    series = nb.simulate(s)["series"]["flows"][0]
    assert [p["name"] for p in series["subflows"]] == ["a#0", "a#1"]
    assert all(c and c > 0 for c in series["subflows"][1]["cwnd_bytes"][3:])
    assert all(r and r > 0.01 for r in series["subflows"][0]["srtt_s"][3:])


@pytest.mark.parametrize("flow, field, says", [
    ({"cmt": True, "paths": [{"from_iface": 0}]}, "flows[0].cmt", "two paths or more"),
    ({"primary": 2}, "flows[0].primary", "0, 1"),
    ({"cmt": True, "rtx_policy": "fastest"}, "rtx_policy", "same"),
    ({"rtx_policy": "cwnd"}, "flows[0].rtx_policy", "cmt = true"),
    ({"cc": "cubic"}, "cc", "sctp"),
    ({"paths": [{"from_iface": 0, "backup": True}]}, "backup", "SCTP"),
    ({"from_iface": 1}, "from_iface", "paths"),
    ({"sctp": {"sack_delay": "1s"}}, "sack_delay", "at most 500ms"),
    ({"sctp": {"profile": "linux"}}, "profile", "freebsd"),
])
def test_mistakes_are_named(flow, field, says):
    with pytest.raises(ScenarioError) as e:
        resolve(two_paths(**flow))
    msg = str(e.value)
    assert field in msg and says in msg, msg


def test_sctp_fields_on_other_kinds_are_refused():
    s = nb.Scenario(name="x", duration="1s")
    s.add_host("c").add_host("s").add_link("c", "s", rate="1Mbps")
    with pytest.raises(ScenarioError, match="cmt: applies only to sctp flows"):
        s.add_flow("t", "c", "s", cmt=True)


def test_emu_refuses_the_simulators_sctp_settings_by_name():
    resolve(two_paths(cmt=True, window="1MB", message_size="1KB", sctp={"dac": True, "profile": "freebsd"}),
            backend="emu")  # what usrsctp takes
    for flow, says in (({"cmt": True, "rtx_policy": "same"}, r"flows\[0\].rtx_policy: set on sim only"),
                       ({"sctp": {"sack_freq": 1}}, r"flows\[0\].sctp.sack_freq: set on sim only.*dac")):
        with pytest.raises(ScenarioError, match=says):
            resolve(two_paths(**flow), backend="emu")
