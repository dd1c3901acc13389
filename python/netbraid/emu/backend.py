"""One run of one resolved scenario on real stacks, returned in the
simulator's result schema (so replications, sweeps and reports work as they
are). Everything the run creates is removed on success, error, Ctrl-C and
SIGTERM; after a SIGKILL, ``netbraid emu cleanup`` (or the next emu run)
removes the namespaces, and the processes die with their parent."""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..lifetime import sigterm_as_interrupt
from ..resolve import direction_names, label_links
from . import fidelity, platform
from .netns import EmuError
from .registry import RunRecord, cleanup_stale, delete_namespaces, new_run_id
from .topology import Topology, forwarding_table, interfaces, route_channels
from .traffic import IperfFlow, SctpFlow, UdpFlow, whole_seconds

#: TCP settings the emu backend can honour (how is in docs/emu.md); any
#: other explicitly set TCP field is an error on emu rather than ignored.
EMU_TCP_FIELDS = {"profile", "cc", "recovery", "mss", "window", "rcvbuf", "sndbuf", "initial_window", "rto_min",
                  "delayed_ack", "ecn", "sack_compression", "sack_compression_delay"}
SETUP_MARGIN_NS = 1_500_000_000


def _plan(resolved: dict[str, Any], forwarding: list[dict[str, Any]]):
    """Per-flow emu specs, and the host settings and route attributes they need."""
    nodes = resolved["nodes"]
    _, ifaces_of = interfaces(resolved)
    out_of = {(r["node"], r["dst_iface"]): r["channels"][0] for r in forwarding}

    def leaving_iface(node: int, dst_iface: int) -> int:
        attached = [i for i in ifaces_of[node] if i // 2 == dst_iface // 2]
        return attached[0] if attached else out_of[(node, dst_iface)]

    problems: list[str] = []
    for n in nodes:
        if n["router"] and n["multipath"] in ("round_robin", "weighted"):
            problems.append(f"routers ({n['name']}).multipath: {n['multipath']!r} cannot be emulated: Linux spreads "
                            "traffic per flow (use \"ecmp\"), not per packet; run it on sim")
    for l, link in enumerate(resolved["links"]):
        for d in ("ab", "ba"):
            if link[d]["queue"].get("red"):
                problems.append(f"links[{l}].red: RED is not emulated yet (linkemu has a tail-drop FIFO); run it on sim")
    available = platform.available_congestion_controls()
    specs: list[dict[str, Any]] = []
    host_sysctls: dict[int, dict[str, Any]] = {}
    route_attrs: dict[tuple[int, int], str] = {}
    mptcp: list[dict[str, Any]] = []
    source_ifaces: set[int] = set()
    pinned: dict[tuple[int, int], int] = {}

    def set_sysctl(node: int, key: str, value: int, why: str) -> None:
        have = host_sysctls.setdefault(node, {})
        if have.get(key, value) != value:
            problems.append(f"{why}: host '{nodes[node]['name']}' needs {key}={value} for one flow and "
                            f"{have[key]} for another; on emu it is one setting per host")
        have[key] = value

    relays = []
    for i, p in enumerate(resolved.get("proxies", [])):
        # Each proxy is `netbraid proxy` in its node's namespace: the
        # incoming leg's receive buffer and the outgoing leg's controller and
        # send buffer are its per-leg socket options (the MSS on both legs);
        # SACK is the namespace's.
        where, tcp, explicit = f"proxies[{i}].tcp", p["tcp"], set(p.get("explicit", []))
        allowed = {"profile", "cc", "recovery", "window", "rcvbuf", "sndbuf", "mss"}
        for field in sorted(explicit - allowed):
            problems.append(f"{where}.{field}: cannot be set on an emu proxy (the Linux stack decides it); remove it "
                            f"or run on sim (settable on emu: {', '.join(sorted(allowed))})")
        cc = "reno" if tcp["cc"] in ("reno", "newreno") else tcp["cc"]
        if available and cc not in available:
            problems.append(f"{where}.cc: {tcp['cc']!r} is not offered by this kernel (available: {', '.join(available)})")
        if tcp["recovery"] not in ("sack", "newreno"):
            problems.append(f"{where}.recovery: {tcp['recovery']!r} cannot be emulated (allowed on emu: sack, newreno)")
        set_sysctl(p["node"], "net.ipv4.tcp_sack", 1 if tcp["recovery"] == "sack" else 0, where + ".recovery")
        relays.append({"node": p["node"], "node_name": nodes[p["node"]]["name"], "addr_iface": ifaces_of[p["node"]][0],
                       "buffer_bytes": p["buffer_bytes"], "linux_cc": cc,
                       "rcvbuf": tcp["rcvbuf"] if explicit & {"window", "rcvbuf"} else None,
                       "sndbuf": tcp["sndbuf"] if explicit & {"window", "sndbuf"} else None,
                       "mss": tcp["mss"] if "mss" in explicit else None})

    for f in resolved["flows"]:
        where = f"flows ({f['name']})"
        s = {**f, "src_name": nodes[f["src"]]["name"], "dst_name": nodes[f["dst"]]["name"]}
        s["relay"] = [relays[k] for k in f.get("via") or []]
        s["dst_addr_iface"] = f["dst_iface"] if f["dst_iface"] is not None else ifaces_of[f["dst"]][0]
        s["bind_iface"] = f["src_iface"]
        if f["kind"] == "mptcp":  # the connection is the initial subflow: paths[0]
            s["dst_addr_iface"] = f["paths"][0]["dst_iface"]
            if f["paths"][0]["src_iface"] != leaving_iface(f["src"], s["dst_addr_iface"]):
                s["bind_iface"] = f["paths"][0]["src_iface"]
        src_iface = s["bind_iface"] if s["bind_iface"] is not None else leaving_iface(f["src"], s["dst_addr_iface"])
        s["src_addr_iface"] = src_iface
        if s["bind_iface"] is not None:
            source_ifaces.add(s["bind_iface"])
        if f["kind"] in ("tcp", "mptcp"):
            tcp, explicit = f["tcp"], set(f.get("explicit", []))
            for field in sorted(explicit - EMU_TCP_FIELDS):
                problems.append(f"{where}.{field}: cannot be set on the emu backend (the Linux stack decides it); "
                                f"remove it or run on sim (settable on emu: {', '.join(sorted(EMU_TCP_FIELDS))})")
            cc = "reno" if tcp["cc"] in ("reno", "newreno") else tcp["cc"]
            if available and cc not in available:
                problems.append(f"{where}.cc: {tcp['cc']!r} is not offered by this kernel "
                                f"(available: {', '.join(available)})")
            s["linux_cc"] = cc
            if tcp["recovery"] not in ("sack", "newreno"):
                problems.append(f"{where}.recovery: {tcp['recovery']!r} cannot be emulated: Linux recovers with SACK "
                                "or, without SACK, NewReno-style (allowed on emu: sack, newreno)")
            if {"rcvbuf", "sndbuf"} <= explicit and tcp["rcvbuf"] != tcp["sndbuf"] or (
                    len({"rcvbuf", "sndbuf"} & explicit) == 1 and "window" not in explicit):
                problems.append(f"{where}.rcvbuf/sndbuf: on emu both buffers are set together, as iperf3 -w; use window")
            sack = 1 if tcp["recovery"] == "sack" else 0
            for node in (f["src"], f["dst"]):
                set_sysctl(node, "net.ipv4.tcp_sack", sack, f"{where}.recovery")
            if tcp.get("ecn"):
                set_sysctl(f["src"], "net.ipv4.tcp_ecn", 1, f"{where}.ecn")
            attrs = []
            if "initial_window" in explicit:
                attrs.append(f"initcwnd {tcp['initial_window']}")
            if "rto_min" in explicit:
                attrs.append(f"rto_min {max(1, tcp['rto_min'] // 1_000_000)}ms")
            if attrs:
                route_attrs[(f["src"], s["dst_addr_iface"])] = " ".join(attrs)
            if "delayed_ack" in explicit and not tcp["delayed_ack"]:
                route_attrs[(f["dst"], src_iface)] = "quickack 1"
            # SACK compression is the receiving host's (per namespace)
            if "sack_compression" in explicit:
                set_sysctl(f["dst"], "net.ipv4.tcp_comp_sack_nr", tcp["sack_compression"], f"{where}.sack_compression")
            if "sack_compression_delay" in explicit:
                set_sysctl(f["dst"], "net.ipv4.tcp_comp_sack_delay_ns", tcp["sack_compression_delay"],
                           f"{where}.sack_compression_delay")
            if f["kind"] == "mptcp":
                # The kernel's path manager (docs/emu.md): the initial
                # subflow is the connection, from paths[0]'s source to its
                # destination; every other path's source is a `subflow`
                # endpoint (to that same destination); a full mesh adds
                # `fullmesh` to them and the destination announces its other
                # addresses (`signal`), so each source reaches each.
                paths, backup = f["paths"], f.get("mptcp", {}).get("backup") or []
                fullmesh = len({p["dst_iface"] for p in paths}) > 1
                mptcp.append({"src": f["src"], "dst": f["dst"], "primary_iface": src_iface,
                              "subflow_ifaces": list(dict.fromkeys(p["src_iface"] for p in paths[1:]
                                                                   if p["src_iface"] != src_iface)),
                              "signal_ifaces": list(dict.fromkeys(p["dst_iface"] for p in paths[1:]
                                                                  if p["dst_iface"] != s["dst_addr_iface"])),
                              "fullmesh": fullmesh, "subflows": len(paths),
                              "backup_ifaces": [p["src_iface"] for p, b in zip(paths, backup) if b]})
                source_ifaces.update(ifaces_of[f["src"]])
        if f["kind"] == "sctp":
            # each path leaves by its own address's interface, and the SACKs
            # come back by the path they answer
            for p in f["paths"]:
                source_ifaces.update((p["src_iface"], p["dst_iface"]))
                pinned[(f["src"], p["dst_iface"])] = p["src_iface"]
                pinned[(f["dst"], p["src_iface"])] = p["dst_iface"]
        specs.append(s)
    if problems:
        raise ScenarioError(problems)
    return specs, host_sysctls, route_attrs, mptcp, source_ifaces, pinned


def run(resolved: dict[str, Any], *, keep_dir: Path | None = None) -> dict[str, Any]:
    """Run `resolved` (from ``resolve(..., backend="emu")``) once on real stacks."""
    wall0 = time.monotonic()
    mptcp_flow = next((i for i, f in enumerate(resolved["flows"]) if f["kind"] == "mptcp"), None)
    sctp = any(f["kind"] == "sctp" for f in resolved["flows"])
    try:
        platform.check(mptcp=mptcp_flow is not None, sctp=sctp)
    except platform.EmuUnavailable as e:
        if mptcp_flow is not None and platform.unavailable_reason(sctp=sctp) is None:
            # everything else is here: the kernel's MPTCP is what is missing
            raise platform.EmuUnavailable(
                f"flows[{mptcp_flow}].kind: 'mptcp' on emu runs this kernel's MPTCP, and {e}; "
                "allowed here: kind 'tcp', 'udp' or 'sctp' on emu, or the same scenario on the simulator "
                "(--backend sim), whose MPTCP is its own") from None
        raise
    try:
        forwarding = forwarding_table(resolved)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    specs, host_sysctls, route_attrs, mptcp, source_ifaces, pinned = _plan(resolved, forwarding)
    too_fast = fidelity.rate_warnings(resolved)
    fidelity.emit(too_fast)  # now, not after a long run
    cleanup_stale()

    run_id = new_run_id()
    record = RunRecord(run_id)
    record.save()  # the run is live before it creates anything: a concurrent cleanup leaves it alone
    workdir = Path(tempfile.mkdtemp(prefix=f"netbraid-{run_id}-")) if keep_dir is None else keep_dir
    if keep_dir is None:
        record.keep_workdir(workdir)  # listed before anything runs, so a SIGKILL leaves it findable
    topo = Topology(resolved, run_id, record, workdir)
    flows: list[Any] = []
    link_stats: dict[str, Any] = {}
    with sigterm_as_interrupt():
        try:
            topo.build(forwarding, route_attrs, host_sysctls, mptcp, source_ifaces, pinned)
            results, times = _drive(resolved, specs, topo, workdir, flows)
        finally:
            for fl in flows:
                fl.stop()
            if topo.emulator is not None:
                link_stats = {**topo.emulator.stop(), "stopped_ns": time.time_ns()}  # the final counters
            delete_namespaces(topo.created)
            record.remove()
            if keep_dir is None:
                shutil.rmtree(workdir, ignore_errors=True)
    result = _result(resolved, results, link_stats, times, time.monotonic() - wall0, topo)
    _label_paths(result, resolved, forwarding, specs, topo)
    late = fidelity.late_warnings(result["links"])
    fidelity.emit(late)
    result["warnings"] = too_fast + late
    return result


def _drive(resolved, specs, topo, workdir, flows):
    duration = resolved["duration_ns"]
    rng = random.Random(f"{resolved['seed']}/emu-start-jitter")
    for i, s in enumerate(specs):
        if s["kind"] in ("tcp", "mptcp"):
            fl = IperfFlow(s, i, topo, workdir)
            fl.start_server()
        elif s["kind"] == "sctp":
            fl = SctpFlow(s, i, topo, workdir)
        else:
            fl = UdpFlow(s, i, topo, workdir, flow_seed=random.Random(f"{resolved['seed']}/{s['name']}").getrandbits(32))
        flows.append(fl)
    time.sleep(0.3)  # servers listening
    t0 = time.time_ns() + SETUP_MARGIN_NS
    m = resolved["measure"]
    window = (t0 + m["start_ns"], t0 + (m["stop_ns"] if m.get("stop_ns") is not None else duration))
    end = t0 + duration
    starts = []
    for fl in flows:
        s = fl.spec
        jitter = int(rng.random() * s["start_jitter_ns"]) if s.get("start_jitter_ns") else 0
        start = t0 + s["start_ns"] + jitter
        stop = t0 + (s["stop_ns"] if s.get("stop_ns") is not None else duration)
        if isinstance(fl, (UdpFlow, SctpFlow)):
            fl.spec = {**s, "start_ns": start - t0}
            fl.start(t0, stop, window, until_ns=end + 500_000_000)
        else:
            starts.append((start, stop, fl))
    starts.sort(key=lambda x: x[0])
    pending = list(starts)
    # the links' counters at the window's edges, so that link results cover
    # the measurement window, as the simulator's do
    # (a window that opens with the traffic is read just before it, so
    # that the first packets' drops are not missed by a late reading)
    first_start = min([t for t, _, _ in starts] + [t0 + fl.spec["start_ns"] for fl in flows
                                                    if isinstance(fl, (UdpFlow, SctpFlow))], default=window[0])
    edges = [window[0] if window[0] > first_start else min(window[0], t0) - 100_000_000, window[1]]
    snapshots: list[dict[str, Any] | None] = []
    while time.time_ns() < end or any(fl.client is not None and fl.client.poll() is None
                                      for _, _, fl in starts if fl.mptcp):
        now = time.time_ns()
        while pending and pending[0][0] <= now:
            start, stop, fl = pending.pop(0)
            fl.start_client(whole_seconds(stop - start))
        while edges and edges[0] <= now:
            edges.pop(0)
            snapshots.append(topo.emulator.snapshot())
        for _, _, fl in starts:
            if fl.client is not None and fl.client.poll() is None:
                fl.sample_kernel()
        if now > end + 60_000_000_000:
            break
        wake = min([t for t in (pending[0][0] if pending else None, edges[0] if edges else None) if t is not None],
                   default=now + 100_000_000)
        time.sleep(max(0.0, min(0.1, (wake - time.time_ns()) / 1e9)))
    if edges and edges[-1] <= time.time_ns():  # the window closes with the run
        snapshots += [topo.emulator.snapshot() for _ in edges]
    results = []
    for fl in flows:
        if isinstance(fl, IperfFlow):
            doc = fl.finish(timeout=max(30.0, duration / 1e9))
            results.append(fl.result(doc, window))
        else:
            results.append(fl.finish(timeout=30.0, window=window))
    return results, (t0, window, snapshots if len(snapshots) == 2 and all(snapshots) else None)


def _result(resolved, flows, link_stats, times, wall, topo) -> dict[str, Any]:
    t0, window, edges = times
    names = [n["name"] for n in resolved["nodes"]]
    links = []
    duration_s = resolved["duration_ns"] / 1e9
    if edges:
        # counters read at the window's edges: the simulator's definition
        first, last = edges
        # a reading taken before the window opened counts nothing before it (no traffic yet)
        span_s = (last["taken_ns"] - max(first["taken_ns"], window[0])) / 1e9
    else:
        # the window's edges were not read (a run that ended early): the
        # emulator's whole life, traffic from t0 to its stop (iperf3 runs
        # whole seconds; MPTCP is waited for), so utilisation stays ≤ 1
        first, last = {}, link_stats
        span_s = max(duration_s, (link_stats.get("stopped_ns", 0) - t0) / 1e9)

    def counted(l: int, d: str, key: str) -> int | None:
        def at(reading: dict[str, Any]) -> int | None:
            c = reading.get("links", {}).get(f"l{l}", {}).get(d, {})
            if key not in c:
                return None
            # linkemu counts a packet forwarded when it queues it; what was
            # still queued at the reading is sent after it
            unsent = c.get(key.replace("forwarded", "unsent"), 0) if key.startswith("forwarded") else 0
            return c[key] - unsent
        end, begin = at(last), at(first) if first else 0
        return None if end is None else end - (begin or 0)

    def queue_delay(l: int, d: str) -> float | None:
        # the number waiting integrated over the window (linkemu adds a
        # packet's whole wait when it admits it; a reading takes back what
        # is still to come) over the packets sent in it, as the simulator
        wait, ahead, forwarded, lost = (counted(l, d, k) for k in ("queue_wait_ns", "queue_wait_ahead_ns",
                                                                 "forwarded_packets", "loss_drops"))
        if None in (wait, ahead, forwarded, lost) or forwarded + lost <= 0:
            return None
        return (wait - ahead) / 1e9 / (forwarded + lost)

    direction = iter(direction_names(names, resolved["links"]))
    for l, link in enumerate(resolved["links"]):
        for d, a, b in (("ab", link["a"], link["b"]), ("ba", link["b"], link["a"])):
            whole = link_stats.get("links", {}).get(f"l{l}", {}).get(d, {})
            rate, sent = link[d]["rate_bps"], counted(l, d, "forwarded_bytes")
            links.append({
                "name": next(direction), "from": names[a], "to": names[b], "rate_bps": rate,
                "delay_s": link[d]["delay_ns"] / 1e9, "jitter_s": link[d]["jitter_ns"] / 1e9,
                "tx_packets": counted(l, d, "forwarded_packets"),
                "tx_bytes": sent, "queue_drops": counted(l, d, "queue_drops"),
                "loss_drops": counted(l, d, "loss_drops"),
                # lateness over the whole run: a fidelity check, not a metric
                "late_packets": whole.get("late_packets"),
                "max_late_s": whole["max_late_ns"] / 1e9 if whole.get("max_late_ns") is not None else None,
                "utilisation": _utilisation(sent, rate, span_s),
                "queue_delay_s": queue_delay(l, d),
                "counted_over": "window" if edges else "run",
            })
    for f in flows:
        for sub in f.get("subflows", []):
            sub["src_iface"] = _iface_of(topo, sub["src_addr"])
    return {
        "backend": "emu",
        "scenario": resolved.get("name"),
        "seed": resolved["seed"],
        "duration_s": duration_s,
        "measure_start_s": (window[0] - t0) / 1e9,
        "measure_stop_s": (window[1] - t0) / 1e9,
        "events": None,
        "wall_s": wall,
        "realtime": link_stats.get("realtime"),
        "linkemu_cpu_s": link_stats.get("cpu_s"),
        "flows": flows,
        "links": links,
    }


def _utilisation(sent_bytes: int | None, rate_bps: int, span_s: float) -> float | None:
    if not rate_bps or span_s <= 0:
        return None
    u = (sent_bytes or 0) * 8 / (rate_bps * span_s)
    return 1.0 if 1.0 < u < 1.0 + 1e-6 else u  # whole bytes over whole ns: a rounding, not an excess


def _label_paths(result, resolved, forwarding, specs, topo) -> None:
    """What the simulator says of each flow, from the routes emu installed:
    its addresses and the link directions its data and ACKs cross (`links`;
    None through an ECMP router, whose hash the kernel keeps). A relayed
    flow's connection is its first leg's source to the destination."""
    names = direction_names([n["name"] for n in resolved["nodes"]], resolved["links"])

    def used(src_iface: int | None, dst_iface: int | None, bound: bool, acked: bool = True) -> list[str] | None:
        if src_iface is None or dst_iface is None:
            return None
        there = route_channels(resolved, forwarding, src_iface, dst_iface, bound)
        back = route_channels(resolved, forwarding, dst_iface, src_iface, False) if acked else []  # by destination
        return None if there is None or back is None else [names[c] for c in sorted(set(there + back))]

    for row, s in zip(result["flows"], specs):
        row["src_addr"], row["dst_addr"] = topo.addr(s["src_addr_iface"]), topo.addr(s["dst_addr_iface"])
        # a datagram flow has no return traffic
        row["links"] = used(s["src_addr_iface"], s["dst_addr_iface"], s["bind_iface"] is not None,
                            acked=row["kind"] != "udp") if not s.get("relay") else None
        # a subflow on one of the flow's paths takes the simulator's name for it, "flow#k"
        paths = {(topo.addr(p["src_iface"]), topo.addr(p["dst_iface"])): k for k, p in enumerate(s.get("paths") or [])}
        for sub in row.get("subflows") or []:
            sub["links"] = used(_iface_of(topo, sub.get("src_addr")), _iface_of(topo, sub.get("dst_addr")), True)
            k = paths.get((sub.get("src_addr"), sub.get("dst_addr")))
            if k is not None and row["kind"] == "mptcp":
                sub["name"] = f"{row['name']}#{k}"
        if row.get("subflows"):  # a multipath flow used every path's links, as the simulator lists them
            subs = [sub.get("links") for sub in row["subflows"]]
            row["links"] = None if None in subs else sorted({d for ds in subs for d in ds}, key=names.index)
    label_links(result, resolved)


def _iface_of(topo, addr: str) -> int | None:
    for i in range(len(topo.iface_node)):
        if topo.addr(i) == addr:
            return i
    return None
