/// \file
/// Deterministic initial weights and training data, functions of the seed and of a scalar's
/// position in the canonical layout only, so every sharding of the model (and the reference)
/// starts from the same numbers and sees the same tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "exec/math/dims.h"

namespace tawpipe::exec::math {

/// The initial value of scalar `index` of block `layer` (kEmbeddingLayer = -1 for the embedding
/// block): 1 for norm gains, else uniform in [-a, a] with a = 0.02 * sqrt(3) (std 0.02) from a
/// counter hash of (seed, layer, index).
float initial_weight(const Dims& d, std::uint64_t seed, std::int32_t layer, std::size_t index);

/// Fills `out` with the initial weights of layers [begin, end) (or the embedding block when
/// begin == -1), starting at scalar `offset` of the block; scalars past the block's end (FSDP
/// padding) are zero.
void fill_initial_weights(const Dims& d, std::uint64_t seed, std::int32_t begin, std::int32_t end,
                          std::size_t offset, std::span<float> out);

/// Number of scalars of the block [begin, end) (or the embedding block for begin == -1).
std::size_t block_size(const Dims& d, std::int32_t begin, std::int32_t end);

/// Tokens of one micro-batch: `inputs` and `targets` (the next token), batch * seq_len each.
struct MicroBatchTokens {
  std::vector<std::int32_t> inputs;
  std::vector<std::int32_t> targets;
};

/// Tokens of (step, sample, sequence j, position): a hashed noisy bigram chain over the first
/// min(V, 32) token ids (math/init.cpp says why); the target of
/// position p is the token at p + 1.
MicroBatchTokens micro_batch_tokens(const Dims& d, std::uint64_t seed, std::int64_t step,
                                    std::int32_t sample);

}  // namespace tawpipe::exec::math
