#include "exec/math/dims.h"

#include <string>

namespace tawpipe::exec::math {

LayerLayout layer_layout(const Dims& d) {
  const std::size_t h = d.hidden;
  LayerLayout l;
  l.attn_norm = 0;
  l.wq = l.attn_norm + h;
  l.wk = l.wq + h * h;
  l.wv = l.wk + h * h;
  l.wo = l.wv + h * h;
  l.mlp_norm = l.wo + h * h;
  l.w_gate = l.mlp_norm + h;
  l.w_up = l.w_gate + h * d.ffn;
  l.w_down = l.w_up + h * d.ffn;
  l.size = l.w_down + d.ffn * h;
  return l;
}

EmbeddingLayout embedding_layout(const Dims& d) {
  EmbeddingLayout e;
  e.token = 0;
  e.final_norm = d.vocab * d.hidden;
  e.size = e.final_norm + d.hidden;
  e.lm_head = e.token;
  if (!d.tied) {
    e.lm_head = e.size;
    e.size += d.vocab * d.hidden;
  }
  return e;
}

Expected<Dims> host_dims(const model::ModelConfig& m, std::int64_t seq_len, std::int64_t batch) {
  if (Status s = model::validate(m); !s.ok()) return s.error();
  const std::string who = "host backend: model '" + m.name + "': ";
  if (m.mlp != model::MlpKind::kSwiGLU || m.norm != model::NormKind::kRMSNorm ||
      m.position != model::PositionKind::kRoPE || m.biases) {
    return make_error(who + "only LLaMA-style models (SwiGLU, RMSNorm, RoPE, no biases) run here");
  }
  if (m.effective_kv_heads() != m.heads) {
    return make_error(who + "grouped-query attention is not implemented on the host");
  }
  if (m.q_width() != m.hidden || m.effective_head_dim() % 2 != 0) {
    return make_error(who + "needs heads * head_dim == hidden and an even head_dim");
  }
  if (seq_len <= 0 || batch <= 0) return make_error(who + "seq_len and batch must be positive");
  if (m.hidden > 4096 || m.vocab > (1 << 20) || seq_len > 65536) {
    return make_error(who + "too large for the host backend (it is a test fixture)");
  }
  Dims d;
  d.hidden = static_cast<std::size_t>(m.hidden);
  d.heads = static_cast<std::size_t>(m.heads);
  d.head_dim = static_cast<std::size_t>(m.effective_head_dim());
  d.ffn = static_cast<std::size_t>(m.effective_ffn());
  d.vocab = static_cast<std::size_t>(m.vocab);
  d.tied = m.tied_embeddings;
  d.seq_len = static_cast<std::size_t>(seq_len);
  d.batch = static_cast<std::size_t>(batch);
  return d;
}

}  // namespace tawpipe::exec::math
