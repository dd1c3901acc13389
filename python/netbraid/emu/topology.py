"""A resolved scenario as namespaces, TUN devices, addresses and routes.

- Every node is a namespace ``<run id>-<node index>``; routers forward,
  hosts do not (as in the simulator).
- Link ``l`` is the subnet 10.x.y.0/24, x.y = l + 1 (the simulator's
  addresses, so traces of both backends agree): its ``a`` side is .1 on
  device ``<run id>l<l>a``, its ``b`` side .2 on ``<run id>l<l>b``. Both
  devices are TUNs of one netbraid-linkemu process, which applies the
  link's rate, delay, queue and loss per direction.
- Routes are the simulator's own forwarding table (hop count, ties to the
  lowest link; static ``[[routes]]`` included), installed as /32 routes.
  ECMP routers get Linux multipath routes with layer-4 hashing.
- On a host with several interfaces, each interface that a flow sends from
  (an explicit ``from_iface``, or every interface of an MPTCP client) gets
  its own routing table and a rule ``from <its address>``: traffic from
  that address leaves by that address's link, the "one subnet per path"
  set-up MPTCP needs. Replies are routed by destination (the forwarding
  table), so they come back over the link the traffic arrived on — which
  MPTCP's device-bound subflows require.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .linkemu import LinkEmulator
from .netns import ip_batch, sysctl
from .registry import RunRecord

#: Each host namespace's default TCP controller: one that does not pace
#: (built into every kernel), so that only a flow's own controller decides
#: whether its socket is paced.
DEFAULT_CONGESTION_CONTROL = "reno"


def interfaces(resolved: dict[str, Any]) -> tuple[list[int], dict[int, list[int]]]:
    """(node of each interface, interfaces of each node): link l gives
    interface 2l to its a node and 2l+1 to its b node."""
    iface_node = [n for link in resolved["links"] for n in (link["a"], link["b"])]
    ifaces_of: dict[int, list[int]] = {n: [] for n in range(len(resolved["nodes"]))}
    for iface, node in enumerate(iface_node):
        ifaces_of[node].append(iface)
    return iface_node, ifaces_of


def route_channels(resolved: dict[str, Any], forwarding: list[dict[str, Any]], src_iface: int,
                   dst_iface: int, bound: bool) -> list[int] | None:
    """The link directions (channel 2l: a→b, 2l+1: b→a) a packet from the
    address of `src_iface` to that of `dst_iface` crosses: a `bound` sender
    (one with a routing table for its source address: an MPTCP client's
    subflows, a flow with `from_iface`) leaves by that address's own link;
    every other hop follows `forwarding`, by destination. None where a
    router has several equal-cost next hops (the kernel's hash picks one)."""
    out = {(r["node"], r["dst_iface"]): r["channels"] for r in forwarding}
    links, target = resolved["links"], resolved["links"][dst_iface // 2]
    target_node = target["a"] if dst_iface % 2 == 0 else target["b"]
    source = links[src_iface // 2]
    node = source["a"] if src_iface % 2 == 0 else source["b"]
    channels: list[int] = []
    if bound:
        channels.append(src_iface)  # interface 2l sends on channel 2l (a→b), 2l+1 on channel 2l+1 (b→a)
        node = source["b"] if src_iface % 2 == 0 else source["a"]
    while node != target_node and len(channels) <= len(links) * 2:
        if node in (target["a"], target["b"]):
            hop = [2 * (dst_iface // 2) + (0 if node == target["a"] else 1)]  # on the destination's own link
        else:
            hop = out.get((node, dst_iface), [])
        if len(hop) != 1:
            return None
        channels.append(hop[0])
        link = links[hop[0] // 2]
        node = link["b"] if hop[0] % 2 == 0 else link["a"]
    return channels if node == target_node else None


def iface_address(iface: int) -> str:
    """The simulator's address for the same interface (its pcap and
    results): link l is 10.x.y.0/24 with x.y = l + 1 in base 256, side a .1,
    side b .2 — so a sim trace and an emu capture of one scenario agree."""
    link = iface // 2 + 1
    return f"10.{link >> 8}.{link & 255}.{1 + iface % 2}"


class Topology:
    def __init__(self, resolved: dict[str, Any], run_id: str, record: RunRecord, workdir: Path):
        self.resolved = resolved
        self.run_id = run_id
        self.record = record
        self.workdir = workdir
        self.ns = [f"{run_id}-{i}" for i in range(len(resolved["nodes"]))]
        self.iface_node, self.ifaces_of = interfaces(resolved)
        self.emulator: LinkEmulator | None = None
        self.created: list[str] = []

    # names -----------------------------------------------------------------
    def dev(self, iface: int) -> str:
        return f"{self.run_id}l{iface // 2}{'ab'[iface % 2]}"

    def addr(self, iface: int) -> str:
        return iface_address(iface)

    def link_name(self, l: int) -> str:
        link, names = self.resolved["links"][l], [n["name"] for n in self.resolved["nodes"]]
        return f"{names[link['a']]}-{names[link['b']]}"

    # building ----------------------------------------------------------------
    def build(self, forwarding: list[dict[str, Any]], route_attrs: dict[tuple[int, int], str],
              host_sysctls: dict[int, dict[str, Any]], mptcp: list[dict[str, Any]],
              source_ifaces: set[int] = frozenset(), pinned: dict[tuple[int, int], int] | None = None) -> None:
        """`route_attrs[(node, dst_iface)]`: extra ip-route attributes on
        that host's route to that interface (initcwnd, rto_min, quickack).
        `mptcp`: per MPTCP flow, {"src", "dst", "primary_iface", "subflow_ifaces"
        (endpoints), "signal_ifaces" (announced by dst), "fullmesh", "subflows"
        (count), "backup_ifaces"}.
        `pinned[(node, dst_iface)] = iface`: that host reaches that address
        only through that interface of its own (an SCTP path: the stack
        picks destinations, not source addresses, so each destination is
        routed by its path's link)."""
        self.record.plan_namespaces(self.ns)  # before anything exists
        ip_batch([f"netns add {ns}" for ns in self.ns])
        self.created = list(self.ns)

        links = self.resolved["links"]
        cfg = {
            "seed": self.resolved["seed"],
            "links": [
                {"name": f"l{l}", "a_dev": self.dev(2 * l), "b_dev": self.dev(2 * l + 1),
                 "ab": _direction(link["ab"]), "ba": _direction(link["ba"])}
                for l, link in enumerate(links)
            ],
        }
        self.emulator = LinkEmulator(cfg, self.workdir)
        self.emulator.start()
        ip_batch([f"link set {self.dev(i)} netns {self.ns[n]}" for i, n in enumerate(self.iface_node)])

        nodes = self.resolved["nodes"]
        routes_of: dict[int, list[str]] = {n: [] for n in range(len(nodes))}
        for row in forwarding:
            node, dst, channels = row["node"], row["dst_iface"], row["channels"]
            if any(c // 2 == dst // 2 for c in channels):
                continue  # the destination is on a directly attached link
            extra = route_attrs.get((node, dst), "")
            if len(channels) == 1:
                routes_of[node].append(f"route add {self.addr(dst)}/32 dev {self.dev(channels[0])} {extra}".strip())
            else:
                hops = " ".join(f"nexthop dev {self.dev(c)}" for c in channels)
                routes_of[node].append(f"route add {self.addr(dst)}/32 {extra} {hops}".replace("  ", " "))
        for (node, dst), iface in (pinned or {}).items():
            if iface // 2 != dst // 2:
                routes_of[node].append(f"route replace {self.addr(dst)}/32 dev {self.dev(iface)}")
        for (node, dst), extra in route_attrs.items():
            # a destination on an attached link still needs the attributes
            mine = [i for i in self.ifaces_of[node] if i // 2 == dst // 2]
            if mine:
                routes_of[node].append(f"route replace {self.addr(dst)}/32 dev {self.dev(mine[0])} {extra}")

        for n, ns in enumerate(self.ns):
            ifaces = self.ifaces_of[n]
            lines = ["link set lo up"]
            for i in ifaces:
                lines += [f"addr add {self.addr(i)}/24 dev {self.dev(i)}",
                          f"link set {self.dev(i)} txqueuelen 10000 up"]
            lines += routes_of[n]
            if not nodes[n]["router"] and len(ifaces) > 1:
                for k, i in enumerate(ifaces):
                    if i not in source_ifaces:
                        continue
                    table = 100 + k
                    lines.append(f"rule add from {self.addr(i)} table {table}")
                    lines.append(f"route add default dev {self.dev(i)} table {table}")
                    for (node, dst), extra in route_attrs.items():
                        if node == n:
                            lines.append(f"route add {self.addr(dst)}/32 dev {self.dev(i)} table {table} {extra}")
            ip_batch(lines, ns)

            settings: dict[str, Any] = {"net.ipv4.conf.all.rp_filter": 0, "net.ipv4.conf.default.rp_filter": 0}
            settings.update({f"net.ipv4.conf.{self.dev(i)}.rp_filter": 0 for i in ifaces})
            if nodes[n]["router"]:
                settings["net.ipv4.ip_forward"] = 1
                if nodes[n]["multipath"] == "ecmp":
                    settings["net.ipv4.fib_multipath_hash_policy"] = 1
            else:
                settings["net.ipv4.tcp_no_metrics_save"] = 1
            # In every namespace that may open connections (hosts, and
            # routers with a split-TCP proxy): every socket starts with the
            # namespace's default controller and is then switched to the
            # flow's (iperf3 -C, the proxy's per-leg option); Linux never
            # clears the pacing flag that BBR's start sets, so on a kernel
            # whose default is BBR a CUBIC or Reno flow ran paced, with
            # HyStart's ACK-train threshold doubled (read with bpftrace:
            # sk_pacing_status 1; docs/emu.md). A default that does not pace
            # leaves each socket's pacing to its own controller.
            settings["net.ipv4.tcp_congestion_control"] = DEFAULT_CONGESTION_CONTROL
            # (a proxy's router gets its per-host settings too, e.g. tcp_sack)
            settings.update(host_sysctls.get(n, {}))
            sysctl(ns, settings)

        for m in mptcp:
            # (the kernel takes at most 8 subflows and 8 announced addresses)
            limit = min(8, max(2, m["subflows"]))
            for node in (m["src"], m["dst"]):
                ip_batch([f"mptcp limits set subflow {limit} add_addr_accepted {limit}"], self.ns[node])
            primary, backup = m["primary_iface"], set(m.get("backup_ifaces", []))
            mesh = " fullmesh" if m["fullmesh"] else ""
            # a full mesh's initial address is an endpoint too, so that it
            # reaches the announced addresses as well
            local = ([primary] if m["fullmesh"] else []) + m["subflow_ifaces"]
            ip_batch([f"mptcp endpoint add {self.addr(i)} dev {self.dev(i)} subflow{mesh}" + (" backup" if i in backup else "")
                      for i in local], self.ns[m["src"]])
            if m["signal_ifaces"]:
                ip_batch([f"mptcp endpoint add {self.addr(i)} dev {self.dev(i)} signal" for i in m["signal_ifaces"]],
                         self.ns[m["dst"]])


def _direction(d: dict[str, Any]) -> dict[str, Any]:
    return {"rate_bps": d["rate_bps"], "delay_ns": d["delay_ns"], "jitter_ns": d.get("jitter_ns", 0),
            "queue": {"packets": d["queue"].get("packets"), "bytes": d["queue"].get("bytes")},
            "loss": d["loss"]}


def forwarding_table(resolved: dict[str, Any]) -> list[dict[str, Any]]:
    """The simulator's forwarding decisions for this topology."""
    from .. import _sim

    # Routing ignores the transport; give the simulator's parser only what it knows.
    # the kernel's controllers need not be simulated: routing does not depend on them
    as_sim_tcp = lambda f: {**f, "tcp": {**f["tcp"], "cc": "reno", "cc_params": {}}}  # noqa: E731
    for_routing = {**resolved, "flows": [as_sim_tcp(f) if f["kind"] in ("tcp", "mptcp") else f for f in resolved["flows"]],
                   "proxies": [{k: v for k, v in as_sim_tcp(p).items() if k != "explicit"}
                               for p in resolved.get("proxies", [])]}
    return json.loads(_sim.forwarding_json(json.dumps(for_routing)))
