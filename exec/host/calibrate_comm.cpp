#include "exec/host/calibrate_comm.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "common/aligned.h"
#include "common/ir/builder.h"
#include "common/model/presets.h"
#include "exec/host/calibrate_kernels.h"
#include "exec/host/doorbell.h"
#include "exec/host/host_backend.h"
#include "exec/host/mpi_ops.h"
#include "exec/host/mpi_util.h"
#include "exec/interpreter.h"

namespace tawpipe::exec::host {
namespace {

using Clock = std::chrono::steady_clock;

/// Sizes of the curves: 4 KiB to 1 MiB by x4, then to 16 MiB by x2 (the transfers of the
/// validation workloads lie inside: 64 KiB activations to ~13 MiB weight blocks), plus 8 bytes
/// for the latency. x2 where the caches end: a hot ping-pong here costs 66-73 ps/B up to 8 MiB,
/// then 93 at 10, 107 at 12 and 123 at 16 MiB (its buffers outgrow the 32 MiB L3, session 25,
/// docs/validate-host.md), a bend the simulator's linear interpolation misses between x4 points.
const std::vector<std::uint64_t> kSizes = {8,       4096,    16384,   65536,   262144,
                                           1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20};

/// Sizes of the cold curves: where a message's cache state moves its time (a 12.9 MB weight
/// block one-way 1.0-1.6 ms hot against 1.9-2.8 ms cold on this VM, docs/validate-host.md), by
/// x2 as the hot curves there; a smaller message's time is its latency either way, and the
/// simulator takes the hot curve below the cold one's first size.
const std::vector<std::uint64_t> kColdSizes = {1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20};

/// The buffers of a cold curve's calls, per rank: a send and a receive pool that the calls
/// rotate through (cold_offset), filled before any timing so that their pages are mapped (a
/// zero-initialized vector may be handed out lazily and fault inside the first calls).
class ColdBuffers {
 public:
  explicit ColdBuffers(std::uint64_t pool_bytes)
      : pool_(pool_bytes),
        send_(cold_pool_capacity(pool_bytes, kColdSizes.back()) / 4, 1.0f),
        recv_(send_.size(), 0.5f) {}
  /// The next call's send and receive buffers for `bytes`.
  std::pair<float*, float*> next(std::uint64_t bytes) {
    const std::uint64_t at = cold_offset(bytes, calls_++, pool_) / 4;
    return {send_.data() + at, recv_.data() + at};
  }
  std::uint64_t pool() const { return pool_; }
  /// How many buffers the calls of `bytes` rotate through.
  std::uint64_t sets(std::uint64_t bytes) const { return cold_sets(bytes, pool_); }

 private:
  std::uint64_t pool_ = 0;
  std::uint64_t calls_ = 0;
  AlignedVector send_, recv_;
};

/// CPU time of the calling thread so far (seconds).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// One call's elapsed time (slowest member) and CPU time (busiest member's thread, less the
/// CPU time of its wait's own wake-ups).
struct Timing {
  double elapsed = 0.0;
  double cpu = 0.0;
  /// With `roles` (time_batches): the CPU time of rank 0 of the communicator (a rooted
  /// collective's root) and the mean over the other ranks, each the median over the batches;
  /// negative otherwise.
  double root_cpu = -1.0;
  double member_cpu = -1.0;
};

Status wait_one(PostedOp& op) {
  return wait_all(
      std::span<PostedOp>(&op, 1), [](std::size_t) {}, nullptr);
}

/// Seconds per call of `once` (a collective step every rank of `comm` takes): `warmup` calls and
/// one more of warm-up (connection set-up, first touch of the buffers: a cold curve warms every
/// buffer of its rotation, since on this VM the first transfer from or into a page costs ~1.5 ms
/// per MiB, 7-10x a cold one, and a run reuses its buffers), then kBatches batches of equal
/// length, each batch's mean taken on its slowest rank (that rank's figure decides a collective),
/// and the median batch. Medians of repeats keep one descheduled batch from bending a curve
/// (single passes gave a 150 us 8-byte sendrecv next to a 7 us 4 KiB one). The CPU time is the
/// median over the batches of the busiest rank's thread CPU time per call, less
/// `wake_cpu` per sleep its waits took (those wake-ups are charged by host.wakeup_cost). With
/// `roles`, also each batch's CPU time per call of rank 0 (the root) and the mean over the others:
/// the busiest rank's figure describes one member, not what the call costs the others.
constexpr int kBatches = 5;

double median_of(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1.0 : v[v.size() / 2];
}

/// The batches' figures over a communicator: each batch adds this rank's mean elapsed time and
/// CPU time per call; the point is the median batch of the slowest rank's elapsed time and the
/// busiest rank's CPU time (or with `cpu_sum` the members' sum), with `roles` also rank 0's and
/// the other members' mean.
class Batches {
 public:
  Batches(MPI_Comm comm, bool roles, bool cpu_sum) : comm_(comm), roles_(roles), sum_(cpu_sum) {}
  Status add(double elapsed, double cpu) {
    int size = 1;
    TAWPIPE_MPI(MPI_Comm_size(comm_, &size));
    double mine[2] = {elapsed, cpu}, worst_of[2] = {0.0, 0.0}, sum = 0.0;
    TAWPIPE_MPI(MPI_Allreduce(mine, worst_of, 2, MPI_DOUBLE, MPI_MAX, comm_));
    TAWPIPE_MPI(MPI_Allreduce(&mine[1], &sum, 1, MPI_DOUBLE, MPI_SUM, comm_));
    elapsed_.push_back(worst_of[0]);
    cpu_.push_back(sum_ ? sum : std::min(worst_of[1], worst_of[0]));
    if (roles_ && size > 1) {
      std::vector<double> each(static_cast<std::size_t>(size));
      TAWPIPE_MPI(MPI_Allgather(&mine[1], 1, MPI_DOUBLE, each.data(), 1, MPI_DOUBLE, comm_));
      double others = 0.0;
      for (std::size_t r = 1; r < each.size(); ++r)
        others += each[r];
      root_.push_back(std::min(each[0], worst_of[0]));
      member_.push_back(std::min(others / static_cast<double>(size - 1), worst_of[0]));
    }
    return Status::success();
  }
  Timing result() {
    Timing t{median_of(elapsed_), median_of(cpu_)};
    t.root_cpu = median_of(root_);
    t.member_cpu = median_of(member_);
    return t;
  }

 private:
  MPI_Comm comm_;
  bool roles_ = false, sum_ = false;
  std::vector<double> elapsed_, cpu_, root_, member_;
};

Expected<Timing> time_batches(const std::function<Status()>& once, double budget, MPI_Comm comm,
                              double wake_cpu, std::uint64_t warmup = 1, bool roles = false) {
  TAWPIPE_TRY(quiet_barrier(comm));
  for (std::uint64_t i = 0; i < std::max<std::uint64_t>(warmup, 1); ++i)
    TAWPIPE_TRY(once());
  auto t0 = Clock::now();
  TAWPIPE_TRY(once());
  double first = std::chrono::duration<double>(Clock::now() - t0).count(), worst = 0.0;
  TAWPIPE_MPI(MPI_Allreduce(&first, &worst, 1, MPI_DOUBLE, MPI_MAX, comm));
  const int reps = std::clamp(static_cast<int>(budget / kBatches / std::max(worst, 1e-7)), 2, 100);
  Batches batches(comm, roles, false);
  for (int k = 0; k < kBatches; ++k) {
    TAWPIPE_TRY(quiet_barrier(comm));
    t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    const std::uint64_t s0 = wait_sleeps_on_this_thread();
    for (int i = 0; i < reps; ++i)
      TAWPIPE_TRY(once());
    const double sleeps = static_cast<double>(wait_sleeps_on_this_thread() - s0);
    TAWPIPE_TRY(batches.add(std::chrono::duration<double>(Clock::now() - t0).count() / reps,
                            std::max(0.0, thread_cpu_seconds() - c0 - sleeps * wake_cpu) / reps));
  }
  return batches.result();
}

/// As time_batches, but every member first runs `compute` (one burst of the block's GEMMs, its
/// seconds returned) and the members then meet (quiet_barrier), so that each call follows
/// compute on every member's core as a run's transfers do; only the call is timed. `once(k)` is
/// the k-th call. The CPU time per call is the busiest member's, or with `cpu_sum` the members'
/// sum (a one-way message: what it costs sender and receiver together, as a ping-pong's round
/// trip on one rank). `compute_seconds`: the median burst on this rank. Batches of at least 2
/// calls, after 2 calls of warm-up.
Expected<Timing> time_after_compute(const std::function<Status(int call)>& once,
                                    const ComputeBurst& compute, double budget, MPI_Comm comm,
                                    double wake_cpu, bool roles, bool cpu_sum,
                                    double& compute_seconds) {
  int call = 0;
  std::vector<double> bursts;
  struct One {
    double elapsed = 0.0, cpu = 0.0;
  };
  auto timed = [&]() -> Expected<One> {
    bursts.push_back(compute());
    TAWPIPE_TRY(quiet_barrier(comm));
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    const std::uint64_t s0 = wait_sleeps_on_this_thread();
    TAWPIPE_TRY(once(call++));
    const double sleeps = static_cast<double>(wait_sleeps_on_this_thread() - s0);
    return One{std::chrono::duration<double>(Clock::now() - t0).count(),
               std::max(0.0, thread_cpu_seconds() - c0 - sleeps * wake_cpu)};
  };
  double first = 0.0;
  for (int i = 0; i < 2; ++i) {
    auto one = timed();
    if (!one.ok()) return one.error();
    first = one->elapsed + bursts.back();
  }
  double worst = 0.0;
  TAWPIPE_MPI(MPI_Allreduce(&first, &worst, 1, MPI_DOUBLE, MPI_MAX, comm));
  const int reps = std::clamp(static_cast<int>(budget / kBatches / std::max(worst, 1e-7)), 2, 20);
  Batches batches(comm, roles, cpu_sum);
  for (int k = 0; k < kBatches; ++k) {
    double elapsed = 0.0, cpu = 0.0;
    for (int i = 0; i < reps; ++i) {
      auto one = timed();
      if (!one.ok()) return one.error();
      elapsed += one->elapsed / reps;
      cpu += one->cpu / reps;
    }
    TAWPIPE_TRY(batches.add(elapsed, cpu));
  }
  compute_seconds = median_of(bursts);
  return batches.result();
}

/// Whether calibration runs `kind` in place (input buffer = output buffer), as the schedules'
/// IRs do: reduce and all-reduce. Broadcast roots are in place or not (TawPipe on 2x2-cpu: 12 of
/// 25 roots in place) and are measured out of place; all-gather and reduce-scatter (FSDP's) out
/// of place.
bool in_place(ir::CollectiveKind kind) {
  return kind == ir::CollectiveKind::reduce || kind == ir::CollectiveKind::all_reduce;
}

/// `cold`: rotate the buffers through these pools (a cold curve); null: the same buffers every
/// call (hot).
/// `compute`: the same buffers every call, each call after a burst of it (time_after_compute;
/// `compute_seconds` its median); not with `cold`.
Expected<Timing> time_collective(ir::CollectiveKind kind, std::uint64_t bytes, MPI_Comm comm,
                                 double budget, double wake_cpu, ColdBuffers* cold,
                                 const ComputeBurst* compute, double& compute_seconds) {
  int me = 0, size = 1;
  TAWPIPE_MPI(MPI_Comm_rank(comm, &me));
  TAWPIPE_MPI(MPI_Comm_size(comm, &size));
  // Whole-buffer bytes, a multiple of 4 * size (floats split evenly over the ranks).
  const std::uint64_t unit = 4 * static_cast<std::uint64_t>(size);
  bytes = std::max(unit, bytes / unit * unit);
  AlignedVector send(cold ? 0 : bytes / 4, 1.0f), recv(cold ? 0 : bytes / 4, 0.5f);
  auto call = [&]() -> Status {
    CollectiveArgs a;
    a.kind = kind;
    const auto [in, out] =
        cold ? cold->next(bytes) : std::pair<float*, float*>(send.data(), recv.data());
    a.send = in;
    a.recv = out;
    // Reduces and all-reduces in place, as every schedule's IR has them (TawPipe's gradient
    // reduces, the data-parallel all-reduces): out of place, the root of a direct reduce
    // first copies its input into the output (mpi_ops.cpp run_direct), a 12.9 MB copy
    // (~1.5 ms here) that no run makes.
    if (in_place(kind)) a.recv = in;
    a.bytes = bytes;
    a.me = me;
    a.size = size;
    a.root = 0;
    a.comm = comm;
    // As a communication thread runs a collective alone in its batch (host_backend.cpp).
    if (!nonblocking_alone(kind)) return run_alone(a);
    PostedOp op;
    TAWPIPE_TRY(post_collective(a, op));
    return wait_one(op);
  };
  const bool roles = kind == ir::CollectiveKind::broadcast;
  if (compute != nullptr) {
    return time_after_compute([&](int) { return call(); }, *compute, budget, comm, wake_cpu, roles,
                              false, compute_seconds);
  }
  return time_batches(call, budget, comm, wake_cpu, cold ? cold->sets(bytes) : 1, roles);
}

/// One-way time between ranks 0 and 1 of `comm` (half a ping-pong). CPU time: each rank sends
/// and receives once per round trip, so one rank's CPU time per round trip is what one message
/// costs its sender and receiver together.
/// `cold`: each round trip's messages leave from and land in the next buffers of its pools.
/// `compute`: one-way messages from the same buffers, alternately rank 0's and rank 1's, each
/// after a burst of it (time_after_compute, the CPU time both ranks' sum); not with `cold`.
Expected<Timing> time_sendrecv(std::uint64_t bytes, MPI_Comm comm, double budget, double wake_cpu,
                               ColdBuffers* cold, const ComputeBurst* compute,
                               double& compute_seconds) {
  int me = 0;
  TAWPIPE_MPI(MPI_Comm_rank(comm, &me));
  std::vector<char> buf(cold ? 0 : std::max<std::uint64_t>(bytes, 1), 1);
  if (compute != nullptr) {
    return time_after_compute(
        [&](int k) -> Status {
          PostedOp op;
          TAWPIPE_TRY(post_p2p((k % 2 == 0) == (me == 0), buf.data(), bytes, 1 - me, k % 2, comm,
                               op, doorbell_slot()));
          return wait_one(op);
        },
        *compute, budget, comm, wake_cpu, false, true, compute_seconds);
  }
  auto round_trip = time_batches(
      [&]() -> Status {
        std::pair<float*, float*> set;
        if (cold) set = cold->next(bytes);
        for (int leg = 0; leg < 2; ++leg) {
          PostedOp op;
          const bool send = (leg == 0) == (me == 0);
          void* data = !cold  ? static_cast<void*>(buf.data())
                       : send ? static_cast<void*>(set.first)
                              : static_cast<void*>(set.second);
          TAWPIPE_TRY(post_p2p(send, data, bytes, 1 - me, leg, comm, op, doorbell_slot()));
          TAWPIPE_TRY(wait_one(op));
        }
        return Status::success();
      },
      budget, comm, wake_cpu, cold ? cold->sets(bytes) : 1);
  if (!round_trip.ok()) return round_trip.error();
  return Timing{round_trip->elapsed / 2.0, std::min(round_trip->cpu, round_trip->elapsed / 2.0)};
}

}  // namespace

std::uint64_t cold_stride(std::uint64_t bytes) {
  constexpr std::uint64_t kPage = 4096;
  return std::max<std::uint64_t>(1, (bytes + kPage - 1) / kPage) * kPage;
}

std::uint64_t cold_sets(std::uint64_t bytes, std::uint64_t pool_bytes) {
  // The kernels' cold figures' rotation count (calibrate_kernels.h), over page-aligned sets.
  return rotation_sets(static_cast<double>(cold_stride(bytes)), true,
                       static_cast<double>(pool_bytes));
}

std::uint64_t cold_pool_capacity(std::uint64_t pool_bytes, std::uint64_t largest) {
  // ceil(pool / stride) sets of a stride <= largest's end before pool + that stride.
  return std::max(pool_bytes + cold_stride(largest), 2 * cold_stride(largest));
}

std::uint64_t cold_offset(std::uint64_t bytes, std::uint64_t call, std::uint64_t pool_bytes) {
  return call % cold_sets(bytes, pool_bytes) * cold_stride(bytes);
}

Status quiet_barrier(MPI_Comm comm) {
  PostedOp op;
  TAWPIPE_MPI(MPI_Ibarrier(comm, &op.request));
  return wait_one(op);
}

Expected<std::vector<profile::CommMeasurement>> measure_communication(
    double budget, int ranks_per_core, double wake_cpu, const std::vector<ComputeBurst>& compute) {
  int rank = 0, world = 1;
  TAWPIPE_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TAWPIPE_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  std::vector<profile::CommMeasurement> out;
  if (world < 2) return out;
  // Measured as the backend's communication threads wait (mpi_ops.h), then back to normal.
  request_comm_slice(true);
  struct Restore {
    ~Restore() { request_comm_slice(false); }
  } restore;
  // Passes: (ranks, all on one core). A pair on two cores, all ranks, and where ranks share a
  // core a pair on one core: the run's groups can be either (TawPipe's 2-rank groups on 2x2-cpu
  // are the two ranks of one core), and on one core a call's members and their handshakes take
  // turns on it (sim/network/mpi_shm.h).
  ColdBuffers cold_buffers(static_cast<std::uint64_t>(kColdPoolBytes));
  std::vector<std::pair<int, bool>> passes = {{2, false}};
  if (world > 2) passes.push_back({world, false});
  if (ranks_per_core >= 2 && world > ranks_per_core) passes.push_back({2, true});
  const std::vector<std::pair<profile::CommOp, ir::CollectiveKind>> ops = {
      {profile::CommOp::broadcast, ir::CollectiveKind::broadcast},
      {profile::CommOp::reduce, ir::CollectiveKind::reduce},
      {profile::CommOp::all_reduce, ir::CollectiveKind::all_reduce},
      {profile::CommOp::all_gather, ir::CollectiveKind::all_gather},
      {profile::CommOp::reduce_scatter, ir::CollectiveKind::reduce_scatter}};
  for (const auto& [n, one_core] : passes) {
    // Members spread over the cores as evenly as the count allows (the simulator assumes it,
    // sim/network/mpi_shm.h): all ranks, or for 2 ranks rank 0 and the first rank of the next
    // core, so that a pair's curve describes two cores, not two ranks taking turns on one; the
    // one-core pass: ranks 0 and 1, both on core 0 (rank r on core r / ranks_per_core).
    const int partner = one_core ? 1 : std::min(std::max(ranks_per_core, 1), world - 1);
    const bool member = (n == world && !one_core) || rank == 0 || (n == 2 && rank == partner);
    MPI_Comm sub = MPI_COMM_NULL;
    TAWPIPE_MPI(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank, &sub));
    MpiComm owner(sub);
    // Each curve hot (the same buffers every call), then cold at kColdSizes (the buffers rotated
    // over kColdPoolBytes per rank, calibrate_comm.h).
    // The variants: hot, cold, after each compute burst (the hot buffers, the burst before
    // each call; at kColdSizes).
    enum class Variant { hot, cold, after_compute };
    auto measure = [&](profile::CommOp op, auto&& time_at, Variant v) -> Status {
      profile::CommMeasurement m;
      m.op = op;
      m.scope = one_core ? profile::CommScope::shared_core : profile::CommScope::shared_memory;
      m.ranks = n;
      if (v == Variant::cold) m.cold_pool = Bytes(cold_buffers.pool());
      std::vector<double> bursts;
      for (std::uint64_t bytes : v == Variant::hot ? kSizes : kColdSizes) {
        Timing t;
        if (member) {
          double burst = 0.0;
          auto measured = time_at(bytes, burst);
          if (!measured.ok()) return measured.error();
          t = *measured;
          bursts.push_back(burst);
        }
        profile::CommPoint p{Bytes(bytes), SimTime::from_seconds(t.elapsed),
                             SimTime::from_seconds(t.cpu)};
        if (op == profile::CommOp::broadcast) {  // every member measured roles (time_batches)
          p.root_cpu = SimTime::from_seconds(std::max(t.root_cpu, 0.0));
          p.member_cpu = SimTime::from_seconds(std::max(t.member_cpu, 0.0));
        }
        m.points.push_back(p);
      }
      if (v == Variant::after_compute) {
        // The median burst (rank 0's, sent to every rank with the figures below; a rank outside
        // the pass has none).
        std::sort(bursts.begin(), bursts.end());
        m.after_compute = SimTime::from_seconds(bursts.empty() ? 0.0 : bursts[bursts.size() / 2]);
      }
      out.push_back(std::move(m));
      return Status::success();
    };
    std::vector<std::pair<Variant, const ComputeBurst*>> variants = {{Variant::hot, nullptr},
                                                                     {Variant::cold, nullptr}};
    for (const ComputeBurst& b : compute)
      variants.emplace_back(Variant::after_compute, &b);
    for (const auto& [v, burst] : variants) {
      ColdBuffers* cold = v == Variant::cold ? &cold_buffers : nullptr;
      if (n == 2) {
        TAWPIPE_TRY(measure(
            profile::CommOp::sendrecv,
            [&](std::uint64_t b, double& s) {
              return time_sendrecv(b, sub, budget, wake_cpu, cold, burst, s);
            },
            v));
      }
      for (const auto& [op, kind] : ops) {
        TAWPIPE_TRY(measure(
            op,
            [&, k = kind](std::uint64_t b, double& s) {
              return time_collective(k, std::max<std::uint64_t>(b, 4096), sub, budget, wake_cpu,
                                     cold, burst, s);
            },
            v));
      }
    }
    TAWPIPE_TRY(quiet_barrier(MPI_COMM_WORLD));
  }
  // Every rank returns rank 0's figures (ranks outside a sub-communicator measured nothing).
  for (auto& m : out) {
    std::vector<double> s;
    for (const auto& p : m.points) {
      s.push_back(p.time.seconds());
      s.push_back(p.cpu->seconds());
      s.push_back(p.root_cpu ? p.root_cpu->seconds() : -1.0);
      s.push_back(p.member_cpu ? p.member_cpu->seconds() : -1.0);
    }
    s.push_back(m.after_compute ? m.after_compute->seconds() : -1.0);
    TAWPIPE_MPI(MPI_Bcast(s.data(), static_cast<int>(s.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (m.after_compute) m.after_compute = SimTime::from_seconds(s.back());
    for (std::size_t i = 0; i < m.points.size(); ++i) {
      m.points[i].time = SimTime::from_seconds(s[4 * i]);
      m.points[i].cpu = SimTime::from_seconds(s[4 * i + 1]);
      if (s[4 * i + 2] >= 0.0) m.points[i].root_cpu = SimTime::from_seconds(s[4 * i + 2]);
      if (s[4 * i + 3] >= 0.0) m.points[i].member_cpu = SimTime::from_seconds(s[4 * i + 3]);
    }
    // The profile schema rejects times over a second (a sign of a broken run); a point that slow
    // means a badly loaded machine: keep the smaller sizes, the model extrapolates past them.
    std::erase_if(m.points, [](const profile::CommPoint& p) { return p.time.seconds() >= 1.0; });
  }
  std::erase_if(out, [](const profile::CommMeasurement& m) { return m.points.size() < 2; });
  return out;
}

ir::Program op_overhead_program(int ops) {
  // A one-rank program: a chain of tiny copies on the compute stream, each waiting for the
  // previous; its iteration time / ops is what the interpreter and backend add per op.
  ir::Header h;
  h.schedule = "calibrate-op-overhead";
  h.dtype = "fp32";
  h.seq_len = 1;
  h.micro_batch_size = 1;
  h.placement = {0};
  ir::ProgramBuilder b(h, 1);
  const ir::BufferId x = b.buffer(0, "x", Bytes(4), ir::BufferRole::activation, true);
  const ir::BufferId y = b.buffer(0, "y", Bytes(4), ir::BufferRole::activation, true);
  for (int i = 0; i < ops; ++i)
    b.copy(0, 0, i % 2 == 0 ? x : y, i % 2 == 0 ? y : x, Bytes(4));
  return std::move(b).finish();
}

Expected<SimTime> time_per_op(const ir::Program& program, Backend& backend, double seconds) {
  const auto ops = static_cast<double>(program.ranks.at(0).ops.size());
  TAWPIPE_TRY(backend.prepare(program, 0));
  Interpreter interpreter(program, 0, backend);
  std::vector<double> per_op;
  const auto stop = Clock::now() + std::chrono::duration<double>(seconds);
  for (std::int64_t step = 0; step < 3 || Clock::now() < stop; ++step) {
    auto rec = interpreter.run_iteration(step);
    if (!rec.ok()) return rec.error();
    if (step > 0) per_op.push_back(static_cast<double>(rec->end - rec->begin) * 1e-9 / ops);
  }
  std::sort(per_op.begin(), per_op.end());
  return SimTime::from_seconds(per_op[per_op.size() / 2]);
}

Expected<SimTime> measure_op_overhead(double seconds) {
  auto tiny = model::preset("tiny");
  if (!tiny.ok()) return tiny.error();
  HostOptions o;
  o.model = *tiny;
  HostBackend backend(o);
  return time_per_op(op_overhead_program(200), backend, seconds);
}

}  // namespace tawpipe::exec::host
