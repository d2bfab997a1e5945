/// \file
/// The seam between the IR interpreter and a machine. The interpreter decides WHEN an op may
/// start (stream order, dependencies, groups, per-communicator collective order); a Backend
/// decides HOW: it owns buffers, communicators and streams, posts ops without blocking on other
/// ranks, and reports completions with timestamps.
///
/// Implementations: host/ (MPI + OpenBLAS, one process per rank), cuda/ (CUDA streams and
/// events, NCCL, cuBLAS; issue 7), and test doubles that record the call sequence. A CUDA
/// backend maps issue() to "wait on the events of the op's deps, launch on the IR stream's CUDA
/// stream, record an event"; a group maps to ncclGroupStart/End around its ops; wait() polls
/// events (cudaEventQuery) and sleeps between polls.
///
/// Contract (what the interpreter guarantees, what a Backend may rely on):
///  - prepare() is called once per process before any iteration; begin_iteration() and
///    end_iteration() bracket each run of the program;
///  - issue() receives one op, or all ops of one IR group (consecutive, same stream, posted
///    together). When issue_ahead() is 0 (the host backend), only after the stream's previous op
///    and every dependency has completed. When it is N > 0 (device backends), as soon as they
///    have been ISSUED: the backend orders the op after them on the device (same stream: FIFO;
///    other streams: an event wait), at most N ops are in flight, and every communication op
///    (send, recv, collective; a group by its first op) is issued in the rank's program order,
///    so that NCCL sees the same order on every rank;
///  - collectives of one communicator are issued in program order (what NCCL requires of every
///    member: one NCCL communicator per IR communicator), or, when collective_order() is
///    CollectiveOrder::stream, in program order within each stream only (the host backend gives
///    every (communicator, stream) its own MPI communicator, so the stream's FIFO is all MPI
///    requires, and a collective ready on one stream is not held behind a later-ready one of
///    another stream); send/recv in any order when issue_ahead() is 0 (a backend matches them by
///    their per-(comm, peer) sequence number, as program.h rule 3 says);
///  - every issued op is eventually reported exactly once by wait().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"

namespace tawpipe::exec {

/// Nanoseconds on a clock that is monotonic and shared by all ranks of one host (the host
/// backend uses CLOCK_MONOTONIC; interpreted relative to an iteration's start).
using Nanos = std::int64_t;

/// One finished op: when it started running and when it completed; for a compute op or copy
/// of the host backend also the CPU time its thread used meanwhile and how often another thread
/// preempted it (report.h OpRecord::cpu; -1: not measured).
struct Completion {
  ir::OpIndex op = ir::kNone;
  Nanos start = 0;
  Nanos end = 0;
  Nanos cpu = -1;
  std::int64_t preemptions = -1;
};

/// The order in which the interpreter issues the collectives of one communicator (see the
/// contract above).
enum class CollectiveOrder : std::uint8_t {
  communicator,  ///< program order over all the communicator's streams (NCCL)
  stream,        ///< program order within each stream (one MPI communicator per stream)
};

/// A machine that runs ops of one rank. Not thread-safe: the interpreter calls it from one
/// thread.
class Backend {
 public:
  virtual ~Backend() = default;

  /// Creates communicators, streams and persistent buffers (with their initial contents) for
  /// `rank` of `program`. Errors name what the backend cannot run (dtype, model, rank count).
  virtual Status prepare(const ir::Program& program, ir::Rank rank) = 0;

  /// Starts iteration `step` (0-based over the whole run; the optimizer's step count is
  /// step + 1): persistent buffers that are not weights, master weights or optimizer state
  /// return to their initial (empty) content, transient buffers are dead.
  virtual Status begin_iteration(std::int64_t step) = 0;

  /// Posts `ops` (one op or one whole group). Must not block waiting for other ranks.
  virtual Status issue(std::span<const ir::OpIndex> ops) = 0;

  /// Blocks (without spinning a core) until at least one issued op has completed or `deadline`
  /// (on now()'s clock) has passed, and appends the completions to `done`. Returning with
  /// nothing appended means the deadline passed.
  virtual Status wait(Nanos deadline, std::vector<Completion>& done) = 0;

  /// Ends the iteration (every issued op has completed).
  virtual Status end_iteration() = 0;

  /// The current time on the completions' clock.
  virtual Nanos now() const = 0;

  /// The bound on ops in flight when this backend takes ops ahead of their dependencies'
  /// completion (see the contract above); 0 = it does not (the op's inputs must be complete).
  virtual std::size_t issue_ahead() const { return 0; }

  /// How the collectives of one communicator are ordered; see the contract above.
  virtual CollectiveOrder collective_order() const { return CollectiveOrder::communicator; }
};

}  // namespace tawpipe::exec
