/// \file
/// The SwiGLU gate (Shazeer 2020): m = silu(gate) * up, element-wise. The MLP's three GEMMs are
/// in block.cpp.
#pragma once

#include <cstddef>

namespace tawpipe::exec::math {

/// m[i] = silu(gate[i]) * up[i], silu(g) = g * sigmoid(g).
void swiglu_forward(const float* gate, const float* up, std::size_t n, float* m);

/// Given dm: writes dgate = dm * up * silu'(gate) and dup = dm * silu(gate) (overwrites).
void swiglu_backward(const float* gate, const float* up, const float* dm, std::size_t n,
                     float* dgate, float* dup);

}  // namespace tawpipe::exec::math
