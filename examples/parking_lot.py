"""A parking-lot topology built in Python (the role Tcl scripts had in ns-2):
a chain of routers, one long flow across all of them, and one short
cross-traffic flow on each hop. Run: python examples/parking_lot.py [HOPS]"""

import sys

import netbraid as nb

hops = int(sys.argv[1]) if len(sys.argv) > 1 else 4
s = nb.Scenario(name=f"parking-lot-{hops}", duration="60s", tcp=nb.TcpOptions(cc="reno", recovery="sack"))
s.measure = nb.Measure(start="10s")
s.add_router("r", count=hops + 1)
for i in range(hops):
    s.add_link(f"r{i}", f"r{i + 1}", rate="10Mbps", delay="5ms", queue="50p")
s.add_host("long_src").add_host("long_dst")
s.add_link("long_src", "r0", rate="100Mbps", delay="1ms")
s.add_link(f"r{hops}", "long_dst", rate="100Mbps", delay="1ms")
s.add_flow("long", "long_src", "long_dst")
for i in range(hops):
    s.add_host(f"x{i}_src").add_host(f"x{i}_dst")
    s.add_link(f"x{i}_src", f"r{i}", rate="100Mbps", delay="1ms")
    s.add_link(f"r{i + 1}", f"x{i}_dst", rate="100Mbps", delay="1ms")
    s.add_flow(f"cross{i}", f"x{i}_src", f"x{i}_dst")

result = nb.simulate(s)
for f in result["flows"]:
    print(f"{f['name']:>8}: goodput {f['goodput_bps'] / 1e6:6.2f} Mb/s, RTT {1e3 * f['rtt_mean_s']:5.1f} ms, "
          f"loss {100 * f['loss_rate']:.2f} %")
