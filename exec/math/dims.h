/// \file
/// The dimensions the host kernels work with, and the canonical flat parameter layout shared by
/// every schedule, the host backend and the reference trainer.
///
/// Layout (fp32 scalars, matrices row-major as [in x out], so y = x * W):
///  - decoder layer: attn_norm[H] | Wq[H x H] | Wk[H x H] | Wv[H x H] | Wo[H x H] | mlp_norm[H] |
///    Wgate[H x F] | Wup[H x F] | Wdown[F x H]  (4H^2 + 3HF + 2H = ParamCounts::per_layer);
///  - a block of layers [a, b) is the concatenation of layers a..b-1;
///  - the embedding block (ir::kEmbeddingLayer): token_embedding[V x H] | final_norm[H]
///    (| lm_head[V x H] when the embeddings are untied) = ParamCounts::total - decoder;
///  - piece p of n of a block of P scalars is the contiguous slice [p*c, (p+1)*c) of the block,
///    c = the piece buffer's element count (the generators pad like FSDP's FlatParameter,
///    c = ceil(P / n)); the slice past P is zero padding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "common/model/model.h"

namespace tawpipe::exec::math {

/// Sizes of one micro-batch's computation. All counts are elements.
struct Dims {
  std::size_t hidden = 0;    ///< H
  std::size_t heads = 0;     ///< attention heads (K/V heads equal: no GQA on the host)
  std::size_t head_dim = 0;  ///< H / heads
  std::size_t ffn = 0;       ///< F
  std::size_t vocab = 0;     ///< V
  bool tied = true;          ///< LM head = token embedding
  std::size_t seq_len = 0;   ///< tokens per sequence
  std::size_t batch = 0;     ///< sequences per micro-batch
  float norm_eps = 1e-5f;
  float rope_base = 10000.0f;

  std::size_t tokens() const { return seq_len * batch; }
};

/// Offsets (in scalars) of the tensors of one decoder layer inside its flat parameter vector.
struct LayerLayout {
  std::size_t attn_norm = 0, wq = 0, wk = 0, wv = 0, wo = 0, mlp_norm = 0, w_gate = 0, w_up = 0,
              w_down = 0, size = 0;
};

/// Offsets of the embedding block's tensors.
struct EmbeddingLayout {
  std::size_t token = 0, final_norm = 0, lm_head = 0, size = 0;
};

LayerLayout layer_layout(const Dims& d);
EmbeddingLayout embedding_layout(const Dims& d);

/// The host kernels' dims for `model` at a micro-batch of `batch` sequences of `seq_len`.
/// Errors (one line) for models the host backend cannot run: GQA, GELU/LayerNorm, learned
/// positions, biases, head_dim * heads != hidden.
Expected<Dims> host_dims(const model::ModelConfig& model, std::int64_t seq_len, std::int64_t batch);

}  // namespace tawpipe::exec::math
