/// \file
/// AdamW (Loshchilov & Hutter 2019, decoupled weight decay), element-wise, so that any slice of
/// a block (an FSDP piece) updates exactly as the whole block would.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/model/train_config.h"

namespace tawpipe::exec::math {

/// One step over n scalars: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
/// w -= lr * (wd * w + mhat / (sqrt(vhat) + eps)), mhat = m / (1 - b1^t), vhat = v / (1 - b2^t).
/// Weight decay applies to every scalar (norm gains included; padding stays zero). `step` is
/// 1-based.
void adamw_step(const model::AdamWConfig& cfg, std::int64_t step, const float* grad, float* w,
                float* m, float* v, std::size_t n);

}  // namespace tawpipe::exec::math
