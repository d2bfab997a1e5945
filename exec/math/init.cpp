#include "exec/math/init.h"

#include <algorithm>
#include <cmath>

namespace tawpipe::exec::math {
namespace {

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash4(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t e) {
  return splitmix(splitmix(splitmix(splitmix(a) ^ b) ^ c) ^ e);
}

bool is_norm_gain(const Dims& d, std::int32_t layer, std::size_t index) {
  if (layer < 0) {
    const EmbeddingLayout E = embedding_layout(d);
    return index >= E.final_norm && index < E.final_norm + d.hidden;
  }
  const LayerLayout L = layer_layout(d);
  return (index >= L.attn_norm && index < L.attn_norm + d.hidden) ||
         (index >= L.mlp_norm && index < L.mlp_norm + d.hidden);
}

}  // namespace

float initial_weight(const Dims& d, std::uint64_t seed, std::int32_t layer, std::size_t index) {
  if (is_norm_gain(d, layer, index)) return 1.0f;
  const std::uint64_t h = hash4(seed, 0x57e1647ULL, static_cast<std::uint64_t>(layer + 1), index);
  const double u = static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return static_cast<float>((2.0 * u - 1.0) * 0.02 * std::sqrt(3.0));
}

std::size_t block_size(const Dims& d, std::int32_t begin, std::int32_t end) {
  if (begin < 0) return embedding_layout(d).size;
  return static_cast<std::size_t>(end - begin) * layer_layout(d).size;
}

void fill_initial_weights(const Dims& d, std::uint64_t seed, std::int32_t begin, std::int32_t end,
                          std::size_t offset, std::span<float> out) {
  const std::size_t total = block_size(d, begin, end);
  const std::size_t phi = layer_layout(d).size;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t g = offset + i;
    if (g >= total) {
      out[i] = 0.0f;
    } else if (begin < 0) {
      out[i] = initial_weight(d, seed, -1, g);
    } else {
      out[i] = initial_weight(d, seed, begin + static_cast<std::int32_t>(g / phi), g % phi);
    }
  }
}

MicroBatchTokens micro_batch_tokens(const Dims& d, std::uint64_t seed, std::int64_t step,
                                    std::int32_t sample) {
  MicroBatchTokens mb;
  mb.inputs.resize(d.tokens());
  mb.targets.resize(d.tokens());
  // A learnable process over the first min(V, 32) tokens: each token is 5 * previous + 1 plus
  // noise in {0, 1, 2}, so the loss can fall from ln(V) towards ln(3) (first by learning which
  // tokens occur, then the bigram rule) and "the loss decreases" is a meaningful test.
  const std::uint64_t used = std::min<std::uint64_t>(d.vocab, 32);
  for (std::size_t j = 0; j < d.batch; ++j) {
    std::uint64_t token = 0;
    for (std::size_t p = 0; p <= d.seq_len; ++p) {
      const std::uint64_t h = hash4(seed ^ 0xda7aULL, static_cast<std::uint64_t>(step),
                                    static_cast<std::uint64_t>(sample) * 4096u + j, p);
      token = p == 0 ? h % used : (token * 5 + 1 + h % 3) % used;
      const auto t = static_cast<std::int32_t>(token);
      if (p < d.seq_len) mb.inputs[j * d.seq_len + p] = t;
      if (p > 0) mb.targets[j * d.seq_len + p - 1] = t;
    }
  }
  return mb;
}

}  // namespace tawpipe::exec::math
