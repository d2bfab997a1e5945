/// \file
/// The memory model: device memory in use per rank over simulated time, its peak with a breakdown
/// by kind, and an out-of-memory flag.
///
/// Allocated at time t on rank r = persistent buffers (from time zero, IR semantics rule 5)
///   + non-persistent buffers between their `alloc` and `free` ops (one alloc or free op may list
///     several buffers: each listed buffer becomes live, or is released, at that op)
///   + `Cost::workspace_bytes` of every compute op running at t (transient working set: attention
///     log-sum-exp, gradient buffers of a backward, recomputed activations, logits of the loss).
/// Activations of the micro-batches in flight are buffers of the IR (the generators allocate and
/// free them, sized by common/model/memory.h), so they are covered by the second term.
///
/// Each buffer counts toward one kind, by its IR role: weights (own compute-dtype weights),
/// gradients (the accumulator of owned weights), optimizer (fp32 master copy + AdamW moments),
/// activations (boundary activations, their gradients, and the per-layer stash that the
/// generators declare with the `workspace` role, including what a split backward keeps from B
/// to W: schedules/pipeline.h), buffers (weight and gradient staging: FSDP's
/// gathered blocks and gradient pieces, the weight-passing methods' send/receive slots and
/// prefetch buffers), workspace (compute ops' working sets).
///
/// On top of what the program allocates, a real process needs (all part of the reported peak):
///  - CUDA context: about 300 MiB with lazy module loading (CUDA >= 11.7), over 1000 MiB before
///    (PyTorch maintainers, pytorch/pytorch issue #107667), plus cuBLAS/cuDNN handles and
///    workspaces; default 512 MiB;
///  - NCCL buffers (`nccl`): every connection of a channel allocates, per protocol, Simple
///    NCCL_BUFFSIZE = 4 MiB, LL128 120*640*8*8 B = 4.69 MiB and LL 8*512*8*16 B = 512 KiB
///    (NVIDIA/nccl src/init.cc DEFAULT_BUFFSIZE / DEFAULT_LL128_BUFFSIZE / DEFAULT_LL_BUFFSIZE
///    with the constants of src/include/device.h). A rank receives on one ring connection per
///    channel of every communicator it uses for collectives, and on its own connections for each
///    point-to-point peer of each communicator (connections belong to a communicator). NCCL builds
///    16-32 channels on NVSwitch systems depending on the generation; we take `nccl_channels` = 16
///    collective channels and `nccl_p2p_channels` = 2 per peer (NCCL_NCHANNELS_PER_NET_PEER's
///    default) as a stated assumption;
///  - allocator fragmentation (`reserve`, together with the context): the PyTorch caching
///    allocator rounds large blocks to 2 MiB and splits cached segments; GMLake (Guo et al.
///    2024, arXiv 2401.08156) measured on LLM training on A100-80GB 15 % of reserved memory lost
///    to fragmentation on average (up to 33 %). Persistent buffers are allocated once at start
///    in whole segments and do not fragment, so the fraction applies to the transient part
///    (alloc/free buffers and workspaces): reserved transient = transient / (1 - f), f = 0.15.
///    A trainer that allocates every buffer once before its first step and never frees (llm.c:
///    train_gpt2.cu gpt2_allocate_state cudaMallocs parameters, gradients, optimizer state and
///    all activations) has no caching allocator and f = 0 (`tawsim --allocator static`).
/// The reported peak is the maximum over time of allocated + reserve + NCCL, and its breakdown
/// sums to it exactly; OOM = peak > device memory.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/ir/program.h"
#include "common/units.h"

namespace tawpipe::sim {

/// What a byte in use is for (file comment).
enum class MemoryKind : std::uint8_t {
  weights,
  gradients,
  optimizer,
  activations,
  buffers,
  workspace,
};
inline constexpr std::size_t kMemoryKinds = 6;

/// The kind of a buffer with IR role `role`.
MemoryKind memory_kind(ir::BufferRole role);

/// Bytes by kind at one moment, plus the runtime's own (NCCL, context + fragmentation).
struct MemoryBreakdown {
  std::array<std::uint64_t, kMemoryKinds> allocated{};  ///< by MemoryKind
  std::uint64_t nccl = 0;
  std::uint64_t reserve = 0;  ///< CUDA context + allocator fragmentation
  std::uint64_t total() const {
    std::uint64_t t = nccl + reserve;
    for (std::uint64_t b : allocated)
      t += b;
    return t;
  }
};

/// The runtime's memory besides the program's buffers (defaults and sources: file comment).
struct MemoryOptions {
  std::uint64_t context_bytes = 512ull << 20;  ///< CUDA context + library handles
  double fragmentation = 0.15;                 ///< share of reserved transient memory lost
  std::int32_t nccl_channels = 16;             ///< collective channels per communicator
  std::int32_t nccl_p2p_channels = 2;          ///< channels per point-to-point peer
  /// Receive buffers of one connection: Simple + LL128 + LL protocol buffers.
  std::uint64_t nccl_connection_bytes = (4ull << 20) + 4915200ull + 524288ull;
};

/// NCCL buffer bytes of a rank that runs collectives on `collective_comms` communicators (of
/// two or more members) and point-to-point transfers with `p2p_peers` distinct (communicator,
/// peer) pairs.
std::uint64_t nccl_buffer_bytes(std::int64_t collective_comms, std::int64_t p2p_peers,
                                const MemoryOptions& options);

/// One point of a rank's memory-in-use curve (trace counter track).
struct MemorySample {
  SimTime time;
  std::uint64_t bytes = 0;  ///< allocated + reserve + NCCL at `time`
};

/// Per-rank usage tracker; updated by the program executor as ops start and end.
class MemoryModel {
 public:
  /// `persistent[r]`: bytes by kind live from time zero; `nccl_bytes[r]`: that rank's NCCL
  /// buffers; `record` keeps every change as a MemorySample (for traces).
  MemoryModel(const std::vector<std::array<std::uint64_t, kMemoryKinds>>& persistent,
              std::vector<std::uint64_t> nccl_bytes, const MemoryOptions& options, bool record);

  /// `bytes` of `kind` become live on `rank` (alloc op, or a compute op's workspace at its
  /// start).
  void add(std::int32_t rank, MemoryKind kind, std::uint64_t bytes, SimTime now) {
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    r.used[static_cast<std::size_t>(kind)] += bytes;
    r.transient += bytes;
    const std::uint64_t effective = r.fixed + reserved_transient(r.transient);
    if (effective > r.peak) {
      r.peak = effective;
      r.peak_time = now;
      r.peak_used = r.used;
      r.peak_transient = r.transient;
    }
    if (record_) sample(r, now);
  }
  /// `bytes` of `kind` are released on `rank` (free op, or the end of a compute op's workspace).
  void remove(std::int32_t rank, MemoryKind kind, std::uint64_t bytes, SimTime now) {
    Rank& r = ranks_[static_cast<std::size_t>(rank)];
    auto& u = r.used[static_cast<std::size_t>(kind)];
    const std::uint64_t b = u >= bytes ? bytes : u;
    u -= b;
    r.transient = r.transient >= b ? r.transient - b : 0;
    if (record_) sample(r, now);
  }

  /// Highest allocated + reserve + NCCL over the run.
  std::uint64_t peak_bytes(std::int32_t rank) const {
    return ranks_[static_cast<std::size_t>(rank)].peak;
  }
  /// When the peak was first reached.
  SimTime peak_time(std::int32_t rank) const {
    return ranks_[static_cast<std::size_t>(rank)].peak_time;
  }
  /// The breakdown at the peak; its total() equals peak_bytes(rank).
  MemoryBreakdown peak_breakdown(std::int32_t rank) const;
  /// Recorded samples of `rank` (empty unless constructed with record = true), in time order.
  const std::vector<MemorySample>& samples(std::int32_t rank) const {
    return ranks_[static_cast<std::size_t>(rank)].samples;
  }

 private:
  struct Rank {
    std::array<std::uint64_t, kMemoryKinds> used{};
    std::array<std::uint64_t, kMemoryKinds> peak_used{};
    std::uint64_t fixed = 0;  ///< persistent + NCCL + context
    std::uint64_t nccl = 0;
    std::uint64_t transient = 0;  ///< allocated beyond the persistent buffers
    std::uint64_t peak_transient = 0;
    std::uint64_t peak = 0;
    SimTime peak_time;
    std::vector<MemorySample> samples;
  };
  std::uint64_t reserved_transient(std::uint64_t transient) const {
    return static_cast<std::uint64_t>(static_cast<double>(transient) * transient_scale_);
  }
  void sample(Rank& r, SimTime now) const {
    const std::uint64_t b = r.fixed + reserved_transient(r.transient);
    if (!r.samples.empty() && r.samples.back().time == now) {
      r.samples.back().bytes = b;
    } else if (r.samples.empty() || r.samples.back().bytes != b) {
      r.samples.push_back(MemorySample{now, b});
    }
  }

  std::vector<Rank> ranks_;
  double transient_scale_ = 1.0;  ///< 1 / (1 - fragmentation)
  std::uint64_t context_ = 0;
  bool record_ = false;
};

}  // namespace tawpipe::sim
