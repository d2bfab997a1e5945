/// \file
/// Runs one IR compute op (forward, backward, head, embedding, accumulate, optimizer) on host
/// memory with the math/ kernels. Operands are found by buffer role, as program.h defines for
/// the verifier: a weight operand (weights / weight_staging / master_weights) holds the whole
/// block of the op in the canonical layout (math/dims.h); activation / activation_grad operands
/// are [tokens x H] fp32; gradient operands are accumulated into.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/model/train_config.h"
#include "exec/math/dims.h"

namespace tawpipe::exec::host {

/// What a compute op needs besides its buffers.
struct ComputeContext {
  math::Dims dims;
  std::uint64_t seed = 0;
  std::int64_t step = 0;    ///< iteration (data of this step; AdamW step = step + 1)
  float grad_scale = 1.0f;  ///< 1 / tokens of the iteration (see reference.h)
  model::AdamWConfig optimizer;
};

/// Access to a live buffer's scalars; returns an error for dead buffers.
using BufferAccess = std::function<Expected<std::span<float>>(ir::BufferId)>;

/// Runs op `index` of `rank`. Returns the summed token loss for head ops, 0 otherwise. Errors:
/// missing or too small operands, dead buffers (one line naming the op and buffer).
Expected<double> run_compute(const ir::Program& program, ir::Rank rank, ir::OpIndex index,
                             const ComputeContext& ctx, const BufferAccess& buffer);

/// Scalars at the start of buffer `b` that compute op `op` overwrites without reading them first:
/// the activation output of forward / embedding_forward, the activation-gradient output of
/// backward / backward_input / head (tokens x H each); 0 for any other operand (gradients and
/// accumulate targets are added into, optimizer state and weights are read-modify-write). The
/// host backend skips zeroing a freshly allocated buffer whose first use overwrites it whole.
std::size_t compute_overwrites(const ir::RankProgram& rp, const ir::Op& op, ir::BufferId b,
                               const math::Dims& d);

}  // namespace tawpipe::exec::host
