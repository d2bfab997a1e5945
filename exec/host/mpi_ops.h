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
/// away: a few sched_yield() polls first (cheap when the core is idle, and a message that is
/// about to land costs no sleep), then sleeps that double from kFirstSleep to kMaxSleep. A busy
/// wait (MPI_Wait's default) would steal the core from the compute thread of this or another rank
/// that shares it; a sleeping wait adds at most kMaxSleep of latency per collective round.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include <mpi.h>

#include "common/error.h"
#include "common/ir/program.h"

namespace tawpipe::exec::host {

/// First sleep between tests once the yield polls are spent (nanoseconds).
inline constexpr std::int64_t kFirstSleepNs = 4'000;
/// Longest sleep between tests: bounds the latency a waiting thread adds to each round of a
/// collective (libnbc advances one round per test) while costing ~1 context switch per 100 us.
inline constexpr std::int64_t kMaxSleepNs = 100'000;
/// sched_yield() polls before the first sleep.
inline constexpr int kYieldPolls = 8;

/// A posted non-blocking operation and what to do when it completes.
struct PostedOp {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<float> staging;  ///< in-place reduce-scatter: MPI's output, copied to `copy_to`
  float* copy_to = nullptr;
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
/// What the stream threads use: Open MPI's blocking collectives (coll/tuned) advance every round
/// as soon as its data arrives, where a non-blocking one (libnbc) advances a round per test. The
/// wait inside MPI polls, but yields the core on every poll (tawexec sets Open MPI's
/// mpi_yield_when_idle), so a core's compute thread keeps it.
Status run_collective(const CollectiveArgs& args);

/// Posts a send (or receive) of `bytes` bytes of `data` to (from) `peer` in `comm` with `tag`.
Status post_p2p(bool is_send, void* data, std::uint64_t bytes, int peer, int tag, MPI_Comm comm,
                PostedOp& out);

/// Waits, without spinning (see above), until every op of `ops` completed; calls
/// `on_done(index)` once per op as it completes (after copying staged output back). Returns
/// early, with ops still pending, when `stop` (may be null) becomes true.
Status wait_all(std::span<PostedOp> ops, const std::function<void(std::size_t)>& on_done,
                const std::atomic<bool>* stop);

}  // namespace tawpipe::exec::host
