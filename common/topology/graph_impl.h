/// \file
/// Private to common/topology (.cpp files only): the data behind a Topology, including the
/// Boost.Graph adjacency list and the route cache. Never include this from a public header.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/topology/spec.h"
#include "common/topology/topology.h"

namespace tawpipe::topo::detail {

struct EdgeProps {
  LinkId link = -1;
  std::int64_t cost_ps = 0;  ///< latency + 1 MiB at the effective bandwidth
};

/// Directed graph: vertex i is Vertex i, edge properties name the link.
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                    boost::no_property, EdgeProps>;

struct NodeInfo {
  Graph graph;  ///< the node's own links; vertex i is global vertex first_vertex + i
  int template_index = 0;
  int group_index = 0;
  VertexId first_vertex = 0;  ///< the node's vertices are [first_vertex, end_vertex)
  VertexId end_vertex = 0;
  std::vector<GpuId> gpus;
  std::vector<VertexId> nics;
};

struct GpuInfo {
  NodeId node = 0;
  int local = 0;
  int device = 0;  ///< index into TopologyData::devices
  VertexId vertex = kNoVertex;
  VertexId nic = kNoVertex;
  int rail = 0;
};

/// Network structure used for structural (non-search) routes between NICs.
struct NetInfo {
  std::vector<int> leaf_of_nic;  ///< per NIC ordinal: index into leaves (-1: none)
  std::vector<LinkId> nic_up;    ///< per NIC ordinal: NIC -> leaf
  std::vector<VertexId> leaves;  ///< leaf (or the single switch) vertices
  std::vector<VertexId> spines;
  std::vector<std::vector<LinkId>> leaf_up;  ///< [leaf][spine]: leaf -> spine link
  std::vector<int> nic_ordinal_of_vertex;    ///< per vertex: NIC ordinal or -1
};

/// Shortest-path tree from one vertex inside its node: `pred[v - first_vertex]` is the link
/// entering v on the path, -1 for the root and unreachable vertices.
struct LocalTree {
  VertexId root = kNoVertex;
  VertexId first_vertex = 0;
  std::vector<LinkId> pred;
};

/// Routes from one source GPU, computed per destination on first use. The vectors never move
/// once inserted (unordered_map nodes are stable), so spans into them stay valid.
struct SourceRoutes {
  std::mutex mutex;
  bool ready = false;
  bool have_up = false;
  std::vector<LinkId> up;  ///< source GPU -> its NIC
  LocalTree whole;         ///< tree over the whole graph, only if a fallback route is needed
  std::unordered_map<GpuId, std::vector<LinkId>> to;
};

/// Lazily filled caches, safe for concurrent queries (once-flags per tree, a mutex per source).
struct RouteCache {
  explicit RouteCache(std::size_t num_vertices, std::size_t num_gpus)
      : trees(num_vertices),
        tree_once(std::make_unique<std::once_flag[]>(num_vertices)),
        routes(std::make_unique<SourceRoutes[]>(num_gpus)) {}
  std::vector<std::unique_ptr<LocalTree>> trees;
  std::unique_ptr<std::once_flag[]> tree_once;
  std::unique_ptr<SourceRoutes[]> routes;
};

struct TopologyData {
  TopologySpec spec;
  std::string source;
  std::string hash;
  std::vector<DeviceKind> devices;
  std::vector<Vertex> vertices;
  std::vector<Link> links;
  std::vector<NodeInfo> nodes;
  std::vector<GpuInfo> gpus;
  NetInfo net;
  Graph graph;
  std::unique_ptr<RouteCache> cache;
};

/// Cost of a link for path search: latency + time of 1 MiB at its effective bandwidth, in ps.
std::int64_t link_cost_ps(const Link& link);

}  // namespace tawpipe::topo::detail
