#include "common/model/model.h"

#include <string>

#include "common/model/named_enum.h"

namespace tawpipe::model {
namespace {

constexpr detail::NameTable<MlpKind, 2> kMlpKinds{{
    {"swiglu", MlpKind::kSwiGLU},
    {"gelu", MlpKind::kGelu},
}};
constexpr detail::NameTable<NormKind, 2> kNormKinds{{
    {"rmsnorm", NormKind::kRMSNorm},
    {"layernorm", NormKind::kLayerNorm},
}};
constexpr detail::NameTable<PositionKind, 3> kPositionKinds{{
    {"rope", PositionKind::kRoPE},
    {"learned", PositionKind::kLearned},
    {"alibi", PositionKind::kALiBi},
}};

// Upper bounds that keep every parameter count inside int64 (per layer < 2^47, times < 2^14
// layers) and reject absurd inputs with a clear message rather than an overflow.
constexpr std::int64_t kMaxLayers = 10'000;
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;
constexpr std::int64_t kMaxFfn = std::int64_t{1} << 24;
constexpr std::int64_t kMaxHeads = std::int64_t{1} << 16;
constexpr std::int64_t kMaxHeadDim = std::int64_t{1} << 16;
constexpr std::int64_t kMaxQWidth = std::int64_t{1} << 22;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 27;
constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 30;

Error field_error(std::string key, std::string message) {
  Error e = make_error(std::move(message));
  e.key_path = std::move(key);
  return e;
}

Status check_range(std::string_view key, std::int64_t value, std::int64_t min, std::int64_t max) {
  if (value < min || value > max) {
    return field_error(std::string(key), "must be between " + std::to_string(min) + " and " +
                                             std::to_string(max) + ", got " +
                                             std::to_string(value));
  }
  return Status::success();
}

}  // namespace

std::string_view to_string(MlpKind kind) {
  return detail::name_of(kind, kMlpKinds);
}
std::string_view to_string(NormKind kind) {
  return detail::name_of(kind, kNormKinds);
}
std::string_view to_string(PositionKind kind) {
  return detail::name_of(kind, kPositionKinds);
}

Expected<MlpKind> parse_mlp_kind(std::string_view text) {
  return detail::parse_named(text, "mlp kind", kMlpKinds);
}
Expected<NormKind> parse_norm_kind(std::string_view text) {
  return detail::parse_named(text, "norm kind", kNormKinds);
}
Expected<PositionKind> parse_position_kind(std::string_view text) {
  return detail::parse_named(text, "position encoding", kPositionKinds);
}

std::int64_t llama_ffn(std::int64_t hidden) {
  assert(hidden > 0);
  const std::int64_t raw = 8 * hidden / 3;  // floor(8H/3)
  return 32 * ((raw + 31) / 32);            // 32 * ceil(raw / 32)
}

std::int64_t ModelConfig::effective_ffn() const {
  if (ffn > 0) return ffn;
  return mlp == MlpKind::kSwiGLU ? llama_ffn(hidden) : 4 * hidden;
}

std::int64_t ModelConfig::effective_kv_heads() const {
  return kv_heads > 0 ? kv_heads : heads;
}

std::int64_t ModelConfig::effective_head_dim() const {
  if (head_dim > 0) return head_dim;
  assert(heads > 0);
  return hidden / heads;
}

Status validate(const ModelConfig& cfg) {
  if (cfg.name.empty()) return field_error("name", "must not be empty");
  TAWPIPE_TRY(check_range("layers", cfg.layers, 1, kMaxLayers));
  TAWPIPE_TRY(check_range("hidden", cfg.hidden, 1, kMaxHidden));
  TAWPIPE_TRY(check_range("heads", cfg.heads, 1, kMaxHeads));
  TAWPIPE_TRY(check_range("vocab", cfg.vocab, 1, kMaxVocab));
  // 0 means "derived" for these three.
  TAWPIPE_TRY(check_range("ffn", cfg.ffn, 0, kMaxFfn));
  TAWPIPE_TRY(check_range("kv_heads", cfg.kv_heads, 0, kMaxHeads));
  TAWPIPE_TRY(check_range("head_dim", cfg.head_dim, 0, kMaxHeadDim));
  TAWPIPE_TRY(check_range("max_seq_len", cfg.max_seq_len, 0, kMaxSeqLen));

  if (cfg.head_dim == 0 && cfg.hidden % cfg.heads != 0) {
    return field_error("heads", "heads (" + std::to_string(cfg.heads) + ") must divide hidden (" +
                                    std::to_string(cfg.hidden) + ") unless head_dim is given");
  }
  if (cfg.q_width() > kMaxQWidth) {
    return field_error("head_dim", "heads * head_dim = " + std::to_string(cfg.q_width()) +
                                       " exceeds " + std::to_string(kMaxQWidth));
  }
  if (cfg.effective_kv_heads() > cfg.heads || cfg.heads % cfg.effective_kv_heads() != 0) {
    return field_error("kv_heads", "kv_heads (" + std::to_string(cfg.effective_kv_heads()) +
                                       ") must divide heads (" + std::to_string(cfg.heads) + ")");
  }
  if (cfg.effective_ffn() > kMaxFfn) {
    return field_error("ffn", "derived ffn " + std::to_string(cfg.effective_ffn()) + " exceeds " +
                                  std::to_string(kMaxFfn));
  }
  if (cfg.position == PositionKind::kLearned && cfg.max_seq_len == 0) {
    return field_error("max_seq_len", "required (> 0) with learned position embeddings");
  }
  return Status::success();
}

std::int64_t norm_params(const ModelConfig& cfg) {
  return cfg.norm == NormKind::kLayerNorm && cfg.biases ? 2 * cfg.hidden : cfg.hidden;
}

std::int64_t layer_gemm_params(const ModelConfig& cfg) {
  const std::int64_t h = cfg.hidden;
  const std::int64_t attention = h * cfg.q_width() + 2 * h * cfg.kv_width() + cfg.q_width() * h;
  const std::int64_t mlp_matrices = cfg.mlp == MlpKind::kSwiGLU ? 3 : 2;
  return attention + mlp_matrices * h * cfg.effective_ffn();
}

ParamCounts param_counts(const ModelConfig& cfg) {
  const std::int64_t h = cfg.hidden;
  const std::int64_t f = cfg.effective_ffn();
  ParamCounts p;
  p.attention_per_layer = h * cfg.q_width() + 2 * h * cfg.kv_width() + cfg.q_width() * h;
  if (cfg.biases) p.attention_per_layer += cfg.q_width() + 2 * cfg.kv_width() + h;
  if (cfg.mlp == MlpKind::kSwiGLU) {
    p.mlp_per_layer = 3 * h * f + (cfg.biases ? 2 * f + h : 0);
  } else {
    p.mlp_per_layer = 2 * h * f + (cfg.biases ? f + h : 0);
  }
  p.norms_per_layer = 2 * norm_params(cfg);
  p.per_layer = p.attention_per_layer + p.mlp_per_layer + p.norms_per_layer;
  p.decoder = cfg.layers * p.per_layer;
  p.token_embedding = cfg.vocab * h;
  p.position_embedding = cfg.position == PositionKind::kLearned ? cfg.max_seq_len * h : 0;
  p.lm_head = cfg.tied_embeddings ? 0 : cfg.vocab * h;
  p.final_norm = norm_params(cfg);
  p.embedding = p.token_embedding + p.position_embedding + p.lm_head;
  p.non_embedding = p.decoder + p.final_norm;
  p.total = p.embedding + p.non_embedding;
  return p;
}

}  // namespace tawpipe::model
