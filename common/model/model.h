/// \file
/// The decoder-only transformer being trained: its dimensions (`ModelConfig`), their validation,
/// and parameter counts.
///
/// One `ModelConfig` describes LLaMA-style models (RMSNorm, RoPE, SwiGLU MLP, no biases, optional
/// grouped-query attention) and GPT-style models (LayerNorm, learned positions, GELU MLP with
/// biases). Presets live in `presets.h`, YAML I/O in `loader.h`, FLOPs and bytes in `cost.h`.
///
/// Several fields use 0 for "derive from the others" so that an override such as
/// `--set model.hidden=2048` keeps derived sizes consistent; read them through the `effective_*`
/// accessors, never directly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace tawpipe::model {

/// Feed-forward block of each decoder layer.
enum class MlpKind {
  /// LLaMA: down(silu(gate(x)) * up(x)); three H x F matrices, biases only if `biases`.
  kSwiGLU,
  /// GPT-3/MPT: down(gelu(up(x))); two H x F matrices (+ biases if `biases`).
  kGelu,
};

/// Normalisation layer (two per decoder layer, one final).
enum class NormKind {
  kRMSNorm,    ///< weight only: H parameters
  kLayerNorm,  ///< weight, plus bias when the model has biases: 2H (H without biases, as in MPT)
};

/// Position encoding.
enum class PositionKind {
  kRoPE,     ///< rotary, applied to Q and K; no parameters
  kLearned,  ///< absolute position embedding table of max_seq_len x H, added to token embeddings
  kALiBi,    ///< linear attention biases; no parameters
};

/// `swiglu` / `gelu`, `rmsnorm` / `layernorm`, `rope` / `learned` / `alibi`.
std::string_view to_string(MlpKind kind);
std::string_view to_string(NormKind kind);
std::string_view to_string(PositionKind kind);
/// Parse the text forms above; errors carry a message with a "did you mean" only.
Expected<MlpKind> parse_mlp_kind(std::string_view text);
Expected<NormKind> parse_norm_kind(std::string_view text);
Expected<PositionKind> parse_position_kind(std::string_view text);

/// FFN size of the TawPipe/WeiPipe `model.py` (and LLaMA's `multiple_of = 32` rule with
/// `ffn_dim_multiplier` = 1): F = 32 * ceil(floor(8H/3) / 32). H = 1024 -> 2752, 2048 -> 5472,
/// 4096 -> 10944. Precondition: hidden > 0.
std::int64_t llama_ffn(std::int64_t hidden);

/// Dimensions of a decoder-only transformer. Plain data; call `validate` before use.
struct ModelConfig {
  std::string name;                ///< preset name or the file's `name`
  std::int64_t layers = 0;         ///< decoder layers L (> 0)
  std::int64_t hidden = 0;         ///< model width H (> 0)
  std::int64_t ffn = 0;            ///< MLP intermediate size F; 0 = default (see effective_ffn)
  std::int64_t heads = 0;          ///< query heads (> 0)
  std::int64_t kv_heads = 0;       ///< key/value heads (GQA); 0 = heads (plain multi-head)
  std::int64_t head_dim = 0;       ///< per-head width; 0 = hidden / heads
  std::int64_t vocab = 0;          ///< vocabulary size V (> 0)
  bool tied_embeddings = false;    ///< LM head shares the token-embedding matrix
  MlpKind mlp = MlpKind::kSwiGLU;  ///< MLP kind
  NormKind norm = NormKind::kRMSNorm;
  PositionKind position = PositionKind::kRoPE;
  bool biases = false;           ///< linear layers (and LayerNorms) carry biases
  std::int64_t max_seq_len = 0;  ///< trained context; required (> 0) for learned positions
  std::string description;       ///< one line, for `--list-models`; optional
  std::string reference;         ///< where the dimensions come from (paper, model card)

  /// F: `ffn` if set, else llama_ffn(H) for SwiGLU and 4H for GELU.
  std::int64_t effective_ffn() const;
  /// `kv_heads` if set, else `heads`.
  std::int64_t effective_kv_heads() const;
  /// `head_dim` if set, else hidden / heads (precondition: heads > 0).
  std::int64_t effective_head_dim() const;
  /// heads * head_dim: width of the attention (Q and attention output), usually H.
  std::int64_t q_width() const { return heads * effective_head_dim(); }
  /// kv_heads * head_dim: width of K and of V.
  std::int64_t kv_width() const { return effective_kv_heads() * effective_head_dim(); }

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

/// Checks that the dimensions describe a buildable model: positive sizes, heads divide hidden
/// (when head_dim is derived), kv_heads divide heads, learned positions have a max_seq_len,
/// sizes small enough that counts fit in 64 bits. The error's `key_path` names the offending
/// field (`heads`, `kv_heads`, ...); it has no file location (the loader adds it).
Status validate(const ModelConfig& cfg);

/// Parameter counts (numbers of scalars, not bytes). Precondition: `validate(cfg).ok()`.
struct ParamCounts {
  std::int64_t attention_per_layer = 0;  ///< Q, K, V, O matrices (+ biases)
  std::int64_t mlp_per_layer = 0;        ///< MLP matrices (+ biases)
  std::int64_t norms_per_layer = 0;      ///< the two norms of a layer
  std::int64_t per_layer = 0;            ///< sum of the three above (phi in algorithms.md §5)
  std::int64_t decoder = 0;              ///< layers * per_layer
  std::int64_t token_embedding = 0;      ///< V * H
  std::int64_t position_embedding = 0;   ///< max_seq_len * H for learned positions, else 0
  std::int64_t lm_head = 0;              ///< V * H when untied, else 0 (shares token_embedding)
  std::int64_t final_norm = 0;           ///< the norm before the LM head
  std::int64_t embedding = 0;            ///< token + position embedding + untied LM head
  std::int64_t non_embedding = 0;        ///< decoder + final_norm (Kaplan et al. 2020's N)
  std::int64_t total = 0;                ///< everything: embedding + non_embedding
};

/// All parameter counts of `cfg`. Formulas (d = head_dim, n = heads, k = kv_heads):
///   attention = H*n*d + 2*H*k*d + n*d*H  (+ n*d + 2*k*d + H with biases)
///   SwiGLU    = 3*H*F                    (+ 2*F + H with biases)
///   GELU      = 2*H*F                    (+ F + H with biases)
///   norms     = 2 * norm_params, norm_params = H (RMSNorm) or 2H (LayerNorm with biases)
/// so the TawPipe paper family (n*d = H, SwiGLU, RMSNorm, no biases) has 4H^2 + 3HF + 2H per layer.
ParamCounts param_counts(const ModelConfig& cfg);

/// Parameters of the weight matrices of one decoder layer (no biases or norms): the GEMM weights
/// whose forward costs 2 FLOPs per parameter per token.
std::int64_t layer_gemm_params(const ModelConfig& cfg);

/// Parameters of one normalisation layer: H, or 2H for LayerNorm with biases.
std::int64_t norm_params(const ModelConfig& cfg);

}  // namespace tawpipe::model
