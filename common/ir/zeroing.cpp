#include "common/ir/zeroing.h"

#include <algorithm>

namespace tawpipe::ir {

BufferId whole_output(const RankProgram& rp, const Op& op) {
  if (op.kind != OpKind::compute) return kNone;
  BufferRole role = BufferRole::activation;
  switch (op.compute) {
    case ComputeKind::embedding_forward:
    case ComputeKind::forward:
      role = BufferRole::activation;
      break;
    case ComputeKind::backward:
    case ComputeKind::backward_input:
    case ComputeKind::head:
      role = BufferRole::activation_grad;
      break;
    default:
      return kNone;
  }
  BufferId out = kNone;
  for (BufferId b : writes(rp, op)) {
    if (rp.buffers[static_cast<std::size_t>(b)].role == role) {
      out = b;
      break;
    }
  }
  if (out == kNone) return kNone;
  const auto r = reads(rp, op);
  return std::find(r.begin(), r.end(), out) != r.end() ? kNone : out;
}

ZeroingPlan plan_zeroing(const Program& program, Rank rank,
                         const ComputeOverwrites& compute_overwrites) {
  const RankProgram& rp = program.ranks[static_cast<std::size_t>(rank)];
  ZeroingPlan plan;
  // Bytes at the start of buffer b that op overwrites without reading them first.
  auto overwritten = [&](const Op& op, BufferId b) -> std::uint64_t {
    const auto in = reads(rp, op);
    if (std::find(in.begin(), in.end(), b) != in.end()) return 0;
    if (op.kind == OpKind::compute) return compute_overwrites(op, b);
    const auto out = writes(rp, op);
    if (out.empty() || out[0] != b) return 0;
    const std::uint64_t floats = op.bytes / 4;
    switch (op.kind) {
      case OpKind::recv:
        return op.bytes;
      case OpKind::copy:  // run_batch copies min(source, destination, bytes) scalars
        return std::min(op.bytes,
                        4 * ((rp.buffers[static_cast<std::size_t>(in[0])].size.count() + 3) / 4));
      case OpKind::collective: {
        const auto m = static_cast<std::uint64_t>(
            program.communicators[static_cast<std::size_t>(op.comm)].members.size());
        switch (op.collective) {  // what mpi_ops.cpp writes into the receive buffer
          case CollectiveKind::broadcast:
          case CollectiveKind::all_reduce:
            return 4 * floats;
          case CollectiveKind::all_gather:
            return 4 * (floats / m * m);
          case CollectiveKind::reduce_scatter:
            return 4 * (floats / m);
          case CollectiveKind::reduce:  // a non-root's receive buffer is left untouched
            return 0;
        }
        return 0;
      }
      default:
        return 0;
    }
  };
  constexpr OpIndex kNoPending = -1, kIterationStart = -2;
  std::vector<OpIndex> pending(rp.buffers.size(), kNoPending);  // alloc awaiting first use
  plan.on_alloc.assign(rp.ops.size(), {});
  plan.each_iteration.assign(rp.buffers.size(), 0);
  for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
    const Buffer& buf = rp.buffers[b];
    const bool keeps = buf.role == BufferRole::weights || buf.role == BufferRole::master_weights ||
                       buf.role == BufferRole::optimizer_state ||
                       buf.initial.kind == TensorKind::weights;
    if (buf.persistent && !keeps) pending[b] = kIterationStart;
  }
  auto use = [&](const Op& op, BufferId b) {
    const auto u = static_cast<std::size_t>(b);
    const OpIndex from = pending[u];
    if (from == kNoPending) return;
    pending[u] = kNoPending;
    const std::uint64_t need = 4 * ((rp.buffers[u].size.count() + 3) / 4);
    if (overwritten(op, b) >= need) return;
    if (from == kIterationStart) {
      plan.each_iteration[u] = 1;
    } else {
      plan.on_alloc[static_cast<std::size_t>(from)].push_back(b);
    }
  };
  // Program order is execution order for two ops touching one buffer (a write and any other
  // access are dependency-ordered, and dependencies point backwards), so the first op that
  // touches a buffer after its alloc is the first to run.
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    const Op& op = rp.ops[i];
    if (op.kind == OpKind::alloc || op.kind == OpKind::free) {
      for (BufferId b : writes(rp, op))
        pending[static_cast<std::size_t>(b)] =
            op.kind == OpKind::alloc ? static_cast<OpIndex>(i) : kNoPending;
      continue;
    }
    for (BufferId b : reads(rp, op))
      use(op, b);
    for (BufferId b : writes(rp, op))
      use(op, b);
  }
  return plan;
}

std::vector<std::uint64_t> zeroed_bytes_on_alloc(const RankProgram& rp, const ZeroingPlan& plan) {
  std::vector<std::uint64_t> bytes(rp.ops.size(), 0);
  for (std::size_t i = 0; i < plan.on_alloc.size() && i < bytes.size(); ++i) {
    for (BufferId b : plan.on_alloc[i])
      bytes[i] += 4 * ((rp.buffers[static_cast<std::size_t>(b)].size.count() + 3) / 4);
  }
  return bytes;
}

}  // namespace tawpipe::ir
