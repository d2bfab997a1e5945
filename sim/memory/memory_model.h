/// \file
/// The memory model: device memory in use per rank over simulated time, its peak, and an
/// out-of-memory flag.
///
/// In use at time t on rank r = persistent buffers (from time zero, IR semantics rule 5)
///   + non-persistent buffers between their `alloc` and `free` ops (one alloc or free op may list
///     several buffers: each listed buffer becomes live, or is released, at that op)
///   + `Cost::workspace_bytes` of every compute op running at t (transient working set).
/// Activations of the micro-batches in flight are buffers of the IR (the generators allocate and
/// free them), so they are covered by the second term.
///
/// Usable capacity = device memory - runtime reserve, where the reserve is what a real run loses
/// before the first tensor is allocated and to allocator fragmentation:
///   - CUDA context + cuBLAS/cuDNN handles and workspaces: several hundred MiB per process;
///   - NCCL: communication buffers of NCCL_BUFFSIZE = 4 MiB per channel and peer (NCCL
///     environment-variable documentation) times protocols and peers, up to about 1 GiB;
///   - fragmentation of PyTorch's caching allocator: a few percent of the pool.
/// No published measurement covers all three for our configurations, so the defaults are a
/// stated, conservative assumption: 2 GiB fixed + 5 % of device memory (6 GiB on an 80 GiB GPU).
/// Both are options (`MemoryOptions`).
#pragma once

#include <cstdint>
#include <vector>

#include "common/units.h"

namespace tawpipe::sim {

/// The runtime reserve (see the file comment for where the defaults come from).
struct MemoryOptions {
  std::uint64_t reserve_fixed_bytes = 2ull << 30;  ///< CUDA context + NCCL buffers
  double reserve_fraction = 0.05;                  ///< allocator fragmentation
};

/// Per-rank usage tracker; updated by the program executor as ops start and end.
class MemoryModel {
 public:
  /// `persistent_bytes[r]` live from time zero; `capacity_bytes[r]` is the device memory.
  MemoryModel(std::vector<std::uint64_t> persistent_bytes,
              const std::vector<std::uint64_t>& capacity_bytes, const MemoryOptions& options);

  /// `bytes` become live on `rank` (alloc op, or a compute op's workspace at its start).
  void add(std::int32_t rank, std::uint64_t bytes, SimTime now) {
    auto& u = used_[static_cast<std::size_t>(rank)];
    u += bytes;
    if (u > peak_[static_cast<std::size_t>(rank)]) {
      peak_[static_cast<std::size_t>(rank)] = u;
      peak_time_[static_cast<std::size_t>(rank)] = now;
    }
  }
  /// `bytes` are released on `rank` (free op, or the end of a compute op's workspace).
  void remove(std::int32_t rank, std::uint64_t bytes) {
    auto& u = used_[static_cast<std::size_t>(rank)];
    u = u >= bytes ? u - bytes : 0;
  }

  std::uint64_t peak_bytes(std::int32_t rank) const {
    return peak_[static_cast<std::size_t>(rank)];
  }
  /// When the peak was first reached.
  SimTime peak_time(std::int32_t rank) const { return peak_time_[static_cast<std::size_t>(rank)]; }
  /// Device memory minus the reserve (0 when the device memory is unknown).
  std::uint64_t usable_bytes(std::int32_t rank) const {
    return usable_[static_cast<std::size_t>(rank)];
  }
  /// True when the peak exceeds the usable capacity.
  bool oom(std::int32_t rank) const {
    return usable_bytes(rank) > 0 && peak_bytes(rank) > usable_bytes(rank);
  }

 private:
  std::vector<std::uint64_t> used_;
  std::vector<std::uint64_t> peak_;
  std::vector<SimTime> peak_time_;
  std::vector<std::uint64_t> usable_;
};

}  // namespace tawpipe::sim
