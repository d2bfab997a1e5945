// The executor on CPU topologies (executor_impl.h, topo::HostCpu): compute and copy ops share
// their rank's core as EEVDF shares it among the compute threads (sim/run/core_sharing.h); sends,
// receives and collectives take MPI's shared-memory transport time (sim/network/mpi_shm.h), whose
// copy work shares the cores of the ranks that copy the bytes (the receiver's for a message; for a
// collective the members that receive: a reduce's root, a broadcast's non-roots, every member of
// the others). A broadcast on at most 4 ranks (libnbc's linear one) and a reduce alone in its unit
// (the host backend's direct one) move data between the root and each other member as soon as
// both have posted, as MPI does, not when the last member posts: each such copy is a job of its
// own (member_start_mode). Only the measured CPU time of a transfer is core work; the rest of its
// time is core-free latency. A waiting communication thread wakes up to test MPI
// (common/host_wait.h: on timers, or once when its peer rings its doorbell for point-to-point
// waits, exec/host/doorbell.h) and every wake-up costs its core's compute thread progress: when a
// transfer ends, the wake-ups of each rank's wait are charged to that rank's core as work (profile
// host.wakeup_cost, measured by calibration; host.wakeup_cost_shared for the part of the wait
// while another rank of the core had compute work too). So does each hand-off: the interpreter
// wakes for a completion, a stream thread for a unit handed to it after it went idle
// (charge_handoff_wakeup).
#include <algorithm>
#include <cmath>
#include <span>

#include "common/host_wait.h"
#include "common/ir/zeroing.h"
#include "sim/run/executor_impl.h"

namespace tawpipe::sim::detail {
namespace {

constexpr std::uint64_t kP2pToken = 1ull << 62;
/// Core work that completes nothing (wake-ups of a wait that is over).
constexpr std::uint64_t kBackgroundToken = 3ull << 62;
/// One member's job of a per-member collective: kMemberToken | position << 32 | instance.
constexpr std::uint64_t kMemberToken = kCollectiveToken | (1ull << 61);
/// libnbc broadcasts linearly on communicators of at most this many ranks (Open MPI 4.1,
/// ompi/mca/coll/libnbc/nbc_ibcast.c, ompi_coll_libnbc_ibcast's algorithm selection: p <= 4):
/// the root posts one send to every other member, every other member one receive from the root,
/// all in one round. Larger communicators pipeline a chain of segments.
constexpr int kLibnbcLinearBroadcastRanks = 4;

/// Every buffer op `op` reads or writes: its reads then its writes, one run of the rank's
/// buffer_pool (common/ir/program.h; ids verified in range).
std::span<const ir::BufferId> touched_buffers(const ir::RankProgram& rp, const ir::Op& op) {
  return std::span<const ir::BufferId>(rp.buffer_pool)
      .subspan(op.buffers_offset, op.reads_count + op.writes_count);
}

}  // namespace

void Executor::init_host_cpu() {
  const topo::HostCpu& host = *topology_.host_cpu();
  // Compute threads share a core by EEVDF, in requests of the slice the backend asks for
  // (common/host_wait.h).
  cores_ = std::make_unique<CoreSharing>(
      engine_, host.cores_per_host, [this](std::uint64_t token) { on_core_done(token); },
      SimTime::ns(static_cast<std::int64_t>(host_wait::kComputeSliceNs)));
  // A compute op starts when its thread runs it (the backend stamps it then), not when it
  // waited for its turn on the core.
  cores_->set_on_first_run([this](std::uint64_t g) { res_.op_start[g] = engine_.now(); });
  // Fallback figures: the shared-memory link class (profile figures replace the topology's in
  // the network model already).
  SimTime alpha;
  double beta = 0.0;
  for (const topo::Link& l : topology_.links()) {
    if (l.cls != topo::LinkClass::shared_memory) continue;
    alpha = network_.link_latency(l.id);
    beta = network_.link_bytes_per_second(l.id);
    break;
  }
  shm_ =
      std::make_unique<MpiShmModel>(shm_curves(options_.profile), alpha, beta, host.cores_per_host);
  // The interpreter's and stream threads' cost per op (measured by calibration): added to the
  // core work of compute ops and to the latency of transfers.
  if (options_.profile != nullptr && topology_.num_gpus() > 0) {
    const auto it = options_.profile->devices.find(topology_.device(0).name);
    if (it != options_.profile->devices.end() && it->second.op_overhead)
      op_overhead_ = *it->second.op_overhead;
  }
  if (options_.profile != nullptr && options_.profile->host) {
    const profile::HostProfile& hp = *options_.profile->host;
    wakeup_cost_ = hp.wakeup_cost.value_or(SimTime());
    wakeup_latency_ = hp.wakeup_latency.value_or(SimTime());
    // Without a long-wait figure every sleep costs the short one; a measured 0 (calibrate clamps
    // a median below 0 to it) is a figure, not an absence.
    wakeup_cost_long_ = hp.wakeup_cost_long.value_or(wakeup_cost_);
    // Measured with the core's other ranks computing beside (ranks_per_core > 1); without them
    // a shared core's wake-ups cost what a lone thread's do.
    wakeup_cost_shared_ = hp.wakeup_cost_shared.value_or(wakeup_cost_);
    wakeup_cost_long_shared_ = hp.wakeup_cost_long_shared.value_or(
        hp.wakeup_cost_shared ? wakeup_cost_shared_ : wakeup_cost_long_);
  }
  // A wake-up may hand the core to another rank's compute thread when one has work there: the
  // threads of one rank (its streams' and its interpreter's, ids (rank << 20 | n) + 1 below) are
  // one process.
  cores_->set_process_of([](std::uint64_t owner) { return (owner - 1) >> 20; });
}

void Executor::plan_zeroing() {
  if (options_.profile == nullptr || !options_.profile->host ||
      !options_.profile->host->zero_bandwidth)
    return;
  zero_bytes_per_second_ = options_.profile->host->zero_bandwidth->bytes_per_second();
  if (!(zero_bytes_per_second_ > 0.0)) return;
  zero_bytes_.assign(total_ops_, 0);
  for (std::size_t r = 0; r < active_ranks_; ++r) {
    const ir::RankProgram& rp = program_.ranks[r];
    // The host backend's rule, with its kernels' whole outputs at their buffers' sizes
    // (exec/host/compute_ops.h compute_overwrites: tokens x H, the size of those buffers).
    const ir::ZeroingPlan plan =
        ir::plan_zeroing(program_, static_cast<ir::Rank>(r), [&](const ir::Op& op, ir::BufferId b) {
          return ir::whole_output(rp, op) == b && b != ir::kNone
                     ? 4 * ((rp.buffers[idx(b)].size.count() + 3) / 4)
                     : std::uint64_t{0};
        });
    const std::vector<std::uint64_t> bytes = ir::zeroed_bytes_on_alloc(rp, plan);
    std::copy(bytes.begin(), bytes.end(),
              zero_bytes_.begin() + static_cast<std::ptrdiff_t>(res_.rank_offset[r]));
  }
}

void Executor::plan_warmth() {
  if (!shm_ || !(shm_->cold_pool() > 0.0 || shm_->longest_after_compute() > 0.0)) return;
  const int cores = topology_.host_cpu()->cores_per_host;
  buffer_offset_.assign(active_ranks_ + 1, 0);
  host_of_rank_.assign(active_ranks_, 0);
  int hosts = 1;
  for (std::size_t r = 0; r < active_ranks_; ++r) {
    buffer_offset_[r + 1] = buffer_offset_[r] + program_.ranks[r].buffers.size();
    host_of_rank_[r] = topology_.core_of(program_.header.placement[r]) / std::max(cores, 1);
    hosts = std::max(hosts, host_of_rank_[r] + 1);
  }
  host_touched_.assign(static_cast<std::size_t>(hosts), 0.0);
  last_touch_.assign(buffer_offset_.back(), -1.0);
  if (shm_->longest_after_compute() > 0.0) {
    core_of_rank_global_.assign(active_ranks_, 0);
    int all_cores = 1;
    for (std::size_t r = 0; r < active_ranks_; ++r) {
      core_of_rank_global_[r] = topology_.core_of(program_.header.placement[r]);
      all_cores = std::max(all_cores, core_of_rank_global_[r] + 1);
    }
    core_computed_.assign(static_cast<std::size_t>(all_cores), 0.0);
    last_compute_.assign(buffer_offset_.back(), -1.0);
  }
}

void Executor::note_touch(std::size_t g) {
  // The bytes an op moves through its host's caches: a compute op's memory traffic (the kernel
  // model's bytes, common/model/kernels.h), a copy's source and destination, a transfer's
  // message, an alloc's zero fill. The host's ranks share its caches, so every rank's ops count.
  const auto r = static_cast<std::size_t>(rt_[g].rank);
  const ir::Op& op = op_at(g);
  double moved = 0.0;
  switch (op.kind) {
    case ir::OpKind::compute:
      if (op.cost != ir::kNone) {
        for (const double b : program_.costs[idx(op.cost)].bytes)
          moved += b;
      }
      break;
    case ir::OpKind::copy:
      moved = 2.0 * static_cast<double>(op.bytes);
      break;
    case ir::OpKind::alloc:
      if (zero_bytes_.empty() || zero_bytes_[g] == 0) return;  // hands out, touches nothing
      moved = static_cast<double>(zero_bytes_[g]);
      break;
    case ir::OpKind::free:
      return;
    default:
      moved = static_cast<double>(rt_[g].bytes);
      break;
  }
  double& touched = host_touched_[static_cast<std::size_t>(host_of_rank_[r])];
  touched += moved;
  // With after-compute curves, the rank's core's compute so far: each compute op's core time
  // (what the calibration's bursts are measured in, on every member's core).
  double* computed = core_computed_.empty()
                         ? nullptr
                         : &core_computed_[static_cast<std::size_t>(core_of_rank_global_[r])];
  if (computed != nullptr && op.kind == ir::OpKind::compute && g < res_.op_cpu.size())
    *computed += res_.op_cpu[g].seconds();
  for (const ir::BufferId b : touched_buffers(program_.ranks[r], op)) {
    last_touch_[buffer_offset_[r] + idx(b)] = touched;
    if (computed != nullptr) last_compute_[buffer_offset_[r] + idx(b)] = *computed;
  }
}

double Executor::computed_on_core_of(std::size_t r) const {
  return core_computed_[static_cast<std::size_t>(core_of_rank_global_[r])];
}

bool Executor::after_compute(std::size_t r, ir::BufferId b) const {
  return !last_compute_.empty() &&
         last_compute_[buffer_offset_[r] + idx(b)] < computed_on_core_of(r);
}

namespace {

/// The mean of warmths (each weighing as much): shares averaged, the after-compute seconds'
/// geometric mean weighted by the after shares. Accumulates without allocating (per transfer).
class WarmthMean {
 public:
  void add(const Warmth& w) {
    sum_.cold += w.cold;
    sum_.after += w.after;
    if (w.after > 0.0) logs_ += w.after * std::log(w.after_seconds);
    ++n_;
  }
  Warmth mean() const {
    Warmth m = sum_;
    if (m.after > 0.0) m.after_seconds = std::exp(logs_ / m.after);
    const double n = std::max(n_, 1.0);
    m.cold /= n;
    m.after /= n;
    return m;
  }

 private:
  Warmth sum_;
  double logs_ = 0.0, n_ = 0.0;
};

Warmth mean_warmth(const Warmth& a, const Warmth& b) {
  WarmthMean m;
  m.add(a);
  m.add(b);
  return m.mean();
}

}  // namespace

Warmth Executor::warmth(std::size_t g) const {
  Warmth w(cold_share(g));
  if (last_compute_.empty()) return w;
  const auto r = static_cast<std::size_t>(rt_[g].rank);
  const auto buffers = touched_buffers(program_.ranks[r], op_at(g));
  const double computed = computed_on_core_of(r);
  // A buffer not used yet in the iteration was last used in the previous one: the longest
  // burst's figure (as any compute past it).
  const double longest = shm_->longest_after_compute();
  double n = 0.0, logs = 0.0;
  for (const ir::BufferId b : buffers) {
    if (!after_compute(r, b)) continue;
    const double mark = last_compute_[buffer_offset_[r] + idx(b)];
    const double since = mark < 0.0 ? longest : std::clamp(computed - mark, 1e-9, longest);
    n += 1.0;
    logs += std::log(since);
  }
  if (n > 0.0) {
    w.after = n / static_cast<double>(buffers.size());
    w.after_seconds = std::exp(logs / n);
  }
  return w;
}

Warmth Executor::instance_warmth(const Instance& in) const {
  const std::size_t n = program_.communicators[idx(in.comm)].members.size();
  WarmthMean m;
  for (std::size_t k = 0; k < n; ++k)
    m.add(warmth(idx(inst_ops_[in.ops_offset + k])));
  return m.mean();
}

double Executor::cold_share(std::size_t g) const {
  if (last_touch_.empty()) return 0.0;
  const auto r = static_cast<std::size_t>(rt_[g].rank);
  const double touched = host_touched_[static_cast<std::size_t>(host_of_rank_[r])];
  const auto buffers = touched_buffers(program_.ranks[r], op_at(g));
  double sum = 0.0;
  for (const ir::BufferId b : buffers) {
    if (after_compute(r, b)) continue;  // warmth()'s after share
    const double last = last_touch_[buffer_offset_[r] + idx(b)];
    sum += cold_fraction(last < 0.0 ? -1.0 : touched - last, shm_->cold_pool());
  }
  return buffers.empty() ? 0.0 : sum / static_cast<double>(buffers.size());
}

void Executor::start_zeroing(std::size_t g) {
  // The interpreter's thread fills the buffers when it issues the alloc (exec/host/
  // host_backend.cpp issue) and issues nothing else meanwhile; the ops after the alloc on its
  // stream wait for it. A normal thread in the default slice, shorter than the compute slice: it
  // preempts a compute thread of its core when it wakes (EEVDF's short-slice preemption).
  const ir::Rank r = rt_[g].rank;
  const int core = core_of_rank(r);
  const auto work = SimTime::ps(static_cast<std::int64_t>(
      std::ceil(static_cast<double>(zero_bytes_[g]) / zero_bytes_per_second_ * 1e12)));
  // Never a stream's thread: streams are 8-bit ids.
  const std::uint64_t interpreter = (static_cast<std::uint64_t>(r) << 20 | 0xfffffu) + 1;
  if (!interpreter_filling_.empty()) ++interpreter_filling_[idx(r)];
  cores_->start_sliced(core, on_core(core, engine_.now(), work), interpreter, g,
                       /*short_wake=*/true);
}

void Executor::charge_wakeups(std::size_t g) {
  if (wakeup_cost_ <= SimTime() && wakeup_cost_shared_ <= SimTime()) return;
  // One communication thread waits for all the ops of a unit (an IR group, posted as one batch,
  // exec/host/host_backend.cpp) in one wait_all, whose sleep schedule restarts at each
  // completion: the wake-ups of a unit are those of the intervals between its completions, not
  // one full wait per op.
  const auto unit = idx(rt_[g].unit);
  const SimTime since = std::max(res_.op_start[g], unit_last_done_[unit]);
  unit_last_done_[unit] = engine_.now();
  const SimTime waited = engine_.now() - since;
  const int core = core_of_rank(rt_[g].rank);
  // A wake-up costs progress only to a thread running on the core (calibration measures it
  // beside a GEMM loop); the wake-ups of a wait while the core idles (every rank there waiting)
  // cost nothing. The wake-ups are spread over the wait as its busy share.
  const SimTime busy = cores_->busy_between(core, since);
  if (waited <= SimTime() || busy <= SimTime()) return;
  // Each wake-up at the cost measured for its sleep length: wakeup_cost at the short waits'
  // longest sleep (and below), wakeup_cost_long at the long waits' longest, log-linear between;
  // the same with the shared figures for the part of the wait while another rank of the core
  // had compute work too.
  const auto ps = [](SimTime t) { return static_cast<double>(t.picoseconds()); };
  double cost_ps = 0.0, shared_ps = 0.0;
  auto each = [&](std::int64_t sleep_ns, double count) {
    const auto [lone, shared] = wakeup_figures_ps(sleep_ns);
    cost_ps += count * lone;
    shared_ps += count * shared;
  };
  if (rings_doorbell(unit)) {
    // The sleeps end at the bells: the last one when the op can complete, and, in a direct
    // collective (exec/host/mpi_ops.h run_direct: a message to and from every other member, each
    // post ringing the peer), one more at each member that posts after this one: its message
    // has arrived to be copied. Measured (FSDP, 2x2-cpu, lead12 round 2): 448-791 doorbell
    // sleeps per rank per step for 204 collectives; this count on the same run's op records
    // gives 398-669.
    scratch_times_.clear();
    const ir::Op& op = op_at(g);
    if (op.kind == ir::OpKind::collective) {
      const Instance& in = instances_[static_cast<std::uint32_t>(rt_[g].link)];
      const std::size_t n = program_.communicators[idx(in.comm)].members.size();
      for (std::size_t m = 0; m < n; ++m) {
        const SimTime t = res_.op_start[idx(inst_ops_[in.ops_offset + m])];
        if (t > since && t < engine_.now()) scratch_times_.push_back(t);
      }
      std::sort(scratch_times_.begin(), scratch_times_.end());
    }
    SimTime from = since;
    for (const SimTime t : scratch_times_) {
      host_wait::for_each_doorbell_sleep((t - from).picoseconds() / 1000, each);
      from = t;
    }
    host_wait::for_each_doorbell_sleep((engine_.now() - from).picoseconds() / 1000, each);
  } else {
    // The thread sleeps only between its tests, and a test that copies a message (a broadcast
    // member's or a reduce root's CMA copy) or sums runs that long: the sleeps fill the wait
    // less the work charged to the op so far. Measured (TAWPIPE_WAIT_LOG, localhost-cpu,
    // TawPipe[overlap=off], 3 steps, 73 timer waits): 1078 sleeps; walking the schedule over
    // each whole wait gave 1458, over the wait less the thread's CPU time outside its sleeps
    // 1291 (docs/validate-host.md, session 28).
    const SimTime work = g < res_.op_cpu.size() ? res_.op_cpu[g] : SimTime();
    const SimTime asleep = waited > work ? waited - work : SimTime();
    host_wait::for_each_sleep(asleep.picoseconds() / 1000, wakeup_latency_.picoseconds() / 1000,
                              each);
  }
  // The wake-ups spread evenly over the wait: those while the core was busy cost, at the shared
  // figures while it was contended (contended time is busy time).
  const SimTime contended = std::min(cores_->contended_between(core, since), busy);
  double work_ps = cost_ps * (ps(busy) / ps(waited));  // the lone figures' arithmetic, unchanged
  if (contended > SimTime() && shared_ps != cost_ps)
    work_ps = (cost_ps * ps(busy - contended) + shared_ps * ps(contended)) / ps(waited);
  const auto work = SimTime::ps(static_cast<std::int64_t>(work_ps));
  if (work <= SimTime()) return;
  charge_op_cpu(g, work);
  cores_->add_background(core, on_core(core, engine_.now(), work), kBackgroundToken);
}

std::pair<double, double> Executor::wakeup_figures_ps(std::int64_t sleep_ns) const {
  const auto ps = [](SimTime t) { return static_cast<double>(t.picoseconds()); };
  double f = 0.0;
  if (sleep_ns > host_wait::kMaxSleepNs)
    f = std::min(
        1.0, std::log(static_cast<double>(sleep_ns) / static_cast<double>(host_wait::kMaxSleepNs)) /
                 std::log(static_cast<double>(host_wait::kLongWaitMaxSleepNs) /
                          static_cast<double>(host_wait::kMaxSleepNs)));
  return {ps(wakeup_cost_) + f * (ps(wakeup_cost_long_) - ps(wakeup_cost_)),
          ps(wakeup_cost_shared_) + f * (ps(wakeup_cost_long_shared_) - ps(wakeup_cost_shared_))};
}

bool Executor::runs_on_thread(std::int32_t u) const {
  const ir::OpKind k = rt_[unit_ops_[units_[idx(u)].first_op]].kind;
  return k != ir::OpKind::alloc && k != ir::OpKind::free;
}

void Executor::charge_handoff_wakeup(ir::Rank r, SimTime slept) {
  // Besides a wait's own wake-ups (charge_wakeups), every thread of the backend sleeps when it
  // has nothing to do and wakes when work arrives: a stream thread on its queue when the
  // interpreter hands it a unit (exec/host/host_backend.cpp issue), the interpreter on its
  // condition variable when a unit completes (HostBackend::wait). Each such wake-up costs the
  // core what calibration measures for a sleeping thread's wake-up beside the block's GEMMs
  // (host.wakeup_cost by sleep length, the shared figure for the part of the sleep while another
  // rank of the core computed), as the core's background work, which an idle core absorbs: a
  // wake-up on an idle core delays only what starts there before it is done (the interpreter's
  // own wake-up precedes the ops it then issues). Measured on localhost-cpu
  // (session 27's declared test, 12 rounds, per rank and step): the threads' CPU time beyond the
  // model's work rose with the backend's voluntary context switches that are not wait wake-ups
  // at ~23 us each (FSDP 303 such switches, the other methods 57-59), the calibrated
  // wakeup_cost 23-24 us (docs/validate-host.md, session 28).
  if (slept <= SimTime()) return;
  const int core = core_of_rank(r);
  const auto [lone, shared] = wakeup_figures_ps(slept.picoseconds() / 1000);
  const double share = std::min(
      1.0,
      static_cast<double>(cores_->contended_between(core, engine_.now() - slept).picoseconds()) /
          static_cast<double>(slept.picoseconds()));
  const auto work = SimTime::ps(static_cast<std::int64_t>(lone * (1.0 - share) + shared * share));
  if (work <= SimTime()) return;
  cores_->add_background(core, on_core(core, engine_.now(), work), kBackgroundToken);
}

void Executor::charge_op_cpu(std::size_t g, SimTime work) {
  if (g < res_.op_cpu.size()) res_.op_cpu[g] = res_.op_cpu[g] + work;
}

bool Executor::rings_doorbell(std::size_t unit) const {
  // exec/host wait_all sleeps on the doorbell while every pending op is point-to-point: sends and
  // receives, and a lone reduce, all-gather, reduce-scatter or all-reduce that splits evenly
  // over its members (run_direct, exec/host/mpi_ops.h); libnbc's collectives (a lone broadcast
  // or uneven all-gather, every collective of a group) wait on timers.
  const std::uint32_t first = units_[unit].first_op, end = units_[unit + 1].first_op;
  for (std::uint32_t i = first; i < end; ++i) {
    const std::size_t g = unit_ops_[i];
    const ir::Op& op = op_at(g);
    if (op.kind != ir::OpKind::collective) continue;
    if (end - first > 1) return false;
    const auto members =
        static_cast<std::uint64_t>(program_.communicators[idx(op.comm)].members.size());
    switch (op.collective) {
      case ir::CollectiveKind::reduce:
        return members > 1;
      case ir::CollectiveKind::all_gather:
      case ir::CollectiveKind::reduce_scatter:
      case ir::CollectiveKind::all_reduce:
        return members > 1 && (op.bytes / 4) % members == 0;
      default:
        return false;
    }
  }
  return true;
}

int Executor::core_of_rank(ir::Rank r) const {
  const int core = topology_.core_of(program_.header.placement[idx(r)]);
  return core % topology_.host_cpu()->cores_per_host;
}

void Executor::start_compute_on_core(std::size_t g, SimTime work) {
  const int core = core_of_rank(rt_[g].rank);
  // One thread per (rank, stream) runs its compute ops and copies (exec/host/host_backend.h).
  const std::uint64_t thread = (static_cast<std::uint64_t>(rt_[g].rank) << 20 |
                                static_cast<std::uint64_t>(op_at(g).stream)) +
                               1;
  // The slice its thread sleeps in is the one its last op set (exec/host/host_backend.cpp
  // set_slice): the communication slice after a transfer, the compute slice after a compute op
  // or copy. Alloc and free run on the interpreter's thread.
  const auto r = static_cast<std::size_t>(rt_[g].rank);
  const auto& ops = program_.ranks[r].ops;
  bool short_wake = false;
  for (std::size_t i = g - res_.rank_offset[r]; i-- > 0;) {
    const ir::Op& prev = ops[i];
    if (prev.stream != op_at(g).stream || prev.kind == ir::OpKind::alloc ||
        prev.kind == ir::OpKind::free)
      continue;
    short_wake = prev.kind == ir::OpKind::send || prev.kind == ir::OpKind::recv ||
                 prev.kind == ir::OpKind::collective;
    break;
  }
  const SimTime core_work = on_core(core, engine_.now(), work + op_overhead_);
  res_.op_cpu[g] = core_work;
  cores_->start_sliced(core, core_work, thread, g, short_wake);
}

void Executor::start_p2p_shm(std::size_t send_g) {
  const RtOp& op = rt_[send_g];
  const int core = core_of_rank(rt_[idx(op.link)].rank);  // the receiver copies (CMA)
  // The copy reads the sender's buffer and writes the receiver's: their mean cold share.
  const ShmCost cost = shm_->p2p(static_cast<double>(op.bytes), core_of_rank(op.rank) == core,
                                 mean_warmth(warmth(send_g), warmth(idx(op.link))));
  const SimTime delay = cost.latency + op_overhead_;
  charge_op_cpu(idx(op.link), cost.work);  // the receiver's thread copies
  cores_->start(std::span<const int>(&core, 1), delay,
                on_core(core, engine_.now() + delay, cost.work), kP2pToken | send_g);
}

bool Executor::on_one_core(const Instance& in) const {
  const auto& members = program_.communicators[idx(in.comm)].members;
  for (const ir::Rank m : members)
    if (core_of_rank(m) != core_of_rank(members.front())) return false;
  return true;
}

std::uint8_t Executor::member_start_mode(std::uint32_t inst, std::size_t g) const {
  const Instance& in = instances_[inst];
  const auto n = static_cast<int>(program_.communicators[idx(in.comm)].members.size());
  if (n < 2 || in.members != n) return kStartWhole;
  const double bytes = static_cast<double>(rt_[g].bytes);
  switch (op_at(g).collective) {
    case ir::CollectiveKind::broadcast:
      // The host backend posts every broadcast to libnbc (exec/host/mpi_ops.h
      // nonblocking_alone; a group's collectives too): linear on few ranks, so a member's receive
      // matches the root's send as soon as both are posted. Per member only with the curve's CPU
      // time (one member's copy); without it, the curve describes the whole call.
      if (n <= kLibnbcLinearBroadcastRanks &&
          shm_->collective(ir::CollectiveKind::broadcast, bytes, n, on_one_core(in)).per_member)
        return kStartBroadcastLinear;
      return kStartWhole;
    case ir::CollectiveKind::reduce: {
      // Alone in its unit the host backend runs a reduce directly (exec/host/mpi_ops.h
      // run_direct): each member sends its buffer to the root, which copies it once both are
      // posted and sums when every message is in. In a group it is libnbc's (a chain).
      const auto u = idx(rt_[g].unit);
      const bool alone = units_[u + 1].first_op - units_[u].first_op == 1;
      return alone && shm_->reduce_sum_work(bytes, n, on_one_core(in)) ? kStartReduceDirect
                                                                       : kStartWhole;
    }
    default:
      return kStartWhole;
  }
}

void Executor::post_member_shm(std::uint32_t inst, std::size_t g) {
  const Instance& in = instances_[inst];
  const std::size_t n = program_.communicators[idx(in.comm)].members.size();
  const auto root = idx(in.root_member);
  auto posted = [&](std::size_t q) {
    const std::int32_t h = inst_ops_[in.ops_offset + q];
    return h >= 0 && rt_[idx(h)].state >= 1;
  };
  std::size_t pos = 0;
  while (pos < n && inst_ops_[in.ops_offset + pos] != static_cast<std::int32_t>(g))
    ++pos;
  // Data moves between the root and one other member once both have posted: the root's post
  // starts the copies of the members already waiting, another member's post its own copy.
  if (pos == root) {
    if (in.member_start == kStartBroadcastLinear) charge_broadcast_root(inst);
    for (std::size_t q = 0; q < n; ++q) {
      if (q != root && posted(q)) start_member_copy(inst, q);
    }
  } else if (pos < n && posted(root)) {
    start_member_copy(inst, pos);
  }
}

void Executor::charge_broadcast_root(std::uint32_t inst) {
  // The root's thread posts a send to every member and tests until they have copied: CPU time
  // the calibration measures on the root (profile root_cpu; 2x2-cpu, 12 MiB on one core: 1.4-2.0
  // ms against a member's 1.5-1.8), on the root's core while the copies run. It completes
  // nothing (the members' copies do), so it is charged as the core's background work, as the
  // waits' wake-ups are (charge_wakeups).
  const Instance& in = instances_[inst];
  const auto& members = program_.communicators[idx(in.comm)].members;
  const std::size_t root_g = idx(inst_ops_[in.ops_offset + idx(in.root_member)]);
  const auto roles =
      shm_->broadcast_roles(static_cast<double>(rt_[root_g].bytes),
                            static_cast<int>(members.size()), on_one_core(in), warmth(root_g));
  if (!roles || roles->root_work <= SimTime()) return;
  charge_op_cpu(root_g, roles->root_work);
  const int core = core_of_rank(members[idx(in.root_member)]);
  cores_->add_background(core, on_core(core, engine_.now(), roles->root_work), kBackgroundToken);
}

void Executor::start_member_copy(std::uint32_t inst, std::size_t pos) {
  const Instance& in = instances_[inst];
  const auto& members = program_.communicators[idx(in.comm)].members;
  const double bytes = static_cast<double>(rt_[idx(inst_ops_[in.ops_offset + pos])].bytes);
  // Between the root's buffer and this member's: their mean cold share.
  const std::size_t root_g = idx(inst_ops_[in.ops_offset + idx(in.root_member)]);
  const std::size_t member_g = idx(inst_ops_[in.ops_offset + pos]);
  const Warmth warm = mean_warmth(warmth(root_g), warmth(member_g));
  ShmCost cost;
  int core = 0;
  if (in.member_start == kStartBroadcastLinear) {
    // The member receives the root's buffer and copies it on its own core (CMA), at one
    // member's cost in the broadcast curve: calibration's members posted at once and took turns
    // on shared cores, which the cores' sharing here reproduces (sim/network/mpi_shm.h).
    // With the roles measured (profile member_cpu, root_cpu) a member's copy costs the mean
    // member's CPU time, and the root's part is charged on its core when it posts
    // (post_member_shm); without, the busiest member's.
    // Each member copy at its own figure: alone it costs a 2-rank copy, beside the instance's
    // other copies the instance's curve (MpiShmModel::broadcast_member_roles).
    const bool pair_one_core =
        core_of_rank(members[idx(in.root_member)]) == core_of_rank(members[pos]);
    if (const auto roles =
            shm_->broadcast_member_roles(bytes, static_cast<int>(members.size()), on_one_core(in),
                                         pair_one_core, in.copies_running, warm)) {
      cost = {roles->latency, roles->member_work, true};
    } else {
      cost = shm_->collective(ir::CollectiveKind::broadcast, bytes,
                              static_cast<int>(members.size()), on_one_core(in), warm);
    }
    core = core_of_rank(members[pos]);
  } else {
    // The root receives this member's buffer: one message, copied on the root's core.
    cost = shm_->p2p(bytes, on_one_core(in), warm);
    core = core_of_rank(members[idx(in.root_member)]);
  }
  // The thread that copies: the broadcast member's, the reduce root's.
  charge_op_cpu(in.member_start == kStartBroadcastLinear ? member_g : root_g, cost.work);
  const SimTime delay = cost.latency + op_overhead_;
  if (in.member_start == kStartBroadcastLinear) ++instances_[inst].copies_running;
  cores_->start(std::span<const int>(&core, 1), delay,
                on_core(core, engine_.now() + delay, cost.work),
                kMemberToken | static_cast<std::uint64_t>(pos) << 32 | inst);
}

void Executor::member_job_done(std::uint32_t inst, std::size_t pos) {
  Instance& in = instances_[inst];
  const auto& members = program_.communicators[idx(in.comm)].members;
  const std::size_t n = members.size();
  const auto root = idx(in.root_member);
  const auto root_g = idx(inst_ops_[in.ops_offset + root]);
  if (pos != root) {  // a member's copy: its receive (broadcast) or send (reduce) is complete
    if (in.member_start == kStartBroadcastLinear) --in.copies_running;
    const auto g = idx(inst_ops_[in.ops_offset + pos]);
    charge_wakeups(g);
    complete_op(g);
    if (++in.copies_done < static_cast<std::int32_t>(n - 1)) return;
    if (in.member_start == kStartReduceDirect) {
      // Every message is in: the root's stream thread sums them on its core. It does so after
      // its wait, no longer under SCHED_FIFO but in the communication slice (100 us), so it
      // preempts a compute thread there when it starts (EEVDF's short-slice preemption) and
      // then shares the core by EEVDF; modelled as a copy (it keeps the core until done): the
      // cores' model has one slice for every thread (sim/run/core_sharing.h).
      const SimTime sum =
          shm_->reduce_sum_work(static_cast<double>(rt_[root_g].bytes), static_cast<int>(n),
                                on_one_core(in), instance_warmth(in))
              .value_or(SimTime());
      if (sum > SimTime()) {
        charge_op_cpu(root_g, sum);
        const int core = core_of_rank(members[root]);
        cores_->start(std::span<const int>(&core, 1), SimTime(), on_core(core, engine_.now(), sum),
                      kMemberToken | static_cast<std::uint64_t>(root) << 32 | inst);
        return;
      }
    }
  }
  // The root's sends (broadcast) or sums (reduce) are done.
  charge_wakeups(root_g);
  complete_op(root_g);
}

void Executor::start_collective_shm(std::uint32_t inst) {
  const Instance& in = instances_[inst];
  if (in.member_start != kStartWhole) return;  // its members' copies started as they posted
  const std::size_t first = idx(inst_ops_[in.ops_offset]);
  const auto& members = program_.communicators[idx(in.comm)].members;
  // The cores that copy: MPI's shared-memory transport copies on the receiving side (CMA), so a
  // reduce works on its root's core (it receives every member's buffer and sums, exec/host
  // run_direct), a broadcast on the non-roots' (they receive; libnbc's tree forwards from
  // receivers), and the all-* collectives on every member's (each one receives).
  const ir::CollectiveKind kind = op_at(first).collective;
  scratch_cores_.clear();
  const ShmCost cost =
      shm_->collective(op_at(first).collective, static_cast<double>(rt_[first].bytes),
                       static_cast<int>(members.size()), on_one_core(in), instance_warmth(in));
  for (std::size_t i = 0; i < members.size(); ++i) {
    const bool root = static_cast<int>(i) == in.root_member;
    if (kind == ir::CollectiveKind::reduce && !root) continue;
    if (kind == ir::CollectiveKind::broadcast && root && members.size() > 1) continue;
    scratch_cores_.push_back(core_of_rank(members[i]));
    // A copying member's thread: one member's work (the whole call's without CPU times).
    charge_op_cpu(idx(inst_ops_[in.ops_offset + i]), cost.work);
  }
  // With one member's CPU time, a core with m copying members owes m members' work (they take
  // turns on it); the job runs on all those cores at the rate of the slowest share, so it
  // carries the largest m.
  std::int64_t per_core = 1;
  if (cost.per_member) {
    std::sort(scratch_cores_.begin(), scratch_cores_.end());
    for (std::size_t i = 0; i < scratch_cores_.size();) {
      std::size_t j = i;
      while (j < scratch_cores_.size() && scratch_cores_[j] == scratch_cores_[i])
        ++j;
      per_core = std::max(per_core, static_cast<std::int64_t>(j - i));
      i = j;
    }
  }
  // With a noise trace the job runs at the pace of its slowest core.
  const SimTime delay = cost.latency + op_overhead_;
  SimTime work = cost.work * per_core;
  if (noise_) {
    SimTime slowest;
    for (const int c : scratch_cores_)
      slowest = std::max(slowest, on_core(c, engine_.now() + delay, work));
    work = slowest;
  }
  cores_->start(scratch_cores_, delay, work, kCollectiveToken | inst);
}

void Executor::on_core_done(std::uint64_t token) {
  if (token == kBackgroundToken) return;
  if ((token & kMemberToken) == kMemberToken) {
    member_job_done(static_cast<std::uint32_t>(token & 0xffffffffull),
                    static_cast<std::size_t>((token & ~kMemberToken) >> 32));
  } else if ((token & kCollectiveToken) != 0) {
    const auto inst = static_cast<std::uint32_t>(token & ~kCollectiveToken);
    const Instance& in = instances_[inst];
    const std::size_t n = program_.communicators[idx(in.comm)].members.size();
    for (std::size_t m = 0; m < n; ++m)
      charge_wakeups(idx(inst_ops_[in.ops_offset + m]));
    complete_collective(inst);
  } else if ((token & kP2pToken) != 0) {
    const std::size_t send_g = idx(token & ~kP2pToken);
    charge_wakeups(send_g);
    charge_wakeups(idx(rt_[send_g].link));
    complete_op(send_g);
    complete_op(idx(rt_[send_g].link));
  } else {
    complete_op(idx(token));
  }
  drain();
}

}  // namespace tawpipe::sim::detail
