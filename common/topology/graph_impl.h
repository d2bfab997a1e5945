/// \file
/// Private to common/topology (.cpp files only): the data behind a Topology, including the
/// Boost.Graph adjacency list and the route cache. Never include this from a public header.
#pragma once

#include <boost/graph/compressed_sparse_row_graph.hpp>
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

/// Directed graph in compressed sparse row form (compact and fast to build for 65536 GPUs):
/// vertex i is Vertex i (or, in a node's own graph, the node's i-th vertex); edge properties
/// name the link.
using Graph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, EdgeProps>;

/// Builds a graph with `num_vertices` vertices from links[first, end) restricted to links whose
/// ends both lie in [offset, offset + num_vertices), vertex ids shifted by -offset.
Graph make_graph(const std::vector<Link>& links, std::size_t first, std::size_t end,
                 VertexId offset, std::size_t num_vertices);

struct NodeInfo {
  int template_index = 0;
  int group_index = 0;
  VertexId first_vertex = 0;  ///< the node's vertices are [first_vertex, end_vertex)
  VertexId end_vertex = 0;
  LinkId first_link = 0;  ///< the node's internal links are [first_link, end_link)
  LinkId end_link = 0;
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
  RouteCache(std::size_t num_vertices, std::size_t num_gpus, std::size_t num_nodes)
      : node_graphs(num_nodes),
        node_graph_once(std::make_unique<std::once_flag[]>(num_nodes)),
        trees(num_vertices),
        tree_once(std::make_unique<std::once_flag[]>(num_vertices)),
        routes(std::make_unique<SourceRoutes[]>(num_gpus)) {}
  std::vector<std::unique_ptr<Graph>> node_graphs;  ///< built on the first route into a node
  std::unique_ptr<std::once_flag[]> node_graph_once;
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
