#include "exec/math/adamw.h"

#include <cmath>

namespace tawpipe::exec::math {

void adamw_step(const model::AdamWConfig& cfg, std::int64_t step, const float* grad, float* w,
                float* m, float* v, std::size_t n) {
  const auto t = static_cast<double>(step);
  const auto b1 = static_cast<float>(cfg.beta1), b2 = static_cast<float>(cfg.beta2);
  const auto c1 = static_cast<float>(1.0 / (1.0 - std::pow(cfg.beta1, t)));
  const auto c2 = static_cast<float>(1.0 / (1.0 - std::pow(cfg.beta2, t)));
  const auto lr = static_cast<float>(cfg.lr), wd = static_cast<float>(cfg.weight_decay);
  const auto eps = static_cast<float>(cfg.eps);
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grad[i];
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    const float update = (m[i] * c1) / (std::sqrt(v[i] * c2) + eps);
    w[i] -= lr * (wd * w[i] + update);
  }
}

}  // namespace tawpipe::exec::math
