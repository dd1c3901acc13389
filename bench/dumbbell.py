"""The dumbbell benchmark of shared/anchors/dumbbell-benchmark.md, with
netbraid and htsim measured side by side, in one sitting on one machine.

Method: for each case (N=10 at 10 Mb/s, N=100 at 1 Gb/s, 180 s simulated;
and, with --case 1000, N=1000 at 10 Gb/s, 60 s simulated)
the scenario is resolved to JSON once, then each netbraid binary runs it in
a child process, so Python's start-up and memory are not counted (the
binary: the statically linked, profile-guided release build of
`netbraid-sim` that bench/sim_binary.py makes, built or brought up to date
first, unless `--binary` is given). htsim runs the same topology and rates
as the anchor's program `htsim_dumbbell` (built from shared/anchors/htsim by
its build.sh, -O3). The runs alternate: in each of `--reps` repetitions
(default 3), every netbraid binary in the order given, then htsim (A B A B
..., or A B C A B C ... with several binaries), so that drift in the
machine's load hits every tool alike.

For each tool the medians over the repetitions are printed:
- wall: elapsed time of the child process (start-up, setup and run, measured
  the same way for every tool); the ratios use it. "loop" is the tool's own
  timing of its event loop only (netbraid's `wall_s`, htsim's `wall_run_s`);
- events: events the simulator executed (htsim: `doNextEvent` calls);
- packet-hops: packets transmitted on every link direction, data and ACKs
  (netbraid counts them; htsim_dumbbell estimates them from its counters:
  every data packet sent crosses the access link, those not dropped at the
  bottleneck two more links, and each data packet reaching a sink causes an
  ACK that crosses three links);
- packet-hops/s = packet-hops / median wall; events/s likewise;
- peak RSS: the child's maximum resident set as GNU time reports it (Debian
  package `time`); without it, the child's rusage, which also counts the
  pages of the forked Python parent and so is only an upper bound;
- ratios "wall / htsim" (below 1: faster than htsim) and "hops/s / htsim"
  (above 1: more packet-hops per second than htsim), and, with several
  binaries, the same against the first binary.

The two simulators do not do the same work per simulated second: htsim's TCP
has no SACK, ACKs every packet and has no receive window; netbraid runs the
anchor's NewReno + SACK with delayed ACKs and 128 KiB buffers. packet-hops/s
is the rate that accounts for that; wall time per run does not. Events and
packet-hops are deterministic (fixed seed) and the same in every repetition;
a difference is reported.

htsim is located by the environment variable NETBRAID_HTSIM (path to the
`htsim_dumbbell` binary), else bench/.htsim-build/sim/dumb/htsim_dumbbell,
which is built on demand by shared/anchors/htsim/build.sh (needs g++ and
make: Debian package build-essential; about a minute on 2 cores).

    python bench/dumbbell.py --side-by-side        # N=10 and N=100, 3 repetitions each
    python bench/dumbbell.py --case 10 --reps 5    # only N=10
    python bench/dumbbell.py --case 1000           # the scale case (1000 flows, 10 Gb/s, 60 s)
    python bench/dumbbell.py --binary base=/tmp/base/netbraid-sim \\
        --binary new=target/sim/netbraid-sim --json out.json
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import netbraid as nb
from sim_binary import sim_binary

ROOT = Path(__file__).resolve().parent.parent
HTSIM_BUILD_SH = ROOT.parent / "shared" / "anchors" / "htsim" / "build.sh"
HTSIM_BUILD_DIR = ROOT / "bench" / ".htsim-build"
HTSIM_DEFAULT = HTSIM_BUILD_DIR / "sim" / "dumb" / "htsim_dumbbell"
HTSIM = "htsim"

# The cases, by number of flows: bottleneck and access rates (Mb/s),
# simulated seconds, and the start of the measurement (s). 10 and 100 are
# the anchor's; 1000 is issue 17's scale case (flows start 10 ms apart, so
# the last starts at 10.09 s and the window opens later).
CASES = {
    10: {"bneck_mbps": 10, "access_mbps": 100, "simulated_s": 180, "measure_from_s": 10},
    100: {"bneck_mbps": 1000, "access_mbps": 10000, "simulated_s": 180, "measure_from_s": 10},
    1000: {"bneck_mbps": 10000, "access_mbps": 10000, "simulated_s": 60, "measure_from_s": 15},
}


def htsim_args(n: int) -> list[str]:
    """htsim_dumbbell's arguments for case n (shared/anchors/htsim/build.sh)."""
    c = CASES[n]
    return ["-n", str(n), "-bneck", str(c["bneck_mbps"]), "-access", str(c["access_mbps"]),
            "-t", str(c["simulated_s"]), "-warmup", str(c["measure_from_s"]), "-seed", "1"]


# ns-3.48 as recorded in shared/anchors/dumbbell-benchmark.md on another day
# (median wall s, events, packet-hops, RSS MiB): printed for reference only,
# never used for a ratio (ns-3 cannot be run in the same sitting here).
NS3_RECORDED = {
    10: (8.37, 2_434_057, 691_588, 17.4),
    100: (1529.0, 236_089_886, 66_858_416, 37.0),
}


def anchor_scenario(n: int) -> nb.Scenario:
    """N senders → R1 → R2 → N receivers, as the anchor describes."""
    c = CASES[n]
    access = f"{c['access_mbps']}Mbps"
    s = nb.Scenario(
        name=f"anchor-dumbbell-{n}",
        duration=f"{c['simulated_s']}s",
        tcp=nb.TcpOptions(
            cc="newreno", recovery="sack", mss=1448, header_bytes=52,  # 1500-byte IP packets
            window="128KB",  # ns-3 default socket buffers (131072 B)
            delayed_ack=True, delack_count=2, delack_timeout="200ms", rto_min="1s",
        ),
    )
    s.add_host("L", count=n).add_host("D", count=n).add_router("R1").add_router("R2")
    s.add_link("L", "R1", rate=access, delay="2ms", queue="1000p")
    s.add_link("R1", "R2", rate=f"{c['bneck_mbps']}Mbps", delay="5ms", queue="100p")
    s.add_link("R2", "D", rate=access, delay="2ms", queue="1000p")
    s.add_flow("tcp", "L", "D", start="0.1s", start_step="10ms")
    s.measure = nb.Measure(start=f"{c['measure_from_s']}s", stop=f"{c['simulated_s']}s")
    return s


GNU_TIME = Path("/usr/bin/time")


def run_child(cmd: list[str]) -> tuple[float, str, float, bool]:
    """Run cmd; (wall seconds, stdout, peak RSS MiB, whether the RSS is exact)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        full = [str(GNU_TIME), "-f", "%M", "-o", rss_file.name, *cmd] if GNU_TIME.exists() else cmd
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        if proc.returncode != 0:
            sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-2000:]}")
        if GNU_TIME.exists():
            return wall, stdout, int(rss_file.read().strip().splitlines()[-1]) / 1024, True
        return wall, stdout, usage.ru_maxrss / 1024, False


_UNKNOWN = re.compile(r"unknown field `(\w+)`")
# Fields newer builds added with a neutral default: an older build (compared
# side by side) runs the same scenario without them.
NEUTRAL = {"cc_params": {}, "nodelay": False, "read_rate_bps": None, "paths": []}


def _drop(obj, key: str) -> bool:
    """Remove `key` wherever it holds its neutral value; False if it holds another."""
    ok = True
    if isinstance(obj, dict):
        if key in obj:
            if obj[key] != NEUTRAL.get(key, object()):
                return False
            del obj[key]
        for v in obj.values():
            ok &= _drop(v, key)
    elif isinstance(obj, list):
        for v in obj:
            ok &= _drop(v, key)
    return ok


def compatible(binary: Path, resolved: dict) -> tuple[dict, list[str]]:
    """The resolved scenario as `binary` reads it: fields it does not know
    (added later, at their neutral defaults) are dropped; returns the
    scenario and the dropped field names."""
    doc, dropped = json.loads(json.dumps(resolved)), []
    while True:
        probe = {**doc, "duration_ns": 1_000_000, "measure": {"start_ns": 0, "stop_ns": 1_000_000, "interval_ns": None}}
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(probe, f)
            f.flush()
            proc = subprocess.run([str(binary), f.name], capture_output=True, text=True)
        if proc.returncode == 0:
            return doc, dropped
        m = _UNKNOWN.search(proc.stderr)
        if not m or m.group(1) in dropped or not _drop(doc, m.group(1)):
            sys.exit(f"{binary} cannot run this scenario: {proc.stderr.strip()[-500:]}")
        dropped.append(m.group(1))


def run_netbraid(binary: Path, scenario_json: str) -> dict:
    wall, stdout, rss, exact = run_child([str(binary), scenario_json])
    r = json.loads(stdout)
    g = [fl["goodput_bps"] for fl in r["flows"]]
    return {
        "wall_s": wall, "loop_s": r["wall_s"], "events": r["events"], "packet_hops": r["packet_hops"],
        "rss_mib": rss, "rss_exact": exact,
        "agg_goodput_bps": sum(g), "flow_goodput_min_bps": min(g), "flow_goodput_max_bps": max(g),
        "jain": nb.jain_fairness(g),
        "bottleneck_drops": sum(l["queue_drops"] for l in r["links"]),
        "retransmits": sum(fl["retransmits"] for fl in r["flows"]),
    }


_KV = re.compile(r"([A-Za-z_]+(?:\([^)]*\))?)=(\S+)")


def parse_htsim(stdout: str) -> dict[str, float]:
    """The key=value summary lines of htsim_dumbbell (its trace lines start with "At ")."""
    kv = {}
    for line in stdout.splitlines():
        if not line.startswith("At "):
            kv.update((k, float(v)) for k, v in _KV.findall(line))
    return kv


def run_htsim(binary: Path, n: int) -> dict:
    wall, stdout, rss, exact = run_child([str(binary), *htsim_args(n)])
    kv = parse_htsim(stdout)
    try:
        agg = next(v for k, v in kv.items() if k.startswith("agg_goodput_bps(steady"))
        return {
            "wall_s": wall, "loop_s": kv["wall_run_s"], "events": int(kv["events"]),
            "packet_hops": int(kv["packet_hops_est"]), "rss_mib": rss, "rss_exact": exact,
            "agg_goodput_bps": agg, "flow_goodput_min_bps": kv["flow_min_bps(steady)"],
            "flow_goodput_max_bps": kv["flow_max_bps(steady)"], "jain": kv["jain(steady)"],
            "bottleneck_drops": int(kv["bneck_drops"]),
        }
    except (KeyError, StopIteration) as e:
        sys.exit(f"unexpected htsim_dumbbell output (missing {e}):\n{stdout[-2000:]}")


def locate_htsim() -> Path:
    """NETBRAID_HTSIM, else bench/.htsim-build/..., built on demand."""
    env = os.environ.get("NETBRAID_HTSIM")
    if env:
        p = Path(env).expanduser().resolve()
        if not (p.is_file() and os.access(p, os.X_OK)):
            sys.exit(f"NETBRAID_HTSIM={env}: not an executable file")
        return p
    if HTSIM_DEFAULT.exists():
        return HTSIM_DEFAULT
    if not HTSIM_BUILD_SH.exists():
        sys.exit(f"htsim not found: set NETBRAID_HTSIM to htsim_dumbbell, or provide {HTSIM_BUILD_SH}")
    missing = [t for t in ("g++", "make") if shutil.which(t) is None]
    if missing:
        sys.exit(f"building htsim needs {' and '.join(missing)}: "
                 "apt-get update && apt-get install -y build-essential (or set NETBRAID_HTSIM)")
    print(f"building htsim into {HTSIM_BUILD_DIR} (about a minute) ...", flush=True)
    build = subprocess.run(["bash", str(HTSIM_BUILD_SH), str(HTSIM_BUILD_DIR)], capture_output=True, text=True)
    if build.returncode != 0:  # compiler warnings are only shown when the build fails
        sys.exit(f"{HTSIM_BUILD_SH} failed ({build.returncode}):\n{(build.stdout + build.stderr)[-4000:]}")
    if not HTSIM_DEFAULT.exists():
        sys.exit(f"{HTSIM_BUILD_SH} did not produce {HTSIM_DEFAULT}")
    return HTSIM_DEFAULT


def parse_binaries(specs: list[str] | None) -> dict[str, Path]:
    """--binary [LABEL=]PATH, in order; the default is bench/sim_binary.py's build."""
    if not specs:
        return {"netbraid": sim_binary()}
    out: dict[str, Path] = {}
    for i, spec in enumerate(specs):
        label, sep, path = spec.partition("=")
        if not sep:
            label, path = ("netbraid" if len(specs) == 1 else f"netbraid{i + 1}"), spec
        p = Path(path).expanduser().resolve()
        if not label or label == HTSIM or label in out:
            sys.exit(f"--binary {spec}: label must be non-empty, unique and not '{HTSIM}'")
        if not (p.is_file() and os.access(p, os.X_OK)):
            sys.exit(f"--binary {spec}: {p} is not an executable file")
        out[label] = p
    return out


def sha256_12(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()[:12]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def summarise(runs: list[dict]) -> dict:
    walls = [r["wall_s"] for r in runs]
    med = statistics.median(walls)
    last = runs[-1]
    s = {
        "wall_median_s": med, "wall_min_s": min(walls), "wall_max_s": max(walls),
        "loop_median_s": statistics.median(r["loop_s"] for r in runs),
        "events": last["events"], "packet_hops": last["packet_hops"],
        "events_per_s": last["events"] / med, "packet_hops_per_s": last["packet_hops"] / med,
        "peak_rss_mib": max(r["rss_mib"] for r in runs), "rss_exact": all(r["rss_exact"] for r in runs),
        "deterministic": len({(r["events"], r["packet_hops"]) for r in runs}) == 1,
    }
    for k in ("agg_goodput_bps", "flow_goodput_min_bps", "flow_goodput_max_bps", "jain",
              "bottleneck_drops", "retransmits"):
        if k in last:
            s[k] = last[k]
    return s


def ratios(s: dict, ref: dict) -> dict:
    return {"wall": s["wall_median_s"] / ref["wall_median_s"],
            "packet_hops_per_s": s["packet_hops_per_s"] / ref["packet_hops_per_s"]}


def print_case(n: int, reps: int, tools: dict[str, dict], first: str | None) -> None:
    hdr = (f"{'tool':<12} {'wall s median [min-max]':>25} {'loop s':>8} {'events':>13} {'events/s':>9} "
           f"{'packet-hops':>12} {'hops/s':>9} {'RSS MiB':>8} {'wall/htsim':>10} {'hops/s /htsim':>13}")
    if first:
        hdr += f" {'wall/' + first:>14} {'hops/s /' + first:>16}"
    print(hdr)
    for label, t in tools.items():
        s = t["summary"]
        rng = f"{s['wall_median_s']:.3f} [{s['wall_min_s']:.3f}-{s['wall_max_s']:.3f}]"
        rss = f"{s['peak_rss_mib']:.1f}" + ("" if s["rss_exact"] else "≤")
        line = (f"{label:<12} {rng:>25} {s['loop_median_s']:>8.3f} {s['events']:>13,} "
                f"{s['events_per_s'] / 1e6:>8.2f}M {s['packet_hops']:>12,} {s['packet_hops_per_s'] / 1e6:>8.2f}M "
                f"{rss:>8} {t['vs_htsim']['wall']:>9.2f}x {t['vs_htsim']['packet_hops_per_s']:>12.2f}x")
        if first:
            line += (f" {t['vs_first']['wall']:>13.2f}x {t['vs_first']['packet_hops_per_s']:>15.2f}x"
                     if "vs_first" in t else f" {'':>14} {'':>16}")
        print(line)
    for label, t in tools.items():
        s = t["summary"]
        extra = f"; retransmits {s['retransmits']:,}" if "retransmits" in s else ""
        print(f"  {label}: aggregate goodput {s['agg_goodput_bps'] / 1e6:.2f} Mb/s; per flow "
              f"{s['flow_goodput_min_bps'] / 1e6:.2f}-{s['flow_goodput_max_bps'] / 1e6:.2f} Mb/s; "
              f"Jain {s['jain']:.3f}; bottleneck drops {s['bottleneck_drops']:,}{extra}"
              + ("" if s["deterministic"] else "; WARNING: events/packet-hops differ between repetitions"))
    if n in NS3_RECORDED:
        w, ev, hops, rss = NS3_RECORDED[n]
        print(f"  ns-3.48 recorded on another day, for reference only (not comparable): median {w} s, "
              f"events {ev:,}, packet-hops {hops:,}, RSS {rss} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side-by-side", action="store_true",
                    help="run netbraid and htsim alternately in this sitting (what this script always does; "
                         "the flag only says so)")
    ap.add_argument("--case", type=int, choices=sorted(CASES), action="append",
                    help="N (repeatable; default 10 and 100; 1000 is the scale case: 10 Gb/s, 60 s simulated)")
    ap.add_argument("--reps", type=int, default=3, help="alternating repetitions per tool (default 3)")
    ap.add_argument("--binary", action="append", metavar="[LABEL=]PATH",
                    help="a netbraid-sim binary (repeatable; default the static build of bench/sim_binary.py); "
                         "ratios are also given against the first")
    ap.add_argument("--json", metavar="PATH", help="also write the runs and summaries as JSON")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    binaries = parse_binaries(args.binary)
    htsim = locate_htsim()
    first = next(iter(binaries)) if len(binaries) > 1 else None
    started = datetime.datetime.now().astimezone()
    order = [*binaries, HTSIM]
    print(f"dumbbell benchmark, {started:%Y-%m-%d %H:%M:%S %Z}; {platform.node()}; {cpu_model()}; "
          f"{os.cpu_count()} cores, one used per run; load avg {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, p in binaries.items():
        print(f"  {label}: {p} (sha256 {sha256_12(p)})")
    print(f"  {HTSIM}: {htsim} (sha256 {sha256_12(htsim)})")
    print(f"  order per repetition: {' -> '.join(order)}; {args.reps} repetitions")
    report = {
        "started": started.isoformat(timespec="seconds"), "host": platform.node(), "cpu": cpu_model(),
        "cores": os.cpu_count(), "command": sys.argv, "reps": args.reps, "order": order,
        "tools": {**{k: {"path": str(p), "sha256_12": sha256_12(p)} for k, p in binaries.items()},
                  HTSIM: {"path": str(htsim), "sha256_12": sha256_12(htsim),
                          "args": {n: htsim_args(n) for n in CASES}}},
        "cases": {},
    }
    for n in args.case or [10, 100]:
        resolved = nb.resolve(anchor_scenario(n))
        files: dict[str, str] = {}
        for label, p in binaries.items():
            doc, dropped = compatible(p, resolved)
            if dropped:
                print(f"  {label} predates fields {', '.join(dropped)} (all at their neutral defaults here): run without them")
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(doc, f)
            files[label] = f.name
        runs: dict[str, list[dict]] = {k: [] for k in order}
        try:
            for rep in range(args.reps):
                for label, p in binaries.items():
                    runs[label].append(run_netbraid(p, files[label]))
                runs[HTSIM].append(run_htsim(htsim, n))
                print(f"  N={n} repetition {rep + 1}/{args.reps}: "
                      + ", ".join(f"{k} {v[-1]['wall_s']:.3f} s" for k, v in runs.items()), flush=True)
        finally:
            for name in files.values():
                os.unlink(name)
        tools = {k: {"runs": v, "summary": summarise(v)} for k, v in runs.items()}
        for label, t in tools.items():
            t["vs_htsim"] = ratios(t["summary"], tools[HTSIM]["summary"])
            if first and label != HTSIM:
                t["vs_first"] = ratios(t["summary"], tools[first]["summary"])
        print(f"\n== N={n}: {n} flows, {CASES[n]['simulated_s']} s simulated; medians of {args.reps} alternating runs "
              f"(ratios: wall / htsim < 1 and hops/s / htsim > 1 mean faster than htsim)")
        print_case(n, args.reps, tools, first)
        print(flush=True)
        report["cases"][str(n)] = {"flows": n, **CASES[n], "tools": tools}
    report["finished"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
