/// \file
/// The host backend's MPI calls for one IR communication op, shared by the backend's
/// communication threads and by `tawexec calibrate` (which must time the very same path).
///
/// Posting: send/recv -> MPI_Isend/MPI_Irecv (MPI_BYTE); broadcast -> MPI_Ibcast; reduce ->
/// MPI_Ireduce (MPI_SUM on floats); all_reduce -> MPI_Iallreduce; all_gather -> MPI_Iallgather;
/// reduce_scatter -> MPI_Ireduce_scatter_block; in-place forms use MPI_IN_PLACE (an in-place
/// reduce-scatter stages its output and copies it back on completion).
///
/// Waiting: `wait_all` tests the requests (MPI_Testsome, which is also what advances Open MPI's
/// shared-memory transport and libnbc's collective schedules) and, between tests, gives the core
/// away: a few immediate re-tests first (a message that is about to land costs no sleep), then,
/// for point-to-point ops, a sleep on the process's doorbell until the peer rings
/// (exec/host/doorbell.h: one wake-up per message), else (libnbc collectives)
/// sleeps that double from kFirstSleep to kMaxSleep, or in a long wait to 1/8 of the wait so far
/// (kLongWaitSleepDivisor). A busy wait (MPI_Wait's default) would steal the core from the
/// compute thread of this or another rank that shares it; a sleeping wait adds at most kMaxSleep
/// (long waits: 1/8 of their length, at most kLongWaitMaxSleepNs) of latency per collective
/// round. No sched_yield(): beside a runnable compute thread, a yield under EEVDF costs up to
/// that thread's whole slice (below).
///
/// MPI's blocking collectives (run_collective, with mpi_yield_when_idle) poll with
/// sched_yield(), and under Linux's EEVDF scheduler a yield only pushes the yielding thread's
/// deadline back, so while a compute thread holds the core the communication thread polls once
/// per scheduler slice (milliseconds). A run's trace showed it: an all-gather of a 3 MiB layer
/// took 0.6 ms with the core idle and 3.7-7.3 ms beside a forward, every protocol round of the
/// shared-memory transport waiting for a slice on both ranks. A sleeping thread instead wakes on
/// a timer; with a short slice (request_comm_slice) the wake-up preempts the compute thread at
/// once (EEVDF's short-slice preemption), polls for microseconds and sleeps again.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include <mpi.h>

#include "common/aligned.h"
#include "common/error.h"
#include "common/host_wait.h"
#include "common/ir/program.h"

namespace tawpipe::exec::host {

// The waiting schedule (first sleep, doubling, caps, immediate re-tests) is common/host_wait.h,
// shared with the simulator, which charges the wake-ups to the core. Why long waits back off:
// each wake-up of a thread on a core preempts that core's compute thread, and on this VM (PTI
// without PCID, virtualised timers) costs the compute thread ~50 us of progress: one thread
// sleeping 100 us in a loop slowed a 4-layer forward by 30 % (26.3 -> 34.4 ms, ~5000 wakes/s),
// sleeping 1 ms by 4 % (930 wakes/s). Measured with a sleeper thread pinned beside
// layers_forward (exec/math/block.h), cpu-h256, seq 256; `tawexec calibrate` measures the cost
// per wake-up (profile host.wakeup_cost).
using host_wait::kFirstSleepNs;
using host_wait::kLongWaitMaxSleepNs;
using host_wait::kLongWaitSleepDivisor;
using host_wait::kMaxSleepNs;
using host_wait::kSpinPolls;
/// The slice a communication thread asks of the scheduler: the smallest Linux accepts (100 us).
inline constexpr std::uint64_t kCommSliceNs = 100'000;

/// The slice a compute thread asks of the scheduler (common/host_wait.h, where the simulator
/// reads it too).
using host_wait::kComputeSliceNs;

/// Marks the calling thread as latency-sensitive for the scheduler (`on`) or restores the
/// default (`!on`): sched_setattr's sched_runtime for SCHED_OTHER threads, a custom EEVDF slice
/// (Linux >= 6.12). A thread with a shorter slice than the running one preempts it when it
/// wakes; its CPU share is unchanged. Returns false where the kernel refuses (older kernels):
/// the thread then keeps the default slice.
bool request_comm_slice(bool on);

/// Asks for kComputeSliceNs for the calling (compute) thread, as request_comm_slice does for its
/// slice; false where the kernel refuses.
bool request_compute_slice();

/// While alive, the calling thread runs under SCHED_FIFO (priority 1); then it gets its previous
/// policy and slice back. Nothing changes where the kernel refuses (no CAP_SYS_NICE) or the
/// thread is real-time already. wait_all holds one for its whole wait.
///
/// Why: a communication thread's MPI_Testsome does real work, the receiver-side single copy (CMA)
/// of a rendezvous message (1.6 MB in ~0.3 ms). Under EEVDF a short-slice thread that runs that
/// long beside a compute thread falls behind its fair share (negative lag), is preempted mid-copy
/// and, being runnable rather than newly woken, waits out the compute thread's whole slice
/// (kComputeSliceNs, 20 ms). Measured (FSDP, localhost-cpu, quiet, a per-wait log: wall time,
/// tests, sleeps, thread CPU time): the reduce-scatter thread's waits took 9-18 ms with 3-4
/// tests, no sleep and 0.03-0.5 ms of thread CPU time; a rank's reduce-scatter waits summed to
/// 0.8-1.0 s over 4 steps, all-gather's to 0.9 s. Under SCHED_FIFO: 0.17 s and 0.26-0.29 s, no wait
/// runnable for more than 5 ms. A real-time thread preempts a normal one whenever it is runnable;
/// it sleeps, never spins, in wait_all (at most kSpinPolls immediate re-tests), so the compute
/// thread loses only the copies' CPU time (the simulator: sim/run/core_sharing.h, copies preempt
/// the compute slice's holder). MPI's blocking calls (run_collective), which poll with
/// sched_yield, never run under it: a yielding real-time thread would keep the core.
class FifoWhileWaiting {
 public:
  FifoWhileWaiting();
  ~FifoWhileWaiting();
  FifoWhileWaiting(const FifoWhileWaiting&) = delete;
  FifoWhileWaiting& operator=(const FifoWhileWaiting&) = delete;

 private:
  unsigned char prev_[48] = {};  ///< the thread's struct sched_attr before
  bool active_ = false;
};

/// Open MPI's idle yields, switched per call. tawexec sets mpi_yield_when_idle for MPI's blocking
/// calls (run_collective, the end-of-run collection), whose waits poll; with it, opal_progress
/// calls sched_yield() after every progress call that found nothing, so every empty
/// MPI_Testsome of wait_all yielded too, and under SCHED_FIFO a yield hands the core to any other
/// runnable FIFO thread of the core: on 2x2-cpu the waiting communication threads of the two
/// ranks of a core (FSDP: all-gather and reduce-scatter of each) passed the core back and forth.
/// Measured (FSDP + TawPipe[grouping=off] interleaved, 2x2-cpu, quiet, 4 launches alternating
/// OMPI_MCA_mpi_yield_when_idle=1/0, 4 timed steps each, session 14): the all-gather threads'
/// involuntary switches 970-3770 per step with yields, 190-400 without; the waiting core's
/// communication threads' CPU 137-151 vs 101-119 ms per rank and step; FSDP's paired gap to
/// TawPipe[grouping=off] median +9.0 % with, +5.4 % without (8 sub-rounds each). A sleeping wait
/// never needs the yield (it sleeps, it does not spin), so wait_all turns them off while it runs
/// (off_while_waiting) and run_collective turns the configured setting back on while it runs
/// (on_while_blocking, which wins). Process-wide (the flag is Open MPI's): counts of both kinds;
/// nothing changes where Open MPI's switch is not found or yields were not configured.
class IdleYields {
 public:
  enum class Kind : std::uint8_t { off_while_waiting, on_while_blocking };
  explicit IdleYields(Kind kind);
  ~IdleYields();
  IdleYields(const IdleYields&) = delete;
  IdleYields& operator=(const IdleYields&) = delete;

 private:
  Kind kind_;
};

/// Whether Open MPI yields when idle right now (false where its flag is not found).
bool mpi_idle_yields();

/// A posted non-blocking operation and what to do when it completes.
struct PostedOp {
  MPI_Request request = MPI_REQUEST_NULL;
  /// In-place reduce-scatter: MPI's output (uninitialised heap memory: MPI overwrites it),
  /// `staged` floats, copied to `copy_to` on completion.
  AlignedFloats staging;
  std::size_t staged = 0;
  float* copy_to = nullptr;
  /// Point-to-point: the peer's world rank, whose doorbell announces this op's progress
  /// (exec/host/doorbell.h), or -1 (collectives of libnbc: no bell, the wait uses timers).
  int peer_world = -1;
  int peer_slot = 0;  ///< the doorbell slot of the peer's thread that waits for the matching op
  bool is_recv = false;
  std::uint64_t log_op = 0;  ///< its number in the wait log (exec/host/wait_log.h), 0 when off
  std::uint64_t bytes = 0;   ///< point-to-point: the message's bytes (the wait log's)
};

/// What one collective needs: buffers (floats), element count of the whole buffer, the caller's
/// position and the root's position in `comm` (rooted kinds).
struct CollectiveArgs {
  ir::CollectiveKind kind = ir::CollectiveKind::all_reduce;
  const float* send = nullptr;
  float* recv = nullptr;
  std::uint64_t bytes = 0;  ///< of the whole (full) buffer, as the IR op states it
  int me = 0;
  int size = 1;
  int root = 0;
  MPI_Comm comm = MPI_COMM_NULL;
};

/// Posts one collective. Errors: MPI's, with the call named.
Status post_collective(const CollectiveArgs& args, PostedOp& out);

/// Runs one collective with MPI's blocking call (MPI_Bcast, MPI_Reduce, MPI_Allreduce,
/// MPI_Allgather, MPI_Reduce_scatter_block), same buffers and in-place rules as post_collective.
/// run_alone's fallback where run_direct does not apply: Open MPI's blocking collectives
/// (coll/tuned) advance every round as soon as its data arrives, where a non-blocking one
/// (libnbc) advances one round per test, so with sleeping waits a many-round collective pays a
/// sleep per round (measured: a 16 MiB reduce-scatter on 2 ranks took 110 ms through libnbc).
/// The wait inside MPI polls with sched_yield (tawexec sets mpi_yield_when_idle), with the
/// yield latency beside a compute thread described above.
Status run_collective(const CollectiveArgs& args);

/// Whether a collective alone in its batch is posted non-blocking and waited for by sleeping
/// (broadcast: libnbc runs it in few rounds of whole pieces) rather than run by run_alone
/// (reduce, reduce-scatter, all-reduce: libnbc pipelines them in many segment rounds, one per
/// test; all-gather: run_direct, one round of messages whose peers ring the doorbell). Measured
/// by `tawexec calibrate` on 2x2-cpu, 2 ranks, 16 MiB: reduce 660 ms non-blocking vs 6.5 ms
/// blocking, reduce-scatter 110 vs 9.3 ms; all-gather 5.6 vs 6.7 ms. A batch of several
/// collectives (an IR group) is always posted non-blocking.
bool nonblocking_alone(ir::CollectiveKind kind);

/// True when run_direct implements `args`: reduce, and all-gather / reduce-scatter / all-reduce
/// whose float count splits evenly over the members.
bool direct_alone(const CollectiveArgs& args);

/// Reduce, all-gather, reduce-scatter and all-reduce in one round of point-to-point messages
/// (all-reduce: two), each waited for by wait_all (sleeping on the doorbell, no yields), then
/// summed on this thread: the root receives every member's buffer (reduce); every member sends
/// its piece to every other (all-gather); member j receives piece j of every buffer
/// (reduce-scatter), then sends its summed piece to every member (all-reduce). Few members share
/// a host here (2-4), so one round of P-1 messages beats MPI's blocking collectives, whose
/// yielding polls wait a scheduler slice per round beside a compute thread (above). Same
/// buffers and in-place rules as post_collective. Precondition: direct_alone(args).
Status run_direct(const CollectiveArgs& args);

/// A collective alone in its batch on a communication thread: run_direct when it applies, else
/// (an uneven all-gather) post_collective and wait_all, else run_collective.
Status run_alone(const CollectiveArgs& args);

/// Posts a send (or receive) of `bytes` bytes of `data` to (from) `peer` in `comm` with `tag`,
/// and rings the peer's doorbell `peer_slot`: that of its thread that waits for the matching op
/// (exec/host/doorbell.h).
Status post_p2p(bool is_send, void* data, std::uint64_t bytes, int peer, int tag, MPI_Comm comm,
                PostedOp& out, int peer_slot);

/// Sleeps wait_all has taken on the calling thread so far (each one a wake-up, timer or doorbell):
/// calibration takes the wake-ups' own CPU time out of a transfer's measured CPU time.
std::uint64_t wait_sleeps_on_this_thread();

/// Sleeps of every wait_all of this process so far: on timers, and on the doorbell (each one a
/// wake-up of a communication thread; tawexec reports them per step beside the simulator's).
struct WaitSleeps {
  std::uint64_t timer = 0;
  std::uint64_t doorbell = 0;
};
WaitSleeps wait_sleeps_of_process();

/// Waits, without spinning (see above), until every op of `ops` completed: while every pending
/// op is a point-to-point op whose peer has a doorbell, by sleeping on this process's doorbell
/// (at most host_wait::doorbell_timeout_ns per sleep), else on the timer schedule; a completed
/// receive rings its sender. Calls
/// `on_done(index)` once per op as it completes (after copying staged output back). Returns
/// early, with ops still pending, when `stop` (may be null) becomes true.
Status wait_all(std::span<PostedOp> ops, const std::function<void(std::size_t)>& on_done,
                const std::atomic<bool>* stop);

}  // namespace tawpipe::exec::host
