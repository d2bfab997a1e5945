// Human summary (`tawsim --print-topology`), bisection bandwidth and Graphviz output.
#include "common/topology/describe.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/topology/graph_impl.h"

namespace tawpipe::topo {
namespace {

// Max-flow graph: capacities in whole MB/s so the solver works on exact integers.
using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, std::int64_t,
        boost::property<boost::edge_residual_capacity_t, std::int64_t,
                        boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

void add_flow_edge(FlowGraph& g, std::size_t a, std::size_t b, std::int64_t cap) {
  auto cap_map = boost::get(boost::edge_capacity, g);
  auto rev_map = boost::get(boost::edge_reverse, g);
  const auto e = boost::add_edge(a, b, g).first;
  const auto r = boost::add_edge(b, a, g).first;
  cap_map[e] = cap;
  cap_map[r] = 0;
  rev_map[e] = r;
  rev_map[r] = e;
}

std::int64_t mb_per_s(Bandwidth b) {
  return std::max<std::int64_t>(1, std::llround(b.bytes_per_second() / 1e6));
}

// The two halves used for the bisection: by node, or by local GPU index in a single node.
std::vector<bool> first_half(const Topology& t) {
  std::vector<bool> in_a(static_cast<std::size_t>(t.num_gpus()), false);
  for (GpuId g = 0; g < t.num_gpus(); ++g) {
    in_a[static_cast<std::size_t>(g)] =
        t.num_nodes() >= 2 ? t.node_of(g) < t.num_nodes() / 2
                           : t.local_index(g) < static_cast<int>(t.gpus_of_node(0).size()) / 2;
  }
  return in_a;
}

std::string fabric_line(const Topology& t, NodeId n) {
  return std::string(to_string(t.fabric_of(n)));
}

}  // namespace

Bandwidth bisection_bandwidth(const Topology& t) {
  if (t.num_gpus() < 2) return Bandwidth();
  const std::size_t nv = t.vertices().size();
  FlowGraph g(nv + 2);
  const std::size_t source = nv;
  const std::size_t sink = nv + 1;
  std::int64_t total = 1;
  for (const Link& l : t.links()) {
    const std::int64_t cap = mb_per_s(l.capacity);
    total += cap;
    add_flow_edge(g, static_cast<std::size_t>(l.src), static_cast<std::size_t>(l.dst), cap);
  }
  const std::vector<bool> in_a = first_half(t);
  for (GpuId gpu = 0; gpu < t.num_gpus(); ++gpu) {
    const auto v = static_cast<std::size_t>(t.gpu_vertex(gpu));
    if (in_a[static_cast<std::size_t>(gpu)]) {
      add_flow_edge(g, source, v, total);
    } else {
      add_flow_edge(g, v, sink, total);
    }
  }
  const std::int64_t flow = boost::push_relabel_max_flow(g, source, sink);
  return Bandwidth::bytes_per_second(static_cast<double>(flow) * 1e6);
}

std::string describe(const Topology& t) {
  std::string out;
  out += fmt::format("topology {}: {}\n", t.name(), t.description());
  out += fmt::format("  source {}, content hash {}\n", t.source(), t.content_hash());
  out += fmt::format("nodes: {}   GPUs: {}   network: {}\n", t.num_nodes(), t.num_gpus(),
                     t.num_nodes() > 1 || !t.nics_of_node(0).empty()
                         ? std::string(to_string(t.network_kind()))
                         : std::string("none"));
  // Node groups: consecutive nodes with the same group.
  for (NodeId n = 0; n < t.num_nodes();) {
    NodeId end = n;
    while (end < t.num_nodes() && t.group_of(end) == t.group_of(n))
      ++end;
    const GpuId g0 = t.gpus_of_node(n).front();
    const DeviceKind& d = t.device(g0);
    out += fmt::format(
        "  group {}: nodes {}-{} ({} x template {}), {} x {} per node, fabric {}, {} NIC(s)\n",
        t.group_of(n), n, end - 1, end - n, t.template_of(n), t.gpus_of_node(n).size(), d.name,
        fabric_line(t, n), t.nics_of_node(n).size());
    n = end;
  }
  out += "device kinds:\n";
  for (const DeviceKind& d : t.device_kinds()) {
    out += fmt::format(
        "  {}: bf16 {:.1f} TFLOP/s, fp32 {:.1f} TFLOP/s, memory {}, HBM {}; efficiency gemm "
        "{:.2f}, attention fwd {:.2f} bwd {:.2f}, elementwise {:.2f}, memory {:.2f}; launch {}\n",
        d.name, d.peak_bf16.teraflops(), d.peak_fp32.teraflops(), to_string(d.memory_capacity),
        pretty(d.memory_bandwidth), d.efficiency.gemm, d.efficiency.attention_fwd,
        d.efficiency.attention_bwd, d.efficiency.elementwise, d.efficiency.memory,
        pretty(d.launch_overhead));
  }
  // Link classes: capacity range, efficiency, latency, count (both directions).
  struct ClassSummary {
    int count = 0;
    Bandwidth min_cap, max_cap;
    double min_eff = 1.0;
    SimTime latency;
  };
  std::map<int, ClassSummary> classes;
  for (const Link& l : t.links()) {
    ClassSummary& c = classes[static_cast<int>(l.cls)];
    if (c.count++ == 0) {
      c.min_cap = c.max_cap = l.capacity;
      c.min_eff = l.efficiency;
      c.latency = l.latency;
    }
    c.min_cap = std::min(c.min_cap, l.capacity);
    c.max_cap = std::max(c.max_cap, l.capacity);
    c.min_eff = std::min(c.min_eff, l.efficiency);
  }
  out += "link classes (per direction; capacity, efficiency, latency, directed links):\n";
  for (const auto& [cls, c] : classes) {
    const std::string cap =
        c.min_cap == c.max_cap ? pretty(c.max_cap) : pretty(c.min_cap) + " .. " + pretty(c.max_cap);
    out += fmt::format("  {:<13} {:<24} eff {:.2f}  latency {:<9} x{}\n",
                       to_string(static_cast<LinkClass>(cls)), cap, c.min_eff, pretty(c.latency),
                       c.count);
  }
  // Per-GPU view of each group's first node: peer bandwidth in the node, NIC and its share.
  // Each NIC's network port gives its bandwidth (no port: the node has no network).
  std::map<VertexId, Bandwidth> nic_port;
  for (const Link& l : t.links()) {
    if (l.cls == LinkClass::nic && t.vertex(l.src).kind == VertexKind::nic)
      nic_port[l.src] = l.capacity;
  }
  out += "per GPU (first node of each group; route bottleneck = capacity x efficiency):\n";
  for (NodeId n = 0; n < t.num_nodes(); ++n) {
    if (n > 0 && t.group_of(n) == t.group_of(n - 1)) continue;
    const auto gpus = t.gpus_of_node(n);
    out += fmt::format("  group {}:\n", t.group_of(n));
    if (gpus.size() > 1) {
      const auto r = t.route(gpus[0], gpus[1]);
      out += fmt::format("    intra-node gpu0 -> gpu1: {} over {} hops, latency {}\n",
                         pretty(t.bottleneck(r)), r.size(), pretty(t.route_latency(r)));
    }
    if (t.num_nodes() > 1) {
      const GpuId other = t.gpus_of_node(n == 0 ? 1 : 0).front();
      const auto r = t.route(gpus[0], other);
      out += fmt::format("    inter-node gpu0 -> {}: {} over {} hops, latency {}\n",
                         t.vertex(t.gpu_vertex(other)).name, pretty(t.bottleneck(r)), r.size(),
                         pretty(t.route_latency(r)));
    }
    std::map<VertexId, int> sharing;
    for (const GpuId g : gpus)
      ++sharing[t.nic_of(g)];
    for (const GpuId g : gpus) {
      const VertexId nic = t.nic_of(g);
      if (nic == kNoVertex) {
        out += fmt::format("    gpu{}: no NIC\n", t.local_index(g));
        continue;
      }
      const Bandwidth port = nic_port[nic];
      out +=
          fmt::format("    gpu{} -> NIC {} (rail {}), {} shared by {} GPU(s)\n", t.local_index(g),
                      t.vertex(nic).name, t.rail_of(g), pretty(port), sharing[nic]);
    }
  }
  const Bandwidth bisection = bisection_bandwidth(t);
  out += fmt::format(
      "bisection bandwidth: {} per direction (max-flow between the GPUs of {} and the rest, "
      "nominal capacities)\n",
      pretty(bisection),
      t.num_nodes() >= 4   ? fmt::format("nodes 0-{}", t.num_nodes() / 2 - 1)
      : t.num_nodes() >= 2 ? std::string("node 0")
                           : std::string("the first half of the node's GPUs"));
  return out;
}

void write_dot(const Topology& t, std::ostream& out) {
  out << "digraph \"" << t.name() << "\" {\n  graph [rankdir=TB, fontsize=10];\n"
      << "  node [shape=box, fontsize=9];\n  edge [fontsize=8, dir=both];\n";
  const auto shape = [](VertexKind k) {
    switch (k) {
      case VertexKind::gpu:
        return "box";
      case VertexKind::nvswitch:
        return "hexagon";
      case VertexKind::pcie_switch:
        return "diamond";
      case VertexKind::cpu:
        return "octagon";
      case VertexKind::nic:
        return "cds";
      case VertexKind::network_switch:
        return "ellipse";
    }
    return "box";
  };
  for (NodeId n = 0; n < t.num_nodes(); ++n) {
    out << "  subgraph cluster_node" << n << " {\n    label=\"node" << n << " (" << t.template_of(n)
        << ")\";\n";
    for (const Vertex& v : t.vertices()) {
      if (v.node != n) continue;
      const std::string& name = v.name;
      out << "    v" << v.id << " [label=\"" << name.substr(name.find('/') + 1)
          << "\", shape=" << shape(v.kind) << "];\n";
    }
    out << "  }\n";
  }
  for (const Vertex& v : t.vertices()) {
    if (v.node >= 0) continue;
    out << "  v" << v.id << " [label=\"" << v.name << "\", shape=" << shape(v.kind) << "];\n";
  }
  for (const Link& l : t.links()) {
    if (l.id % 2 != 0) continue;  // one edge per pair
    out << "  v" << l.src << " -> v" << l.dst << " [label=\"" << to_string(l.cls) << " "
        << pretty(l.capacity) << "\"];\n";
  }
  out << "}\n";
}

}  // namespace tawpipe::topo
