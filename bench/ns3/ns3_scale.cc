// The two scale cases of issue 17 in ns-3 (Debian's libns3-dev), for their
// peak memory beside netbraid's (bench/ns3_memory.py builds and runs this):
//
//   --case=dumbbell: the anchor's dumbbell (shared/anchors/dumbbell-benchmark.md)
//     with --flows senders L_i -> R1 -> R2 -> D_i, every link --rate (10 Gb/s),
//     access links 2 ms and 1000-packet queues, the bottleneck 5 ms and 100
//     packets; NewReno with SACK, 1448-byte segments, 128 KiB socket buffers,
//     delayed ACKs (2 segments, 200 ms), minimum RTO 1 s; flow i starts at
//     0.1 + 0.01 i s (bench/dumbbell.py's case 1000).
//   --case=fattree: a k-ary fat tree (bench/fattree.py): k pods of k/2 edge and
//     k/2 aggregation switches, (k/2)^2 cores, every link --rate, 1 us, 100-packet
//     queues; host i sends to host --perm[i] (the permutation netbraid's run
//     used), NewReno with SACK, 1448-byte segments, 2^20-byte socket buffers,
//     flow i starting at i us. Routing: ns-3's global routing with its random
//     equal-cost choice per packet (ns-3.37 has no per-flow ECMP).
//
// Queues are traffic-control FIFOs of the stated size in front of a device
// queue of one packet, as in the anchor's ns-3 runs. Prints one line of
// key=value: wall seconds of Simulator::Run, events, packets the sinks
// received.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace {

struct Net {
    PointToPointHelper p2p;
    Ipv4AddressHelper addresses;
    uint32_t subnet = 0;

    // A link between a and b with the given one-way delay and FIFO size,
    // numbered in a /30 of its own.
    Ipv4InterfaceContainer Link(Ptr<Node> a, Ptr<Node> b, const std::string &rate, const std::string &delay,
                                uint32_t queuePackets) {
        p2p.SetDeviceAttribute("DataRate", StringValue(rate));
        p2p.SetChannelAttribute("Delay", StringValue(delay));
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
        NetDeviceContainer devices = p2p.Install(a, b);
        TrafficControlHelper tc;
        tc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(std::to_string(queuePackets) + "p"));
        tc.Install(devices);
        std::ostringstream base;
        base << "10." << (subnet >> 14 & 0xff) << "." << (subnet >> 6 & 0xff) << "." << ((subnet & 0x3f) << 2);
        subnet++;
        addresses.SetBase(base.str().c_str(), "255.255.255.252");
        return addresses.Assign(devices);
    }
};

void Flow(Ptr<Node> from, Ptr<Node> to, Ipv4Address toAddress, uint16_t port, double startS, double stopS,
          ApplicationContainer &sinks) {
    BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(toAddress, port));
    source.SetAttribute("MaxBytes", UintegerValue(0));
    source.SetAttribute("SendSize", UintegerValue(1448));
    ApplicationContainer s = source.Install(from);
    s.Start(Seconds(startS));
    s.Stop(Seconds(stopS));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer d = sink.Install(to);
    d.Start(Seconds(0));
    sinks.Add(d);
}

std::vector<uint32_t> ParsePermutation(const std::string &text) {
    std::vector<uint32_t> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        out.push_back(std::stoul(item));
    }
    return out;
}

}  // namespace

int main(int argc, char *argv[]) {
    std::string which = "dumbbell";
    uint32_t flows = 1000;
    uint32_t k = 8;
    std::string rate = "10Gbps";
    double duration = 60;
    std::string perm;
    CommandLine cmd;
    cmd.AddValue("case", "dumbbell or fattree", which);
    cmd.AddValue("flows", "dumbbell: senders", flows);
    cmd.AddValue("k", "fattree: pods", k);
    cmd.AddValue("rate", "every link's rate", rate);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("perm", "fattree: host i sends to host perm[i], comma-separated", perm);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpNewReno"));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1)));

    Net net;
    InternetStackHelper stack;
    ApplicationContainer sinks;
    if (which == "dumbbell") {
        Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(131072));
        Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(131072));
        NodeContainer senders, receivers, routers;
        senders.Create(flows);
        receivers.Create(flows);
        routers.Create(2);
        stack.InstallAll();
        net.Link(routers.Get(0), routers.Get(1), rate, "5ms", 100);
        std::vector<Ipv4Address> to(flows);
        for (uint32_t i = 0; i < flows; i++) {
            net.Link(senders.Get(i), routers.Get(0), rate, "2ms", 1000);
            to[i] = net.Link(routers.Get(1), receivers.Get(i), rate, "2ms", 1000).GetAddress(1);
        }
        Ipv4GlobalRoutingHelper::PopulateRoutingTables();
        for (uint32_t i = 0; i < flows; i++) {
            Flow(senders.Get(i), receivers.Get(i), to[i], 5001, 0.1 + 0.01 * i, duration, sinks);
        }
    } else if (which == "fattree") {
        Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 20));
        Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 20));
        Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(true));
        uint32_t half = k / 2;
        NodeContainer cores, aggs, edges, hosts;
        cores.Create(half * half);
        aggs.Create(k * half);
        edges.Create(k * half);
        hosts.Create(k * half * half);
        stack.InstallAll();
        std::vector<Ipv4Address> hostAddress(hosts.GetN());
        for (uint32_t p = 0; p < k; p++) {
            for (uint32_t j = 0; j < half; j++) {
                for (uint32_t c = j * half; c < (j + 1) * half; c++) {
                    net.Link(aggs.Get(p * half + j), cores.Get(c), rate, "1us", 100);
                }
            }
            for (uint32_t e = 0; e < half; e++) {
                for (uint32_t j = 0; j < half; j++) {
                    net.Link(edges.Get(p * half + e), aggs.Get(p * half + j), rate, "1us", 100);
                }
                for (uint32_t h = 0; h < half; h++) {
                    uint32_t i = (p * half + e) * half + h;
                    hostAddress[i] = net.Link(hosts.Get(i), edges.Get(p * half + e), rate, "1us", 100).GetAddress(0);
                }
            }
        }
        Ipv4GlobalRoutingHelper::PopulateRoutingTables();
        std::vector<uint32_t> dst = ParsePermutation(perm);
        if (dst.size() != hosts.GetN()) {
            std::cerr << "--perm needs " << hosts.GetN() << " comma-separated host numbers, got " << dst.size()
                      << "\n";
            return 2;
        }
        for (uint32_t i = 0; i < hosts.GetN(); i++) {
            Flow(hosts.Get(i), hosts.Get(dst[i]), hostAddress[dst[i]], 5001 + i, 1e-6 * i, duration, sinks);
        }
    } else {
        std::cerr << "--case must be dumbbell or fattree\n";
        return 2;
    }

    Simulator::Stop(Seconds(duration));
    auto started = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    uint64_t received = 0;
    for (uint32_t i = 0; i < sinks.GetN(); i++) {
        received += DynamicCast<PacketSink>(sinks.Get(i))->GetTotalRx();
    }
    std::cout << "wall_run_s=" << wall << " events=" << Simulator::GetEventCount()
              << " bytes_received=" << received << " goodput_bps=" << received * 8.0 / duration << "\n";
    Simulator::Destroy();
    return 0;
}
