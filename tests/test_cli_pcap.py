"""The `netbraid run` command, its JSON, results directory and pcap output;
the Python API building the same scenario as a TOML file."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import netbraid as nb

ROOT = Path(__file__).resolve().parent.parent
DUMBBELL = ROOT / "examples" / "dumbbell.toml"


def netbraid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["netbraid", *args], capture_output=True, text=True, timeout=120)


def test_json_has_the_documented_fields():
    r = netbraid("run", str(DUMBBELL), "--json", "--set", "duration=20s")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"events", "wall_s", "flows"} <= doc.keys()
    assert len(doc["flows"]) == 10
    for f in doc["flows"]:
        assert {"name", "kind", "throughput_bps", "goodput_bps", "loss_rate", "retransmits"} <= f.keys()
        # Headers are on the wire: throughput (wire bytes) exceeds goodput (payload).
        assert f["throughput_bps"] > f["goodput_bps"] > 0


def test_set_changes_the_run():
    def total(*extra):
        r = netbraid("run", str(DUMBBELL), "--json", "--set", "duration=30s", *extra)
        assert r.returncode == 0, r.stderr
        return sum(f["goodput_bps"] for f in json.loads(r.stdout)["flows"])

    full, half = total(), total("--set", "links.1.rate=5Mbps")
    # The bottleneck sets the aggregate: halving it halves the goodput (±5 %).
    assert half / full == pytest.approx(0.5, rel=0.05)


def test_results_directory_holds_what_reruns_it(tmp_path):
    r = netbraid("run", str(DUMBBELL), "--set", "duration=15s", "--set", "measure.interval=1s",
                 "--seed", "5", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    for name in ("result.json", "flows.csv", "links.csv", "series_flows.csv", "series_links.csv",
                 "scenario.json", "scenario.resolved.json", "command.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    resolved = json.loads((tmp_path / "scenario.resolved.json").read_text())
    assert resolved["seed"] == 5
    # The resolved scenario alone reproduces the same numbers.
    again = nb.run_resolved(resolved)
    saved = json.loads((tmp_path / "result.json").read_text())
    assert [f["goodput_bps"] for f in again["flows"]] == [f["goodput_bps"] for f in saved["flows"]]


def test_python_api_builds_the_same_scenario_as_toml():
    s = nb.Scenario(name="dumbbell", duration="60s", seed=1,
                    tcp=nb.TcpOptions(cc="newreno", recovery="sack", mss=1448, header_bytes=52,
                                      window="128KB", rto_min="1s"))
    s.add_host("src", count=10).add_host("dst", count=10).add_router("r1").add_router("r2")
    s.add_link("src", "r1", rate="100Mbps", delay="2ms", queue="1000p")
    s.add_link("r1", "r2", rate="10Mbps", delay="5ms", queue="100p")
    s.add_link("r2", "dst", rate="100Mbps", delay="2ms", queue="1000p")
    s.add_flow("bulk", "src", "dst", start="0.1s", start_step="10ms", start_jitter="100ms")
    s.measure = nb.Measure(start="10s")
    assert nb.resolve(s) == nb.resolve(nb.load_scenario(DUMBBELL))


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (apt-get install tshark)")
def test_pcap_reads_cleanly_in_tshark(tmp_path):
    r = netbraid("run", str(DUMBBELL), "--set", "duration=5s", "--set", "measure.start=0s",
                 "--pcap", "r1->r2", "--pcap", "r2->r1", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    for direction in ("r1->r2", "r2->r1"):
        pcap = tmp_path / f"{direction.replace('->', '_to_')}.pcap"
        t = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.number",
                            "-e", "tcp.seq_raw", "-e", "tcp.options.sack_le"],
                           capture_output=True, text=True, timeout=120)
        complaints = [l for l in t.stderr.splitlines() if l.strip() and "Running as user" not in l]
        assert t.returncode == 0 and not complaints, t.stderr
        lines = t.stdout.splitlines()
        # Every packet the link direction sent is in the capture.
        sent = next(l["tx_packets"] for l in result["links"] if l["name"] == direction)
        assert len(lines) == sent
        if direction == "r2->r1":  # ACKs: SACK blocks appear after bottleneck drops
            assert any(line.split("\t")[2] for line in lines)
        # tshark's expert analysis finds nothing malformed.
        expert = subprocess.run(["tshark", "-r", str(pcap), "-q", "-z", "expert"],
                                capture_output=True, text=True, timeout=120).stdout
        assert "Errors (" not in expert and "Malformed" not in expert and "Zero Window" not in expert


def test_tcp_stop_ends_the_transfer():
    s = nb.Scenario(name="stop", duration="10s")
    s.add_host("a").add_host("b")
    s.add_link("a", "b", rate="10Mbps", delay="10ms")
    s.add_flow("f", "a", "b", stop="2s")
    f = nb.simulate(s)["flows"][0]
    # No data after 2 s (+ the last round trip): goodput over the 10 s is at
    # most 2.1 s worth of the link, and the transfer is reported complete.
    assert f["goodput_bps"] * 10 <= 10e6 * 2.1
    assert 2.0 <= f["completion_time_s"] <= 2.5


def test_json_output_is_identical_for_the_same_seed():
    def doc(seed):
        r = netbraid("run", str(ROOT / "examples" / "lossy_path.toml"), "--json", "--seed", str(seed),
                     "--set", "duration=60s")
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        d.pop("wall_s")
        return d

    first, again, other = doc(11), doc(11), doc(12)
    assert first == again
    loss = lambda d: [(l["name"], l["loss_drops"]) for l in d["links"]]
    assert loss(first) != loss(other)


def test_pcap_on_emu_is_refused_from_python_too(tmp_path):
    # The CLI refused it; the Python API used to write an empty capture
    # (the file header only) and run on: the kernel's packets are tcpdump's.
    s = nb.load_scenario(DUMBBELL)
    with pytest.raises(nb.ScenarioError, match=r"--pcap: captures are made by the simulator; on emu use tcpdump"):
        nb.resolve(s, pcap=[("r1->r2", str(tmp_path / "x.pcap"))], backend="emu")
    assert not (tmp_path / "x.pcap").exists()


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (apt-get install tshark)")
def test_mptcp_captures_carry_the_dss_option(tmp_path):
    # RFC 8684 §3.3: each data segment maps its bytes to data sequence
    # numbers (DSN, length = the segment's payload), each ACK carries the
    # cumulative DATA_ACK. Read back by tshark's MPTCP dissector, the two
    # subflows' mappings cover data sequence space from 0 up to the last
    # DATA_ACK without a gap (a byte acknowledged was sent: a capture shows
    # what serialisation started, so data dropped at a queue appears only
    # when it is sent again, which near the end may be after the run).
    example = ROOT / "examples" / "mptcp_two_paths.toml"
    dirs = ["client->server", "server->client", "client->server#2", "server->client#2"]
    args = ["run", str(example), "--set", "duration=2s", "--set", "measure.start=0s", "--out", str(tmp_path)]
    for d in dirs:
        args += ["--pcap", d]
    r = netbraid(*args)
    assert r.returncode == 0, r.stderr
    mapped: list[tuple[int, int]] = []
    data_acks: list[int] = []
    for d in dirs:
        pcap = tmp_path / f"{d.replace('->', '_to_')}.pcap"
        t = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-E", "separator=;", "-e", "tcp.len",
                            "-e", "tcp.options.mptcp.rawdataseqno", "-e", "tcp.options.mptcp.datalvllen",
                            "-e", "tcp.options.mptcp.rawdataack"], capture_output=True, text=True, timeout=120)
        assert t.returncode == 0, t.stderr
        for line in t.stdout.splitlines():
            length, dsn, dlen, dack = line.split(";")
            if int(length) > 0:
                assert dsn and int(dlen) == int(length), line
                mapped.append((int(dsn), int(dsn) + int(dlen)))
            elif dack:
                data_acks.append(int(dack))
        expert = subprocess.run(["tshark", "-r", str(pcap), "-q", "-z", "expert"],
                                capture_output=True, text=True, timeout=120).stdout
        assert "Malformed" not in expert
    assert mapped and data_acks
    acked = max(data_acks)
    assert acked > 10_000_000  # ~2 s of two 50 Mb/s paths
    covered = 0
    for start, end in sorted(mapped):
        if start > covered:
            break
        covered = max(covered, end)
    assert covered >= acked, f"bytes {covered}..{acked} acknowledged but never mapped"
