// The executor's tables (executor_impl.h), built once before the event loop: units (single ops
// or NCCL groups) with their stream successor, dependents in CSR form, send/recv pairs matched
// in issue order, collective instances, and the memory model. All checks that a program fits
// the executor's assumptions happen here, so the event loop never fails.
#include "sim/run/executor_impl.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace tawpipe::sim::detail {

Error Executor::op_error(std::size_t g, const std::string& what) const {
  const ir::Rank r = rt_[g].rank;
  const ir::Op& op = op_at(g);
  const char* kind = op.kind == ir::OpKind::compute      ? ir::name(op.compute)
                     : op.kind == ir::OpKind::collective ? ir::name(op.collective)
                                                         : ir::name(op.kind);
  return make_error("rank " + std::to_string(r) + " op " +
                    std::to_string(g - res_.rank_offset[idx(r)]) + " (" + kind + "): " + what);
}

Status Executor::build_units() {
  res_.rank_offset.assign(program_.ranks.size() + 1, 0);
  for (std::size_t r = 0; r < program_.ranks.size(); ++r)
    res_.rank_offset[r + 1] = res_.rank_offset[r] + program_.ranks[r].ops.size();
  const std::size_t ranks = active_ranks_;  // replica symmetry: replica 0's ops come first
  total_ops_ = res_.rank_offset[ranks];
  rt_.resize(total_ops_);
  units_.reserve(total_ops_ + 1);
  unit_links_.reserve(total_ops_);
  comm_ops_.clear();
  dependents_offset_.assign(total_ops_ + 1, 0);
  // Dependencies between units, (op depended on, waiting unit) in program order: counted on
  // the one walk over the ops, placed in CSR form after it without reading the ops again.
  BigVector<std::pair<std::uint32_t, std::int32_t>> edges;
  edges.reserve(total_ops_);
  std::vector<std::int32_t> last_unit(program_.streams.size());
  std::vector<std::int32_t> last_group(program_.streams.size());  // group of last_unit
  // memory_bound_share depends on the rank, the cost and whether the op is a backward pass
  // only: computed once per rank for each (cost, backward), not per op (-1: not yet).
  std::vector<std::int16_t> share_memo(2 * program_.costs.size());
  for (std::size_t r = 0; r < ranks; ++r) {
    std::fill(last_unit.begin(), last_unit.end(), kNoUnit);
    std::fill(share_memo.begin(), share_memo.end(), std::int16_t{-1});
    const ir::RankProgram& rp = program_.ranks[r];
    const ir::OpIndex* pool = rp.dep_pool.data();
    const std::size_t offset = res_.rank_offset[r];
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      const std::size_t g = offset + i;
      const ir::Op& op = rp.ops[i];
      RtOp& rt = rt_[g];
      rt.rank = static_cast<ir::Rank>(r);
      rt.kind = op.kind;
      switch (op.kind) {
        case ir::OpKind::compute:
          if (op.cost != ir::kNone) rt.bytes = program_.costs[idx(op.cost)].workspace_bytes;
          rt.duration = compute_.op_time(rt.rank, op);
          if (contention_model_ && op.cost != ir::kNone) {
            const bool backward = op.compute == ir::ComputeKind::backward ||
                                  op.compute == ir::ComputeKind::backward_input;
            std::int16_t& share = share_memo[2 * idx(op.cost) + (backward ? 1 : 0)];
            if (share < 0) share = memory_bound_share(op, rt);
            rt.mem_share = static_cast<std::uint8_t>(share);
          }
          break;
        case ir::OpKind::copy:
          rt.bytes = op.bytes;
          rt.duration = compute_.op_time(rt.rank, op);
          rt.mem_share = 255;  // a copy only moves bytes
          break;
        case ir::OpKind::alloc:
        case ir::OpKind::free: {
          // Every buffer the op lists is allocated (freed) at once: the op moves their sum.
          bool first = true;
          std::array<std::uint64_t, kMemoryKinds> by_kind{};
          for (const ir::BufferId b : ir::writes(rp, op)) {
            const std::uint64_t size = rp.buffers[idx(b)].size.count();
            rt.bytes += size;
            const auto k = static_cast<std::uint8_t>(memory_kind(rp.buffers[idx(b)].role));
            by_kind[k] += size;
            rt.mem_kind = first || rt.mem_kind == k ? k : kMixedKinds;
            first = false;
          }
          if (rt.mem_kind == kMixedKinds) {  // sums by kind, for move_memory
            rt.link = static_cast<std::int32_t>(mixed_memory_.size());
            mixed_memory_.push_back(by_kind);
          }
          break;
        }
        default:  // send, recv, collective
          rt.bytes = op.bytes;
          if (op.kind == ir::OpKind::send) rt.duration = SimTime::ps(op.comm);  // start_p2p
          break;
      }
      if (op.stream >= last_unit.size()) return op_error(g, "stream id out of range");
      const std::int32_t prev = last_unit[op.stream];
      if (op.group != ir::kNone && prev != kNoUnit && last_group[op.stream] == op.group) {
        rt.unit = prev;
        ++unit_links_[idx(prev)].pending;
      } else {
        const auto u = static_cast<std::int32_t>(units_.size());
        last_group[op.stream] = op.group;
        units_.push_back(Unit{prev == kNoUnit ? 0 : 1, 0});
        unit_links_.push_back(UnitLink{1, kNoUnit});
        if (prev != kNoUnit) unit_links_[idx(prev)].next = u;
        last_unit[op.stream] = u;
        rt.unit = u;
      }
      if (is_comm(op.kind)) {
        comm_ops_.push_back(CommOp{static_cast<std::uint32_t>(g), rt.rank, rt.unit, op.comm,
                                   op.peer, op.kind, op.collective});
      }
      // Dependents: op d -> units waiting for it. Dependencies inside one group are dropped:
      // the group is posted as a whole.
      for (std::uint32_t k = 0; k < op.deps_count; ++k) {
        const ir::OpIndex d = pool[op.deps_offset + k];
        if (d < 0 || idx(d) >= i) return op_error(g, "dependency on a later op");
        const std::size_t dg = offset + idx(d);
        if (rt_[dg].unit == rt.unit) continue;
        ++dependents_offset_[dg + 1];
        ++units_[idx(rt.unit)].remaining;
        edges.emplace_back(static_cast<std::uint32_t>(dg), rt.unit);
      }
    }
  }
  const std::size_t units = units_.size();
  units_.push_back(Unit{0, 0});  // sentinel: first_op = total ops
  BigVector<std::uint32_t> fill(units);
  for (std::size_t u = 0; u < units; ++u) {
    fill[u] = units_[u].first_op;
    units_[u + 1].first_op =
        units_[u].first_op + static_cast<std::uint32_t>(unit_links_[u].pending);
  }
  unit_ops_.resize(total_ops_);
  for (std::size_t g = 0; g < total_ops_; ++g)
    unit_ops_[fill[idx(rt_[g].unit)]++] = static_cast<std::uint32_t>(g);
  for (std::size_t g = 0; g < total_ops_; ++g)
    dependents_offset_[g + 1] += dependents_offset_[g];
  dependents_.resize(edges.size());
  // Each op's offset serves as its cursor, then moves back to its start (no cursor array).
  for (const auto& [dg, unit] : edges)
    dependents_[dependents_offset_[dg]++] = unit;
  for (std::size_t g = total_ops_; g > 0; --g)
    dependents_offset_[g] = dependents_offset_[g - 1];
  dependents_offset_[0] = 0;
  return Status::success();
}

// Sends and receives pair in issue order per channel (communicator, source, destination): the
// k-th send on a channel with its k-th receive. One pass numbers each op on its channel, a second
// places it in its channel's slot k; no sort. Channels are checked in key order, so an unmatched
// op is reported as a sort of all ops by (key, ordinal) would find it first.
Status Executor::build_p2p() {
  const std::uint64_t ranks = program_.ranks.size();
  if (ranks >= (1u << 21)) return make_error("too many ranks for the simulator (max 2^21)");
  struct Channel {
    std::uint64_t key = 0;
    std::uint32_t sends = 0;
    std::uint32_t recvs = 0;
    std::uint32_t offset = 0;  // into the slot arrays
  };
  struct Entry {
    std::uint32_t g;
    std::uint32_t channel;
    std::uint32_t ordinal;
    bool is_recv;
  };
  std::vector<Channel> channels;
  std::unordered_map<std::uint64_t, std::uint32_t> channel_of;
  std::vector<Entry> entries;
  // Schedules talk to a few peers in runs: remember the last channel looked up.
  std::uint64_t last_key = ~std::uint64_t{0};
  std::uint32_t last_channel = 0;
  for (const CommOp& op : comm_ops_) {  // replica symmetry: replica 0's only
    if (op.kind != ir::OpKind::send && op.kind != ir::OpKind::recv) continue;
    const std::uint32_t g = op.g;
    if (op.peer < 0 || static_cast<std::uint64_t>(op.peer) >= ranks)
      return op_error(g, "peer rank out of range");
    const auto me = static_cast<std::uint64_t>(op.rank);
    const auto peer = static_cast<std::uint64_t>(op.peer);
    const bool is_recv = op.kind == ir::OpKind::recv;
    const std::uint64_t key = (static_cast<std::uint64_t>(op.comm) << 42) |
                              ((is_recv ? peer : me) << 21) | (is_recv ? me : peer);
    if (key != last_key) {
      const auto [it, added] =
          channel_of.try_emplace(key, static_cast<std::uint32_t>(channels.size()));
      if (added) channels.push_back(Channel{key, 0, 0, 0});
      last_key = key;
      last_channel = it->second;
    }
    Channel& c = channels[last_channel];
    entries.push_back(Entry{g, last_channel, is_recv ? c.recvs++ : c.sends++, is_recv});
  }
  std::uint32_t slots = 0;
  for (Channel& c : channels) {
    c.offset = slots;
    slots += std::max(c.sends, c.recvs);
  }
  constexpr std::uint32_t kEmpty = ~std::uint32_t{0};
  std::vector<std::uint32_t> send_at(slots, kEmpty), recv_at(slots, kEmpty);
  for (const Entry& e : entries)
    (e.is_recv ? recv_at : send_at)[channels[e.channel].offset + e.ordinal] = e.g;
  std::vector<std::uint32_t> order(channels.size());
  for (std::uint32_t c = 0; c < order.size(); ++c)
    order[c] = c;
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return channels[a].key < channels[b].key; });
  for (const std::uint32_t ci : order) {
    const Channel& c = channels[ci];
    for (std::uint32_t k = c.offset; k < c.offset + std::max(c.sends, c.recvs); ++k) {
      if (send_at[k] == kEmpty) return op_error(recv_at[k], "receive without a matching send");
      if (recv_at[k] == kEmpty) return op_error(send_at[k], "send without a matching receive");
      rt_[send_at[k]].link = static_cast<std::int32_t>(recv_at[k]);
      rt_[recv_at[k]].link = static_cast<std::int32_t>(send_at[k]);
    }
  }
  return Status::success();
}

Status Executor::build_collectives() {
  const std::size_t comms = program_.communicators.size();
  std::vector<std::vector<std::pair<ir::Rank, std::int32_t>>> position(comms);
  std::vector<std::vector<std::uint32_t>> ordinal(comms);
  std::vector<std::vector<std::int32_t>> by_ordinal(comms);
  for (std::size_t c = 0; c < comms; ++c) {
    const auto& members = program_.communicators[c].members;
    for (std::size_t i = 0; i < members.size(); ++i)
      position[c].emplace_back(members[i], static_cast<std::int32_t>(i));
    std::sort(position[c].begin(), position[c].end());
    ordinal[c].assign(members.size(), 0);
  }
  const auto find = [&](std::size_t c, ir::Rank r) -> std::int32_t {
    const auto& v = position[c];
    const auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(r, std::int32_t{-1}));
    return it != v.end() && it->first == r ? it->second : -1;
  };
  for (const CommOp& op : comm_ops_) {
    if (op.kind != ir::OpKind::collective) continue;
    const std::uint32_t g = op.g;
    if (op.comm < 0 || idx(op.comm) >= comms) return op_error(g, "communicator out of range");
    const std::size_t c = idx(op.comm);
    const std::int32_t pos = find(c, op.rank);
    if (pos < 0) return op_error(g, "rank is not a member of its communicator");
    const std::uint32_t k = ordinal[c][idx(pos)]++;
    if (k == by_ordinal[c].size()) {
      Instance inst;
      inst.comm = op.comm;
      inst.ops_offset = static_cast<std::uint32_t>(inst_ops_.size());
      const bool rooted = op.collective == ir::CollectiveKind::broadcast ||
                          op.collective == ir::CollectiveKind::reduce;
      inst.root_member = rooted ? find(c, op.peer) : -1;
      inst.members = 0;  // the members simulated (replica symmetry: replica 0's)
      for (const ir::Rank m : program_.communicators[c].members)
        inst.members += idx(m) < active_ranks_ ? 1 : 0;
      if (rooted && inst.root_member < 0) return op_error(g, "root is not a member");
      inst_ops_.resize(inst_ops_.size() + program_.communicators[c].members.size(), -1);
      by_ordinal[c].push_back(static_cast<std::int32_t>(instances_.size()));
      instances_.push_back(inst);
    }
    const std::int32_t id = by_ordinal[c][k];
    rt_[g].link = id;
    inst_ops_[instances_[idx(id)].ops_offset + idx(pos)] = static_cast<std::int32_t>(g);
  }
  for (std::size_t c = 0; c < comms; ++c) {
    const auto& members = program_.communicators[c].members;
    for (std::size_t k = 0; k < by_ordinal[c].size(); ++k) {
      const Instance& inst = instances_[idx(by_ordinal[c][k])];
      for (std::size_t m = 0; m < members.size(); ++m) {
        if (inst_ops_[inst.ops_offset + m] < 0 && idx(members[m]) < active_ranks_)
          return make_error("collective #" + std::to_string(k) + " on communicator '" +
                            program_.communicators[c].name + "': rank " +
                            std::to_string(members[m]) + " never issues it");
      }
    }
  }
  return Status::success();
}

// NCCL orders every kernel of a communicator through the communicator's device stream
// (NVIDIA/nccl src/enqueue.cc `ncclLaunchPrepare`: "Launch kernel, depends on all of
// {deviceStream, hostStream, userStream[i]...}; {deviceStream, userStream[i]...} depend on
// kernel"), so a GPU runs the kernels of one communicator one at a time, in the order the host
// issued them, whatever CUDA streams the caller used; operations issued together in one
// NCCL group (the IR's `group`) form one kernel. A program that needs two transfers of one
// communicator in flight at once must use two communicators (algorithms.md: TawPipe's two
// global communicators). The host backend runs each IR stream on its own duplicated MPI
// communicator (exec/host), and tawexec issues its collectives in order within each stream
// only (exec/backend.h CollectiveOrder::stream), so CPU topologies keep no such order.
void Executor::build_comm_order() {
  const std::size_t units = units_.size() - 1;  // without the sentinel
  comm_next_offset_.assign(units + 1, 0);
  if (shm_ || !options_.comm_order) return;
  std::vector<std::pair<std::int32_t, std::int32_t>> edges;  // (unit, its successor)
  // Per communicator: (rank, that rank's last unit on it). Stamped with the rank instead of
  // cleared per rank (thousands of pair communicators x 1024 ranks).
  std::vector<std::pair<std::size_t, std::int32_t>> last(program_.communicators.size(),
                                                         {active_ranks_, kNoUnit});
  for (const CommOp& op : comm_ops_) {  // in program order, rank by rank
    const ir::CommId comm = op.comm;
    if (comm == ir::kNone) continue;
    const auto r = idx(op.rank);
    const std::int32_t u = op.unit;
    auto& [stamp, prev] = last[idx(comm)];
    if (stamp != r) {
      stamp = r;
      prev = kNoUnit;
    }
    if (prev != kNoUnit && prev != u) {
      edges.emplace_back(prev, u);
      ++units_[idx(u)].remaining;
    }
    prev = u;
  }
  for (const auto& e : edges)
    ++comm_next_offset_[idx(e.first) + 1];
  for (std::size_t u = 0; u < units; ++u)
    comm_next_offset_[u + 1] += comm_next_offset_[u];
  comm_next_.resize(edges.size());
  // Each unit's offset serves as its cursor, then moves back to its start (no cursor array).
  for (const auto& e : edges)
    comm_next_[comm_next_offset_[idx(e.first)]++] = e.second;
  for (std::size_t u = units; u > 0; --u)
    comm_next_offset_[u] = comm_next_offset_[u - 1];
  comm_next_offset_[0] = 0;
}

Status Executor::prepare() {
  init_contention();
  if (cores_ && options_.noise != nullptr) {
    auto replay = NoiseReplay::make(*options_.noise, topology_.host_cpu()->cores_per_host,
                                    options_.noise_offset);
    if (!replay.ok()) return replay.error();
    noise_ = std::move(*replay);
  }
  TAWPIPE_TRY(build_units());
  if (shm_) unit_last_done_.assign(units_.size(), SimTime());  // charge_wakeups
  if (shm_ && (wakeup_cost_ > SimTime() || wakeup_cost_shared_ > SimTime())) {
    thread_idle_since_.assign(units_.size(), SimTime());  // charge_handoff_wakeup
    interpreter_woke_.assign(active_ranks_, SimTime());
    interpreter_filling_.assign(active_ranks_, 0);
  }
  if (cores_) {
    plan_zeroing();
    plan_warmth();
  }
  build_comm_order();
  TAWPIPE_TRY(build_p2p());
  TAWPIPE_TRY(build_collectives());
  const std::size_t ranks = program_.ranks.size();
  const std::size_t active = active_ranks_;  // the others copy replica 0 (expand_replicas)
  std::vector<std::array<std::uint64_t, kMemoryKinds>> persistent(active);
  std::vector<std::uint64_t> nccl(active, 0);
  res_.memory_capacity_bytes.assign(ranks, 0);
  std::vector<std::uint8_t> uses_comm(program_.communicators.size());
  std::vector<std::uint64_t> p2p_links;  // (communicator, peer) of a rank's sends and receives
  constexpr std::size_t kFewLinks = 32;  // searched linearly up to this many distinct links
  for (std::size_t r = 0; r < active; ++r) {
    const ir::RankProgram& rp = program_.ranks[r];
    for (const ir::Buffer& b : rp.buffers) {
      if (b.persistent) persistent[r][idx(memory_kind(b.role))] += b.size.count();
    }
    res_.memory_capacity_bytes[r] =
        topology_.device(program_.header.placement[r]).memory_capacity.count();
    // NCCL connections: communicators this rank runs collectives on, and its p2p peers. NCCL
    // keeps connections per communicator (comm->channels[c].peers[peer] in src/transport.cc),
    // so the same peer reached on two communicators -- TawPipe's pair communicators of two
    // process groups -- holds two sets of buffers: count distinct (communicator, peer).
    std::fill(uses_comm.begin(), uses_comm.end(), 0);
    p2p_links.clear();
    std::int64_t comms = 0;
    // The rank's communication ops: comm_ops_ is in global op order.
    const auto by_g = [](const CommOp& op, std::size_t g) { return op.g < g; };
    const auto begin =
        std::lower_bound(comm_ops_.begin(), comm_ops_.end(), res_.rank_offset[r], by_g);
    const auto end = std::lower_bound(begin, comm_ops_.end(), res_.rank_offset[r + 1], by_g);
    for (auto it = begin; it != end; ++it) {
      const CommOp& op = *it;
      if (op.kind == ir::OpKind::collective && op.comm != ir::kNone &&
          program_.communicators[idx(op.comm)].members.size() > 1 && !uses_comm[idx(op.comm)]) {
        uses_comm[idx(op.comm)] = 1;
        ++comms;
      } else if ((op.kind == ir::OpKind::send || op.kind == ir::OpKind::recv) &&
                 op.peer != ir::kNone && idx(op.peer) < ranks) {
        const std::uint64_t comm = op.comm == ir::kNone ? 0 : idx(op.comm) + 1;
        const std::uint64_t link = comm * ranks + idx(op.peer);
        // A rank talks to a few peers (1F1B: two, in turn): the distinct links so far are
        // searched while they are few, and sorted once past that (TawPipe's pair
        // communicators at scale).
        if (p2p_links.size() > kFewLinks) {
          if (p2p_links.back() != link) p2p_links.push_back(link);
        } else if (std::find(p2p_links.begin(), p2p_links.end(), link) == p2p_links.end()) {
          p2p_links.push_back(link);
        }
      }
    }
    if (p2p_links.size() > kFewLinks) std::sort(p2p_links.begin(), p2p_links.end());
    const auto peers = static_cast<std::int64_t>(std::unique(p2p_links.begin(), p2p_links.end()) -
                                                 p2p_links.begin());
    nccl[r] = nccl_buffer_bytes(comms, peers, options_.memory);
  }
  memory_ = std::make_unique<MemoryModel>(persistent, std::move(nccl), options_.memory,
                                          options_.record_memory);
  res_.op_start.assign(total_ops_, SimTime());
  res_.op_end.assign(total_ops_, SimTime());
  if (cores_) res_.op_cpu.assign(total_ops_, SimTime());  // CPU topologies (host_cpu.cpp)
  res_.rank_times.assign(ranks, RankTimes{});
  res_.intra_node_bytes_sent.assign(ranks, 0.0);
  res_.inter_node_bytes_sent.assign(ranks, 0.0);
  clock_.assign(active, RankClock{});
  if (sym_) {
    const std::size_t links = topology_.links().size();
    link_owner_.assign(links, kUnseen);
    owned_rep_.assign(links, -1);
    const std::int32_t k = sym_->replicas;
    for (std::int32_t block = 2; block <= k; ++block) {
      if (k % block != 0) continue;
      LinkGroup& g = groups_.emplace_back();
      g.block = block;
      for (std::int32_t j = 0; j < (block < k ? 2 : 1); ++j) {
        g.image[idx(j)].assign(links, -1);
        g.preimage[idx(j)].assign(links, -1);
      }
    }
    cross_quotient_bytes_.assign(topology_.links().size(), 0.0);
    cross_actual_bytes_.assign(topology_.links().size(), 0.0);
  }
  return Status::success();
}

}  // namespace tawpipe::sim::detail
