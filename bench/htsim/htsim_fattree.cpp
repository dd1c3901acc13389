// netbraid's fat-tree benchmark case (bench/fattree.py) as an htsim program,
// for side-by-side speed runs: a k-ary fat tree (Al-Fares et al. 2008) built
// link by link from htsim's Queue and Pipe, one long TCP flow per host to a
// permutation of the hosts, each flow on one equal-cost path drawn at random
// for it (per-flow ECMP; the ACKs draw their own path, as a five-tuple hash
// in the other direction does).
//
//   htsim_fattree -k 8 -t 0.2 -warmup 0.05 -rate 10000 -delay_us 1 -qs 100
//                 -window 1048576 -seed 1 -perm i0,i1,...
//
// -perm gives the destination of every host (host ids in netbraid's order:
// pod, edge, host), so both simulators carry the same traffic matrix.
// Every link direction is a drop-tail Queue (rate, qs packets) then a Pipe
// (delay); a packet-hop is a packet entering a Pipe (counted by a Pipe
// subclass), the same count as netbraid's packets sent on a link direction.
// htsim's TCP: NewReno without SACK, an ACK per packet, 1500-byte packets
// (goodput reported as 1448 payload bytes a packet, as the dumbbell program).
// Built against htsim's library by bench/fattree.py (see its docstring).
#include "config.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "eventlist.h"
#include "logfile.h"
#include "clock.h"
#include "tcp.h"

static uint64_t g_hops = 0;

// A Pipe that counts the packets it carries: one per packet-hop.
class CountingPipe : public Pipe {
public:
    CountingPipe(simtime_picosec delay, EventList& ev) : Pipe(delay, ev) {}
    void receivePacket(Packet& pkt) override {
        g_hops++;
        Pipe::receivePacket(pkt);
    }
};

struct Direction {
    Queue* queue;
    CountingPipe* pipe;
};

int main(int argc, char** argv) {
    auto wall0 = std::chrono::steady_clock::now();
    int k = 8, qs = 100;
    double simtime = 0.2, warmup = 0.05, rate_mbps = 10000, delay_us = 1;
    uint64_t window = 1 << 20;
    unsigned seed = 1;
    std::vector<int> perm;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-k")) k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t")) simtime = atof(argv[++i]);
        else if (!strcmp(argv[i], "-warmup")) warmup = atof(argv[++i]);
        else if (!strcmp(argv[i], "-rate")) rate_mbps = atof(argv[++i]);
        else if (!strcmp(argv[i], "-delay_us")) delay_us = atof(argv[++i]);
        else if (!strcmp(argv[i], "-qs")) qs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-window")) window = strtoull(argv[++i], nullptr, 10);
        else if (!strcmp(argv[i], "-seed")) seed = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-perm")) {
            std::stringstream ss(argv[++i]);
            std::string item;
            while (std::getline(ss, item, ',')) perm.push_back(atoi(item.c_str()));
        } else {
            fprintf(stderr, "bad argument %s\n", argv[i]);
            return 1;
        }
    }
    if (k < 2 || k % 2) {
        fprintf(stderr, "-k must be even and at least 2\n");
        return 1;
    }
    const int half = k / 2, hosts = k * k * k / 4;
    if ((int)perm.size() != hosts) {
        fprintf(stderr, "-perm must list %d destinations (got %zu)\n", hosts, perm.size());
        return 1;
    }
    std::mt19937_64 rng(seed);
    Packet::set_packet_size(1500);
    EventList eventlist;
    eventlist.setEndtime(timeFromSec(simtime));
    Logfile logfile("/dev/null", eventlist);
    logfile.setStartTime(timeFromSec(simtime + 1));

    // Node ids: hosts 0..hosts-1 (pod, edge, host order), then edges, aggs, cores.
    auto edge = [&](int pod, int e) { return hosts + pod * half + e; };
    auto agg = [&](int pod, int j) { return hosts + k * half + pod * half + j; };
    auto core = [&](int c) { return hosts + 2 * k * half + c; };
    const linkspeed_bps rate = speedFromMbps(rate_mbps);
    std::map<std::pair<int, int>, Direction> links;
    auto link = [&](int a, int b) {
        for (auto d : {std::make_pair(a, b), std::make_pair(b, a)}) {
            Queue* q = new Queue(rate, memFromPkt(qs), eventlist, NULL);
            CountingPipe* p = new CountingPipe(timeFromUs(delay_us), eventlist);
            links[d] = Direction{q, p};
        }
    };
    for (int pod = 0; pod < k; pod++) {
        for (int j = 0; j < half; j++)
            for (int c = j * half; c < (j + 1) * half; c++) link(agg(pod, j), core(c));
        for (int e = 0; e < half; e++) {
            for (int j = 0; j < half; j++) link(edge(pod, e), agg(pod, j));
            for (int h = 0; h < half; h++) link(pod * half * half + e * half + h, edge(pod, e));
        }
    }
    // One equal-cost path from host a to host b, drawn at random.
    auto path = [&](int a, int b) {
        int pa = a / (half * half), ea = (a / half) % half;
        int pb = b / (half * half), eb = (b / half) % half;
        std::vector<int> nodes{a, edge(pa, ea)};
        if (pa != pb) {
            int j = rng() % half, c = j * half + rng() % half;
            nodes.insert(nodes.end(), {agg(pa, j), core(c), agg(pb, j), edge(pb, eb)});
        } else if (ea != eb) {
            int j = rng() % half;
            nodes.insert(nodes.end(), {agg(pa, j), edge(pb, eb)});
        }
        nodes.push_back(b);
        return nodes;
    };
    auto route = [&](const std::vector<int>& nodes, PacketSink* end) {
        route_t* r = new route_t();
        for (size_t i = 0; i + 1 < nodes.size(); i++) {
            Direction d = links.at({nodes[i], nodes[i + 1]});
            r->push_back(d.queue);
            r->push_back(d.pipe);
        }
        r->push_back(end);
        return r;
    };

    TcpRtxTimerScanner scanner(timeFromMs(1), eventlist);
    std::vector<TcpSrc*> srcs;
    std::vector<TcpSink*> sinks;
    for (int i = 0; i < hosts; i++) {
        TcpSrc* src = new TcpSrc(NULL, NULL, eventlist);
        TcpSink* snk = new TcpSink();
        src->_maxcwnd = window;
        scanner.registerTcp(*src);
        route_t* out = route(path(i, perm[i]), snk);
        route_t* back = route(path(perm[i], i), src);
        src->connect(*out, *back, *snk, timeFromUs((double)i));
        srcs.push_back(src);
        sinks.push_back(snk);
    }

    uint64_t events = 0;
    std::vector<uint64_t> snap(hosts, 0);
    bool snapped = false;
    auto run0 = std::chrono::steady_clock::now();
    while (eventlist.doNextEvent()) {
        events++;
        if (!snapped && eventlist.now() >= timeFromSec(warmup)) {
            for (int i = 0; i < hosts; i++) snap[i] = sinks[i]->_cumulative_ack;
            snapped = true;
        }
    }
    auto run1 = std::chrono::steady_clock::now();
    double run_wall = std::chrono::duration<double>(run1 - run0).count();
    double total_wall = std::chrono::duration<double>(run1 - wall0).count();
    double agg_bps = 0, s = 0, s2 = 0;
    for (int i = 0; i < hosts; i++) {
        double g = (sinks[i]->_cumulative_ack - snap[i]) / 1500.0 * 1448 * 8 / (simtime - warmup);
        agg_bps += g;
        s += g;
        s2 += g * g;
    }
    printf("k=%d hosts=%d simtime=%g warmup=%g\n", k, hosts, simtime, warmup);
    printf("wall_run_s=%.3f wall_total_s=%.3f\n", run_wall, total_wall);
    printf("events=%llu packet_hops=%llu\n", (unsigned long long)events, (unsigned long long)g_hops);
    printf("agg_goodput_bps=%.0f jain=%.5f\n", agg_bps, s2 > 0 ? s * s / (hosts * s2) : 0.0);
    return 0;
}
