// Topology queries and routing. The route rule is documented in topology.h; this file keeps the
// Boost.Graph searches (Dijkstra inside a node or over the whole graph) and the route cache.
#include "common/topology/topology.h"

#include <algorithm>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <cassert>
#include <cmath>
#include <limits>

#include "common/topology/graph_impl.h"

namespace tawpipe::topo {

std::string_view to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::gpu:
      return "gpu";
    case VertexKind::nvswitch:
      return "nvswitch";
    case VertexKind::pcie_switch:
      return "pcie_switch";
    case VertexKind::cpu:
      return "cpu";
    case VertexKind::nic:
      return "nic";
    case VertexKind::network_switch:
      return "network_switch";
  }
  return "?";
}

std::string_view to_string(LinkClass cls) {
  switch (cls) {
    case LinkClass::nvlink:
      return "nvlink";
    case LinkClass::nvswitch:
      return "nvswitch";
    case LinkClass::pcie:
      return "pcie";
    case LinkClass::cpu_link:
      return "cpu_link";
    case LinkClass::shared_memory:
      return "shared_memory";
    case LinkClass::nic:
      return "nic";
    case LinkClass::network:
      return "network";
  }
  return "?";
}

std::string_view to_string(IntraFabric fabric) {
  switch (fabric) {
    case IntraFabric::nvswitch:
      return "nvswitch";
    case IntraFabric::nvlink_mesh:
      return "nvlink_mesh";
    case IntraFabric::pcie:
      return "pcie";
    case IntraFabric::shared_memory:
      return "shared_memory";
  }
  return "?";
}

std::string_view to_string(NetworkKind kind) {
  switch (kind) {
    case NetworkKind::single_switch:
      return "single_switch";
    case NetworkKind::fat_tree:
      return "fat_tree";
    case NetworkKind::rail_optimized:
      return "rail_optimized";
  }
  return "?";
}

namespace detail {

Graph make_graph(const std::vector<Link>& links, std::size_t first, std::size_t end,
                 VertexId offset, std::size_t num_vertices) {
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  std::vector<EdgeProps> props;
  edges.reserve(end - first);
  props.reserve(end - first);
  const auto hi = offset + static_cast<VertexId>(num_vertices);
  for (std::size_t i = first; i < end; ++i) {
    const Link& l = links[i];
    if (l.src < offset || l.src >= hi || l.dst < offset || l.dst >= hi) continue;
    edges.emplace_back(static_cast<std::size_t>(l.src - offset),
                       static_cast<std::size_t>(l.dst - offset));
    props.push_back(EdgeProps{l.id, link_cost_ps(l)});
  }
  return Graph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), props.begin(),
               num_vertices);
}

std::int64_t link_cost_ps(const Link& link) {
  constexpr double kProbeBytes = 1048576.0;
  const double rate = link.effective_bandwidth().bytes_per_second();
  assert(rate > 0.0);
  // Bounded by the loader's ranges: >= 1 B/s... but clamp anyway to stay in int64.
  const double transfer_ps = std::min(kProbeBytes / rate * 1e12, 1e15);
  return link.latency.picoseconds() + static_cast<std::int64_t>(std::llround(transfer_ps));
}

namespace {

using GVertex = boost::graph_traits<Graph>::vertex_descriptor;

// Records, for each vertex, the link of the edge that last lowered its distance: the entering
// link of the final shortest path (ties keep the first path found; deterministic).
struct RecordLink : boost::default_dijkstra_visitor {
  std::vector<LinkId>* pred = nullptr;
  template <class E, class G>
  void edge_relaxed(E e, const G& g) {
    (*pred)[boost::target(e, g)] = g[e].link;
  }
};

// Dijkstra from `root` over `g`, whose vertex i is global vertex `offset + i`; returns for each
// vertex of `g` the link entering it on the fastest path (-1 for the root and unreachable ones).
std::vector<LinkId> dijkstra_preds(const Graph& g, VertexId root, VertexId offset) {
  const auto n = boost::num_vertices(g);
  std::vector<LinkId> out(n, -1);
  std::vector<std::int64_t> dist(n, std::numeric_limits<std::int64_t>::max());
  RecordLink visitor;
  visitor.pred = &out;
  boost::dijkstra_shortest_paths(
      g, static_cast<GVertex>(root - offset),
      boost::distance_map(
          boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g)))
          .weight_map(boost::get(&EdgeProps::cost_ps, g))
          .visitor(visitor));
  return out;
}

const Graph& node_graph(const TopologyData& d, NodeId n) {
  const auto idx = static_cast<std::size_t>(n);
  std::call_once(d.cache->node_graph_once[idx], [&] {
    const NodeInfo& node = d.nodes[idx];
    d.cache->node_graphs[idx] = std::make_unique<Graph>(make_graph(
        d.links, static_cast<std::size_t>(node.first_link), static_cast<std::size_t>(node.end_link),
        node.first_vertex, static_cast<std::size_t>(node.end_vertex - node.first_vertex)));
  });
  return *d.cache->node_graphs[idx];
}

const LocalTree& local_tree(const TopologyData& d, VertexId root) {
  const auto idx = static_cast<std::size_t>(root);
  std::call_once(d.cache->tree_once[idx], [&] {
    const Vertex& rv = d.vertices[idx];
    auto tree = std::make_unique<LocalTree>();
    tree->root = root;
    if (rv.node >= 0) {
      const NodeInfo& node = d.nodes[static_cast<std::size_t>(rv.node)];
      tree->first_vertex = node.first_vertex;
      tree->pred = dijkstra_preds(node_graph(d, rv.node), root, node.first_vertex);
    } else {
      tree->first_vertex = 0;
      tree->pred = dijkstra_preds(d.graph, root, 0);
    }
    d.cache->trees[idx] = std::move(tree);
  });
  return *d.cache->trees[idx];
}

// Appends the tree path root -> target; false when target is unreachable in the tree.
bool append_tree_path(const TopologyData& d, const LocalTree& tree, VertexId target,
                      std::vector<LinkId>& out) {
  const std::size_t start = out.size();
  VertexId v = target;
  int guard = 0;
  while (v != tree.root) {
    const auto rel = v - tree.first_vertex;
    if (rel < 0 || static_cast<std::size_t>(rel) >= tree.pred.size()) return false;
    const LinkId l = tree.pred[static_cast<std::size_t>(rel)];
    if (l < 0 || ++guard > static_cast<int>(tree.pred.size())) {
      out.resize(start);
      return false;
    }
    out.push_back(l);
    v = d.links[static_cast<std::size_t>(l)].src;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
  return true;
}

// NIC -> NIC through the network switches (structural, D-mod-k spine choice); false when the
// fabric has no such path.
bool append_network_path(const TopologyData& d, VertexId nic_a, VertexId nic_b,
                         std::vector<LinkId>& out) {
  const NetInfo& net = d.net;
  const int a = net.nic_ordinal_of_vertex[static_cast<std::size_t>(nic_a)];
  const int b = net.nic_ordinal_of_vertex[static_cast<std::size_t>(nic_b)];
  assert(a >= 0 && b >= 0);
  const int leaf_a = net.leaf_of_nic[static_cast<std::size_t>(a)];
  const int leaf_b = net.leaf_of_nic[static_cast<std::size_t>(b)];
  if (leaf_a < 0 || leaf_b < 0) return false;
  out.push_back(net.nic_up[static_cast<std::size_t>(a)]);
  if (leaf_a != leaf_b) {
    if (net.spines.empty()) {
      out.pop_back();
      return false;
    }
    const auto spine = static_cast<std::size_t>(b) % net.spines.size();
    out.push_back(net.leaf_up[static_cast<std::size_t>(leaf_a)][spine]);
    out.push_back(net.leaf_up[static_cast<std::size_t>(leaf_b)][spine] ^ 1);
  }
  out.push_back(net.nic_up[static_cast<std::size_t>(b)] ^ 1);
  return true;
}

// The route src -> dst following the rule of topology.h; `r` caches the source's NIC path.
std::vector<LinkId> compute_route(const TopologyData& d, GpuId src, GpuId dst, SourceRoutes& r) {
  const GpuInfo& s = d.gpus[static_cast<std::size_t>(src)];
  const LocalTree& own = local_tree(d, s.vertex);
  if (!r.ready) {
    r.have_up = s.nic != kNoVertex && append_tree_path(d, own, s.nic, r.up);
    r.ready = true;
  }
  std::vector<LinkId> out;
  const GpuInfo& t = d.gpus[static_cast<std::size_t>(dst)];
  bool ok = false;
  if (t.node == s.node) {
    ok = append_tree_path(d, own, t.vertex, out);
  } else if (r.have_up && t.nic != kNoVertex) {
    out = r.up;
    ok = append_network_path(d, s.nic, t.nic, out) &&
         append_tree_path(d, local_tree(d, t.nic), t.vertex, out);
  }
  if (!ok) {
    // Fallback: fastest path in the whole graph (rail fabrics without spines, odd trees).
    out.clear();
    if (r.whole.root == kNoVertex)
      r.whole = LocalTree{s.vertex, 0, dijkstra_preds(d.graph, s.vertex, 0)};
    [[maybe_unused]] const bool found = append_tree_path(d, r.whole, t.vertex, out);
    assert(found && "the loader guarantees every GPU reaches every other");
  }
  return out;
}

}  // namespace
}  // namespace detail

Topology::Topology(std::shared_ptr<const detail::TopologyData> data) : data_(std::move(data)) {
  assert(data_ != nullptr);
}

const std::string& Topology::name() const {
  return data_->spec.name;
}
const std::string& Topology::description() const {
  return data_->spec.description;
}
bool Topology::nccl_socket_transport() const {
  return data_->spec.socket_transport;
}
const std::string& Topology::source() const {
  return data_->source;
}
const std::string& Topology::content_hash() const {
  return data_->hash;
}
int Topology::num_gpus() const {
  return static_cast<int>(data_->gpus.size());
}
int Topology::num_nodes() const {
  return static_cast<int>(data_->nodes.size());
}

NodeId Topology::node_of(GpuId gpu) const {
  assert(gpu >= 0 && gpu < num_gpus());
  return data_->gpus[static_cast<std::size_t>(gpu)].node;
}

std::span<const GpuId> Topology::gpus_of_node(NodeId node) const {
  assert(node >= 0 && node < num_nodes());
  return data_->nodes[static_cast<std::size_t>(node)].gpus;
}

int Topology::local_index(GpuId gpu) const {
  assert(gpu >= 0 && gpu < num_gpus());
  return data_->gpus[static_cast<std::size_t>(gpu)].local;
}

int Topology::rail_of(GpuId gpu) const {
  assert(gpu >= 0 && gpu < num_gpus());
  return data_->gpus[static_cast<std::size_t>(gpu)].rail;
}

GpuId Topology::gpu_at(NodeId node, int local) const {
  const auto gpus = gpus_of_node(node);
  assert(local >= 0 && static_cast<std::size_t>(local) < gpus.size());
  return gpus[static_cast<std::size_t>(local)];
}

const std::string& Topology::template_of(NodeId node) const {
  assert(node >= 0 && node < num_nodes());
  const auto t = data_->nodes[static_cast<std::size_t>(node)].template_index;
  return data_->spec.templates[static_cast<std::size_t>(t)].id;
}

const std::string& Topology::group_of(NodeId node) const {
  assert(node >= 0 && node < num_nodes());
  const auto g = data_->nodes[static_cast<std::size_t>(node)].group_index;
  return data_->spec.groups[static_cast<std::size_t>(g)].name;
}

IntraFabric Topology::fabric_of(NodeId node) const {
  assert(node >= 0 && node < num_nodes());
  const auto t = data_->nodes[static_cast<std::size_t>(node)].template_index;
  return data_->spec.templates[static_cast<std::size_t>(t)].fabric;
}

NetworkKind Topology::network_kind() const {
  return data_->spec.network ? data_->spec.network->kind : NetworkKind::single_switch;
}

const std::optional<HostCpu>& Topology::host_cpu() const {
  return data_->spec.host;
}

int Topology::core_of(GpuId gpu) const {
  const auto& host = data_->spec.host;
  return host ? gpu / host->ranks_per_core : -1;
}

const DeviceKind& Topology::device(GpuId gpu) const {
  assert(gpu >= 0 && gpu < num_gpus());
  return data_
      ->devices[static_cast<std::size_t>(data_->gpus[static_cast<std::size_t>(gpu)].device)];
}

const std::vector<DeviceKind>& Topology::device_kinds() const {
  return data_->devices;
}

VertexId Topology::gpu_vertex(GpuId gpu) const {
  assert(gpu >= 0 && gpu < num_gpus());
  return data_->gpus[static_cast<std::size_t>(gpu)].vertex;
}

VertexId Topology::nic_of(GpuId gpu) const {
  assert(gpu >= 0 && gpu < num_gpus());
  return data_->gpus[static_cast<std::size_t>(gpu)].nic;
}

std::span<const VertexId> Topology::nics_of_node(NodeId node) const {
  assert(node >= 0 && node < num_nodes());
  return data_->nodes[static_cast<std::size_t>(node)].nics;
}

const std::vector<Vertex>& Topology::vertices() const {
  return data_->vertices;
}
const std::vector<Link>& Topology::links() const {
  return data_->links;
}

const Vertex& Topology::vertex(VertexId id) const {
  assert(id >= 0 && static_cast<std::size_t>(id) < data_->vertices.size());
  return data_->vertices[static_cast<std::size_t>(id)];
}

const Link& Topology::link(LinkId id) const {
  assert(id >= 0 && static_cast<std::size_t>(id) < data_->links.size());
  return data_->links[static_cast<std::size_t>(id)];
}

std::span<const LinkId> Topology::route(GpuId src, GpuId dst) const {
  assert(src >= 0 && src < num_gpus() && dst >= 0 && dst < num_gpus());
  if (src == dst) return {};
  const detail::TopologyData& d = *data_;
  detail::SourceRoutes& r = d.cache->routes[static_cast<std::size_t>(src)];
  const std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.to.find(dst);
  if (it == r.to.end()) it = r.to.emplace(dst, detail::compute_route(d, src, dst, r)).first;
  return it->second;
}

Bandwidth Topology::bottleneck(std::span<const LinkId> route) const {
  assert(!route.empty());
  Bandwidth best = link(route.front()).effective_bandwidth();
  for (const LinkId l : route)
    best = std::min(best, link(l).effective_bandwidth());
  return best;
}

SimTime Topology::route_latency(std::span<const LinkId> route) const {
  SimTime total;
  for (const LinkId l : route)
    total += link(l).latency;
  return total;
}

}  // namespace tawpipe::topo
