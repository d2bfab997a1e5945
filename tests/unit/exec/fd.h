// Finite-difference helpers for the kernel tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tawpipe::exec::testing {

inline std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng);
  return v;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += static_cast<double>(a[i]) * b[i];
  return s;
}

/// Checks the directional derivative <grad, v> of f at x against a central difference along a
/// random direction v: |analytic - numeric| <= tol * max(|numeric|, 1e-3).
inline void expect_directional(const std::function<double(const std::vector<float>&)>& f,
                               const std::vector<float>& x, const std::vector<float>& grad,
                               std::uint32_t seed, double h = 1e-2, double tol = 2e-2) {
  const std::vector<float> v = random_vector(x.size(), seed);
  std::vector<float> xp = x, xm = x;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xp[i] += static_cast<float>(h) * v[i];
    xm[i] -= static_cast<float>(h) * v[i];
  }
  const double numeric = (f(xp) - f(xm)) / (2.0 * h);
  const double analytic = dot(grad, v);
  EXPECT_NEAR(analytic, numeric, tol * std::max(std::abs(numeric), 1e-3))
      << "analytic " << analytic << " numeric " << numeric;
}

}  // namespace tawpipe::exec::testing
