"""What SCTP costs the simulator per packet-hop, beside TCP carrying the
same traffic (issue 13: within ± 25 %).

Two disjoint paths of RATE each (client ⇉ server, 1 ms one-way,
250-packet queues (1.5 bandwidth-delay products at 1 Gb/s)), 20 s simulated: `tcp` is one Reno flow on each path;
`sctp` one plain SCTP association on each path; `cmt` one SCTP-CMT
association over both. All keep both paths full (buffers of 8 MB), so they
move about the same packets. Runs alternate in one process (`--reps`
each); medians are printed and, with --out, written as JSON.

    python bench/sctp_cost.py --rate 1Gbps --reps 5 --out bench/results/sctp_cost.json
"""

from __future__ import annotations

import netbraid as nb
from hop_cost import arguments, compare, write


def scenario(case: str, rate: str, duration: str) -> nb.Scenario:
    s = nb.Scenario(name=f"sctp-cost-{case}", duration=duration)
    s.add_host("client").add_host("server")
    for _ in range(2):
        s.add_link("client", "server", rate=rate, delay="1ms", queue="250p")
    if case == "cmt":
        s.add_flow("a", "client", "server", kind="sctp", cmt=True, window="8MB")
    else:
        for k in range(2):
            path = [{"from_iface": k, "to_iface": k}]
            if case == "sctp":
                s.add_flow(f"s{k}", "client", "server", kind="sctp", paths=path, window="8MB")
            else:
                s.add_flow(f"t{k}", "client", "server", window="8MB", from_iface=k, to_iface=k)
    return s


def main() -> None:
    a = arguments(__doc__)
    cases = ("tcp", "sctp", "cmt")
    med = compare({c: (lambda c=c: scenario(c, a.rate, a.duration)) for c in cases}, a.reps)
    ratios = {c: med[c]["ns_per_hop"] / med["tcp"]["ns_per_hop"] for c in ("sctp", "cmt")}
    print("median ns per packet-hop: " + ", ".join(f"{c} {med[c]['ns_per_hop']:.1f}" for c in cases)
          + "; " + ", ".join(f"{c} / tcp = {r:.2f}" for c, r in ratios.items()))
    write(a.out, rate=a.rate, duration=a.duration, median=med, over_tcp_per_hop=ratios)


if __name__ == "__main__":
    main()
