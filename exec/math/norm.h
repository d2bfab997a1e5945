/// \file
/// RMSNorm (Zhang & Sennrich 2019) forward and backward over rows of `width` scalars.
#pragma once

#include <cstddef>

namespace tawpipe::exec::math {

/// y[t] = x[t] * r[t] * g with r[t] = 1 / sqrt(mean(x[t]^2) + eps); stores r (one per row) for
/// the backward.
void rmsnorm_forward(const float* x, const float* g, std::size_t rows, std::size_t width, float eps,
                     float* y, float* r);

/// Given dy: writes dx (overwrites) and ADDS the gain's gradient into dg.
/// dx = r * (dy*g - xhat * mean(dy*g*xhat)), xhat = x*r; dg += sum over rows of dy*xhat.
void rmsnorm_backward(const float* x, const float* g, const float* r, const float* dy,
                      std::size_t rows, std::size_t width, float* dx, float* dg);

}  // namespace tawpipe::exec::math
