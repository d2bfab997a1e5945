#include "exec/math/mlp.h"

#include <cmath>

namespace tawpipe::exec::math {
namespace {

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

}  // namespace

void swiglu_forward(const float* gate, const float* up, std::size_t n, float* m) {
  for (std::size_t i = 0; i < n; ++i)
    m[i] = gate[i] * sigmoid(gate[i]) * up[i];
}

void swiglu_backward(const float* gate, const float* up, const float* dm, std::size_t n,
                     float* dgate, float* dup) {
  for (std::size_t i = 0; i < n; ++i) {
    const float s = sigmoid(gate[i]);
    const float silu = gate[i] * s;
    dup[i] = dm[i] * silu;
    dgate[i] = dm[i] * up[i] * s * (1.0f + gate[i] * (1.0f - s));
  }
}

}  // namespace tawpipe::exec::math
