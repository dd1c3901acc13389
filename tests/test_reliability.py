"""What a careful user does to a tool: numbers too large for any unit,
duplicate keys, a sweep killed the way a batch scheduler or the
out-of-memory killer kills it, two commands writing one results directory,
a scenario bigger than the machine. Each gets a clean error or a clean end:
exit 2 (or 130/143 when stopped) with a message naming what was wrong, no
traceback, no process left behind, no results mixed up."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_errors import GOOD, netbraid, run_toml

SLOW_POINT = GOOD.replace('duration = "10s"', 'duration = "60s"').replace('rate = "10Mbps"', 'rate = "1Gbps"')


def clean_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr, r.stderr
    message = " ".join(r.stderr.split())
    for w in words:
        assert w in message, f"{w!r} not in: {message}"


# ---- numbers too large for the unit ------------------------------------------------------

HUGE = {
    "duration": (GOOD.replace('duration = "10s"', 'duration = "1e308s"'), "duration"),
    "rate": (GOOD.replace('rate = "10Mbps"', 'rate = "1e308Mbps"', 1), "links[0].rate"),
    "delay": (GOOD.replace('delay = "5ms"', 'delay = "1e308ms"', 1), "links[0].delay"),
    "start": (GOOD + 'start = "1e308s"\n', "flows[0].start"),
    "bytes": (GOOD + 'bytes = "1e308KB"\n', "flows[0].bytes"),
    "window": (GOOD + 'window = "1e308MB"\n', "flows[0].window"),
    "queue in bytes": (GOOD.replace('delay = "5ms"', 'delay = "5ms"\nqueue = "1e308KB"', 1), "links[0].queue"),
    "queue in packets": (GOOD.replace('delay = "5ms"', 'delay = "5ms"\nqueue = "1e308p"', 1), "links[0].queue"),
}


@pytest.mark.parametrize("command", ["run", "validate"])
@pytest.mark.parametrize("case", sorted(HUGE))
def test_huge_values_in_a_file(tmp_path, command, case):
    text, field = HUGE[case]
    path = tmp_path / "s.toml"
    path.write_text(text)
    clean_error(netbraid(command, str(path)), field, "too large", "allowed: up to")


@pytest.mark.parametrize("assignment,field", [
    ("duration=1e308s", "duration"), ("links.0.rate=1e308Mbps", "links[0].rate"),
    ("links.0.delay=1e308s", "links[0].delay"), ("flows.f.window=1e308KB", "flows[0].window"),
])
def test_huge_values_through_set_and_grid(tmp_path, assignment, field):
    clean_error(run_toml(tmp_path, GOOD, "--set", assignment), field, "too large")
    path = tmp_path / "s.toml"
    path.write_text(GOOD)
    path_, value = assignment.split("=")
    r = netbraid("sweep", str(path), "--grid", f"{path_}=1ms,{value}" if "delay" in path_ else f"{path_}={value}",
                 "--out", str(tmp_path / "sweep"), "-q")
    clean_error(r, field, "too large")


def test_the_issue_command_names_duration(tmp_path):
    # printf 'name = "x"\nduration = "1e308s"\n' > x.toml && netbraid run x.toml
    r = subprocess.run("printf 'name = \"x\"\\nduration = \"1e308s\"\\n' > x.toml && netbraid run x.toml",
                       shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    clean_error(r, "duration", "1e308s")


@pytest.mark.parametrize("text,words", [
    ('name = "x"\nduration = "1s"\nname = "y"\n', ["the key 'name' is given twice", "line 3"]),
    ('name = "x"\nduration = "1s"\n[tcp]\ncc = "reno"\n[tcp]\ncc = "cubic"\n', ["the table [tcp] is declared twice"]),
    (GOOD + 'cc = "reno"\ncc = "cubic"\n', ["the key 'cc' is given twice in [[flows]]"]),
])
def test_duplicate_keys_are_named(tmp_path, text, words):
    clean_error(run_toml(tmp_path, text), *words)


def test_the_allowed_maximum_and_negative_zero_are_accepted(tmp_path):
    text = GOOD.replace('rate = "10Mbps"', 'rate = "10Tbps"', 1).replace('delay = "5ms"', 'delay = "-0s"', 1)
    r = run_toml(tmp_path, text, "--set", "duration=1s", "--json")
    assert r.returncode == 0, r.stderr
    links = json.loads(r.stdout)["links"]
    assert links[0]["rate_bps"] == 10**13 and links[0]["delay_s"] == 0


# ---- memory -------------------------------------------------------------------------------


def test_a_scenario_that_cannot_fit_is_refused_before_it_is_built(tmp_path):
    # Ten groups of a million hosts, each host with its link: tens of GiB.
    groups = "".join(f'[[hosts]]\nname = "g{k}"\ncount = 1000000\n[[links]]\na = "g{k}"\nb = "r"\n'
                     f'rate = "1Mbps"\ndelay = "1ms"\n' for k in range(10))
    path = tmp_path / "big.toml"
    path.write_text(f'name = "big"\nduration = "1s"\n[[routers]]\nname = "r"\n{groups}'
                    '[[flows]]\nname = "f"\nfrom = "g00"\nto = "g10"\n')
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.stderr.write(r.stderr); "
            "sys.exit(r.returncode)")
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code, "netbraid", "run", str(path)], capture_output=True, text=True,
                       timeout=120)
    clean_error(r, "GiB of memory", "10,000,001 nodes", "available")
    assert time.monotonic() - started < 30
    assert int(r.stdout.split()[0]) < 1024 * 1024, "refused before the hosts were expanded (peak below 1 GiB)"


# ---- processes ----------------------------------------------------------------------------


def children_of(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def start_sweep(tmp_path: Path, out: Path, *extra: str) -> subprocess.Popen:
    path = tmp_path / "slow.toml"
    path.write_text(SLOW_POINT)
    return subprocess.Popen(["netbraid", "sweep", str(path), "--grid", "links.0.delay=1ms,2ms,3ms,4ms,5ms,6ms",
                             "--reps", "2", "--workers", "2", "--out", str(out), "-q", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigkill_of_a_sweep_leaves_no_worker(tmp_path):
    p = start_sweep(tmp_path, tmp_path / "out")
    try:
        wait_for(lambda: len(children_of(p.pid)) >= 2, 60, "the sweep's workers")
        workers = children_of(p.pid)
        time.sleep(0.5)  # the workers are running simulations
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        wait_for(lambda: not any(alive(w) for w in workers), 5, "the workers to exit after their parent's SIGKILL")
    finally:
        p.kill()
        p.wait()


def test_sigterm_saves_the_finished_runs_and_exits_143(tmp_path):
    out = tmp_path / "out"
    p = start_sweep(tmp_path, out)
    wait_for(lambda: (out / "journal.jsonl").exists() and (out / "journal.jsonl").read_text().count("\n") >= 1, 120,
             "the first finished run")
    workers = children_of(p.pid)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143, err
    assert "Traceback" not in err and "interrupted" in err and "--resume" in err
    saved = (out / "journal.jsonl").read_text().count("\n")
    assert saved >= 1
    wait_for(lambda: not any(alive(w) for w in workers), 5, "the workers to exit")


def test_a_second_writer_of_a_results_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    p = start_sweep(tmp_path, out)
    try:
        wait_for(lambda: (out / "manifest.json").exists(), 60, "the first sweep's manifest")
        second = netbraid("sweep", str(tmp_path / "slow.toml"), "--grid", "links.0.delay=1ms,2ms,3ms,4ms,5ms,6ms",
                          "--reps", "2", "--out", str(out), "--resume", "-q")
        clean_error(second, "being written by another netbraid", f"pid {p.pid}")
    finally:
        p.kill()
        p.wait()
    # Its holder killed, the directory can be continued at once (the lock died with it).
    third = subprocess.run(["netbraid", "sweep", str(tmp_path / "slow.toml"), "--grid",
                            "links.0.delay=1ms,2ms,3ms,4ms,5ms,6ms", "--reps", "2", "--out", str(out), "--resume",
                            "-q", "--set", "duration=1s"], capture_output=True, text=True, timeout=300)
    clean_error(third, "different sweep", "scenario")  # a changed scenario is not mixed in
    fourth = subprocess.run(["netbraid", "sweep", str(tmp_path / "slow.toml"), "--grid",
                             "links.0.delay=1ms,2ms,3ms,4ms,5ms,6ms", "--reps", "2", "--out", str(out), "--resume",
                             "-q"], capture_output=True, text=True, timeout=600)
    assert fourth.returncode == 0, fourth.stderr


# ---- results directories ------------------------------------------------------------------


def test_run_out_into_a_sweep_directory_is_refused(tmp_path):
    out = tmp_path / "sweep"
    path = tmp_path / "s.toml"
    path.write_text(GOOD)
    assert netbraid("sweep", str(path), "--grid", "links.0.delay=1ms,2ms", "--out", str(out), "-q",
                    "--set", "duration=1s").returncode == 0
    before = (out / "scenario.resolved.json").read_text()
    r = netbraid("run", str(path), "--out", str(out), "--set", "links.0.rate=1Mbps")
    clean_error(r, "holds the results of `netbraid sweep`", "--overwrite")
    assert (out / "scenario.resolved.json").read_text() == before
    r = netbraid("run", str(path), "--reps", "2", "--out", str(out), "--set", "duration=1s", "-q")
    clean_error(r, "holds the results of `netbraid sweep`, not of `netbraid run --reps`")
    r = netbraid("run", str(path), "--out", str(out), "--overwrite", "--set", "duration=1s")
    assert r.returncode == 0, r.stderr
    assert not (out / "manifest.json").exists() and (out / "result.json").exists()


def test_a_single_run_directory_takes_only_its_own_scenario(tmp_path):
    out = tmp_path / "one"
    assert run_toml(tmp_path, GOOD, "--out", str(out), "--set", "duration=1s").returncode == 0
    assert run_toml(tmp_path, GOOD, "--out", str(out), "--set", "duration=1s").returncode == 0  # a re-run
    clean_error(run_toml(tmp_path, GOOD, "--out", str(out), "--set", "duration=2s"), "another scenario", "--overwrite")
    clean_error(netbraid("sweep", str(tmp_path / "s.toml"), "--grid", "links.0.delay=1ms", "--out", str(out), "-q"),
                "a single run's results")


def test_run_reps_resumes(tmp_path):
    out = tmp_path / "reps"
    first = run_toml(tmp_path, GOOD, "--reps", "2", "--out", str(out), "--set", "duration=1s", "-q")
    assert first.returncode == 0, first.stderr
    again = run_toml(tmp_path, GOOD, "--reps", "2", "--out", str(out), "--set", "duration=1s", "-q")
    clean_error(again, "already holds results", "--resume")
    resumed = run_toml(tmp_path, GOOD, "--reps", "2", "--out", str(out), "--set", "duration=1s", "-q", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "journal.jsonl").read_text().count("\n") == 2  # nothing ran twice
    clean_error(run_toml(tmp_path, GOOD, "--resume"), "--resume", "--reps N --out DIR")
