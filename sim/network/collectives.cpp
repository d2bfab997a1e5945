#include "sim/network/collectives.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

namespace tawpipe::sim {
namespace {

std::size_t idx(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

/// Parent of node index `i` in NCCL's binary tree over `n` indices (root 0, which has one
/// child); -1 for the root. See the file comment of collectives.h.
std::int32_t btree_parent(std::int32_t n, std::int32_t i) {
  if (i == 0) return -1;
  const std::int32_t low = i & -i;
  const std::int32_t up = (i ^ low) | (low << 1);
  return up < n ? up : i ^ low;
}

/// Parent of `i` in tree `t` (0: the binary tree; 1: its mirror for even n, its shift by one
/// for odd n); -1 for the root.
std::int32_t dtree_parent(std::int32_t n, std::int32_t t, std::int32_t i) {
  if (t == 0) return btree_parent(n, i);
  if (n % 2 == 1) {
    const std::int32_t p = btree_parent(n, (i - 1 + n) % n);
    return p < 0 ? -1 : (p + 1) % n;
  }
  const std::int32_t p = btree_parent(n, n - 1 - i);
  return p < 0 ? -1 : n - 1 - p;
}

}  // namespace

SimTime tree_latency_of(const TreeChannel& channel, double data_bytes) {
  const double chunk = std::min(data_bytes, 512.0 * 1024);
  return channel.latency + SimTime::ps(static_cast<std::int64_t>(
                               std::ceil(chunk * channel.chunk_seconds_per_byte * 1e12)));
}

std::optional<SimTime> measured_comm_time(const profile::Profile* profile, profile::CommOp op,
                                          profile::CommScope scope, int ranks, double bytes) {
  if (profile == nullptr) return std::nullopt;
  for (const profile::CommMeasurement& m : profile->communication) {
    if (m.op != op || m.scope != scope || m.ranks != ranks || m.points.empty()) continue;
    for (std::size_t i = 0; i < m.points.size(); ++i) {
      const double s1 = static_cast<double>(m.points[i].size.count());
      if (bytes > s1) continue;
      if (bytes == s1) return m.points[i].time;
      if (i == 0) return std::nullopt;  // below the smallest measured size
      const double s0 = static_cast<double>(m.points[i - 1].size.count());
      const double t0 = m.points[i - 1].time.seconds();
      const double t1 = m.points[i].time.seconds();
      const double t = t0 + (t1 - t0) * (bytes - s0) / (s1 - s0);
      return SimTime::ps(static_cast<std::int64_t>(std::llround(t * 1e12)));
    }
    return std::nullopt;  // above the largest
  }
  return std::nullopt;
}

const char* name(AllReduceAlgo algo) {
  switch (algo) {
    case AllReduceAlgo::automatic:
      return "auto";
    case AllReduceAlgo::ring:
      return "ring";
    case AllReduceAlgo::tree:
      return "tree";
  }
  return "?";
}

bool all_reduce_algo_from_name(std::string_view text, AllReduceAlgo* out) {
  for (const AllReduceAlgo a :
       {AllReduceAlgo::automatic, AllReduceAlgo::ring, AllReduceAlgo::tree}) {
    const std::string_view n = name(a);
    const bool same =
        n.size() == text.size() && std::equal(n.begin(), n.end(), text.begin(), [](char x, char y) {
          return x == std::tolower(static_cast<unsigned char>(y));
        });
    if (same) {
      *out = a;
      return true;
    }
  }
  return false;
}

CollectivePlanner::CollectivePlanner(const ir::Program& program, const topo::Topology& topology,
                                     const NetworkModel& network, AllReduceAlgo all_reduce,
                                     NcclOptions nccl)
    : program_(program),
      topology_(topology),
      network_(network),
      all_reduce_(all_reduce),
      nccl_(nccl),
      plans_(program.communicators.size()) {
  if (all_reduce_ == AllReduceAlgo::ring) nccl_.tuner.allow_tree = false;
  if (all_reduce_ == AllReduceAlgo::tree) nccl_.tuner.allow_ring = false;
}

const CommPlan& CollectivePlanner::plan(ir::CommId comm) {
  auto& slot = plans_[idx(comm)];
  if (!slot) {
    slot = build(comm);
    if (slot->members >= 2) build_shape(comm, *slot);
  }
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
  plan.nodes = static_cast<std::int32_t>(by_node.size());
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
  std::vector<topo::LinkId> all;
  for (const Ring& ring : plan.rings)
    all.insert(all.end(), ring.links.begin(), ring.links.end());
  plan.ring_rate = alone_rate(all);
  return plan;
}

void CollectivePlanner::build_trees(ir::CommId comm, CommPlan& plan) const {
  const std::vector<ir::Rank>& members = program_.communicators[idx(comm)].members;
  const auto& placement = program_.header.placement;
  const auto gpu_of = [&](std::int32_t pos) { return placement[idx(members[idx(pos)])]; };
  const std::int32_t n = plan.nodes;
  // Depth of the deeper of the two trees over the node indices.
  std::int32_t depth = 0;
  for (std::int32_t t = 0; t < 2; ++t) {
    for (std::int32_t i = 0; i < n; ++i) {
      std::int32_t d = 0;
      for (std::int32_t j = dtree_parent(n, t, i); j >= 0; j = dtree_parent(n, t, j))
        ++d;
      depth = std::max(depth, d);
    }
  }
  for (const Ring& ring : plan.rings) {
    // The ring visits each node's members consecutively, starting at the member on its rail:
    // those runs are the channel's chains, their first members the chain heads.
    std::vector<std::size_t> begin;
    for (std::size_t i = 0; i < ring.order.size(); ++i) {
      if (i == 0 ||
          topology_.node_of(gpu_of(ring.order[i])) != topology_.node_of(gpu_of(ring.order[i - 1])))
        begin.push_back(i);
    }
    begin.push_back(ring.order.size());
    TreeChannel ch;
    SimTime intra_latency, inter_latency;
    double intra_rate = std::numeric_limits<double>::infinity();
    double inter_rate = std::numeric_limits<double>::infinity();
    std::size_t longest_chain = 1;
    const auto add_edge = [&](std::int32_t src, std::int32_t dst, bool inter_node) {
      RingEdge e;
      e.src = src;
      e.dst = dst;
      e.inter_node = inter_node;
      e.link_offset = static_cast<std::uint32_t>(ch.links.size());
      const auto route = topology_.route(gpu_of(src), gpu_of(dst));
      ch.links.insert(ch.links.end(), route.begin(), route.end());
      e.link_count = static_cast<std::uint32_t>(route.size());
      SimTime& h = inter_node ? inter_latency : intra_latency;
      h = std::max(h, network_.path_latency(route));
      double& rate = inter_node ? inter_rate : intra_rate;
      for (const topo::LinkId l : route)
        rate = std::min(rate, network_.link_bytes_per_second(l));
      ch.edges.push_back(e);
    };
    for (std::int32_t t = 0; t < 2; ++t) {
      for (std::size_t node = 0; node + 1 < begin.size(); ++node) {
        longest_chain = std::max(longest_chain, begin[node + 1] - begin[node]);
        for (std::size_t i = begin[node] + 1; i < begin[node + 1]; ++i) {
          add_edge(ring.order[i], ring.order[i - 1], false);  // up: reduce towards the head
          add_edge(ring.order[i - 1], ring.order[i], false);  // down: broadcast
        }
      }
      for (std::int32_t i = 0; i < n; ++i) {
        const std::int32_t parent = dtree_parent(n, t, i);
        if (parent < 0) continue;
        const std::int32_t head = ring.order[begin[idx(i)]];
        const std::int32_t parent_head = ring.order[begin[idx(parent)]];
        add_edge(head, parent_head, true);
        add_edge(parent_head, head, true);
      }
    }
    const auto chain_edges = static_cast<std::int64_t>(longest_chain) - 1;
    ch.latency = (intra_latency * chain_edges + inter_latency * depth) * 2;
    ch.chunk_seconds_per_byte = 2.0 * (static_cast<double>(chain_edges) / intra_rate +
                                       static_cast<double>(depth) / inter_rate);
    plan.trees.push_back(std::move(ch));
  }
  std::vector<topo::LinkId> all;
  for (const TreeChannel& ch : plan.trees)
    all.insert(all.end(), ch.links.begin(), ch.links.end());
  plan.tree_rate = alone_rate(all);
  plan.trees_built = true;
}

double CollectivePlanner::alone_rate(std::span<const topo::LinkId> links) const {
  // Alone on the network, the variable's rate is set by its most loaded link: capacity over
  // the number of times the variable lists it.
  std::vector<topo::LinkId> sorted(links.begin(), links.end());
  std::sort(sorted.begin(), sorted.end());
  double rate = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i])
      ++j;
    rate = std::min(rate, network_.link_bytes_per_second(sorted[i]) / static_cast<double>(j - i));
    i = j;
  }
  return rate;
}

void CollectivePlanner::build_shape(ir::CommId comm, CommPlan& p) const {
  const std::vector<ir::Rank>& members = program_.communicators[idx(comm)].members;
  const auto& placement = program_.header.placement;
  const auto gpu_of = [&](std::int32_t pos) { return placement[idx(members[idx(pos)])]; };
  // The node fabric: the class of the first link from the first member to another GPU of its
  // node (GPU -> switch), whether or not the communicator has members there.
  topo::LinkClass intra = topo::LinkClass::pcie;
  double nvlink_bw = 0.0;  // nominal per-direction NVLink bandwidth of one GPU
  const topo::GpuId g0 = gpu_of(0);
  for (const topo::GpuId other : topology_.gpus_of_node(topology_.node_of(g0))) {
    if (other == g0) continue;
    const auto route = topology_.route(g0, other);
    if (route.empty()) continue;
    const topo::Link& l = topology_.link(route.front());
    intra = l.cls;
    nvlink_bw = l.capacity.bytes_per_second();
    break;
  }
  for (const Ring& r : p.rings) {
    for (const RingEdge& e : r.edges) {
      if (!e.inter_node) continue;
      const std::span<const topo::LinkId> route(r.links.data() + e.link_offset, e.link_count);
      SimTime lat;
      for (const topo::LinkId l : route) {
        if (topology_.link(l).cls == topo::LinkClass::nic ||
            topology_.link(l).cls == topo::LinkClass::network)
          lat += network_.link_latency(l);
      }
      p.inter_hop_latency = std::max(p.inter_hop_latency, lat);
    }
  }
  // Host ranks (shared memory, or a node of one CPU "device" reaching others over CPU links).
  if (topology_.gpus_of_node(topology_.node_of(g0)).size() < 2 &&
      topology_.device(g0).name.find("cpu") != std::string::npos)
    return;
  if (intra == topo::LinkClass::shared_memory || intra == topo::LinkClass::cpu_link) return;
  p.nccl = true;
  nccl::CommShape& s = p.shape;
  s.ranks = p.members;
  s.nodes = p.nodes;
  s.arch = nccl::arch_of_device(topology_.device(gpu_of(0)).name);
  const bool nvlink = intra == topo::LinkClass::nvswitch || intra == topo::LinkClass::nvlink;
  s.intra = nvlink ? nccl::Hw::nvlink : nccl::Hw::pci;
  const auto rails = static_cast<int>(p.rings.size());
  p.sm_bus_cap = std::numeric_limits<double>::infinity();
  if (p.nodes > 1) {
    // NCCL opens 2 channels per NIC across nodes (NCCL_NCHANNELS_PER_NET_PEER, search.cc).
    s.channels = 2 * rails;
    if (topology_.nccl_socket_transport())
      p.sm_bus_cap = s.channels * nccl_.socket.connection_bytes_per_second();
  }
  if (nvlink) p.nvlink_links = std::max(1, static_cast<int>(std::lround(nvlink_bw / 25e9)));
  if (p.nodes == 1 && nvlink) {
    const int links = p.nvlink_links;
    s.channels = nccl::nvlink_channels(links);
    p.sm_bus_cap = links * nccl::nvlink_link_bytes_per_second(s.arch);
  } else if (p.nodes == 1) {
    s.channels = 2;  // PCIe: NCCL's ring search finds one channel, duplicated
  }
  // LL128 by default only on NVLink nodes whose NICs are PCIe-local (never over sockets).
  s.ll128_enabled = nvlink && (p.nodes == 1 || !topology_.nccl_socket_transport());
  const double ib_path_us = 2.5;  // two HDR NIC hops + one switch (the shipped IB topologies)
  s.extra_inter_latency_us = std::max(0.0, p.inter_hop_latency.seconds() * 1e6 - ib_path_us);
}

nccl::Tuned CollectivePlanner::tuned(CommPlan& p, ir::CommId comm, ir::CollectiveKind kind,
                                     double bytes) {
  nccl::CommShape s = p.shape;
  switch (kind) {
    case ir::CollectiveKind::broadcast:
      s.coll = nccl::Coll::broadcast;
      break;
    case ir::CollectiveKind::reduce:
      s.coll = nccl::Coll::reduce;
      break;
    case ir::CollectiveKind::all_gather:
      s.coll = nccl::Coll::all_gather;
      break;
    case ir::CollectiveKind::reduce_scatter:
      s.coll = nccl::Coll::reduce_scatter;
      break;
    case ir::CollectiveKind::all_reduce:
      s.coll = nccl::Coll::all_reduce;
      break;
  }
  const double rails = static_cast<double>(p.rings.size());
  // NCCL's graph bandwidth: the collective's links alone (all rings), capped by its channels.
  s.ring_bus_bytes_per_second = std::min(p.ring_rate * rails, p.sm_bus_cap);
  if (s.coll == nccl::Coll::all_reduce && (p.nodes > 1 || !nccl_.tuner.allow_ring)) {
    if (!p.trees_built) build_trees(comm, p);
    s.tree_bus_bytes_per_second = std::min(4.0 * rails * p.tree_rate, p.sm_bus_cap);
  }
  return nccl::tune(s, bytes, nccl_.tuner);
}

AllReduceAlgo CollectivePlanner::all_reduce_algo(ir::CommId comm, std::uint64_t bytes) {
  plan(comm);
  CommPlan& p = *plans_[idx(comm)];
  if (p.members < 2) return AllReduceAlgo::ring;
  if (p.nccl) {
    const nccl::Tuned t =
        tuned(p, comm, ir::CollectiveKind::all_reduce, static_cast<double>(bytes));
    return t.algo == nccl::Algo::tree ? AllReduceAlgo::tree : AllReduceAlgo::ring;
  }
  if (all_reduce_ != AllReduceAlgo::automatic) return all_reduce_;
  if (p.nodes < 2) return AllReduceAlgo::ring;
  if (!p.trees_built) build_trees(comm, p);
  // Host communicators: per algorithm, latency + size / bandwidth; the ring wins ties.
  const double size = static_cast<double>(bytes);
  const double channels = static_cast<double>(p.rings.size());
  const double members = static_cast<double>(p.members);
  SimTime ring_latency, tree_latency;
  for (const Ring& r : p.rings)
    ring_latency = std::max(ring_latency, r.hop_latency * (2 * (p.members - 1)));
  for (const TreeChannel& ch : p.trees)
    tree_latency = std::max(tree_latency, tree_latency_of(ch, size / (2.0 * channels)));
  const double ring_time =
      ring_latency.seconds() + 2.0 * (members - 1.0) / members * size / channels / p.ring_rate;
  const double tree_time = tree_latency.seconds() + size / (2.0 * channels) / p.tree_rate;
  return tree_time < ring_time ? AllReduceAlgo::tree : AllReduceAlgo::ring;
}

CollectiveChoice CollectivePlanner::transfers(const ir::Op& op, ir::CommId comm,
                                              std::int32_t root_member,
                                              std::vector<CollectiveTransfer>& out) {
  out.clear();
  plan(comm);
  CommPlan& p = *plans_[idx(comm)];
  CollectiveChoice choice;
  if (p.members < 2 || p.rings.empty()) return choice;
  const double rails = static_cast<double>(p.rings.size());
  SimTime nccl_latency;
  if (p.nccl) {
    const nccl::Tuned t = tuned(p, comm, op.collective, static_cast<double>(op.bytes));
    choice.proto = t.proto;
    choice.channels = t.channels;
    choice.algo = t.algo == nccl::Algo::tree ? AllReduceAlgo::tree : AllReduceAlgo::ring;
    choice.bound = t.algo == nccl::Algo::tree ? t.bus_bytes_per_second / (4.0 * rails)
                                              : t.bus_bytes_per_second / rails;
    nccl_latency = SimTime::ps(static_cast<std::int64_t>(std::ceil(t.latency_us * 1e6)));
  } else if (op.collective == ir::CollectiveKind::all_reduce) {
    choice.algo = all_reduce_algo(comm, op.bytes);
  }
  if (choice.algo == AllReduceAlgo::tree) {
    if (!p.trees_built) build_trees(comm, p);
    const double data = static_cast<double>(op.bytes) / (2.0 * static_cast<double>(p.trees.size()));
    for (const TreeChannel& ch : p.trees) {
      CollectiveTransfer t;
      t.links = ch.links;
      t.bytes = data;
      t.latency = p.nccl ? nccl_latency : tree_latency_of(ch, data);
      t.edges = ch.edges;
      t.data_bytes = data;
      out.push_back(t);
    }
    return choice;
  }
  const double members = static_cast<double>(p.members);
  const double per_ring = static_cast<double>(op.bytes) / rails;
  const std::int64_t steps = p.members - 1;
  if (scratch_.size() < p.rings.size()) scratch_.resize(p.rings.size());
  for (std::size_t k = 0; k < p.rings.size(); ++k) {
    const Ring& ring = p.rings[k];
    CollectiveTransfer t;
    t.edges = ring.edges;
    switch (op.collective) {
      case ir::CollectiveKind::all_gather:
      case ir::CollectiveKind::reduce_scatter:
        t.links = ring.links;
        t.bytes = (members - 1.0) / members * per_ring;
        t.latency = ring.hop_latency * steps;
        t.data_bytes = t.bytes;
        break;
      case ir::CollectiveKind::all_reduce:
        t.links = ring.links;
        t.bytes = 2.0 * (members - 1.0) / members * per_ring;
        t.latency = ring.hop_latency * (2 * steps);
        t.data_bytes = t.bytes;
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
        // Host communicators pay the pipeline fill in bytes ((P-2) chunks of min(S, 512 KiB),
        // the Simple step NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8); NCCL's latency already has it.
        t.bytes = p.nccl ? per_ring : per_ring + (members - 2.0) * std::min(per_ring, 512.0 * 1024);
        t.latency = ring.hop_latency * steps;
        t.data_bytes = per_ring;
        break;
      }
    }
    if (p.nccl) t.latency = nccl_latency;
    out.push_back(t);
  }
  apply_measured(p, op, out, choice);
  return choice;
}

void CollectivePlanner::apply_measured(const CommPlan& p, const ir::Op& op,
                                       std::vector<CollectiveTransfer>& out,
                                       CollectiveChoice& choice) const {
  if (profile_ == nullptr || profile_->communication.empty() || out.empty()) return;
  profile::CommOp cop = profile::CommOp::all_reduce;
  switch (op.collective) {
    case ir::CollectiveKind::broadcast:
      cop = profile::CommOp::broadcast;
      break;
    case ir::CollectiveKind::reduce:
      cop = profile::CommOp::reduce;
      break;
    case ir::CollectiveKind::all_gather:
      cop = profile::CommOp::all_gather;
      break;
    case ir::CollectiveKind::reduce_scatter:
      cop = profile::CommOp::reduce_scatter;
      break;
    case ir::CollectiveKind::all_reduce:
      cop = profile::CommOp::all_reduce;
      break;
  }
  const profile::CommScope scope = p.nodes > 1 ? profile::CommScope::inter_node
                                   : p.nccl    ? profile::CommScope::intra_node
                                               : profile::CommScope::shared_memory;
  const auto t = measured_comm_time(profile_, cop, scope, p.members, static_cast<double>(op.bytes));
  if (!t || *t <= SimTime()) return;
  for (CollectiveTransfer& tr : out)
    tr.latency = SimTime();
  choice.bound = out.front().bytes / t->seconds();
}

CollectivePlanner::P2pChoice CollectivePlanner::p2p(ir::CommId comm, ir::Rank src, ir::Rank dst,
                                                    std::uint64_t bytes) {
  P2pChoice c;
  {
    plan(comm);
    const CommPlan& pm = *plans_[idx(comm)];
    const auto& pl = program_.header.placement;
    const bool across = topology_.node_of(pl[idx(src)]) != topology_.node_of(pl[idx(dst)]);
    const profile::CommScope scope = across    ? profile::CommScope::inter_node
                                     : pm.nccl ? profile::CommScope::intra_node
                                               : profile::CommScope::shared_memory;
    const auto t = measured_comm_time(profile_, profile::CommOp::sendrecv, scope, pm.members,
                                      static_cast<double>(bytes));
    if (t && *t > SimTime()) {
      c.measured = true;
      c.bound = static_cast<double>(bytes) / t->seconds();
      return c;
    }
  }
  const auto clamp_channels = [&](int nc) {
    if (nccl_.tuner.min_channels > 0) nc = std::max(nc, nccl_.tuner.min_channels);
    if (nccl_.tuner.max_channels > 0) nc = std::min(nc, nccl_.tuner.max_channels);
    return nc;
  };
  plan(comm);
  const CommPlan& p = *plans_[idx(comm)];
  if (!p.nccl) return c;
  const auto& placement = program_.header.placement;
  const topo::GpuId a = placement[idx(src)];
  const topo::GpuId b = placement[idx(dst)];
  const bool inter = topology_.node_of(a) != topology_.node_of(b);
  // NCCL 2.28.9's P2P channels (nccl_tuning.h): p2pnChannels, then the per-peer count is the
  // smallest per-pair count of the whole communicator, so on a communicator spanning nodes the
  // network peers' count (2 up to 64 ranks) caps NVLink peers too.
  const int p2p_channels = nccl::pow2_up(std::min(p.shape.channels, 32));
  const bool nvlink = p.shape.intra == nccl::Hw::nvlink;
  int min_pair = nvlink ? 2 * std::max(1, p.nvlink_links) : 2;
  if (p.nodes > 1) {
    // One NIC meets a GPU's network bandwidth on every shipped node (getLocalNetCountByBw = 1).
    min_pair = std::min(min_pair, nccl::net_peer_channels(p.members, p2p_channels, 1));
  }
  const int per_peer = nccl::p2p_channels_per_peer(p2p_channels, min_pair);
  const double size = static_cast<double>(bytes);
  c.channels = clamp_channels(nccl::p2p_channels_for_size(
      size, p.members, p.nodes, per_peer, p2p_channels, nccl::p2p_chunk_bytes(p.nodes, nvlink)));
  if (inter) {
    if (topology_.nccl_socket_transport())
      c.bound = c.channels * nccl_.socket.connection_bytes_per_second();
    c.extra_latency = SimTime::ps(
        static_cast<std::int64_t>(std::ceil(nccl::p2p_latency_us(nccl::Hw::net) * 1e6)));
    return c;
  }
  if (nvlink) {
    // Channels x per-channel rate, within the GPU's SM-driven NVLink rate (links x 20 GB/s).
    c.bound = std::min(c.channels * nccl::kP2pChannelBytesPerSecond,
                       p.nvlink_links * nccl::nvlink_link_bytes_per_second(p.shape.arch));
  }
  c.extra_latency =
      SimTime::ps(static_cast<std::int64_t>(std::ceil(nccl::p2p_latency_us(p.shape.intra) * 1e6)));
  return c;
}

}  // namespace tawpipe::sim
