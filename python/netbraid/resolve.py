"""From a validated ``Scenario`` to the resolved form the simulator runs:
groups expanded, names turned into indices, TCP defaults filled in.

Interfaces: link ``l`` gives interface ``2l`` to its ``a`` node and ``2l+1``
to its ``b`` node (address 10.x.y.1 and 10.x.y.2 with x.y = l + 1). A host's
interfaces are numbered 0, 1, … in the order its links are declared; that is
the number ``to_iface`` / ``from_iface`` take.
"""

from __future__ import annotations

import json
from typing import Any

from . import _sim, footprint
from .controllers import canonical
from .errors import ScenarioError
from .overrides import element_names
from .units import exact_time
from .schema import (MPTCP_FIELDS, SCTP_OPTION_FIELDS, TCP_FIELDS, Direction, Flow, Link, Scenario, SctpOptions,
                     TcpOptions)

MS = 1_000_000
SECOND = 1_000_000_000

# Built-in TCP defaults (RFC values; see docs/scenario.md for the reasons).
TCP_DEFAULTS: dict[str, Any] = {
    "cc": "reno",
    "cc_params": {},  # the controller's defaults
    "recovery": "sack",
    "mss": 1460,
    "header_bytes": 40,
    "initial_window": None,  # RFC 5681: min(4·MSS, max(2·MSS, 4380 B)), in segments
    "initial_ssthresh": None,  # unlimited
    "rcvbuf": 1 << 30,  # effectively unlimited unless `window` or `rcvbuf` is set
    "sndbuf": 1 << 30,
    "rto_min": 1 * SECOND,  # RFC 6298 (Linux uses 200 ms: set rto_min = "200ms")
    "rto_max": 60 * SECOND,
    "rto_initial": 1 * SECOND,
    "clock_granularity": 1 * MS,
    "delayed_ack": True,
    "delack_timeout": 200 * MS,
    "delack_count": 2,
    "quick_acks": 0,
    "sack_compression": 0,
    "sack_compression_delay": 1 * MS,
    "abc_limit": 1,
    "byte_counting": False,
    "dupthresh": 3,
    "limited_transmit": True,
    "max_sack_blocks": 4,
    "log_congestion": False,
    "ecn": False,
    "semantics": "rfc",
    "nodelay": False,
    "rack": False,
    "tlp": False,
    "prr": False,
    "ssthresh_from_cwnd": False,
    "timer_tick": 0,
    "linux_rto": False,
    "dsack": False,
    "linux_buffers": False,
    "scaling_ratio": 162 / 256,
}
#: Linux 6.x defaults, as the simulator can express them: IW10 (RFC 6928),
#: 200 ms minimum RTO and 1 s initial RTO (TCP_RTO_MIN, TCP_TIMEOUT_INIT),
#: 1448-byte segments with 52 bytes of IP+TCP header (timestamps on), SACK,
#: delayed ACKs every second segment with a 40 ms floor (TCP_DELACK_MIN),
#: RACK-TLP (net.ipv4.tcp_recovery = 1 and tcp_early_retrans = 3, the
#: defaults), PRR in recovery (since Linux 3.2) and reductions from the
#: window rather than FlightSize. The base of `profile = "linux"` (below),
#: which adds Linux's CUBIC, RTO, D-SACK and socket buffers. Not yet
#: here: SACK compression (`sack_compression = 44`, the kernel's default),
#: see docs/model.md.
LINUX_TCP: dict[str, Any] = {
    "initial_window": 10,
    "rto_min": "200ms",
    "rto_initial": "1s",
    "mss": 1448,
    "header_bytes": 52,
    "recovery": "sack",
    "delack_timeout": "40ms",
    "quick_acks": 16,  # TCP_MAX_QUICKACKS: the first segments ACKed one by one
    # slow start adds what each ACK covers (two segments with delayed ACKs:
    # RFC 3465's L = 2; Linux sets no limit) and congestion avoidance counts
    # ACKed segments (tcp_cong_avoid_ai), not ACKs
    "abc_limit": 2,
    "byte_counting": True,
    "rack": True,
    "tlp": True,
    "prr": True,
    # ssthresh = β × cwnd (tcp_reno_ssthresh, bictcp_recalc_ssthresh), not
    # β × FlightSize; PRR divides by prior_cwnd (tcp_cwnd_reduction)
    "ssthresh_from_cwnd": True,
    # (not timer_tick = "4ms", this kernel's HZ = 250: it changes no cell of
    # the fidelity grid, and at sub-millisecond round trips it makes an
    # MPTCP subflow that waits on the connection's window send a probe every
    # few ticks, which is not yet checked against the kernel: docs/model.md)
}
#: CUBIC as net/ipv4/tcp_cubic.c runs it: β = 717/1024, HyStart on (both
#: detectors), the kernel's integer arithmetic in jiffies of this kernel's
#: HZ = 250 (cc/cubic_linux.rs; bench/RESULTS.md, 2026-11-29: closer to the
#: kernel on the fidelity grid than the float model's Linux flags were).
LINUX_CUBIC: dict[str, Any] = {"cc": "cubic", "cc_params": {"beta": 717 / 1024, "hystart": True, "linux_integer": True,
                                                            "hz": 250}}
#: Pieces of Linux's TCP modelled after the first runs of paper 001 (whose
#: settings are now the whole profile, at the paper's rates without
#: `linux_buffers`, since 2026-12-07):
#: Linux's RTO computation (tcp_rtt_estimator, tcp_set_rto), and three SACK
#: blocks per ACK: what the 40 bytes of TCP options hold beside the 12 of
#: timestamps (tcp_established_options). D-SACK and undo (tcp_dsack_set,
#: tcp_try_undo_dsack). The socket buffers as Linux 6.6+ sizes them (paper
#: 001's kernel, before 6.6, made the window the SO_RCVBUF asked for).
LINUX_PROFILE_ONLY: dict[str, Any] = {"linux_rto": True, "max_sack_blocks": 3, "dsack": True,
                                      "linux_buffers": True}
#: `profile`: the layer of defaults under the scenario's and the flow's own settings.
PROFILES: dict[str, TcpOptions] = {
    "rfc": TcpOptions(),
    "linux": TcpOptions(**LINUX_TCP, **LINUX_CUBIC, **LINUX_PROFILE_ONLY),
}
#: SCTP profiles: what each sets under the scenario's and the flow's
#: settings (RFC 9260's values are the simulator's defaults). FreeBSD 9.0
#: from its sctp_constants.h / sctp_sysctl.h / sctp_cc_functions.c (docs/model.md).
SCTP_PROFILES: dict[str, dict[str, Any]] = {
    "rfc9260": {},
    "rfc4960": {"rto_initial": 3 * SECOND},
    "freebsd": {"rto_initial": 3 * SECOND, "initial_cwnd": 3 * (1500 - 12), "fr_min_mtus": 2,
                "sender_chunk_overhead": 256, "receiver_chunk_overhead": 256, "rtx_policy": "cwnd", "dac": False},
}
#: SCTP settings the emu backend passes to usrsctp (the rest are the stack's own).
EMU_SCTP_FIELDS = ("dac",)
CBR_DEFAULT_PACKET = 1000
ONOFF_DEFAULT_PACKET = 210  # ns-2 Application/Traffic/Exponential packetSize_
UDP_HEADER = 28  # IPv4 + UDP
MAX_SAMPLES = footprint.MAX_SAMPLES  # time-series samples per run


def rfc5681_initial_window(mss: int) -> int:
    return max(1, min(4 * mss, max(2 * mss, 4380)) // mss)


def _names(group: str, count: int | None) -> list[str]:
    return [group] if count is None else [f"{group}{i}" for i in range(count)]


def _pair(where: str, a: list[int], b: list[int], a_name: str, b_name: str) -> list[tuple[int, int]]:
    if len(a) == len(b):
        return list(zip(a, b))
    if len(a) == 1:
        return [(a[0], x) for x in b]
    if len(b) == 1:
        return [(x, b[0]) for x in a]
    raise ScenarioError(
        f"{where}: cannot pair group '{a_name}' ({len(a)} members) with group '{b_name}' "
        f"({len(b)} members); sizes must match, or one side must be a single node"
    )


def _direction(link: Link, over: Direction | None) -> dict[str, Any]:
    rate = over.rate if over and over.rate is not None else link.rate
    delay = over.delay if over and over.delay is not None else link.delay
    jitter = over.jitter if over and over.jitter is not None else link.jitter
    queue = over.queue if over and over.queue is not None else link.queue
    loss = over.loss if over and over.loss is not None else link.loss
    red = over.red if over and over.red is not None else link.red
    framing = over.framing if over and over.framing is not None else link.framing
    down = over.down if over and over.down is not None else link.down
    kind, limit = queue
    return {
        "down": [(o.start, o.stop) for o in down],
        "rate_bps": rate,
        "framing_bytes": framing,
        "delay_ns": delay,
        "jitter_ns": jitter,
        "queue": {"packets": limit if kind == "packets" else None, "bytes": limit if kind == "bytes" else None,
                  "red": red.model_dump() if red is not None else None},
        "loss": loss.model_dump(),
    }


def tcp_config(defaults: TcpOptions, flow: TcpOptions | None = None) -> dict[str, Any]:
    """Merge built-in defaults ← the profile's (the flow's, else the
    scenario's) ← scenario [tcp] ← the flow's own settings.
    Only merges: the rules a configuration must meet are the simulator's
    (`check_tcp`). `cc_params` merge key by key, and go with the controller
    they were given for: a layer that picks another controller starts
    without the parameters of the one before."""
    cfg = dict(TCP_DEFAULTS, cc_params={})
    profile = (flow.profile if flow is not None and flow.profile else None) or defaults.profile or "rfc"
    for layer in (PROFILES[profile], defaults, flow):
        if layer is None:
            continue
        for f in TCP_FIELDS:  # cc comes before cc_params
            v = getattr(layer, f)
            if v is None or f == "profile":
                continue
            if f == "window":  # iperf -w: both socket buffers
                cfg["rcvbuf"] = cfg["sndbuf"] = v
            elif f == "cc":
                if canonical(v) != canonical(cfg["cc"]):
                    cfg["cc_params"] = {}
                cfg["cc"] = v
            elif f == "cc_params":
                cfg["cc_params"] = {**cfg["cc_params"], **v}
            else:
                cfg[f] = v
    if cfg["initial_window"] is None:
        cfg["initial_window"] = rfc5681_initial_window(cfg["mss"])
    cfg["cc"] = canonical(cfg["cc"])  # newreno is Reno's window rule
    return cfg


def tcp_problem(cfg: dict[str, Any], field: str, controller: bool) -> str | None:
    """What is wrong with a merged TCP configuration, by the simulator's
    rules (`controller`: also its controller and parameters, for sim), with
    names prefixed by `field` (e.g. "flows[0]."); None when it is fine."""
    try:
        _sim.check_tcp_json(json.dumps(cfg), field, controller)
    except ValueError as e:
        return str(e)
    return None


BACKENDS = ("sim", "emu")
#: Captures are the simulator's (its pcap writer); the kernel's packets are tcpdump's.
PCAP_ON_EMU = "--pcap: captures are made by the simulator; on emu use tcpdump in the namespaces"


def check_tcp(cfg: dict[str, Any], where: str, *, flow_sets_tcp: bool, scenario_tcp, controller: bool,
              defaults: TcpOptions | None = None, flow: TcpOptions | None = None) -> None:
    """Raise ScenarioError if a flow's merged TCP configuration breaks a rule,
    naming the field where it was set: `tcp.` when the scenario's [tcp]
    settings alone break it the same way (`scenario_tcp()` gives them merged
    with the built-in defaults), else the flow (`where`, e.g. "flows[0]").
    A field the user did not set but the profile did (`defaults` [tcp],
    `flow` the flow's settings) is said to come from the profile."""
    problem = tcp_problem(cfg, "", controller)
    if problem is None:
        return
    blame_tcp = not flow_sets_tcp or tcp_problem(scenario_tcp(), "", controller) == problem
    message = tcp_problem(cfg, "tcp." if blame_tcp else f"{where}.", controller)
    if defaults is not None:
        field = problem.split(":", 1)[0].strip()
        profile = (flow.profile if flow is not None and flow.profile else None) or defaults.profile or "rfc"
        # (as a scenario file writes it: "1s", not nanoseconds)
        given = PROFILES[profile].model_dump(mode="json", by_alias=True, exclude_none=True).get(field)
        if given not in (None, {}) and field not in explicit_tcp_fields(defaults, flow or TcpOptions()):
            message += (f" ({field} = {json.dumps(given)} comes from profile = \"{profile}\"; set {field} "
                        "yourself to change it)")
    raise ScenarioError(message)


def direction_names(node_names: list[str], links: list[dict[str, Any]]) -> list[str]:
    """The name of every link direction, by channel (2l: a→b, 2l+1: b→a), as
    the simulator's results give them: "from->to", and "from->to#2",
    "#3", … for the second, third, … of parallel links."""
    seen: dict[str, int] = {}
    names = []
    for lk in links:
        for frm, to in ((lk["a"], lk["b"]), (lk["b"], lk["a"])):
            base = f"{node_names[frm]}->{node_names[to]}"
            seen[base] = seen.get(base, 0) + 1
            names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def label_links(result: dict[str, Any], resolved: dict[str, Any]) -> dict[str, Any]:
    """Give a run's rows the scenario's link names (the `name` of
    ``[[links]]``, or "a-b" as written; what ``--set links.NAME…`` takes):
    `link_name` on each link direction, and `link_names` — the links it used,
    in order of first use — on each flow, subflow and leg that lists its
    directions. Both backends' results pass through here."""
    directions = direction_names([n["name"] for n in resolved["nodes"]], resolved["links"])
    link_of = {d: resolved["links"][ch // 2].get("name") for ch, d in enumerate(directions)}

    def used(dirs: list[str] | None) -> list[str] | None:
        return None if dirs is None else list(dict.fromkeys(link_of[d] for d in dirs if d in link_of))

    for row in result.get("links") or []:
        row["link_name"] = link_of.get(row["name"])
    proxies = resolved.get("proxies") or []
    for k, f in enumerate(result.get("flows") or []):
        f["link_names"] = used(f.get("links"))
        for sub in (f.get("subflows") or []) + (f.get("legs") or []):
            sub["link_names"] = used(sub.get("links"))
        # each leg's controller: the sending end's (the flow's sender on the
        # first leg, the proxy before it on the others)
        spec = resolved["flows"][k] if k < len(resolved["flows"]) else {}
        via = spec.get("via") or []
        for i, leg in enumerate(f.get("legs") or []):
            tcp = spec.get("tcp") if i == 0 else (proxies[via[i - 1]].get("tcp") if i - 1 < len(via) else None)
            leg["cc"] = (tcp or {}).get("cc")
    return result


def explicit_tcp_fields(defaults: TcpOptions, flow: TcpOptions) -> list[str]:
    """TCP fields the user set (scenario [tcp] or the flow), not defaults."""
    return sorted(f for f in TCP_FIELDS if any(getattr(layer, f) not in (None, {}) for layer in (defaults, flow)))


#: MPTCP settings the kernel's path manager takes on emu (docs/emu.md).
EMU_PATH_MANAGER = {"backup", "paths", "subflows"}


def mptcp_paths(where: str, f, src: int, dst: int, ifaces_of: dict[int, list[int]], iface) -> tuple[list[dict], list[bool]]:
    """The subflows of an MPTCP flow as paths (pairs of interfaces), the
    initial one first, and which are backups."""
    src_ifaces, dst_ifaces = ifaces_of[src], ifaces_of[dst]
    first_dst = iface(f"{where}.to_iface", dst, f.to_iface) if f.to_iface is not None else dst_ifaces[0]
    if f.paths is not None:
        paths = []
        for k, p in enumerate(f.paths):
            a = iface(f"{where}.paths[{k}].from_iface", src, p.from_iface)
            b = iface(f"{where}.paths[{k}].to_iface", dst, p.to_iface) if p.to_iface is not None else first_dst
            if (a, b) in paths:
                raise ScenarioError(f"{where}.paths[{k}]: the same pair of interfaces as an earlier path")
            paths.append((a, b))
        backup = [p.backup for p in f.paths]
        if all(backup):
            raise ScenarioError(f"{where}.paths: every subflow is a backup; at least one must be active")
        return [{"src_iface": a, "dst_iface": b} for a, b in paths], backup
    first_src = iface(f"{where}.from_iface", src, f.from_iface) if f.from_iface is not None else src_ifaces[0]
    ordered_src = [first_src] + [i for i in src_ifaces if i != first_src]
    if (f.subflows or "per_interface") == "per_interface":
        pairs = [(i, first_dst) for i in ordered_src]
    else:
        ordered_dst = [first_dst] + [i for i in dst_ifaces if i != first_dst]
        pairs = [(i, d) for i in ordered_src for d in ordered_dst]
    backup_ifaces = set()
    for k, index in enumerate(f.backup or []):
        backup_ifaces.add(iface(f"{where}.backup[{k}]", src, index))
    backup = [i in backup_ifaces for i, _ in pairs]
    if backup and all(backup):
        raise ScenarioError(f"{where}.backup: every subflow would be a backup; at least one source interface must be active")
    return [{"src_iface": i, "dst_iface": d} for i, d in pairs], backup


def sctp_paths(where: str, f, src: int, dst: int, ifaces_of: dict[int, list[int]], iface) -> list[dict]:
    """An SCTP association's paths: one per destination address (the
    destination's interface k, from the source's interface k, or its last
    when it has fewer), or as listed in `paths`."""
    if f.paths is not None:
        pairs = []
        for k, p in enumerate(f.paths):
            a = iface(f"{where}.paths[{k}].from_iface", src, p.from_iface)
            b = iface(f"{where}.paths[{k}].to_iface", dst, p.to_iface if p.to_iface is not None
                      else min(p.from_iface, len(ifaces_of[dst]) - 1))
            if (a, b) in pairs:
                raise ScenarioError(f"{where}.paths[{k}]: the same pair of interfaces as an earlier path")
            pairs.append((a, b))
    else:
        s_if, d_if = ifaces_of[src], ifaces_of[dst]
        pairs = [(s_if[min(k, len(s_if) - 1)], d) for k, d in enumerate(d_if)]
    return [{"src_iface": a, "dst_iface": b} for a, b in pairs]


def sctp_config(defaults: SctpOptions, f: Flow, paths: int, where: str) -> dict[str, Any]:
    """Profile ← scenario [sctp] ← the flow's `sctp` ← its own fields, as the
    simulator's SctpConfig."""
    profile = (f.sctp.profile if f.sctp is not None and f.sctp.profile else None) or defaults.profile or "rfc9260"
    cfg: dict[str, Any] = dict(SCTP_PROFILES[profile])
    for layer in (defaults, f.sctp):
        if layer is not None:
            cfg.update({k: getattr(layer, k) for k in SCTP_OPTION_FIELDS if getattr(layer, k) is not None})
    if f.window is not None:
        cfg["rcvbuf"] = cfg["sndbuf"] = f.window
    for k in ("rcvbuf", "sndbuf"):
        if getattr(f, k) is not None:
            cfg[k] = getattr(f, k)
    cmt = bool(f.cmt)
    if cmt and paths < 2:
        raise ScenarioError(f"{where}.cmt: CMT needs an association with two paths or more; this one has {paths} "
                            "(give the hosts one link each per path, or `paths`; or set cmt = false)")
    if f.rtx_policy is not None and not cmt:
        raise ScenarioError(f"{where}.rtx_policy: applies with cmt = true (plain SCTP retransmits on the same path, "
                            "or on an alternate after a timeout)")
    primary = f.primary or 0
    if primary >= paths:
        raise ScenarioError(f"{where}.primary: path {primary} does not exist (the association has {paths} path(s): "
                            f"{', '.join(map(str, range(paths)))})")
    cfg.update(cmt=cmt, primary=primary)
    if f.rtx_policy is not None:
        cfg["rtx_policy"] = f.rtx_policy
    if f.message_size is not None:
        cfg["message_bytes"] = f.message_size
    return cfg


def resolve(s: Scenario, *, seed: int | None = None, pcap: list[tuple[str, str]] | None = None,
            backend: str = "sim") -> dict[str, Any]:
    """The resolved scenario (a JSON-ready dict) for `backend`. `pcap` is a
    list of (link direction "a->b", output path)."""
    if backend not in BACKENDS:
        raise ScenarioError(f"--backend: {backend!r} is not a backend (allowed: {', '.join(BACKENDS)})")
    problems: list[str] = []
    footprint.check(s)  # before the groups are expanded: a run that cannot fit is refused now

    if seed is not None and not 0 <= seed < 2**64:
        raise ScenarioError(f"seed: {seed} is out of range (allowed: 0 to 2^64-1)")

    # nodes
    nodes: list[dict[str, Any]] = []
    groups: dict[str, list[int]] = {}
    seen_names: set[str] = set()
    for kind, items in (("hosts", s.hosts), ("routers", s.routers)):
        for i, n in enumerate(items):
            members = []
            names = _names(n.name, n.count)
            reused = n.name in groups or (n.count is not None and n.name in seen_names)
            if reused:
                problems.append(f"{kind}[{i}].name: '{n.name}' is used twice")
            for name in names:
                if (name in seen_names or (name != n.name and name in groups)) and not (reused and name == n.name):
                    problems.append(f"{kind}[{i}].name: node name '{name}' is used twice")
                seen_names.add(name)
                members.append(len(nodes))
                nodes.append({"name": name, "router": kind == "routers",
                              "multipath": getattr(n, "multipath", "none")})
            groups[n.name] = members
            if n.count is not None:
                for name, idx in zip(names, members):
                    groups.setdefault(name, [idx])
    problems = list(dict.fromkeys(problems))
    if problems:
        raise ScenarioError(problems)
    known = ", ".join(sorted(groups)) or "(none: add hosts and routers)"

    def lookup(where: str, name: str) -> list[int]:
        if name not in groups:
            raise ScenarioError(f"{where}: unknown node '{name}' (known: {known})")
        return groups[name]

    # links
    first_named: dict[str | None, int] = {}
    link_names = element_names([{"name": l.name, "a": l.a, "b": l.b} for l in s.links])
    for i, name in enumerate(link_names):
        if first_named.setdefault(name, i) != i:
            problems.append(f"links[{i}].name: '{name}' names links[{first_named[name]}] too; "
                            "link names must be unique (give this link another name)")
    links: list[dict[str, Any]] = []
    ifaces_of: dict[int, list[int]] = {i: [] for i in range(len(nodes))}
    for i, link in enumerate(s.links):
        if link.a == link.b:
            problems.append(f"links[{i}]: links '{link.a}' to itself (a and b must differ)")
            continue
        try:
            pairs = _pair(f"links[{i}]", lookup(f"links[{i}].a", link.a), lookup(f"links[{i}].b", link.b), link.a, link.b)
        except ScenarioError as e:
            problems.extend(e.problems)
            continue
        ab, ba = _direction(link, link.ab), _direction(link, link.ba)
        if backend == "emu" and (ab["framing_bytes"] or ba["framing_bytes"]):
            problems.append(f"links[{i}].framing: counted on sim only (linkemu shapes IP packets; give the IP-level "
                            "rate instead); remove it or use --backend sim")
        if backend == "emu" and (ab["down"] or ba["down"]):
            problems.append(f"links[{i}].down: outages run on sim only for now; remove them or use --backend sim")
        for d, over, side in ((ab, link.ab, "ab"), (ba, link.ba, "ba")):
            if d["jitter_ns"] > d["delay_ns"]:
                # name the settings the user wrote: the link's or the direction's
                jitter = f"links[{i}].{side}.jitter" if over and over.jitter is not None else f"links[{i}].jitter"
                delay = f"links[{i}].{side}.delay" if over and over.delay is not None else "the delay"
                problems.append(f"{jitter}: {exact_time(d['jitter_ns'])} is more than {delay} "
                                f"({exact_time(d['delay_ns'])}); each packet's delay varies within ±jitter, so "
                                "jitter must not exceed the delay")
        for a, b in pairs:
            if a == b:
                problems.append(f"links[{i}]: links '{nodes[a]['name']}' to itself")
                continue
            l = len(links)
            ifaces_of[a].append(2 * l)
            ifaces_of[b].append(2 * l + 1)
            links.append({"name": link_names[i], "a": a, "b": b, "ab": ab, "ba": ba})
    if problems:
        raise ScenarioError(problems)

    def iface(where: str, node: int, index: int | None) -> int | None:
        if index is None:
            return None
        have = ifaces_of[node]
        if index >= len(have):
            raise ScenarioError(
                f"{where}: '{nodes[node]['name']}' has {len(have)} interface(s) (allowed: 0 to {len(have) - 1})"
                if have else f"{where}: '{nodes[node]['name']}' has no links"
            )
        return have[index]

    # proxies
    proxies: list[dict[str, Any]] = []
    proxy_at: dict[int, int] = {}  # node → its proxy
    broken_proxies: set[str] = set()  # their flows are not told again that they have none
    for i, p in enumerate(s.proxies):
        where = f"proxies[{i}]"
        try:
            members = lookup(f"{where}.node", p.node)
            if len(members) != 1:
                raise ScenarioError(f"{where}.node: '{p.node}' is a group of {len(members)} nodes; "
                                    "declare one proxy per node")
            node = members[0]
            if node in proxy_at:
                raise ScenarioError(f"{where}.node: '{p.node}' already has a proxy (proxies[{proxy_at[node]}])")
            tcp = tcp_config(s.tcp, p.tcp)
            check_tcp(tcp, f"{where}.tcp", flow_sets_tcp=any(getattr(p.tcp, x) is not None for x in TCP_FIELDS),
                      scenario_tcp=lambda: tcp_config(s.tcp), controller=backend == "sim", defaults=s.tcp, flow=p.tcp)
            proxy_at[node] = len(proxies)
            proxies.append({"node": node, "buffer_bytes": p.buffer, "tcp": tcp})
            if backend == "emu":
                proxies[-1]["explicit"] = explicit_tcp_fields(s.tcp, p.tcp)
        except ScenarioError as e:
            broken_proxies.add(p.node)
            problems.extend(e.problems)

    # flows
    duration = s.duration
    flows: list[dict[str, Any]] = []
    for i, f in enumerate(s.flows):
        where = f"flows[{i}]"
        try:
            pairs = _pair(where, lookup(f"{where}.from", f.src), lookup(f"{where}.to", f.dst), f.src, f.dst)
            expanded = [(a, b) for a, b in pairs for _ in range(f.count)]
            last_start = f.start + (len(expanded) - 1) * f.start_step
            if last_start >= duration:
                which = "start" if len(expanded) == 1 else "start_step"
                raise ScenarioError(
                    f"{where}.{which}: the last of its {len(expanded)} flow(s) would start at {last_start / 1e9:g} s, "
                    f"not before the end of the run (duration {duration / 1e9:g} s)"
                )
            for a, b in pairs:
                for node, role in ((a, "from"), (b, "to")):
                    if nodes[node]["router"]:
                        raise ScenarioError(f"{where}.{role}: '{nodes[node]['name']}' is a router; flows run between hosts")
            if f.kind == "mptcp" and backend == "emu":
                # (the path manager's settings are the kernel's too: `ip mptcp
                # endpoint … subflow [backup|fullmesh]`, `… signal`)
                for field in MPTCP_FIELDS:
                    if field not in EMU_PATH_MANAGER and getattr(f, field) is not None:
                        raise ScenarioError(f"{where}.{field}: set on sim only (on emu the kernel's scheduler decides; "
                                            f"settable on emu: {', '.join(sorted(EMU_PATH_MANAGER))}); remove it or run on sim")
            if f.kind == "sctp" and backend == "emu":
                # usrsctp (FreeBSD's stack) runs with its own constants
                if f.rtx_policy is not None:
                    raise ScenarioError(f"{where}.rtx_policy: set on sim only (usrsctp retransmits to the path with "
                                        "the largest cwnd); remove it or run on sim")
                for layer, field in ((s.sctp, "sctp"), (f.sctp, f"{where}.sctp")):
                    for k in SCTP_OPTION_FIELDS:
                        if layer is not None and k not in EMU_SCTP_FIELDS and getattr(layer, k) is not None:
                            raise ScenarioError(f"{field}.{k}: set on sim only (on emu usrsctp, FreeBSD's stack, "
                                                f"decides; settable on emu: {', '.join(EMU_SCTP_FIELDS)}); "
                                                "remove it or run on sim")
            if f.read_rate is not None and backend == "emu":
                raise ScenarioError(f"{where}.read_rate: a slow reader runs on sim only for now (on emu, iperf3's "
                                    "receiver reads as fast as data arrives); remove it or use --backend sim")
            tcp = None
            if f.kind in ("tcp", "mptcp"):
                if backend == "emu" and (f.profile or s.tcp.profile) == "rfc":
                    field = f"{where}.profile" if f.profile else "tcp.profile"
                    raise ScenarioError(f"{field}: 'rfc' cannot run on emu: the kernel's TCP is Linux's "
                                        "(remove it, or use profile = \"linux\" to say so)")
                tcp = tcp_config(s.tcp, f)
                check_tcp(tcp, where, flow_sets_tcp=any(getattr(f, x) is not None for x in TCP_FIELDS),
                          scenario_tcp=lambda: tcp_config(s.tcp), controller=backend == "sim", defaults=s.tcp, flow=f)
            via = []
            for k, name in enumerate(f.via or []):
                node = lookup(f"{where}.via[{k}]", name)
                if len(node) != 1:
                    raise ScenarioError(f"{where}.via[{k}]: '{name}' is a group; name one node")
                if node[0] not in proxy_at and name in broken_proxies:
                    raise ScenarioError([])  # its proxy's own problem is reported
                if node[0] not in proxy_at:
                    raise ScenarioError(f"{where}.via[{k}]: '{name}' has no proxy (declare one: "
                                        f"[[proxies]] node = \"{name}\")")
                via.append(proxy_at[node[0]])
            if f.read_rate is not None and via:
                raise ScenarioError(f"{where}.read_rate: not with via (a slow reader behind proxies is not modelled yet)")
            for k, (a, b) in enumerate(expanded):
                if a == b:
                    raise ScenarioError(f"{where}: from and to are the same node '{nodes[a]['name']}'")
                if not ifaces_of[b]:
                    raise ScenarioError(f"{where}.to: '{nodes[b]['name']}' is not connected to anything (it has no links)")
                if not ifaces_of[a]:
                    raise ScenarioError(f"{where}.from: '{nodes[a]['name']}' is not connected to anything (it has no links)")
                spec: dict[str, Any] = {
                    "name": f.name if len(expanded) == 1 else f"{f.name}{k}",
                    "src": a,
                    "dst": b,
                    "src_iface": iface(f"{where}.from_iface", a, f.from_iface),
                    "dst_iface": iface(f"{where}.to_iface", b, f.to_iface),
                    "start_ns": f.start + k * f.start_step,
                    "start_jitter_ns": f.start_jitter,
                    "stop_ns": f.stop,
                }
                if f.kind == "mptcp":
                    paths, backup = mptcp_paths(where, f, a, b, ifaces_of, iface)
                    if backend == "emu" and f.paths is not None:
                        initial = paths[0]["dst_iface"]
                        for k, p in enumerate(paths):
                            if p["dst_iface"] != initial:
                                raise ScenarioError(
                                    f"{where}.paths[{k}].to_iface: on emu every listed path goes to the initial "
                                    f"subflow's destination address (interface {ifaces_of[b].index(initial)}): Linux's "
                                    "path manager makes subflows from local endpoints (ip mptcp endpoint … subflow) to "
                                    "the address the connection was made to; allowed: to_iface unset or "
                                    f"{ifaces_of[b].index(initial)}, subflows = \"fullmesh\" for every pair, or run on sim")
                    if backend == "emu" and backup and backup[0]:
                        raise ScenarioError(
                            f"{where}.backup: the initial subflow's interface ({ifaces_of[a].index(paths[0]['src_iface'])}) "
                            "cannot be a backup on emu (Linux's path manager marks the subflows it adds from an "
                            "endpoint, and the initial subflow comes from none); allowed: the other source interfaces, "
                            "or run on sim")
                    spec.update(paths=paths, mptcp={"scheduler": f.scheduler or "default", "backup": backup,
                                                    "opportunistic_retransmission": bool(f.opportunistic_retransmission),
                                                    "penalisation": bool(f.penalisation),
                                                    "reinjection": f.reinjection})
                if f.kind == "sctp":
                    paths = sctp_paths(where, f, a, b, ifaces_of, iface)
                    spec.update(kind="sctp", paths=paths, bytes=f.bytes,
                                sctp=sctp_config(s.sctp, f, len(paths), where))
                elif f.kind in ("tcp", "mptcp"):
                    spec.update(kind=f.kind, tcp=tcp, bytes=f.bytes)
                    if f.kind == "tcp":
                        spec["read_rate_bps"] = f.read_rate
                        spec["via"] = via
                    if backend == "emu":
                        spec["explicit"] = explicit_tcp_fields(s.tcp, f)
                elif f.kind == "cbr":
                    spec.update(kind="cbr", rate_bps=f.rate,
                                packet_bytes=CBR_DEFAULT_PACKET if f.packet_size is None else f.packet_size,
                                header_bytes=UDP_HEADER if f.header_bytes is None else f.header_bytes)
                else:
                    spec.update(kind="on_off", rate_bps=f.rate,
                                packet_bytes=ONOFF_DEFAULT_PACKET if f.packet_size is None else f.packet_size,
                                header_bytes=UDP_HEADER if f.header_bytes is None else f.header_bytes,
                                burst_ns=f.burst_time, idle_ns=f.idle_time,
                                distribution=f.distribution or "exponential", shape=f.shape or 1.5)
                flows.append(spec)
        except ScenarioError as e:
            problems.extend(e.problems)
    seen: set[str] = set()
    for fl in flows:
        if fl["name"] in seen:
            problems.append(f"flows: the name '{fl['name']}' is used twice (flow names must be unique)")
        seen.add(fl["name"])
    if not s.flows:
        problems.append("flows: the scenario has no traffic (add at least one flow)")

    # static routes
    routes: list[dict[str, Any]] = []
    for i, r in enumerate(s.routes):
        where = f"routes[{i}]"
        try:
            node = lookup(f"{where}.node", r.node)
            dst = lookup(f"{where}.to", r.to)
            via = lookup(f"{where}.via", r.via)
            if len(node) != 1 or len(via) != 1 or len(dst) != 1:
                raise ScenarioError(f"{where}: node, to and via must each name a single node, not a group")
            n, d, v = node[0], dst[0], via[0]
            channel = next(
                (2 * l if lk["a"] == n else 2 * l + 1 for l, lk in enumerate(links) if {lk["a"], lk["b"]} == {n, v}),
                None,
            )
            if channel is None:
                raise ScenarioError(f"{where}.via: '{r.via}' is not a neighbour of '{r.node}' (no link joins them)")
            if v != d and not nodes[v]["router"]:
                raise ScenarioError(f"{where}.via: '{r.via}' is a host, and hosts do not forward packets on to "
                                    f"'{r.to}'; the next hop must be a router (or '{r.to}' itself)")
            targets = ifaces_of[d] if r.to_iface is None else [iface(f"{where}.to_iface", d, r.to_iface)]
            for t in targets:
                earlier = next((x for x in routes if x["node"] == n and x["dst_iface"] == t), None)
                if earlier is not None and earlier["channel"] != channel:
                    raise ScenarioError(f"{where}: a route at '{r.node}' for '{r.to}' is already given with another via")
                routes.append({"node": n, "dst_iface": t, "channel": channel})
        except ScenarioError as e:
            problems.extend(e.problems)

    # measurement window
    m = s.measure
    stop = duration if m.stop is None else m.stop
    if stop > duration:
        problems.append(f"measure.stop: {stop / 1e9:g} s is after the end of the run (duration {duration / 1e9:g} s)")
    if m.start >= stop:
        problems.append(f"measure.start: {m.start / 1e9:g} s must be before measure.stop ({stop / 1e9:g} s)")
    if m.interval is not None and m.interval > duration:
        problems.append(f"measure.interval: {m.interval / 1e9:g} s is longer than the run (duration "
                        f"{duration / 1e9:g} s): no sample would be taken; allowed: up to the duration")
    if m.interval is not None and duration // m.interval > MAX_SAMPLES:
        problems.append(
            f"measure.interval: {m.interval / 1e9:g} s gives {duration // m.interval:,} samples over the run; "
            f"allowed at most {MAX_SAMPLES:,} (an interval of at least {duration / MAX_SAMPLES / 1e9:g} s)"
        )

    # captures
    pcaps = []
    if backend == "emu" and pcap:
        problems.append(PCAP_ON_EMU)
    channel_names = {name: ch for ch, name in enumerate(direction_names([n["name"] for n in nodes], links))}
    for direction, path in pcap or []:
        if direction not in channel_names:
            problems.append(
                f"--pcap: no link direction '{direction}'; write it as FROM->TO, e.g. "
                f"{next(iter(channel_names), 'r1->r2')}"
            )
        else:
            pcaps.append({"channel": channel_names[direction], "path": str(path)})

    if problems:
        raise ScenarioError(problems)
    return {
        "name": s.name,
        "seed": s.seed if seed is None else seed,
        "duration_ns": duration,
        "nodes": nodes,
        "links": links,
        "routes": routes,
        "flows": flows,
        "proxies": proxies,
        "measure": {"start_ns": m.start, "stop_ns": stop, "interval_ns": m.interval},
        "pcap": pcaps,
    }

