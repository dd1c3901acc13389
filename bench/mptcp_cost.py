"""What an MPTCP connection costs the simulator per packet-hop, beside two
TCP flows carrying the same traffic (issue 12: within ± 20 %).

Two disjoint paths of RATE each (client ⇉ server, 1 ms one-way, 1000-packet
queues), 20 s simulated: case `mptcp` is one connection with a subflow on
each path (default scheduler, uncoupled CUBIC); case `tcp` is one CUBIC flow
on each path. Both keep both paths full, so they move about the same packets.
Runs alternate in one process (`--reps` each); wall time is the simulator's
own (`wall_s`: the Rust run, no Python), packet-hops are packets sent on
every link direction, data and ACKs. Medians are printed and, with --out,
written as JSON.

    python bench/mptcp_cost.py --rate 1Gbps --reps 5 --out bench/results/mptcp_cost.json
"""

from __future__ import annotations

import netbraid as nb
from hop_cost import arguments, compare, write


def scenario(case: str, rate: str, duration: str) -> nb.Scenario:
    s = nb.Scenario(name=f"mptcp-cost-{case}", duration=duration)
    s.add_host("client").add_host("server")
    for _ in range(2):
        s.add_link("client", "server", rate=rate, delay="1ms", queue="1000p")
    if case == "mptcp":
        s.add_flow("m", "client", "server", kind="mptcp", cc="cubic")
    else:
        for k in range(2):
            s.add_flow(f"t{k}", "client", "server", kind="tcp", cc="cubic", from_iface=k, to_iface=k)
    return s


def main() -> None:
    a = arguments(__doc__)
    med = compare({c: (lambda c=c: scenario(c, a.rate, a.duration)) for c in ("tcp", "mptcp")}, a.reps)
    ratio = med["mptcp"]["ns_per_hop"] / med["tcp"]["ns_per_hop"]
    print(f"median ns per packet-hop: tcp {med['tcp']['ns_per_hop']:.1f}, mptcp {med['mptcp']['ns_per_hop']:.1f}; "
          f"mptcp / tcp = {ratio:.2f}")
    write(a.out, rate=a.rate, duration=a.duration, median=med, mptcp_over_tcp_per_hop=ratio)


if __name__ == "__main__":
    main()
