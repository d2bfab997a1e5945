/// \file
/// Rotary position embedding (Su et al. 2021) and causal multi-head attention, forward and
/// backward, on row-major [tokens x H] tensors holding `batch` sequences of `seq_len` tokens one
/// after the other; head h is columns [h*d, (h+1)*d).
#pragma once

#include "exec/math/dims.h"

namespace tawpipe::exec::math {

/// Rotates each pair (2i, 2i+1) of every head of `x` in place by pos * base^(-2i/d), pos = the
/// token's position in its sequence; `inverse` rotates back (the backward of RoPE).
void rope(const Dims& d, float* x, bool inverse);

/// out = softmax(q k^T / sqrt(d) + causal mask) v per sequence and head. Stores the softmax
/// probabilities (batch * heads * seq_len^2 scalars) for the backward.
void attention_forward(const Dims& d, const float* q, const float* k, const float* v, float* probs,
                       float* out);

/// Given dout, writes (overwrites) dq, dk, dv.
void attention_backward(const Dims& d, const float* q, const float* k, const float* v,
                        const float* probs, const float* dout, float* dq, float* dk, float* dv);

}  // namespace tawpipe::exec::math
