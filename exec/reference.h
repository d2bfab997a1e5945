/// \file
/// The single-process reference trainer: the same model, initial weights, data, loss scaling
/// and AdamW as the host backend, but the whole global batch in one process with no schedule.
/// `tawexec --verify` compares every rank's weights after K steps with it.
#pragma once

#include <cstdint>
#include <vector>

#include "common/error.h"
#include "common/model/model.h"
#include "common/model/train_config.h"
#include "exec/math/dims.h"

namespace tawpipe::exec {

/// What the reference trains.
struct ReferenceConfig {
  model::ModelConfig model;
  std::int64_t seq_len = 0;
  std::int64_t micro_batch_size = 1;
  std::vector<std::int32_t> samples;  ///< micro-batch ids of one iteration (the global batch)
  model::AdamWConfig optimizer;
  std::uint64_t seed = 0;
};

/// Trains step by step. Gradient scaling: the loss gradient of every token is multiplied by
/// 1 / (tokens of the iteration) inside the head (math::head_forward_backward), so summing the
/// contributions of all samples gives the gradient of the global-batch mean loss; the host
/// backend scales at exactly the same place.
class ReferenceTrainer {
 public:
  /// Errors when the model cannot run on the host (math::host_dims) or samples are empty.
  static Expected<ReferenceTrainer> create(ReferenceConfig config);

  /// Runs step `steps_done()` (0-based; data of that step, AdamW step count + 1) and returns the
  /// mean token loss of the global batch.
  double step();

  std::int64_t steps_done() const { return steps_; }
  const math::Dims& dims() const { return dims_; }
  /// Flat weights of decoder layer l (math::LayerLayout).
  const std::vector<float>& layer(std::int32_t l) const {
    return layers_[static_cast<std::size_t>(l)];
  }
  /// Flat weights of the embedding block (math::EmbeddingLayout).
  const std::vector<float>& embedding() const { return embedding_; }

 private:
  ReferenceConfig config_;
  math::Dims dims_;
  std::vector<std::vector<float>> layers_, layer_m_, layer_v_;
  std::vector<float> embedding_, embedding_m_, embedding_v_;
  std::int64_t steps_ = 0;
};

}  // namespace tawpipe::exec
