/// \file
/// The LLaMA-style model assembled from the kernels: decoder layers, the embedding and the LM
/// head with its loss, forward and backward. Weights and gradients use the flat layout of
/// dims.h; activations are row-major [tokens x H].
///
/// The IR's backward of a layer range recomputes the range's forward from the stored boundary
/// activation (full activation checkpointing: each layer's forward runs once more, keeping the
/// range's intermediates) and then back-propagates; these functions do exactly that, so no
/// intermediate tensor outlives a call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "exec/math/dims.h"

namespace tawpipe::exec::math {

/// y = layers [0, n) of the block `w` (n consecutive layer layouts) applied to x. y may not
/// alias x.
void layers_forward(const Dims& d, const float* w, std::size_t n, const float* x, float* y);

/// Recomputes the block's forward from x, then back-propagates dy: writes dx (overwrites) and
/// ADDS the weight gradient into dw (same layout as w). Either output may be nullptr, which is
/// how the IR's split backward runs: backward_input passes dw = nullptr (no weight GEMMs),
/// backward_weight passes dx = nullptr and, keeping no intermediates from B, recomputes the
/// input-gradient chain it needs inside the block. Each output is bit-identical to the fused
/// call's.
void layers_backward(const Dims& d, const float* w, std::size_t n, const float* x, const float* dy,
                     float* dx, float* dw);

/// x[t] = token_embedding[tokens[t]].
void embedding_forward(const Dims& d, const float* w_emb, const std::int32_t* tokens, float* x);

/// Adds dx[t] into row tokens[t] of the token-embedding gradient inside dw_emb.
void embedding_backward(const Dims& d, const std::int32_t* tokens, const float* dx, float* dw_emb);

/// Final RMSNorm + LM head + softmax cross-entropy, forward and backward in one call. Returns
/// the summed token loss; writes dx (overwrites) and ADDS into dw_emb; the loss gradient is
/// scaled by `scale` (1 / tokens of the iteration).
double head_forward_backward(const Dims& d, const float* w_emb, const float* x,
                             const std::int32_t* targets, float scale, float* dx, float* dw_emb);

/// Loss only (no gradients), for tests.
double head_loss(const Dims& d, const float* w_emb, const float* x, const std::int32_t* targets);

}  // namespace tawpipe::exec::math
