/// \file
/// The host backend: one MPI process per rank, fp32 buffers in RAM, compute on a worker thread
/// with OpenBLAS, communication as non-blocking MPI calls driven by a progress loop.
///
/// Why a progress loop and one compute thread (MPI_THREAD_FUNNELED) rather than a comm thread
/// per IR stream with MPI_THREAD_MULTIPLE: Open MPI's shared-memory transport only progresses
/// inside MPI calls, and MPI_THREAD_MULTIPLE serialises them behind a lock anyway; one thread
/// that owns every MPI call, polls MPI_Testsome and otherwise sleeps on a condition variable
/// (woken at once by compute completions, with a short backoff for MPI) keeps four to six ranks
/// on two cores from spinning, while compute overlaps communication on the worker thread.
///
/// Op mapping: send/recv -> MPI_Isend/MPI_Irecv (MPI_BYTE, tag = the op's sequence number among
/// the rank's sends (recvs) to (from) that peer on that communicator, so matching follows program
/// order whatever the posting order); broadcast -> MPI_Ibcast; reduce -> MPI_Ireduce (MPI_SUM on
/// floats); all_reduce -> MPI_Iallreduce; all_gather -> MPI_Iallgather; reduce_scatter ->
/// MPI_Ireduce_scatter_block; in-place forms use MPI_IN_PLACE. Each IR communicator is an MPI
/// communicator created once (MPI_Comm_create_group, members in IR order). alloc/free/copy run
/// inline; compute ops (including accumulate and optimizer on comm streams) run in issue order
/// on the worker thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

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

class HostBackend final : public Backend {
 public:
  /// Precondition: MPI is initialised with at least MPI_THREAD_FUNNELED and this thread calls
  /// MPI. The backend never calls MPI_Abort or MPI_Finalize.
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
