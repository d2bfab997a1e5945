// The program executor (see executor.h). Tables are built once (units = single ops or NCCL
// groups, dependents in CSR form, send/recv pairs, collective instances); the event loop then
// only touches flat vectors: no allocation or string work per event.
#include "sim/run/executor.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <unordered_map>

#include "sim/compute/compute_model.h"
#include "sim/engine/engine.h"
#include "sim/network/collectives.h"
#include "sim/run/big_vector.h"

namespace tawpipe::sim {
namespace {

constexpr std::uint64_t kCollectiveToken = 1ull << 63;
constexpr std::int32_t kNoUnit = -1;

template <class T>
std::size_t idx(T v) {
  return static_cast<std::size_t>(v);
}

bool is_comm(ir::OpKind k) {
  return k == ir::OpKind::send || k == ir::OpKind::recv || k == ir::OpKind::collective;
}
bool is_compute(ir::OpKind k) {
  return k == ir::OpKind::compute || k == ir::OpKind::copy;
}

struct Instance {
  ir::CommId comm = 0;
  std::uint32_t ops_offset = 0;  ///< into inst_ops_, one slot per member position
  std::int32_t arrived = 0;
  std::int32_t outstanding = 0;
  std::int32_t root_member = -1;
  std::int32_t members = 0;
};

/// The executor's compact copy of one op: everything the event loop needs, so that it never walks
/// the Program's pools (cache- and TLB-friendly at a million ops).
struct RtOp {
  std::uint64_t bytes = 0;  ///< transfers: message bytes; alloc/free: summed size of the
                            ///< listed buffers; compute: workspace bytes
  SimTime duration;         ///< compute and copy ops: the compute model's time
  std::int32_t rank = 0;
  std::int32_t unit = 0;
  std::int32_t link = -1;  ///< p2p: partner's global index; collective: instance
  ir::OpKind kind = ir::OpKind::compute;
  std::uint8_t state = 0;  ///< 0 waiting, 1 posted, 2 done
};

struct RankClock {
  SimTime last;
  std::int32_t compute_running = 0;
  std::int32_t comm_running = 0;
};

class Executor {
 public:
  Executor(const ir::Program& program, const topo::Topology& topology, const ExecOptions& options,
           ComputeModel compute)
      : program_(program),
        topology_(topology),
        options_(options),
        compute_(std::move(compute)),
        network_(engine_, topology, options.profile,
                 [this](std::uint64_t token) { on_transfer_done(token); }),
        planner_(program, topology, network_, options.all_reduce_algo) {
    handler_ = engine_.add_handler([this](const Event& e) { on_event(e); });
    network_.record_usage(options.record_link_usage);
  }

  Status prepare();
  Expected<ExecutionResult> run();

 private:
  enum EventKind : std::uint32_t { kOpDone = 0, kCollectiveDone = 1 };

  /// The IR op of global index `g` (preparation and rare paths only).
  const ir::Op& op_at(std::size_t g) const {
    const auto r = idx(rt_[g].rank);
    return program_.ranks[r].ops[g - res_.rank_offset[r]];
  }
  Status build_units();
  Status build_p2p();
  Status build_collectives();
  Error op_error(std::size_t g, const std::string& what) const;

  void on_event(const Event& e);
  void on_transfer_done(std::uint64_t token);
  void post_unit(std::int32_t unit);
  void start_op(std::size_t g);
  void start_p2p(std::size_t send_g);
  void start_collective(std::uint32_t inst);
  void complete_op(std::size_t g);
  void complete_collective(std::uint32_t inst);
  /// Completes the zero-time ops (alloc, free) queued while handling the current event, in
  /// order; they may release more. Cheaper than a zero-delay event per op, and not recursive.
  void drain() {
    for (std::size_t i = 0; i < immediate_.size(); ++i)
      complete_op(immediate_[i]);
    immediate_.clear();
  }
  void release(std::int32_t unit) {
    if (--unit_remaining_[idx(unit)] == 0) post_unit(unit);
  }
  void account(ir::Rank r) {
    RankClock& c = clock_[idx(r)];
    const SimTime now = engine_.now();
    if (c.compute_running > 0) {
      res_.rank_times[idx(r)].compute += now - c.last;
    } else if (c.comm_running > 0) {
      res_.rank_times[idx(r)].exposed_comm += now - c.last;
    }
    c.last = now;
  }

  const ir::Program& program_;
  const topo::Topology& topology_;
  ExecOptions options_;
  ComputeModel compute_;
  Engine engine_;
  NetworkModel network_;
  CollectivePlanner planner_;
  HandlerId handler_ = 0;
  std::unique_ptr<MemoryModel> memory_;

  ExecutionResult res_;
  std::size_t total_ops_ = 0;
  std::size_t completed_ = 0;
  BigVector<RtOp> rt_;  ///< by global op index
  BigVector<std::uint32_t> immediate_;
  BigVector<std::int32_t> unit_remaining_;
  BigVector<std::int32_t> unit_pending_;
  BigVector<std::int32_t> unit_next_;
  BigVector<std::uint32_t> unit_op_offset_;
  BigVector<std::uint32_t> unit_ops_;
  BigVector<std::uint32_t> dependents_offset_;
  BigVector<std::int32_t> dependents_;
  std::vector<Instance> instances_;
  BigVector<std::int32_t> inst_ops_;
  std::vector<RankClock> clock_;
  std::vector<CollectiveTransfer> scratch_transfers_;
  std::vector<topo::LinkId> scratch_links_;
};

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
  const std::size_t ranks = program_.ranks.size();
  res_.rank_offset.assign(ranks + 1, 0);
  for (std::size_t r = 0; r < ranks; ++r)
    res_.rank_offset[r + 1] = res_.rank_offset[r] + program_.ranks[r].ops.size();
  total_ops_ = res_.rank_offset[ranks];
  rt_.resize(total_ops_);
  unit_remaining_.reserve(total_ops_);
  unit_next_.reserve(total_ops_);
  std::vector<std::int32_t> last_unit(program_.streams.size());
  std::vector<std::int32_t> last_group(program_.streams.size());  // group of last_unit
  unit_pending_.reserve(total_ops_);
  for (std::size_t r = 0; r < ranks; ++r) {
    std::fill(last_unit.begin(), last_unit.end(), kNoUnit);
    const ir::RankProgram& rp = program_.ranks[r];
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      const std::size_t g = res_.rank_offset[r] + i;
      const ir::Op& op = rp.ops[i];
      RtOp& rt = rt_[g];
      rt.rank = static_cast<ir::Rank>(r);
      rt.kind = op.kind;
      switch (op.kind) {
        case ir::OpKind::compute:
          if (op.cost != ir::kNone) rt.bytes = program_.costs[idx(op.cost)].workspace_bytes;
          rt.duration = compute_.op_time(rt.rank, op);
          break;
        case ir::OpKind::copy:
          rt.bytes = op.bytes;
          rt.duration = compute_.op_time(rt.rank, op);
          break;
        case ir::OpKind::alloc:
        case ir::OpKind::free:
          // Every buffer the op lists is allocated (freed) at once: the op moves their sum.
          for (const ir::BufferId b : ir::writes(rp, op))
            rt.bytes += rp.buffers[idx(b)].size.count();
          break;
        default:
          rt.bytes = op.bytes;
          break;
      }
      if (op.stream >= last_unit.size()) return op_error(g, "stream id out of range");
      const std::int32_t prev = last_unit[op.stream];
      if (op.group != ir::kNone && prev != kNoUnit && last_group[op.stream] == op.group) {
        rt.unit = prev;
        ++unit_pending_[idx(prev)];
        continue;
      }
      const auto u = static_cast<std::int32_t>(unit_pending_.size());
      last_group[op.stream] = op.group;
      unit_pending_.push_back(1);
      unit_remaining_.push_back(prev == kNoUnit ? 0 : 1);
      unit_next_.push_back(kNoUnit);
      if (prev != kNoUnit) unit_next_[idx(prev)] = u;
      last_unit[op.stream] = u;
      rt.unit = u;
    }
  }
  const std::size_t units = unit_pending_.size();
  unit_op_offset_.assign(units + 1, 0);
  for (std::size_t u = 0; u < units; ++u)
    unit_op_offset_[u + 1] = unit_op_offset_[u] + static_cast<std::uint32_t>(unit_pending_[u]);
  unit_ops_.resize(total_ops_);
  BigVector<std::uint32_t> fill(unit_op_offset_.begin(), unit_op_offset_.end() - 1);
  for (std::size_t g = 0; g < total_ops_; ++g)
    unit_ops_[fill[idx(rt_[g].unit)]++] = static_cast<std::uint32_t>(g);
  // Dependents (CSR): op d -> units waiting for it. Dependencies inside one group are dropped:
  // the group is posted as a whole.
  dependents_offset_.assign(total_ops_ + 1, 0);
  for (int pass = 0; pass < 2; ++pass) {
    BigVector<std::uint32_t> cursor;
    if (pass == 1) {
      for (std::size_t g = 0; g < total_ops_; ++g)
        dependents_offset_[g + 1] += dependents_offset_[g];
      dependents_.resize(dependents_offset_[total_ops_]);
      cursor.assign(dependents_offset_.begin(), dependents_offset_.end() - 1);
    }
    for (std::size_t r = 0; r < ranks; ++r) {
      const ir::RankProgram& rp = program_.ranks[r];
      const ir::OpIndex* pool = rp.dep_pool.data();
      for (std::size_t i = 0; i < rp.ops.size(); ++i) {
        const std::size_t g = res_.rank_offset[r] + i;
        const ir::Op& op = rp.ops[i];
        for (std::uint32_t k = 0; k < op.deps_count; ++k) {
          const ir::OpIndex d = pool[op.deps_offset + k];
          if (d < 0 || idx(d) >= i) return op_error(g, "dependency on a later op");
          const std::size_t dg = res_.rank_offset[r] + idx(d);
          if (rt_[dg].unit == rt_[g].unit) continue;
          if (pass == 0) {
            ++dependents_offset_[dg + 1];
            ++unit_remaining_[idx(rt_[g].unit)];
          } else {
            dependents_[cursor[dg]++] = rt_[g].unit;
          }
        }
      }
    }
  }
  return Status::success();
}

Status Executor::build_p2p() {
  struct Entry {
    std::uint64_t key;
    std::uint32_t ordinal;
    std::uint8_t is_recv;
    std::uint32_t g;
  };
  std::vector<Entry> entries;
  std::unordered_map<std::uint64_t, std::uint32_t> sends, recvs;
  const std::uint64_t ranks = program_.ranks.size();
  if (ranks >= (1u << 21)) return make_error("too many ranks for the simulator (max 2^21)");
  for (std::size_t g = 0; g < total_ops_; ++g) {
    const ir::Op& op = op_at(g);
    if (op.kind != ir::OpKind::send && op.kind != ir::OpKind::recv) continue;
    if (op.peer < 0 || static_cast<std::uint64_t>(op.peer) >= ranks)
      return op_error(g, "peer rank out of range");
    const auto me = static_cast<std::uint64_t>(rt_[g].rank);
    const auto peer = static_cast<std::uint64_t>(op.peer);
    const bool is_recv = op.kind == ir::OpKind::recv;
    const std::uint64_t key = (static_cast<std::uint64_t>(op.comm) << 42) |
                              ((is_recv ? peer : me) << 21) | (is_recv ? me : peer);
    auto& counter = is_recv ? recvs[key] : sends[key];
    entries.push_back(Entry{key, counter++, static_cast<std::uint8_t>(is_recv ? 1 : 0),
                            static_cast<std::uint32_t>(g)});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.ordinal != b.ordinal) return a.ordinal < b.ordinal;
    return a.is_recv < b.is_recv;
  });
  for (std::size_t i = 0; i < entries.size();) {
    const bool pair = i + 1 < entries.size() && entries[i].key == entries[i + 1].key &&
                      entries[i].ordinal == entries[i + 1].ordinal && entries[i].is_recv == 0 &&
                      entries[i + 1].is_recv == 1;
    if (!pair)
      return op_error(entries[i].g, entries[i].is_recv != 0 ? "receive without a matching send"
                                                            : "send without a matching receive");
    rt_[entries[i].g].link = static_cast<std::int32_t>(entries[i + 1].g);
    rt_[entries[i + 1].g].link = static_cast<std::int32_t>(entries[i].g);
    i += 2;
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
  for (std::size_t g = 0; g < total_ops_; ++g) {
    const ir::Op& op = op_at(g);
    if (op.kind != ir::OpKind::collective) continue;
    if (op.comm < 0 || idx(op.comm) >= comms) return op_error(g, "communicator out of range");
    const std::size_t c = idx(op.comm);
    const std::int32_t pos = find(c, rt_[g].rank);
    if (pos < 0) return op_error(g, "rank is not a member of its communicator");
    const std::uint32_t k = ordinal[c][idx(pos)]++;
    if (k == by_ordinal[c].size()) {
      Instance inst;
      inst.comm = op.comm;
      inst.ops_offset = static_cast<std::uint32_t>(inst_ops_.size());
      const bool rooted = op.collective == ir::CollectiveKind::broadcast ||
                          op.collective == ir::CollectiveKind::reduce;
      inst.root_member = rooted ? find(c, op.peer) : -1;
      inst.members = static_cast<std::int32_t>(program_.communicators[c].members.size());
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
        if (inst_ops_[inst.ops_offset + m] < 0)
          return make_error("collective #" + std::to_string(k) + " on communicator '" +
                            program_.communicators[c].name + "': rank " +
                            std::to_string(members[m]) + " never issues it");
      }
    }
  }
  return Status::success();
}

Status Executor::prepare() {
  TAWPIPE_TRY(build_units());
  TAWPIPE_TRY(build_p2p());
  TAWPIPE_TRY(build_collectives());
  const std::size_t ranks = program_.ranks.size();
  std::vector<std::uint64_t> persistent(ranks, 0), capacity(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r) {
    for (const ir::Buffer& b : program_.ranks[r].buffers) {
      if (b.persistent) persistent[r] += b.size.count();
    }
    capacity[r] = topology_.device(program_.header.placement[r]).memory_capacity.count();
  }
  memory_ = std::make_unique<MemoryModel>(std::move(persistent), capacity, options_.memory);
  res_.op_start.assign(total_ops_, SimTime());
  res_.op_end.assign(total_ops_, SimTime());
  res_.rank_times.assign(ranks, RankTimes{});
  res_.intra_node_bytes_sent.assign(ranks, 0.0);
  res_.inter_node_bytes_sent.assign(ranks, 0.0);
  clock_.assign(ranks, RankClock{});
  return Status::success();
}

void Executor::on_event(const Event& e) {
  if (e.kind == kOpDone) {
    complete_op(idx(e.data));
  } else {
    complete_collective(static_cast<std::uint32_t>(e.data));
  }
  drain();
}

void Executor::on_transfer_done(std::uint64_t token) {
  if ((token & kCollectiveToken) != 0) {
    const auto inst = static_cast<std::uint32_t>(token & ~kCollectiveToken);
    if (--instances_[inst].outstanding == 0) complete_collective(inst);
    drain();
    return;
  }
  const std::size_t send_g = idx(token);
  const std::size_t recv_g = idx(rt_[send_g].link);
  complete_op(send_g);
  complete_op(recv_g);
  drain();
}

void Executor::post_unit(std::int32_t unit) {
  for (std::uint32_t i = unit_op_offset_[idx(unit)]; i < unit_op_offset_[idx(unit) + 1]; ++i)
    start_op(unit_ops_[i]);
}

void Executor::start_op(std::size_t g) {
  RtOp& op = rt_[g];
  const ir::Rank r = op.rank;
  const SimTime now = engine_.now();
  res_.op_start[g] = now;
  op.state = 1;
  switch (op.kind) {
    case ir::OpKind::compute:
    case ir::OpKind::copy: {
      account(r);
      RankClock& c = clock_[idx(r)];
      ++c.compute_running;
      SimTime t = op.duration;
      if (options_.sm_contention > 0.0 && c.comm_running > 0)
        t = SimTime::ps(static_cast<std::int64_t>(
            std::ceil(static_cast<double>(t.picoseconds()) * (1.0 + options_.sm_contention))));
      if (op.kind == ir::OpKind::compute) memory_->add(r, op.bytes, now);
      engine_.schedule_after(t, Event{handler_, kOpDone, g});
      break;
    }
    case ir::OpKind::alloc:
      memory_->add(r, op.bytes, now);
      immediate_.push_back(static_cast<std::uint32_t>(g));
      break;
    case ir::OpKind::free:
      memory_->remove(r, op.bytes);
      immediate_.push_back(static_cast<std::uint32_t>(g));
      break;
    case ir::OpKind::send:
    case ir::OpKind::recv: {
      account(r);
      ++clock_[idx(r)].comm_running;
      const std::size_t partner = idx(op.link);
      if (rt_[partner].state == 1) start_p2p(op.kind == ir::OpKind::send ? g : partner);
      break;
    }
    case ir::OpKind::collective: {
      account(r);
      ++clock_[idx(r)].comm_running;
      const auto inst = static_cast<std::uint32_t>(op.link);
      Instance& in = instances_[inst];
      if (++in.arrived == in.members) start_collective(inst);
      break;
    }
  }
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
  const auto route = topology_.route(a, b);
  network_.start(route, bytes, network_.path_latency(route), send_g);
}

void Executor::start_collective(std::uint32_t inst) {
  Instance& in = instances_[inst];
  const std::size_t first = idx(inst_ops_[in.ops_offset]);
  const ir::Op& op = op_at(first);
  if (planner_.transfers(op, in.comm, in.root_member, scratch_transfers_) == AllReduceAlgo::tree)
    ++res_.tree_all_reduces;
  const auto& members = program_.communicators[idx(in.comm)].members;
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
  if (!scratch_transfers_.empty()) {
    in.outstanding = 1;
    network_.start(scratch_links_, scratch_transfers_.front().bytes, latency,
                   kCollectiveToken | inst);
  }
  if (scratch_transfers_.empty())
    engine_.schedule_after(SimTime(), Event{handler_, kCollectiveDone, inst});
}

void Executor::complete_collective(std::uint32_t inst) {
  const Instance& in = instances_[inst];
  const std::size_t n = program_.communicators[idx(in.comm)].members.size();
  for (std::size_t m = 0; m < n; ++m)
    complete_op(idx(inst_ops_[in.ops_offset + m]));
}

void Executor::complete_op(std::size_t g) {
  RtOp& op = rt_[g];
  const ir::Rank r = op.rank;
  if (is_compute(op.kind)) {
    account(r);
    --clock_[idx(r)].compute_running;
    if (op.kind == ir::OpKind::compute) memory_->remove(r, op.bytes);
  } else if (is_comm(op.kind)) {
    account(r);
    --clock_[idx(r)].comm_running;
  }
  res_.op_end[g] = engine_.now();
  op.state = 2;
  ++completed_;
  const std::int32_t u = op.unit;
  if (--unit_pending_[idx(u)] == 0 && unit_next_[idx(u)] != kNoUnit) release(unit_next_[idx(u)]);
  for (std::uint32_t i = dependents_offset_[g]; i < dependents_offset_[g + 1]; ++i)
    release(dependents_[i]);
}

Expected<ExecutionResult> Executor::run() {
  const std::size_t units = unit_remaining_.size();
  for (std::size_t u = 0; u < units; ++u) {
    if (unit_remaining_[u] == 0) post_unit(static_cast<std::int32_t>(u));
  }
  drain();
  engine_.run();
  if (completed_ != total_ops_) {
    for (std::size_t g = 0; g < total_ops_; ++g) {
      if (rt_[g].state != 2)
        return op_error(g, rt_[g].state == 1
                               ? "simulation stalled: posted but its peer(s) never arrived"
                               : "simulation stalled: never became ready (deadlock)");
    }
  }
  const std::size_t ranks = program_.ranks.size();
  res_.first_start = total_ops_ > 0 ? SimTime::max() : SimTime();
  for (std::size_t g = 0; g < total_ops_; ++g) {
    res_.first_start = std::min(res_.first_start, res_.op_start[g]);
    res_.last_end = std::max(res_.last_end, res_.op_end[g]);
  }
  res_.peak_memory_bytes.resize(ranks);
  res_.usable_memory_bytes.resize(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    res_.peak_memory_bytes[r] = memory_->peak_bytes(static_cast<std::int32_t>(r));
    res_.usable_memory_bytes[r] = memory_->usable_bytes(static_cast<std::int32_t>(r));
  }
  res_.link_bytes = network_.link_bytes();
  res_.link_busy = network_.link_busy(engine_.now());
  res_.link_usage = network_.usage_samples();
  res_.events = engine_.events_processed();
  return std::move(res_);
}

}  // namespace

Expected<ExecutionResult> execute(const ir::Program& program, const topo::Topology& topology,
                                  const ExecOptions& options) {
  auto compute = ComputeModel::create(program, topology, options.profile);
  if (!compute.ok()) return compute.error();
  Executor ex(program, topology, options, std::move(*compute));
  TAWPIPE_TRY(ex.prepare());
  return ex.run();
}

}  // namespace tawpipe::sim
