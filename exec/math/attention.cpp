#include "exec/math/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/aligned.h"
#include "exec/math/gemm.h"

namespace tawpipe::exec::math {

namespace {

/// cos and sin (sin negated for the inverse) of pos * base^(-2i/d) for every position and pair:
/// computed once per thread and shape, as a framework caches its rotary tables (recomputing
/// them per call cost seq_len * head_dim / 2 sincos per rotation).
struct RopeTable {
  std::size_t seq_len = 0, head_dim = 0;
  float base = 0.0f;
  AlignedVector cos_t, sin_t;
};

const RopeTable& rope_table(const Dims& d) {
  thread_local RopeTable t;
  if (t.seq_len == d.seq_len && t.head_dim == d.head_dim && t.base == d.rope_base) return t;
  const std::size_t half = d.head_dim / 2;
  t.cos_t.assign(d.seq_len * half, 0.0f);
  t.sin_t.assign(d.seq_len * half, 0.0f);
  for (std::size_t p = 0; p < d.seq_len; ++p) {
    for (std::size_t i = 0; i < half; ++i) {
      const double freq = std::pow(static_cast<double>(d.rope_base),
                                   -2.0 * static_cast<double>(i) / static_cast<double>(d.head_dim));
      const double angle = static_cast<double>(p) * freq;
      t.cos_t[p * half + i] = static_cast<float>(std::cos(angle));
      t.sin_t[p * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  t.seq_len = d.seq_len;
  t.head_dim = d.head_dim;
  t.base = d.rope_base;
  return t;
}

}  // namespace

void rope(const Dims& d, float* x, bool inverse) {
  const std::size_t half = d.head_dim / 2;
  const RopeTable& table = rope_table(d);
  const float* cos_t = table.cos_t.data();
  const float* sin_t = table.sin_t.data();
  for (std::size_t t = 0; t < d.tokens(); ++t) {
    const std::size_t p = t % d.seq_len;
    for (std::size_t h = 0; h < d.heads; ++h) {
      float* row = x + t * d.hidden + h * d.head_dim;
      for (std::size_t i = 0; i < half; ++i) {
        const float c = cos_t[p * half + i];
        const float s = inverse ? -sin_t[p * half + i] : sin_t[p * half + i];
        const float a = row[2 * i], b = row[2 * i + 1];
        row[2 * i] = a * c - b * s;
        row[2 * i + 1] = a * s + b * c;
      }
    }
  }
}

void attention_forward(const Dims& d, const float* q, const float* k, const float* v, float* probs,
                       float* out) {
  const std::size_t S = d.seq_len, H = d.hidden, hd = d.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (std::size_t b = 0; b < d.batch; ++b) {
    for (std::size_t h = 0; h < d.heads; ++h) {
      const std::size_t base = b * S * H + h * hd;
      float* p = probs + (b * d.heads + h) * S * S;
      gemm(false, true, S, S, hd, scale, q + base, H, k + base, H, 0.0f, p, S);
      for (std::size_t i = 0; i < S; ++i) {
        float* row = p + i * S;
        const float mx = *std::max_element(row, row + i + 1);
        double sum = 0.0;
        for (std::size_t j = 0; j <= i; ++j) {
          row[j] = std::exp(row[j] - mx);
          sum += row[j];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (std::size_t j = 0; j <= i; ++j)
          row[j] *= inv;
        std::fill(row + i + 1, row + S, 0.0f);
      }
      gemm(false, false, S, hd, S, 1.0f, p, S, v + base, H, 0.0f, out + base, H);
    }
  }
}

void attention_backward(const Dims& d, const float* q, const float* k, const float* v,
                        const float* probs, const float* dout, float* dq, float* dk, float* dv) {
  const std::size_t S = d.seq_len, H = d.hidden, hd = d.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  thread_local AlignedVector ds;  // dP, then dS: overwritten per head, kept across calls
  if (ds.size() < S * S) ds.resize(S * S);
  for (std::size_t b = 0; b < d.batch; ++b) {
    for (std::size_t h = 0; h < d.heads; ++h) {
      const std::size_t base = b * S * H + h * hd;
      const float* p = probs + (b * d.heads + h) * S * S;
      // dP = dO V^T; dV = P^T dO.
      gemm(false, true, S, S, hd, 1.0f, dout + base, H, v + base, H, 0.0f, ds.data(), S);
      gemm(true, false, S, hd, S, 1.0f, p, S, dout + base, H, 0.0f, dv + base, H);
      // dS = P * (dP - rowsum(dP * P)) * scale; zero above the diagonal because P is.
      for (std::size_t i = 0; i < S; ++i) {
        float* row = ds.data() + i * S;
        const float* prow = p + i * S;
        double dot = 0.0;
        for (std::size_t j = 0; j <= i; ++j)
          dot += static_cast<double>(row[j]) * prow[j];
        for (std::size_t j = 0; j < S; ++j)
          row[j] = prow[j] * (row[j] - static_cast<float>(dot)) * scale;
      }
      gemm(false, false, S, hd, S, 1.0f, ds.data(), S, k + base, H, 0.0f, dq + base, H);
      gemm(true, false, S, hd, S, 1.0f, ds.data(), S, q + base, H, 0.0f, dk + base, H);
    }
  }
}

}  // namespace tawpipe::exec::math
