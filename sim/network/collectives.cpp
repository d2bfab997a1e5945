#include "sim/network/collectives.h"

#include <algorithm>
#include <map>

namespace tawpipe::sim {
namespace {

std::size_t idx(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

}  // namespace

CollectivePlanner::CollectivePlanner(const ir::Program& program, const topo::Topology& topology,
                                     const NetworkModel& network)
    : program_(program),
      topology_(topology),
      network_(network),
      plans_(program.communicators.size()) {}

const CommPlan& CollectivePlanner::plan(ir::CommId comm) {
  auto& slot = plans_[idx(comm)];
  if (!slot) slot = build(comm);
  return *slot;
}

CommPlan CollectivePlanner::build(ir::CommId comm) const {
  const std::vector<ir::Rank>& members = program_.communicators[idx(comm)].members;
  const auto& placement = program_.header.placement;
  CommPlan plan;
  plan.members = static_cast<std::int32_t>(members.size());
  if (members.size() < 2) return plan;
  const auto gpu_of = [&](std::int32_t pos) { return placement[idx(members[idx(pos)])]; };
  // Members by node, each node's list in local-index order (node-major ring order).
  std::map<topo::NodeId, std::vector<std::int32_t>> by_node;
  for (std::int32_t pos = 0; pos < plan.members; ++pos)
    by_node[topology_.node_of(gpu_of(pos))].push_back(pos);
  for (auto& [node, list] : by_node) {
    std::stable_sort(list.begin(), list.end(), [&](std::int32_t a, std::int32_t b) {
      return topology_.local_index(gpu_of(a)) < topology_.local_index(gpu_of(b));
    });
  }
  // Rings: one per rail when the communicator spans nodes (see the file comment).
  std::size_t rings = 1;
  std::map<topo::NodeId, std::vector<int>> rails;
  if (by_node.size() > 1) {
    rings = SIZE_MAX;
    for (auto& [node, list] : by_node) {
      std::vector<int>& r = rails[node];
      for (std::int32_t pos : list)
        r.push_back(topology_.rail_of(gpu_of(pos)));
      std::sort(r.begin(), r.end());
      r.erase(std::unique(r.begin(), r.end()), r.end());
      rings = std::min(rings, r.size());
    }
    rings = std::max<std::size_t>(rings, 1);
  }
  for (std::size_t k = 0; k < rings; ++k) {
    Ring ring;
    std::map<topo::NodeId, std::int32_t> entry;  // first member of each node in this ring
    for (auto& [node, list] : by_node) {
      std::size_t first = 0;
      if (by_node.size() > 1) {
        const int rail = rails[node][k];
        for (std::size_t i = 0; i < list.size(); ++i) {
          if (topology_.rail_of(gpu_of(list[i])) == rail) {
            first = i;
            break;
          }
        }
      }
      entry[node] = list[first];
      for (std::size_t i = 0; i < list.size(); ++i)
        ring.order.push_back(list[(first + i) % list.size()]);
    }
    const std::size_t p = ring.order.size();
    for (std::size_t i = 0; i < p; ++i) {
      const std::int32_t src = ring.order[i];
      const std::int32_t dst = ring.order[(i + 1) % p];
      const topo::NodeId src_node = topology_.node_of(gpu_of(src));
      RingEdge e;
      e.src = src;
      e.dst = dst;
      e.link_offset = static_cast<std::uint32_t>(ring.links.size());
      e.inter_node = src_node != topology_.node_of(gpu_of(dst));
      // Inter-node edges leave on the ring's rail: the exit member forwards over the node's
      // fabric to the member that entered the node on that rail, which sends through its own
      // NIC to the next node's entry member on the same rail (NCCL's PXN), so no edge crosses
      // rails through the spines.
      const std::int32_t via = e.inter_node ? entry[src_node] : src;
      SimTime latency;
      for (const auto& [from, to] : {std::pair{src, via}, std::pair{via, dst}}) {
        if (from == to) continue;
        const auto route = topology_.route(gpu_of(from), gpu_of(to));
        ring.links.insert(ring.links.end(), route.begin(), route.end());
        latency += network_.path_latency(route);
      }
      e.link_count = static_cast<std::uint32_t>(ring.links.size()) - e.link_offset;
      ring.hop_latency = std::max(ring.hop_latency, latency);
      ring.edges.push_back(e);
    }
    plan.rings.push_back(std::move(ring));
  }
  return plan;
}

void CollectivePlanner::transfers(const ir::Op& op, ir::CommId comm, std::int32_t root_member,
                                  std::vector<CollectiveTransfer>& out) {
  out.clear();
  const CommPlan& p = plan(comm);
  if (p.members < 2 || p.rings.empty()) return;
  const double members = static_cast<double>(p.members);
  const double per_ring = static_cast<double>(op.bytes) / static_cast<double>(p.rings.size());
  const std::int64_t steps = p.members - 1;
  if (scratch_.size() < p.rings.size()) scratch_.resize(p.rings.size());
  for (std::size_t k = 0; k < p.rings.size(); ++k) {
    const Ring& ring = p.rings[k];
    CollectiveTransfer t;
    t.ring = &ring;
    switch (op.collective) {
      case ir::CollectiveKind::all_gather:
      case ir::CollectiveKind::reduce_scatter:
        t.links = ring.links;
        t.bytes = (members - 1.0) / members * per_ring;
        t.latency = ring.hop_latency * steps;
        break;
      case ir::CollectiveKind::all_reduce:
        t.links = ring.links;
        t.bytes = 2.0 * (members - 1.0) / members * per_ring;
        t.latency = ring.hop_latency * (2 * steps);
        break;
      case ir::CollectiveKind::broadcast:
      case ir::CollectiveKind::reduce: {
        // Position of the root in the ring; the chain skips the edge into it (broadcast) or out
        // of it (reduce).
        std::size_t at = 0;
        for (std::size_t i = 0; i < ring.order.size(); ++i) {
          if (ring.order[i] == root_member) at = i;
        }
        const std::size_t n = ring.edges.size();
        const std::size_t skip =
            op.collective == ir::CollectiveKind::broadcast ? (at + n - 1) % n : at;
        std::vector<topo::LinkId>& links = scratch_[k];
        links.clear();
        for (std::size_t i = 0; i < n; ++i) {
          if (i == skip) continue;
          const RingEdge& e = ring.edges[i];
          links.insert(links.end(), ring.links.begin() + e.link_offset,
                       ring.links.begin() + e.link_offset + e.link_count);
        }
        t.links = links;
        t.skipped_edge = static_cast<std::int32_t>(skip);
        t.bytes = per_ring + (members - 2.0) * std::min(per_ring, kChainChunkBytes);
        t.latency = ring.hop_latency * steps;
        break;
      }
    }
    out.push_back(t);
  }
}

}  // namespace tawpipe::sim
