/// \file
/// Softmax cross-entropy over the vocabulary, the training loss of the LM head.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tawpipe::exec::math {

/// Returns the SUM over rows of -log softmax(logits[t])[targets[t]] (in double), and writes
/// dlogits = (softmax(logits) - onehot(targets)) * scale. `scale` is where the 1/N of the
/// global-batch mean enters (N = tokens of the whole iteration). dlogits may alias logits.
double softmax_cross_entropy(const float* logits, const std::int32_t* targets, std::size_t rows,
                             std::size_t vocab, float scale, float* dlogits);

}  // namespace tawpipe::exec::math
