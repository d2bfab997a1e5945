#include "exec/reference.h"

#include <utility>

#include "exec/math/adamw.h"
#include "exec/math/block.h"
#include "exec/math/init.h"

namespace tawpipe::exec {

Expected<ReferenceTrainer> ReferenceTrainer::create(ReferenceConfig config) {
  auto dims = math::host_dims(config.model, config.seq_len, config.micro_batch_size);
  if (!dims.ok()) return dims.error();
  if (config.samples.empty()) return make_error("reference: no samples in the global batch");
  ReferenceTrainer t;
  t.dims_ = *dims;
  const auto L = static_cast<std::int32_t>(config.model.layers);
  const std::size_t phi = math::layer_layout(t.dims_).size;
  for (std::int32_t l = 0; l < L; ++l) {
    std::vector<float> w(phi);
    math::fill_initial_weights(t.dims_, config.seed, l, l + 1, 0, w);
    t.layers_.push_back(std::move(w));
    t.layer_m_.emplace_back(phi, 0.0f);
    t.layer_v_.emplace_back(phi, 0.0f);
  }
  const std::size_t emb = math::embedding_layout(t.dims_).size;
  t.embedding_.resize(emb);
  math::fill_initial_weights(t.dims_, config.seed, -1, 0, 0, t.embedding_);
  t.embedding_m_.assign(emb, 0.0f);
  t.embedding_v_.assign(emb, 0.0f);
  t.config_ = std::move(config);
  return t;
}

double ReferenceTrainer::step() {
  const math::Dims& d = dims_;
  const std::size_t TH = d.tokens() * d.hidden;
  const std::size_t L = layers_.size();
  const double tokens = static_cast<double>(config_.samples.size() * d.tokens());
  const auto scale = static_cast<float>(1.0 / tokens);
  std::vector<std::vector<float>> grads(L);
  for (std::size_t l = 0; l < L; ++l)
    grads[l].assign(layers_[l].size(), 0.0f);
  std::vector<float> g_emb(embedding_.size(), 0.0f);
  double loss = 0.0;
  for (std::int32_t sample : config_.samples) {
    const math::MicroBatchTokens mb = math::micro_batch_tokens(d, config_.seed, steps_, sample);
    std::vector<std::vector<float>> act(L + 1, std::vector<float>(TH));
    math::embedding_forward(d, embedding_.data(), mb.inputs.data(), act[0].data());
    for (std::size_t l = 0; l < L; ++l)
      math::layers_forward(d, layers_[l].data(), 1, act[l].data(), act[l + 1].data());
    std::vector<float> grad(TH), gin(TH);
    loss += math::head_forward_backward(d, embedding_.data(), act[L].data(), mb.targets.data(),
                                        scale, grad.data(), g_emb.data());
    for (std::size_t l = L; l-- > 0;) {
      math::layers_backward(d, layers_[l].data(), 1, act[l].data(), grad.data(), gin.data(),
                            grads[l].data());
      grad.swap(gin);
    }
    math::embedding_backward(d, mb.inputs.data(), grad.data(), g_emb.data());
  }
  ++steps_;
  for (std::size_t l = 0; l < L; ++l) {
    math::adamw_step(config_.optimizer, steps_, grads[l].data(), layers_[l].data(),
                     layer_m_[l].data(), layer_v_[l].data(), layers_[l].size());
  }
  math::adamw_step(config_.optimizer, steps_, g_emb.data(), embedding_.data(), embedding_m_.data(),
                   embedding_v_.data(), embedding_.size());
  return loss / tokens;
}

}  // namespace tawpipe::exec
