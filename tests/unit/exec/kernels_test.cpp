// Each kernel's backward against central finite differences of its forward. The scalar
// objective is <forward(x), r> for a fixed random r, so its gradient is backward(dy = r).
#include <vector>

#include <gtest/gtest.h>

#include "exec/math/adamw.h"
#include "exec/math/attention.h"
#include "exec/math/loss.h"
#include "exec/math/mlp.h"
#include "exec/math/norm.h"
#include "tests/unit/exec/fd.h"

namespace tawpipe::exec {
namespace {

using math::Dims;
using testing::dot;
using testing::expect_directional;
using testing::random_vector;

Dims small_dims() {
  Dims d;
  d.hidden = 8;
  d.heads = 2;
  d.head_dim = 4;
  d.ffn = 12;
  d.vocab = 11;
  d.seq_len = 5;
  d.batch = 2;
  return d;
}

TEST(Kernels, RmsNormBackwardMatchesFiniteDifferences) {
  const std::size_t rows = 3, width = 8;
  const auto x = random_vector(rows * width, 1);
  const auto g = random_vector(width, 2);
  const auto r = random_vector(rows * width, 3);
  auto forward = [&](const std::vector<float>& xx, const std::vector<float>& gg) {
    std::vector<float> y(rows * width), inv(rows);
    math::rmsnorm_forward(xx.data(), gg.data(), rows, width, 1e-5f, y.data(), inv.data());
    return dot(y, r);
  };
  std::vector<float> y(rows * width), inv(rows), dx(rows * width), dg(width, 0.0f);
  math::rmsnorm_forward(x.data(), g.data(), rows, width, 1e-5f, y.data(), inv.data());
  math::rmsnorm_backward(x.data(), g.data(), inv.data(), r.data(), rows, width, dx.data(),
                         dg.data());
  expect_directional([&](const std::vector<float>& xx) { return forward(xx, g); }, x, dx, 10);
  expect_directional([&](const std::vector<float>& gg) { return forward(x, gg); }, g, dg, 11);
}

TEST(Kernels, SwigluBackwardMatchesFiniteDifferences) {
  const std::size_t n = 20;
  const auto gate = random_vector(n, 4), up = random_vector(n, 5), r = random_vector(n, 6);
  auto forward = [&](const std::vector<float>& gg, const std::vector<float>& uu) {
    std::vector<float> m(n);
    math::swiglu_forward(gg.data(), uu.data(), n, m.data());
    return dot(m, r);
  };
  std::vector<float> dgate(n), dup(n);
  math::swiglu_backward(gate.data(), up.data(), r.data(), n, dgate.data(), dup.data());
  expect_directional([&](const std::vector<float>& gg) { return forward(gg, up); }, gate, dgate,
                     12);
  expect_directional([&](const std::vector<float>& uu) { return forward(gate, uu); }, up, dup, 13);
}

TEST(Kernels, SoftmaxCrossEntropyGradientMatchesFiniteDifferences) {
  const std::size_t rows = 4, vocab = 7;
  const auto logits = random_vector(rows * vocab, 7);
  const std::vector<std::int32_t> targets = {0, 3, 6, 2};
  auto loss = [&](const std::vector<float>& l) {
    std::vector<float> dl(rows * vocab);
    return math::softmax_cross_entropy(l.data(), targets.data(), rows, vocab, 1.0f, dl.data());
  };
  std::vector<float> dl(rows * vocab);
  math::softmax_cross_entropy(logits.data(), targets.data(), rows, vocab, 1.0f, dl.data());
  expect_directional(loss, logits, dl, 14);
  // The scale multiplies the gradient only.
  std::vector<float> dl2(rows * vocab);
  const double l2 =
      math::softmax_cross_entropy(logits.data(), targets.data(), rows, vocab, 0.5f, dl2.data());
  EXPECT_NEAR(l2, loss(logits), 1e-9);
  EXPECT_NEAR(dl2[5], 0.5f * dl[5], 1e-7);
}

TEST(Kernels, RopeInverseUndoesRope) {
  const Dims d = small_dims();
  auto x = random_vector(d.tokens() * d.hidden, 8);
  auto y = x;
  math::rope(d, y.data(), false);
  EXPECT_NE(y[d.hidden + 1], x[d.hidden + 1]);  // position 1 rotates
  math::rope(d, y.data(), true);
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], x[i], 1e-5);
}

TEST(Kernels, AttentionBackwardMatchesFiniteDifferences) {
  const Dims d = small_dims();
  const std::size_t n = d.tokens() * d.hidden;
  const auto q = random_vector(n, 20), k = random_vector(n, 21), v = random_vector(n, 22);
  const auto r = random_vector(n, 23);
  std::vector<float> probs(d.batch * d.heads * d.seq_len * d.seq_len);
  auto forward = [&](const std::vector<float>& qq, const std::vector<float>& kk,
                     const std::vector<float>& vv) {
    std::vector<float> p(probs.size()), out(n);
    math::attention_forward(d, qq.data(), kk.data(), vv.data(), p.data(), out.data());
    return dot(out, r);
  };
  std::vector<float> out(n), dq(n), dk(n), dv(n);
  math::attention_forward(d, q.data(), k.data(), v.data(), probs.data(), out.data());
  math::attention_backward(d, q.data(), k.data(), v.data(), probs.data(), r.data(), dq.data(),
                           dk.data(), dv.data());
  expect_directional([&](const std::vector<float>& x) { return forward(x, k, v); }, q, dq, 30);
  expect_directional([&](const std::vector<float>& x) { return forward(q, x, v); }, k, dk, 31);
  expect_directional([&](const std::vector<float>& x) { return forward(q, k, x); }, v, dv, 32);
}

TEST(Kernels, AttentionIsCausal) {
  const Dims d = small_dims();
  const std::size_t n = d.tokens() * d.hidden;
  auto q = random_vector(n, 40), k = random_vector(n, 41), v = random_vector(n, 42);
  std::vector<float> probs(d.batch * d.heads * d.seq_len * d.seq_len), a(n), b(n);
  math::attention_forward(d, q.data(), k.data(), v.data(), probs.data(), a.data());
  // Changing the last token's key and value must not change earlier outputs.
  for (std::size_t i = 0; i < d.hidden; ++i) {
    k[(d.seq_len - 1) * d.hidden + i] += 1.0f;
    v[(d.seq_len - 1) * d.hidden + i] += 1.0f;
  }
  math::attention_forward(d, q.data(), k.data(), v.data(), probs.data(), b.data());
  for (std::size_t i = 0; i < (d.seq_len - 1) * d.hidden; ++i)
    EXPECT_FLOAT_EQ(a[i], b[i]);
}

TEST(Kernels, AdamWFirstStepMovesBySignOfGradient) {
  model::AdamWConfig cfg;
  cfg.lr = 0.1;
  cfg.weight_decay = 0.0;
  std::vector<float> w = {1.0f, 1.0f}, m(2, 0.0f), v(2, 0.0f);
  const std::vector<float> g = {0.5f, -2.0f};
  math::adamw_step(cfg, 1, g.data(), w.data(), m.data(), v.data(), 2);
  // Bias-corrected first step: mhat / sqrt(vhat) = sign(g).
  EXPECT_NEAR(w[0], 0.9f, 1e-5);
  EXPECT_NEAR(w[1], 1.1f, 1e-5);
  cfg.weight_decay = 0.5;
  std::vector<float> w2 = {2.0f}, m2(1, 0.0f), v2(1, 0.0f);
  const std::vector<float> zero = {0.0f};
  math::adamw_step(cfg, 1, zero.data(), w2.data(), m2.data(), v2.data(), 1);
  EXPECT_NEAR(w2[0], 2.0f - 0.1f * 0.5f * 2.0f, 1e-6);  // decoupled decay only
}

}  // namespace
}  // namespace tawpipe::exec
