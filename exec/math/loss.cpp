#include "exec/math/loss.h"

#include <algorithm>
#include <cmath>

namespace tawpipe::exec::math {

double softmax_cross_entropy(const float* logits, const std::int32_t* targets, std::size_t rows,
                             std::size_t vocab, float scale, float* dlogits) {
  double total = 0.0;
  for (std::size_t t = 0; t < rows; ++t) {
    const float* row = logits + t * vocab;
    float* drow = dlogits + t * vocab;
    const float mx = *std::max_element(row, row + vocab);
    double sum = 0.0;
    for (std::size_t j = 0; j < vocab; ++j)
      sum += std::exp(static_cast<double>(row[j] - mx));
    const auto target = static_cast<std::size_t>(targets[t]);
    total += std::log(sum) - static_cast<double>(row[target] - mx);
    const double inv = 1.0 / sum;
    for (std::size_t j = 0; j < vocab; ++j) {
      const double p = std::exp(static_cast<double>(row[j] - mx)) * inv;
      drow[j] = static_cast<float>((p - (j == target ? 1.0 : 0.0)) * scale);
    }
  }
  return total;
}

}  // namespace tawpipe::exec::math
