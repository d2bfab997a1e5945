// The assembled model: a decoder layer's and the head's backward against finite differences,
// multi-layer blocks against layer-by-layer application, and the parameter layout.
#include <vector>

#include <gtest/gtest.h>

#include "common/model/model.h"
#include "common/model/presets.h"
#include "exec/math/block.h"
#include "exec/math/init.h"
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

std::vector<float> random_layers(const Dims& d, std::size_t n, std::uint32_t seed) {
  auto w = random_vector(n * math::layer_layout(d).size, seed, 0.3f);
  const math::LayerLayout L = math::layer_layout(d);
  for (std::size_t l = 0; l < n; ++l) {
    for (std::size_t i = 0; i < d.hidden; ++i) {
      w[l * L.size + L.attn_norm + i] += 1.0f;
      w[l * L.size + L.mlp_norm + i] += 1.0f;
    }
  }
  return w;
}

TEST(Layout, MatchesModelParameterCounts) {
  auto tiny = model::preset("tiny");
  ASSERT_TRUE(tiny.ok());
  auto d = math::host_dims(*tiny, 32, 1);
  ASSERT_TRUE(d.ok());
  const model::ParamCounts p = model::param_counts(*tiny);
  EXPECT_EQ(static_cast<std::int64_t>(math::layer_layout(*d).size), p.per_layer);
  EXPECT_EQ(static_cast<std::int64_t>(math::embedding_layout(*d).size), p.total - p.decoder);
}

TEST(Layout, InitIsIndependentOfSharding) {
  const Dims d = small_dims();
  const std::size_t total = math::block_size(d, 0, 2);
  std::vector<float> whole(total);
  math::fill_initial_weights(d, 7, 0, 2, 0, whole);
  const std::size_t piece = (total + 2) / 3;  // FSDP-style padded pieces of 3
  for (std::size_t p = 0; p < 3; ++p) {
    std::vector<float> part(piece);
    math::fill_initial_weights(d, 7, 0, 2, p * piece, part);
    for (std::size_t i = 0; i < piece; ++i) {
      const std::size_t g = p * piece + i;
      EXPECT_EQ(part[i], g < total ? whole[g] : 0.0f);
    }
  }
  // Layer 1 inside the block [0, 2) equals layer 1 alone.
  std::vector<float> one(math::block_size(d, 1, 2));
  math::fill_initial_weights(d, 7, 1, 2, 0, one);
  EXPECT_EQ(one[5], whole[math::layer_layout(d).size + 5]);
}

TEST(Block, LayerBackwardMatchesFiniteDifferences) {
  const Dims d = small_dims();
  const std::size_t TH = d.tokens() * d.hidden;
  const auto w = random_layers(d, 1, 50);
  const auto x = random_vector(TH, 51);
  const auto r = random_vector(TH, 52);
  auto f = [&](const std::vector<float>& ww, const std::vector<float>& xx) {
    std::vector<float> y(TH);
    math::layers_forward(d, ww.data(), 1, xx.data(), y.data());
    return dot(y, r);
  };
  std::vector<float> dx(TH), dw(w.size(), 0.0f);
  math::layers_backward(d, w.data(), 1, x.data(), r.data(), dx.data(), dw.data());
  expect_directional([&](const std::vector<float>& xx) { return f(w, xx); }, x, dx, 60);
  expect_directional([&](const std::vector<float>& ww) { return f(ww, x); }, w, dw, 61);
  // Backward accumulates into dw.
  std::vector<float> dw2 = dw;
  math::layers_backward(d, w.data(), 1, x.data(), r.data(), dx.data(), dw2.data());
  EXPECT_NEAR(dw2[10], 2.0f * dw[10], 1e-5);
}

TEST(Block, TwoLayerBlockEqualsLayerByLayer) {
  const Dims d = small_dims();
  const std::size_t TH = d.tokens() * d.hidden, phi = math::layer_layout(d).size;
  const auto w = random_layers(d, 2, 70);
  const auto x = random_vector(TH, 71), dy = random_vector(TH, 72);
  std::vector<float> y(TH), mid(TH), y2(TH);
  math::layers_forward(d, w.data(), 2, x.data(), y.data());
  math::layers_forward(d, w.data(), 1, x.data(), mid.data());
  math::layers_forward(d, w.data() + phi, 1, mid.data(), y2.data());
  for (std::size_t i = 0; i < TH; ++i)
    EXPECT_FLOAT_EQ(y[i], y2[i]);
  std::vector<float> dx(TH), dw(2 * phi, 0.0f), dmid(TH), dx2(TH), dw2(2 * phi, 0.0f);
  math::layers_backward(d, w.data(), 2, x.data(), dy.data(), dx.data(), dw.data());
  math::layers_backward(d, w.data() + phi, 1, mid.data(), dy.data(), dmid.data(), dw2.data() + phi);
  math::layers_backward(d, w.data(), 1, x.data(), dmid.data(), dx2.data(), dw2.data());
  for (std::size_t i = 0; i < TH; ++i)
    EXPECT_FLOAT_EQ(dx[i], dx2[i]);
  for (std::size_t i = 0; i < 2 * phi; ++i)
    EXPECT_FLOAT_EQ(dw[i], dw2[i]);
}

TEST(Block, HeadBackwardMatchesFiniteDifferences) {
  for (bool tied : {true, false}) {
    Dims d = small_dims();
    d.tied = tied;
    const std::size_t TH = d.tokens() * d.hidden;
    auto w = random_vector(math::embedding_layout(d).size, 80, 0.5f);
    const auto x = random_vector(TH, 81);
    std::vector<std::int32_t> targets(d.tokens());
    for (std::size_t t = 0; t < targets.size(); ++t)
      targets[t] = static_cast<std::int32_t>((t * 7) % d.vocab);
    auto f = [&](const std::vector<float>& ww, const std::vector<float>& xx) {
      return math::head_loss(d, ww.data(), xx.data(), targets.data());
    };
    std::vector<float> dx(TH), dw(w.size(), 0.0f);
    math::head_forward_backward(d, w.data(), x.data(), targets.data(), 1.0f, dx.data(), dw.data());
    expect_directional([&](const std::vector<float>& xx) { return f(w, xx); }, x, dx, 90);
    expect_directional([&](const std::vector<float>& ww) { return f(ww, x); }, w, dw, 91);
  }
}

TEST(Block, EmbeddingBackwardIsTheTransposeOfTheLookup) {
  const Dims d = small_dims();
  const std::size_t TH = d.tokens() * d.hidden;
  const auto w = random_vector(math::embedding_layout(d).size, 100);
  const auto r = random_vector(TH, 101);
  std::vector<std::int32_t> tokens(d.tokens());
  for (std::size_t t = 0; t < tokens.size(); ++t)
    tokens[t] = static_cast<std::int32_t>((t * 3) % d.vocab);
  auto f = [&](const std::vector<float>& ww) {
    std::vector<float> x(TH);
    math::embedding_forward(d, ww.data(), tokens.data(), x.data());
    return dot(x, r);
  };
  std::vector<float> dw(w.size(), 0.0f);
  math::embedding_backward(d, tokens.data(), r.data(), dw.data());
  expect_directional(f, w, dw, 102, 1e-2, 1e-3);
}

TEST(Data, TargetsAreTheNextTokens) {
  const Dims d = small_dims();
  const auto a = math::micro_batch_tokens(d, 1, 0, 3);
  const auto b = math::micro_batch_tokens(d, 1, 0, 3);
  EXPECT_EQ(a.inputs, b.inputs);
  for (std::size_t p = 0; p + 1 < d.seq_len; ++p)
    EXPECT_EQ(a.targets[p], a.inputs[p + 1]);
  EXPECT_NE(math::micro_batch_tokens(d, 1, 1, 3).inputs, a.inputs);
}

}  // namespace
}  // namespace tawpipe::exec
