// The executor's transfers (executor_impl.h): a matched send/recv pair becomes one network flow
// along its route; a collective instance becomes one solver variable over all its rings or tree
// channels (sim/network/collectives.h). Completions come back as tokens.
#include "sim/run/executor_impl.h"

#include <algorithm>
#include <cmath>

namespace tawpipe::sim::detail {

void Executor::on_transfer_done(std::uint64_t token) {
  if (sym_ && !asymmetric_.empty() && asymmetric_bound()) return;  // stopping: run every rank
  if ((token & kCollectiveToken) != 0) {
    const auto inst = static_cast<std::uint32_t>(token & ~kCollectiveToken);
    if (--instances_[inst].outstanding == 0) complete_collective(inst);
    drain();
    return;
  }
  const std::size_t send_g = idx(token);
  const std::size_t recv_g = idx(rt_[send_g].link);
  if (contention_model_ && rt_[send_g].mem_share > 0) {
    const CommLoad load{rt_[send_g].mem_share,
                        static_cast<double>(rt_[send_g].duration.picoseconds())};
    shift_load(rt_[send_g].rank, load, -1);
    shift_load(rt_[recv_g].rank, load, -1);
  }
  complete_op(send_g);
  complete_op(recv_g);
  drain();
}

void Executor::start_p2p(std::size_t send_g) {
  const RtOp& op = rt_[send_g];
  const ir::Rank src = op.rank;
  const ir::Rank dst = rt_[idx(op.link)].rank;
  const auto& placement = program_.header.placement;
  const topo::GpuId a = placement[idx(src)];
  const topo::GpuId b = placement[idx(dst)];
  const auto bytes = static_cast<double>(op.bytes);
  if (topology_.node_of(a) == topology_.node_of(b)) {
    res_.intra_node_bytes_sent[idx(src)] += bytes;
  } else {
    res_.inter_node_bytes_sent[idx(src)] += bytes;
  }
  // Replica symmetry: the images of this transfer in the other replicas send as much.
  for (std::int32_t d = 1; sym_ && d < sym_->replicas; ++d) {
    const auto s = static_cast<std::size_t>(src + d * sym_->replica_ranks);
    const auto t = static_cast<std::size_t>(dst + d * sym_->replica_ranks);
    if (topology_.node_of(placement[s]) == topology_.node_of(placement[t])) {
      res_.intra_node_bytes_sent[s] += bytes;
    } else {
      res_.inter_node_bytes_sent[s] += bytes;
    }
  }
  if (shm_) {
    start_p2p_shm(send_g);
    return;
  }
  // The send's communicator, kept in its duration field by build_units (executor_impl.h).
  const auto comm = static_cast<ir::CommId>(op.duration.picoseconds());
  const P2pPath& path = p2p_path(src, dst, comm, op.bytes);
  const CollectivePlanner::P2pChoice& c = path.choice;
  res_.last_channels = c.channels;
  res_.last_protocol = nccl::Proto::simple;
  if (contention_model_) {
    CommLoad load = p2p_load(c.channels, c.bound);
    load.sms = std::min(load.sms, 255);
    load.hbm = std::floor(load.hbm);  // whole bytes/s: kept in the send op's duration field
    if (load.sms > 0) {
      rt_[send_g].mem_share = static_cast<std::uint8_t>(load.sms);
      rt_[send_g].duration = SimTime::ps(static_cast<std::int64_t>(load.hbm));
      shift_load(src, load, +1);
      shift_load(dst, load, +1);
    }
  }
  network_.start(path.orbit.empty() ? path.route : std::span<const topo::LinkId>(path.orbit), bytes,
                 path.latency, send_g, c.bound, path.shared);
}

const Executor::P2pPath& Executor::p2p_path(ir::Rank src, ir::Rank dst, ir::CommId comm,
                                            std::uint64_t bytes) {
  if (p2p_paths_.empty()) p2p_paths_.resize(program_.ranks.size());
  std::vector<P2pPath>& paths = p2p_paths_[idx(src)];
  for (const P2pPath& p : paths) {
    if (p.dst == dst && p.comm == comm && p.bytes == bytes) return p;
  }
  const auto& placement = program_.header.placement;
  P2pPath p;
  p.dst = dst;
  p.comm = comm;
  p.bytes = bytes;
  p.route = topology_.route(placement[idx(src)], placement[idx(dst)]);
  p.choice = planner_.p2p(comm, src, dst, bytes);
  p.latency =
      p.choice.measured ? SimTime() : network_.path_latency(p.route) + p.choice.extra_latency;
  // One cap per (peer, communicator, size): sends of one NCCL group to the same peer share its
  // channels and connections (operations of one communicator outside a group do not overlap,
  // tables.cpp build_comm_order). Sizes that differ get different channel counts and caps.
  if (std::isfinite(p.choice.bound) && p.choice.bound > 0.0)
    p.shared = network_.add_shared_cap(p.choice.bound);
  if (sym_) {
    // Replica symmetry: one variable over the routes of every image (sim/symmetry/symmetry.h),
    // whose NCCL choices must equal this one's.
    std::vector<std::span<const topo::LinkId>> images{p.route};
    ir::CommId c = comm;
    for (std::int32_t d = 1; d < sym_->replicas; ++d) {
      c = sym_->comm_image[idx(c)];
      const ir::Rank s = src + d * sym_->replica_ranks;
      const ir::Rank t = dst + d * sym_->replica_ranks;
      const auto route = topology_.route(placement[idx(s)], placement[idx(t)]);
      const CollectivePlanner::P2pChoice choice = planner_.p2p(c, s, t, bytes);
      const SimTime latency =
          choice.measured ? SimTime() : network_.path_latency(route) + choice.extra_latency;
      if (choice.channels != p.choice.channels || choice.bound != p.choice.bound ||
          choice.measured != p.choice.measured || latency != p.latency)
        broken("a transfer's images differ in NCCL's choices or latency");
      images.push_back(route);
    }
    p.orbit = map_images(images);
    if (p.orbit.empty()) p.orbit.assign(p.route.begin(), p.route.end());  // run is broken
  }
  paths.push_back(std::move(p));
  return paths.back();
}

void Executor::start_collective(std::uint32_t inst) {
  Instance& in = instances_[inst];
  if (sym_ && !sym_->cross_replica(in.comm)) {
    start_collective_orbit(inst);
    return;
  }
  std::size_t m0 = 0;
  while (inst_ops_[in.ops_offset + m0] < 0)  // replica symmetry: member 0 may not run
    ++m0;
  const ir::Op& op = op_at(idx(inst_ops_[in.ops_offset + m0]));
  const CollectiveChoice choice =
      planner_.transfers(op, in.comm, in.root_member, scratch_transfers_);
  if (choice.algo == AllReduceAlgo::tree) ++res_.tree_all_reduces;
  if (choice.channels > 0) ++res_.protocol_counts[static_cast<std::size_t>(choice.proto)];
  res_.last_channels = choice.channels;
  res_.last_protocol = choice.proto;
  const auto& members = program_.communicators[idx(in.comm)].members;
  if (contention_model_) {
    in.load = collective_load(choice, op.collective);
    if (in.load.sms > 0 || in.load.hbm > 0.0) {
      for (const ir::Rank m : members) {
        if (idx(m) < active_ranks_) shift_load(m, in.load, +1);
      }
    }
  }
  // All rings (tree channels) of the collective form ONE solver variable (collectives.h): links
  // used several times get the summed coefficient, and the collective ends with its slowest
  // channel.
  scratch_links_.clear();
  SimTime latency;
  for (const CollectiveTransfer& t : scratch_transfers_) {
    for (std::size_t e = 0; e < t.edges.size(); ++e) {
      if (static_cast<std::int32_t>(e) == t.skipped_edge) continue;
      const RingEdge& edge = t.edges[e];
      auto& counter = edge.inter_node ? res_.inter_node_bytes_sent : res_.intra_node_bytes_sent;
      counter[idx(members[idx(edge.src)])] += t.data_bytes;
    }
    scratch_links_.insert(scratch_links_.end(), t.links.begin(), t.links.end());
    latency = std::max(latency, t.latency);
  }
  if (shm_) {  // bytes counted as above, time from MPI's shared-memory transport
    start_collective_shm(inst);
    return;
  }
  if (!scratch_transfers_.empty()) {
    in.outstanding = 1;
    const double bytes = scratch_transfers_.front().bytes;
    // Replica symmetry: a cross-replica collective, on the quotient of the links by p.
    network_.start(
        sym_ ? std::span<const topo::LinkId>(cross_quotient(op, in, scratch_links_, bytes))
             : std::span<const topo::LinkId>(scratch_links_),
        bytes, latency, kCollectiveToken | inst, choice.bound, NetworkModel::kNoShared,
        sym_ != nullptr);
  }
  if (scratch_transfers_.empty()) engine_.schedule_now(Event{handler_, kCollectiveDone, inst});
}

void Executor::complete_collective(std::uint32_t inst) {
  const Instance& in = instances_[inst];
  const auto& members = program_.communicators[idx(in.comm)].members;
  const std::size_t n = members.size();
  if (contention_model_ && (in.load.sms > 0 || in.load.hbm > 0.0)) {
    for (const ir::Rank m : members) {
      if (idx(m) < active_ranks_) shift_load(m, in.load, -1);
    }
  }
  for (std::size_t m = 0; m < n; ++m) {
    const std::int32_t g = inst_ops_[in.ops_offset + m];
    if (g >= 0) complete_op(idx(g));  // replica symmetry: only replica 0's members run
  }
}

}  // namespace tawpipe::sim::detail
