#include "exec/math/norm.h"

#include <cmath>

namespace tawpipe::exec::math {

void rmsnorm_forward(const float* x, const float* g, std::size_t rows, std::size_t width, float eps,
                     float* y, float* r) {
  for (std::size_t t = 0; t < rows; ++t) {
    const float* xr = x + t * width;
    double ss = 0.0;
    for (std::size_t i = 0; i < width; ++i)
      ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(width) + eps));
    r[t] = inv;
    float* yr = y + t * width;
    for (std::size_t i = 0; i < width; ++i)
      yr[i] = xr[i] * inv * g[i];
  }
}

void rmsnorm_backward(const float* x, const float* g, const float* r, const float* dy,
                      std::size_t rows, std::size_t width, float* dx, float* dg) {
  for (std::size_t t = 0; t < rows; ++t) {
    const float* xr = x + t * width;
    const float* dyr = dy + t * width;
    float* dxr = dx + t * width;
    const float inv = r[t];
    double dot = 0.0;  // sum of dy*g*xhat
    for (std::size_t i = 0; i < width; ++i) {
      const float xhat = xr[i] * inv;
      dot += static_cast<double>(dyr[i]) * g[i] * xhat;
      dg[i] += dyr[i] * xhat;
    }
    const auto mean = static_cast<float>(dot / static_cast<double>(width));
    for (std::size_t i = 0; i < width; ++i)
      dxr[i] = inv * (dyr[i] * g[i] - xr[i] * inv * mean);
  }
}

}  // namespace tawpipe::exec::math
