/// \file
/// The CUDA backend's logic, free of CUDA headers: a Backend (exec/backend.h) that maps each IR
/// op to DeviceApi calls (device_api.h). Built always, so the recording tests
/// (tests/unit/exec_cuda) exercise exactly what a GPU run would issue; the real calls live in
/// exec/cuda/.
///
/// Mapping:
///  - bootstrap: the local device is local_rank % device_count (local rank from
///    OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID or MPI_Comm_split_type(SHARED), see Bootstrap);
///    world rank 0 makes the NCCL unique id, the Bootstrap (MPI) broadcasts it, every rank
///    joins the world communicator (ncclCommInitRank), then every IR communicator, in id order,
///    is split from it (ncclCommSplit; color = comm id for members, NOCOLOR otherwise; key =
///    the member's index, so NCCL ranks follow the IR's member order);
///  - issue-ahead (Backend::issue_ahead() = DeviceOptions::max_in_flight): the interpreter
///    hands an op over as soon as its inputs are ISSUED; the host never waits for the device
///    inside an iteration (micro-batch tokens go up once per iteration, asynchronously, in
///    begin_iteration; the only synchronisation is end_iteration's);
///  - one CUDA stream per IR stream; two events (start, end) recorded around each op in flight,
///    taken from a pool that holds at most 2 x max_in_flight of them; an op whose dependency
///    runs on another stream and has not been seen complete waits on that op's end event
///    (cudaStreamWaitEvent) before it starts; wait() reports each op once, when its end event
///    has completed, with times from the events (it queries only the oldest op in flight of each
///    stream: a stream completes in order);
///  - an IR group is ncclGroupStart / its sends and recvs / ncclGroupEnd; send/recv move bytes
///    (ncclUint8), reductions use the buffer's element type;
///  - alloc / free are stream-ordered (cudaMallocAsync + zero / cudaFreeAsync on the device's
///    pool; exec/cuda keeps freed memory in the pool up to a release threshold), so they never
///    synchronise; the bound on ops in flight also bounds the memory of frees issued but not yet
///    reached by their stream; copy is a device copy, or a cast kernel when the element types
///    differ;
///  - compute ops run the block of exec/math as cuBLAS GEMMs and kernels (device_compute.h).
/// Storage: every buffer in the program's dtype (fp32 or bf16), as the IR sizes them (weights,
/// staging, activations, gradients), except master weights and optimizer moments in fp32.
/// GEMMs accumulate in fp32 whatever the storage.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "common/model/model.h"
#include "common/model/train_config.h"
#include "exec/backend.h"
#include "exec/device/device_api.h"

namespace tawpipe::exec::device {

/// Process-level services the backend needs from the launcher (MPI in tawexec, a stub in
/// tests): world rank and size, the node-local rank, and a broadcast over the world.
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int world_rank() const = 0;
  virtual int world_size() const = 0;
  /// This process's rank among the processes of its node.
  virtual Expected<int> local_rank() = 0;
  /// Broadcasts `data` from world rank `root` to every rank (collective over the world).
  virtual Status broadcast(std::span<std::byte> data, int root) = 0;
};

/// The node-local rank from the launcher's environment (OMPI_COMM_WORLD_LOCAL_RANK, then
/// SLURM_LOCALID, then MV2_COMM_WORLD_LOCAL_RANK); nullopt when none is set or parses.
/// `getenv` is injectable for tests.
std::optional<int> local_rank_from_env(
    const std::function<const char*(const char*)>& getenv_fn = nullptr);

/// What the backend trains (like host::HostOptions).
struct DeviceOptions {
  model::ModelConfig model;
  model::AdamWConfig optimizer;
  std::uint64_t seed = 1234;
  /// Sleep between event polls in wait() (the interpreter blocks there; no core spinning).
  std::int64_t poll_interval_ns = 50'000;
  /// Ops issued and not yet seen complete, at most (issue-ahead; >= 1).
  std::size_t max_in_flight = 256;
};

/// The CUDA backend over a DeviceApi. Not thread-safe (the interpreter's thread only).
class DeviceBackend final : public Backend {
 public:
  /// `api` and `boot` must outlive the backend.
  DeviceBackend(DeviceApi& api, Bootstrap& boot, DeviceOptions options);
  ~DeviceBackend() override;
  DeviceBackend(const DeviceBackend&) = delete;
  DeviceBackend& operator=(const DeviceBackend&) = delete;

  Status prepare(const ir::Program& program, ir::Rank rank) override;
  Status begin_iteration(std::int64_t step) override;
  Status issue(std::span<const ir::OpIndex> ops) override;
  Status wait(Nanos deadline, std::vector<Completion>& done) override;
  Status end_iteration() override;
  Nanos now() const override;
  std::size_t issue_ahead() const override;

  /// Summed token losses of the head ops since the last call (reads the device accumulator;
  /// call after end_iteration()).
  Expected<double> take_loss_sum();
  /// The allocator's high-water mark when the device reports it, else the highest live
  /// buffer bytes this backend allocated.
  std::uint64_t peak_bytes();
  /// Aborts every NCCL communicator (the watchdog's clean exit from a hang). Idempotent.
  void abort_communicators();
  /// The stream handle of IR stream `s` (valid after prepare; for tests and traces).
  StreamHandle stream_of(ir::StreamId s) const;
  /// The communicator handle of IR communicator `c` on this rank (-1 when not a member).
  CommHandle comm_of(ir::CommId c) const;
  /// The device address of a live buffer (0 when dead), and its element type.
  DevicePtr buffer_address(ir::BufferId b) const;
  DType buffer_dtype(ir::BufferId b) const;
  /// The values of a live f32 or bf16 buffer as floats (a synchronous copy to the host: for
  /// --verify after the run, never inside an iteration). Errors for dead buffers.
  Expected<std::vector<float>> buffer_values(ir::BufferId b);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tawpipe::exec::device
