#include "sim/memory/memory_model.h"

#include <cassert>

namespace tawpipe::sim {

MemoryKind memory_kind(ir::BufferRole role) {
  switch (role) {
    case ir::BufferRole::weights:
      return MemoryKind::weights;
    case ir::BufferRole::gradient:
      return MemoryKind::gradients;
    case ir::BufferRole::master_weights:
    case ir::BufferRole::optimizer_state:
      return MemoryKind::optimizer;
    case ir::BufferRole::weight_staging:
    case ir::BufferRole::gradient_staging:
      return MemoryKind::buffers;
    case ir::BufferRole::activation:
    case ir::BufferRole::activation_grad:
    case ir::BufferRole::workspace:  // the generators' per-layer activation stash
      return MemoryKind::activations;
  }
  assert(false && "unhandled BufferRole");
  return MemoryKind::buffers;
}

std::uint64_t nccl_buffer_bytes(std::int64_t collective_comms, std::int64_t p2p_peers,
                                const MemoryOptions& options) {
  const auto connections = static_cast<std::uint64_t>(collective_comms * options.nccl_channels +
                                                      p2p_peers * options.nccl_p2p_channels);
  return connections * options.nccl_connection_bytes;
}

MemoryModel::MemoryModel(const std::vector<std::array<std::uint64_t, kMemoryKinds>>& persistent,
                         std::vector<std::uint64_t> nccl_bytes, const MemoryOptions& options,
                         bool record)
    : ranks_(persistent.size()),
      transient_scale_(options.fragmentation > 0.0 && options.fragmentation < 1.0
                           ? 1.0 / (1.0 - options.fragmentation)
                           : 1.0),
      context_(options.context_bytes),
      record_(record) {
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    Rank& rk = ranks_[r];
    rk.used = persistent[r];
    rk.peak_used = rk.used;
    rk.nccl = r < nccl_bytes.size() ? nccl_bytes[r] : 0;
    rk.fixed = rk.nccl + context_;
    for (std::uint64_t b : rk.used)
      rk.fixed += b;
    rk.peak = rk.fixed;
    if (record_) sample(rk, SimTime());
  }
}

MemoryBreakdown MemoryModel::peak_breakdown(std::int32_t rank) const {
  const Rank& r = ranks_[static_cast<std::size_t>(rank)];
  MemoryBreakdown b;
  b.allocated = r.peak_used;
  b.nccl = r.nccl;
  b.reserve = context_ + (reserved_transient(r.peak_transient) - r.peak_transient);
  assert(b.total() == r.peak);
  return b;
}

}  // namespace tawpipe::sim
