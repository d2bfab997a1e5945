/// \file
/// The host backend: one MPI process per rank, fp32 buffers in RAM, one thread per IR stream.
///
/// Every IR stream the rank uses gets its own thread, which runs the stream's ops in issue order:
/// compute ops (OpenBLAS, single-threaded) and copies run on it directly; collectives and
/// sends/receives (one op or a group) are posted non-blocking and waited for there (mpi_ops.h:
/// tests interleaved with yields and short sleeps; a thread that only communicates asks the
/// scheduler for a short slice, so its wake-ups preempt the compute thread sharing its core). So a
/// transfer that the IR puts on a communication stream progresses while the compute stream
/// computes, exactly as the IR overlaps them, and a rank that waits gives its core to the ranks
/// that share it. MPI must
/// provide MPI_THREAD_MULTIPLE. The interpreter's thread only posts ops to the stream threads,
/// runs alloc/free inline, and sleeps on a condition variable until a stream reports a
/// completion.
///
/// Communicators: each IR communicator is an MPI communicator (MPI_Comm_create_group, members in
/// IR order) used by its point-to-point ops, whatever their stream: the tag is the op's sequence
/// number among the rank's sends (recvs) to (from) that peer on that communicator, so matching
/// follows program order whatever the posting order or thread. Collectives of an IR communicator
/// get one more MPI communicator per stream that carries them (MPI requires that collectives of
/// one communicator are not issued concurrently from two threads); the k-th collective of a
/// communicator must be on the same stream on every member (checked by prepare()).
/// Op mapping to MPI calls: mpi_ops.h.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/model/model.h"
#include "common/model/train_config.h"
#include "exec/backend.h"

namespace tawpipe::exec::host {

/// What the host backend trains (the program's header names the model; the caller resolves it).
struct HostOptions {
  model::ModelConfig model;
  model::AdamWConfig optimizer;
  std::uint64_t seed = 1234;
};

/// Per op of `rank` (0 for ops that are not sends or receives): the IR stream of the peer's op
/// that matches it, whose thread waits for it on that doorbell slot (exec/host/doorbell.h).
std::vector<int> peer_streams_of_p2p(const ir::Program& program, ir::Rank rank);

class HostBackend final : public Backend {
 public:
  /// Precondition: MPI is initialised with MPI_THREAD_MULTIPLE. The backend never calls
  /// MPI_Abort or MPI_Finalize.
  explicit HostBackend(HostOptions options);
  ~HostBackend() override;
  HostBackend(const HostBackend&) = delete;
  HostBackend& operator=(const HostBackend&) = delete;

  Status prepare(const ir::Program& program, ir::Rank rank) override;
  Status begin_iteration(std::int64_t step) override;
  Status issue(std::span<const ir::OpIndex> ops) override;
  Status wait(Nanos deadline, std::vector<Completion>& done) override;
  Status end_iteration() override;
  Nanos now() const override;
  /// Each (communicator, stream) is its own MPI communicator (see the file's head): a
  /// collective waits only for the collectives before it on its stream.
  CollectiveOrder collective_order() const override { return CollectiveOrder::stream; }

  /// Summed token losses of the head ops since the last call (then reset to 0).
  double take_loss_sum();
  /// Highest live buffer bytes (persistent + allocated) seen so far.
  std::uint64_t peak_bytes() const;
  /// Contents of a live buffer, for verification after the run; empty when dead.
  std::span<const float> buffer_data(ir::BufferId buffer) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tawpipe::exec::host
