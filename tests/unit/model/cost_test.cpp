// FLOP and byte formulas: each expected value is derived in the comment above its assertion.
#include <gtest/gtest.h>

#include "common/model/cost.h"
#include "common/model/memory.h"
#include "common/model/presets.h"

namespace tawpipe::model {
namespace {

ModelConfig get(std::string_view name) {
  return *preset(name);
}

double d(std::int64_t v) {
  return static_cast<double>(v);
}

TEST(OpCost, AddsAndScales) {
  const OpCost a{1, 2, 3, 4, 5, 6, {}};
  const OpCost b{10, 20, 30, 40, 50, 60, {}};
  EXPECT_EQ(a + b, (OpCost{11, 22, 33, 44, 55, 66, {}}));
  EXPECT_EQ(a * 2.0, (OpCost{2, 4, 6, 8, 10, 12, {}}));
  EXPECT_EQ(2.0 * a, a * 2.0);
  EXPECT_DOUBLE_EQ(a.total_flops(), 6.0);
  EXPECT_DOUBLE_EQ(a.total_bytes(), 15.0);
}

// Forward GEMM FLOPs of one layer = 2 FLOPs per weight per token; backward twice that.
TEST(LayerCost, GemmFlopsAreTwicePerWeightPerToken) {
  for (const char* name : {"llama2-7b", "llama2-70b", "llama-h4096-l48", "gpt3-175b", "tiny"}) {
    const ModelConfig cfg = get(name);
    const MicroBatchShape shape{2, 1024, 2};
    const OpCost fwd = layer_forward_cost(cfg, shape);
    const OpCost bwd = layer_backward_cost(cfg, shape);
    EXPECT_DOUBLE_EQ(fwd.gemm_flops, 2.0 * 2048.0 * d(layer_gemm_params(cfg))) << name;
    EXPECT_DOUBLE_EQ(bwd.gemm_flops, 2.0 * fwd.gemm_flops) << name;
    EXPECT_DOUBLE_EQ(bwd.gemm_bytes, 2.0 * fwd.gemm_bytes) << name;
    EXPECT_DOUBLE_EQ(bwd.attention_flops, 2.5 * fwd.attention_flops) << name;
    EXPECT_GT(fwd.elementwise_flops, 0.0);
    EXPECT_GT(bwd.elementwise_bytes, fwd.elementwise_bytes);
  }
}

// Causal attention forward: 4*s^2*d_head*heads per sequence, halved. For the H = 4096 paper
// model at s = 16384, b = 1: 4 * 16384^2 * 128 * 32 / 2 = 2.199e12 FLOPs.
TEST(LayerCost, CausalAttentionFlops) {
  const ModelConfig cfg = get("llama-h4096-l48");
  const OpCost fwd = layer_forward_cost(cfg, {1, 16384, 2});
  EXPECT_DOUBLE_EQ(fwd.attention_flops, 4.0 * 16384.0 * 16384.0 * 128.0 * 32.0 / 2.0);
  // Linear in the batch, quadratic in the sequence.
  EXPECT_DOUBLE_EQ(layer_forward_cost(cfg, {3, 8192, 2}).attention_flops,
                   3.0 * fwd.attention_flops / 4.0);
}

// GEMM traffic of one layer: per GEMM (T x in) . (in x out): p * (T*in + in*out + T*out), with
// the fused QKV (out = qw + 2 kvw) and gate/up (out = 2F) GEMMs of kernels.h.
// tiny: H = 64, F = 192, 4 heads of 16 (no GQA), T = 64, p = 4:
//   QKV: 64*64 + 64*192 + 64*192 = 28672; O: 3 * 64*64 = 12288
//   gate/up: 64*64 + 64*384 + 64*384 = 53248; down: 64*192 + 192*64 + 64*64 = 28672
//   total 122880 elements * 4 B = 491520 B.
TEST(LayerCost, GemmBytesFollowTheReadOnceWriteOnceRule) {
  const OpCost fwd = layer_forward_cost(get("tiny"), {1, 64, 4});
  EXPECT_DOUBLE_EQ(fwd.gemm_bytes, 491520.0);
  // Attention reads Q, K, V and writes O (4 * 64*64 * 4 B) plus fp32 LSE (64 tokens * 4 heads).
  EXPECT_DOUBLE_EQ(fwd.attention_bytes, 4.0 * 64 * 64 * 4 + 4.0 * 64 * 4);
}

// Forward + backward of the whole model ~ 6 * P * tokens for short sequences (attention
// negligible): exactly 6*(L*gemm_params + V*H) for the GEMMs, the embedding table being a lookup.
TEST(ModelCost, ForwardPlusBackwardIsSixPTokensForShortSequences) {
  const ModelConfig cfg = get("llama2-7b");
  const MicroBatchShape shape{4, 128, 2};
  const OpCost layer = layer_forward_cost(cfg, shape) + layer_backward_cost(cfg, shape);
  const OpCost head = head_forward_cost(cfg, shape) + head_backward_cost(cfg, shape);
  const OpCost all = layer * d(cfg.layers) + head;
  const double tokens = 512.0;
  const ParamCounts p = param_counts(cfg);
  // Every parameter except the token-embedding table takes part in a matmul (the untied LM head
  // included; norms are 0.001 % of the total).
  const double matmul_params = d(p.total - p.token_embedding);
  EXPECT_DOUBLE_EQ(all.gemm_flops,
                   6.0 * tokens * d(cfg.layers * layer_gemm_params(cfg) + cfg.vocab * cfg.hidden));
  const double ratio = (all.gemm_flops + all.attention_flops) / (6.0 * matmul_params * tokens);
  EXPECT_NEAR(ratio, 1.0, 0.01);
}

// model_flops_per_token: 6*(L*gemm + V*H) dense; attention 6*L*s*H causal, 12*L*s*H full.
TEST(ModelFlops, ConventionsAndConsistencyWithTheCosts) {
  const ModelConfig cfg = get("llama-h4096-l48");
  const std::int64_t s = 16384;
  const FlopsPerToken causal = model_flops_per_token(cfg, s);
  const FlopsPerToken full = model_flops_per_token(cfg, s, AttentionMask::kFull);
  EXPECT_DOUBLE_EQ(causal.dense_flops, 6.0 * (48.0 * d(layer_gemm_params(cfg)) + 32000.0 * 4096.0));
  EXPECT_DOUBLE_EQ(causal.attention_flops, 6.0 * 48.0 * 4096.0 * 16384.0);
  EXPECT_DOUBLE_EQ(full.attention_flops, 2.0 * causal.attention_flops);
  // The dense part equals what the cost functions count, per token.
  const MicroBatchShape shape{1, s, 2};
  const double gemm =
      48.0 *
          (layer_forward_cost(cfg, shape).gemm_flops + layer_backward_cost(cfg, shape).gemm_flops) +
      head_forward_cost(cfg, shape).gemm_flops + head_backward_cost(cfg, shape).gemm_flops;
  EXPECT_NEAR(gemm / d(s), causal.dense_flops, 1e-9 * causal.dense_flops);
  // Attention forward as costed = one third of the model's (3x) attention term.
  EXPECT_NEAR(48.0 * layer_forward_cost(cfg, shape).attention_flops / d(s),
              causal.attention_flops / 3.0, 1e-6 * causal.attention_flops);
}

// Hardware FLOPs: none < selective < full; full recompute adds one forward (~ +1/3 of 6P for
// short sequences), and the FlashAttention backward (2.5x) makes hardware > model even without
// recompute.
TEST(ModelFlops, HardwareFlopsIncludeRecompute) {
  const ModelConfig cfg = get("llama2-7b");
  const double model = model_flops_per_token(cfg, 4096).total_flops();
  const double none = hardware_flops_per_token(cfg, 4096, RecomputePolicy::kNone);
  const double selective = hardware_flops_per_token(cfg, 4096, RecomputePolicy::kSelective);
  const double full = hardware_flops_per_token(cfg, 4096, RecomputePolicy::kFull);
  EXPECT_GT(none, model);
  EXPECT_LT(none, selective);
  EXPECT_LT(selective, full);
  const double short_seq = model_flops_per_token(cfg, 64).total_flops();
  EXPECT_NEAR(hardware_flops_per_token(cfg, 64, RecomputePolicy::kFull) / short_seq, 4.0 / 3.0,
              0.02);
}

TEST(Recompute, CostsOnlyWhatThePolicyReruns) {
  const ModelConfig cfg = get("llama2-7b");
  const MicroBatchShape shape{1, 4096, 2};
  EXPECT_EQ(layer_recompute_cost(cfg, shape, RecomputePolicy::kNone), OpCost{});
  // Full recompute replays the forward: the same totals, its kernels flagged `recompute`.
  const OpCost full = layer_recompute_cost(cfg, shape, RecomputePolicy::kFull);
  const OpCost fwd = layer_forward_cost(cfg, shape);
  EXPECT_EQ(full.total_flops(), fwd.total_flops());
  EXPECT_EQ(full.total_bytes(), fwd.total_bytes());
  ASSERT_EQ(full.kernels.size(), fwd.kernels.size());
  for (const Kernel& k : full.kernels)
    EXPECT_TRUE(k.recompute) << k.name;
  const OpCost selective = layer_recompute_cost(cfg, shape, RecomputePolicy::kSelective);
  EXPECT_EQ(selective.gemm_flops, 0.0);
  EXPECT_EQ(selective.attention_flops, layer_forward_cost(cfg, shape).attention_flops);
}

TEST(HeadAndEmbedding, LmHeadGemmAndLookups) {
  const ModelConfig cfg = get("llama2-7b");
  const MicroBatchShape shape{1, 1000, 2};
  // LM head: 2 * T * H * V.
  EXPECT_DOUBLE_EQ(head_forward_cost(cfg, shape).gemm_flops, 2.0 * 1000 * 4096 * 32000);
  EXPECT_DOUBLE_EQ(head_backward_cost(cfg, shape).gemm_flops, 4.0 * 1000 * 4096 * 32000);
  // Embedding: no GEMM; reads ids (4 B) and rows, writes hidden states.
  const OpCost emb = embedding_forward_cost(cfg, shape);
  EXPECT_EQ(emb.gemm_flops, 0.0);
  EXPECT_DOUBLE_EQ(emb.elementwise_bytes, 4.0 * 1000 + 2.0 * 2 * 1000 * 4096);
  EXPECT_GT(embedding_backward_cost(cfg, shape).elementwise_bytes, emb.elementwise_bytes);
}

// Split backward (zero bubble): B + W = the fused backward, field by field. W is only the
// weight-gradient GEMMs, one per weight matrix: 2 FLOPs per weight per token, i.e. the forward's
// GEMMs once, with bias gradients in their epilogues; B carries the input-gradient GEMMs (the
// same amount), all attention and every other element-wise backward work.
TEST(LayerCost, SplitBackwardSumsToTheFusedBackward) {
  for (const char* name : {"llama2-7b", "gpt3-175b", "tiny"}) {
    const ModelConfig cfg = get(name);
    const MicroBatchShape shape{2, 1024, 2};
    const OpCost b = layer_backward_input_cost(cfg, shape);
    const OpCost w = layer_backward_weight_cost(cfg, shape);
    const OpCost fused = layer_backward_cost(cfg, shape);
    EXPECT_DOUBLE_EQ(b.gemm_flops + w.gemm_flops, fused.gemm_flops) << name;
    EXPECT_DOUBLE_EQ(b.gemm_bytes + w.gemm_bytes, fused.gemm_bytes) << name;
    EXPECT_DOUBLE_EQ(b.attention_flops, fused.attention_flops) << name;
    EXPECT_DOUBLE_EQ(b.attention_bytes, fused.attention_bytes) << name;
    EXPECT_DOUBLE_EQ(b.elementwise_flops + w.elementwise_flops, fused.elementwise_flops) << name;
    EXPECT_DOUBLE_EQ(b.elementwise_bytes + w.elementwise_bytes, fused.elementwise_bytes) << name;
    EXPECT_DOUBLE_EQ(w.gemm_flops, 2.0 * 2048.0 * d(layer_gemm_params(cfg))) << name;
    EXPECT_EQ(w.attention_flops, 0.0) << name;
    // W's only element-wise work is the bias gradients fused into its wgrad GEMMs (kernels.h):
    // one add per bias output element and token.
    if (!cfg.biases) {
      EXPECT_EQ(w.elementwise_flops, 0.0) << name;
    }
  }
}

// AdamW: 28 B of fp32 traffic per parameter plus the fp16/bf16 weight copy; 14 FLOPs each.
TEST(Optimizer, AdamWTraffic) {
  const OpCost c = optimizer_step_cost(1000, 2);
  EXPECT_DOUBLE_EQ(c.elementwise_bytes, 30.0 * 1000);
  EXPECT_DOUBLE_EQ(c.elementwise_flops, 14.0 * 1000);
  EXPECT_DOUBLE_EQ(optimizer_step_cost(1000, 4).elementwise_bytes, 28.0 * 1000);
}

}  // namespace
}  // namespace tawpipe::model
