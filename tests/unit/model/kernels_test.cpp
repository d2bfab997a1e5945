// The kernel catalogue: per-kernel shapes, FLOPs and bytes of LLaMA and GPT blocks (forward,
// backward, recompute) against hand formulas derived in the comments, the B / W split of the
// backward, and the per-op-class totals of cost.h as sums over the kernels.
#include "common/model/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "common/model/cost.h"
#include "common/model/presets.h"

namespace tawpipe::model {
namespace {

const Kernel& find(const KernelList& ks, const std::string& name) {
  const auto it =
      std::find_if(ks.begin(), ks.end(), [&](const Kernel& k) { return k.name == name; });
  EXPECT_NE(it, ks.end()) << name;
  static const Kernel kNone;
  return it == ks.end() ? kNone : *it;
}

std::vector<std::string> names(const KernelList& ks) {
  std::vector<std::string> out;
  for (const Kernel& k : ks)
    out.push_back(k.name);
  return out;
}

using Shape = std::array<std::int64_t, 4>;

// llama2-7b: H = 4096, F = 11008, 32 heads of d = 128 (MHA: qw = kvw = 4096), RMSNorm, RoPE,
// SwiGLU, no biases. Micro-batch b = 2, s = 1024, bf16 (p = 2): T = 2048.
TEST(Kernels, LlamaForwardByHand) {
  const ModelConfig cfg = *preset("llama2-7b");
  const double T = 2048, H = 4096, F = 11008, p = 2, b = 2, s = 1024, heads = 32;
  const KernelList ks = layer_forward_kernels(cfg, {2, 1024, 2});
  EXPECT_EQ(names(ks),
            (std::vector<std::string>{"attn_norm", "qkv_gemm", "rope", "attention", "o_proj_gemm",
                                      "attn_residual", "mlp_norm", "gate_up_gemm", "swiglu",
                                      "down_gemm", "mlp_residual"}));
  // RMSNorm: 4 FLOPs per element; reads x and the H weights, writes y.
  const Kernel& norm = find(ks, "attn_norm");
  EXPECT_EQ(norm.cls, KernelClass::norm);
  EXPECT_EQ(norm.shape, (Shape{2048, 4096, 0, 0}));
  EXPECT_DOUBLE_EQ(norm.flops, 4 * T * H);
  EXPECT_DOUBLE_EQ(norm.bytes, p * (2 * T * H + H));
  // Fused QKV: (T x H) . (H x 3H): 2*T*H*3H FLOPs; reads x and W, writes QKV.
  const Kernel& qkv = find(ks, "qkv_gemm");
  EXPECT_EQ(qkv.shape, (Shape{2048, 3 * 4096, 4096, 1}));
  EXPECT_DOUBLE_EQ(qkv.flops, 2 * T * H * 3 * H);
  EXPECT_DOUBLE_EQ(qkv.bytes, p * (T * H + H * 3 * H + T * 3 * H));
  // RoPE over Q and K (2H per token): 3 FLOPs per element, read + write.
  const Kernel& rope = find(ks, "rope");
  EXPECT_DOUBLE_EQ(rope.flops, 3 * T * 2 * H);
  EXPECT_DOUBLE_EQ(rope.bytes, 2 * p * T * 2 * H);
  // Causal attention: 4*b*s^2*d*heads / 2 = 2*b*s^2*H; reads Q, K, V, writes O (+ fp32 LSE).
  const Kernel& att = find(ks, "attention");
  EXPECT_EQ(att.cls, KernelClass::attention_fwd);
  EXPECT_EQ(att.shape, (Shape{2, 32, 1024, 128}));
  EXPECT_TRUE(att.causal);
  EXPECT_DOUBLE_EQ(att.flops, 2 * b * s * s * H);
  EXPECT_DOUBLE_EQ(att.bytes, p * T * 4 * H + 4 * T * heads);
  // Gate/up fused: (T x H) . (H x 2F); down: (T x F) . (F x H).
  EXPECT_DOUBLE_EQ(find(ks, "gate_up_gemm").flops, 2 * T * H * 2 * F);
  EXPECT_EQ(find(ks, "down_gemm").shape, (Shape{2048, 4096, 11008, 1}));
  // SwiGLU: 5 FLOPs per element of T x F; reads gate and up, writes the product.
  const Kernel& act = find(ks, "swiglu");
  EXPECT_EQ(act.cls, KernelClass::activation);
  EXPECT_DOUBLE_EQ(act.flops, 5 * T * F);
  EXPECT_DOUBLE_EQ(act.bytes, 3 * p * T * F);
  // Residual add: 1 FLOP per element, reads two, writes one.
  EXPECT_DOUBLE_EQ(find(ks, "mlp_residual").bytes, 3 * p * T * H);
  for (const Kernel& k : ks) {
    EXPECT_FALSE(k.fused || k.recompute) << k.name;
    EXPECT_EQ(k.count, 1) << k.name;
  }
}

// Backward of llama2-7b: each GEMM y = x W (x: T x in) gives dgrad T x in x out and wgrad
// in x out x T, both 2*T*in*out FLOPs; attention backward 2.5x forward.
TEST(Kernels, LlamaBackwardSplitsIntoInputAndWeightGradients) {
  const ModelConfig cfg = *preset("llama2-7b");
  const MicroBatchShape shape{2, 1024, 2};
  const double T = 2048, H = 4096, p = 2;
  const KernelList all = layer_backward_kernels(cfg, shape);
  const KernelList b = layer_backward_input_kernels(cfg, shape);
  const KernelList w = layer_backward_weight_kernels(cfg, shape);
  const Kernel& dgrad = find(all, "qkv_gemm_dgrad");
  EXPECT_EQ(dgrad.shape, (Shape{2048, 4096, 3 * 4096, 1}));
  EXPECT_DOUBLE_EQ(dgrad.flops, 2 * T * H * 3 * H);
  EXPECT_DOUBLE_EQ(dgrad.bytes, p * (T * 3 * H + H * 3 * H + T * H));
  const Kernel& wgrad = find(all, "qkv_gemm_wgrad");
  EXPECT_EQ(wgrad.shape, (Shape{4096, 3 * 4096, 2048, 1}));
  EXPECT_DOUBLE_EQ(wgrad.flops, 2 * T * H * 3 * H);
  const KernelList fwd = layer_forward_kernels(cfg, shape);
  EXPECT_DOUBLE_EQ(find(all, "attention_bwd").flops, 2.5 * find(fwd, "attention").flops);
  EXPECT_EQ(find(all, "attention_bwd").cls, KernelClass::attention_bwd);
  // RMSNorm backward: 2x the forward FLOPs; reads x, dy, weights, writes dx and dgamma.
  EXPECT_DOUBLE_EQ(find(all, "attn_norm_bwd").flops, 2 * 4 * T * H);
  EXPECT_DOUBLE_EQ(find(all, "attn_norm_bwd").bytes, p * (3 * T * H + 2 * H));
  // SwiGLU backward: 10 FLOPs per element; reads dh, gate, up, writes dgate, dup.
  EXPECT_DOUBLE_EQ(find(all, "swiglu_bwd").bytes, 5 * p * T * 11008);
  // W holds exactly the four wgrad GEMMs; B everything else; together the full backward.
  EXPECT_EQ(names(w), (std::vector<std::string>{"down_gemm_wgrad", "gate_up_gemm_wgrad",
                                                "o_proj_gemm_wgrad", "qkv_gemm_wgrad"}));
  EXPECT_EQ(b.size() + w.size(), all.size());
  for (const Kernel& k : b)
    EXPECT_EQ(k.name.find("wgrad"), std::string::npos) << k.name;
  const OpCost split = cost_of(b) + cost_of(w);
  const OpCost whole = cost_of(all);
  EXPECT_DOUBLE_EQ(split.total_flops(), whole.total_flops());
  EXPECT_DOUBLE_EQ(split.total_bytes(), whole.total_bytes());
  EXPECT_DOUBLE_EQ(layer_backward_input_cost(cfg, shape).gemm_flops +
                       layer_backward_weight_cost(cfg, shape).gemm_flops,
                   layer_backward_cost(cfg, shape).gemm_flops);
  // The backward GEMMs are twice the forward ones, FLOPs and bytes.
  EXPECT_DOUBLE_EQ(whole.gemm_flops, 2 * cost_of(fwd).gemm_flops);
  EXPECT_DOUBLE_EQ(whole.gemm_bytes, 2 * cost_of(fwd).gemm_bytes);
}

// gpt3-175b: H = 12288, F = 4H, 96 heads, LayerNorm (weights + biases: 2H), learned positions
// (no RoPE), GELU, biases fused into the GEMM epilogues. b = 1, s = 2048, p = 2: T = 2048.
TEST(Kernels, GptForwardAndBackwardByHand) {
  const ModelConfig cfg = *preset("gpt3-175b");
  const double T = 2048, H = 12288, F = 4 * 12288, p = 2;
  const KernelList ks = layer_forward_kernels(cfg, {1, 2048, 2});
  EXPECT_EQ(names(ks), (std::vector<std::string>{"attn_norm", "qkv_gemm", "qkv_bias", "attention",
                                                 "o_proj_gemm", "o_proj_bias", "attn_residual",
                                                 "mlp_norm", "up_gemm", "up_bias", "gelu",
                                                 "down_gemm", "down_bias", "mlp_residual"}));
  // LayerNorm: 8 FLOPs per element; reads x and 2H parameters, writes y.
  EXPECT_DOUBLE_EQ(find(ks, "attn_norm").flops, 8 * T * H);
  EXPECT_DOUBLE_EQ(find(ks, "attn_norm").bytes, p * (2 * T * H + 2 * H));
  // Bias adds run in the GEMM epilogue: one add per output element, the bias vector's bytes.
  const Kernel& bias = find(ks, "up_bias");
  EXPECT_TRUE(bias.fused);
  EXPECT_EQ(bias.cls, KernelClass::residual);
  EXPECT_DOUBLE_EQ(bias.flops, T * F);
  EXPECT_DOUBLE_EQ(bias.bytes, p * F);
  // GELU: 8 FLOPs per element, reads x, writes gelu(x).
  EXPECT_DOUBLE_EQ(find(ks, "gelu").flops, 8 * T * F);
  EXPECT_DOUBLE_EQ(find(ks, "gelu").bytes, 2 * p * T * F);
  EXPECT_DOUBLE_EQ(find(ks, "up_gemm").flops, 2 * T * H * F);
  // Backward: bias gradients ride on the wgrad epilogue (W list); GELU backward 12 FLOPs and
  // 3 tensors per element (B list).
  const KernelList w = layer_backward_weight_kernels(cfg, {1, 2048, 2});
  EXPECT_TRUE(find(w, "up_bias_grad").fused);
  EXPECT_DOUBLE_EQ(find(w, "up_bias_grad").flops, T * F);
  const KernelList b = layer_backward_input_kernels(cfg, {1, 2048, 2});
  EXPECT_DOUBLE_EQ(find(b, "gelu_bwd").flops, 12 * T * F);
  EXPECT_DOUBLE_EQ(find(b, "gelu_bwd").bytes, 3 * p * T * F);
  for (const Kernel& k : b)
    EXPECT_NE(k.name, "rope_bwd");
}

// Recompute: selective replays the attention core only, full the whole forward; each kernel
// flagged `recompute`; none replays nothing.
TEST(Kernels, RecomputeReplaysForwardKernels) {
  const ModelConfig cfg = *preset("llama3-8b");
  const MicroBatchShape shape{1, 8192, 2};
  EXPECT_TRUE(layer_recompute_kernels(cfg, shape, RecomputePolicy::kNone).empty());
  const KernelList sel = layer_recompute_kernels(cfg, shape, RecomputePolicy::kSelective);
  ASSERT_EQ(sel.size(), 1u);
  EXPECT_EQ(sel[0].cls, KernelClass::attention_fwd);
  EXPECT_TRUE(sel[0].recompute);
  // llama3-8b: 32 heads of 128, 8 KV heads: 2*b*s^2*qw = 2 * 8192^2 * 4096.
  EXPECT_DOUBLE_EQ(sel[0].flops, 2.0 * 8192 * 8192 * 4096);
  // GQA: Q and O are 4096 wide, K and V 1024: reads Q, K, V, writes O (+ fp32 LSE).
  EXPECT_DOUBLE_EQ(sel[0].bytes, 2.0 * 8192 * (2 * 4096 + 2 * 1024) + 4.0 * 8192 * 32);
  const KernelList full = layer_recompute_kernels(cfg, shape, RecomputePolicy::kFull);
  EXPECT_EQ(full.size(), layer_forward_kernels(cfg, shape).size());
  for (const Kernel& k : full)
    EXPECT_TRUE(k.recompute) << k.name;
  // QKV of GQA: N = qw + 2 kvw = 4096 + 2048.
  EXPECT_EQ(find(full, "qkv_gemm").shape, (Shape{8192, 6144, 4096, 1}));
}

// torchtitan's op-level SAC (precision.h kSelectiveOp) replays the forward less the saved ops
// (wq, wv, attention, w1, w2): attn_norm, wk, RoPE, wo, the residual add, mlp_norm, w3, SwiGLU.
// llama3-8b at T = 8192 (H 4096, kvw 1024, F 14336), by hand:
//   wk  2*T*H*kvw = 2 * 8192 * 4096 * 1024,  shape {T, kvw, H}
//   wo  2*T*qw*H  = 2 * 8192 * 4096 * 4096
//   w3  2*T*H*F   = 2 * 8192 * 4096 * 14336, shape {T, F, H}
// GEMM FLOPs replayed = 2*8192*4096*(1024 + 4096 + 14336) = 2*8192*4096*19456, 19456/(6144 +
// 4096 + 28672 + 14336) = 36.5 % of the forward's GEMM FLOPs; no attention is replayed.
TEST(Kernels, SelectiveOpReplaysTheUnsavedOps) {
  const ModelConfig cfg = *preset("llama3-8b");
  const MicroBatchShape shape{1, 8192, 2};
  const KernelList op = layer_recompute_kernels(cfg, shape, RecomputePolicy::kSelectiveOp);
  std::vector<std::string> names;
  double gemm = 0.0;
  for (const Kernel& k : op) {
    EXPECT_TRUE(k.recompute) << k.name;
    EXPECT_NE(k.cls, KernelClass::attention_fwd);
    names.push_back(k.name);
    if (k.cls == KernelClass::gemm) gemm += k.flops;
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"attn_norm", "k_proj_gemm", "rope", "o_proj_gemm",
                                      "attn_residual", "mlp_norm", "up_proj_gemm", "swiglu"}));
  EXPECT_EQ(find(op, "k_proj_gemm").shape, (Shape{8192, 1024, 4096, 1}));
  EXPECT_EQ(find(op, "up_proj_gemm").shape, (Shape{8192, 14336, 4096, 1}));
  EXPECT_DOUBLE_EQ(gemm, 2.0 * 8192 * 4096 * 19456);
  // A GELU MLP saves its up projection: the replay ends with GELU and has no MLP GEMM.
  const KernelList gpt =
      layer_recompute_kernels(*preset("gpt3-175b"), shape, RecomputePolicy::kSelectiveOp);
  EXPECT_EQ(gpt.back().name, "gelu");
  for (const Kernel& k : gpt)
    EXPECT_NE(k.name, "up_proj_gemm");
}

// Head: final norm, LM head (T x V x H), softmax cross-entropy (5 FLOPs per logit; reads the
// logits and ids, writes fp32 loss and LSE). Embedding gather, AdamW, accumulate, copy.
TEST(Kernels, HeadEmbeddingOptimizerAndCopies) {
  const ModelConfig cfg = *preset("llama3-8b");
  const double T = 4096, H = 4096, V = 128256, p = 2;
  const KernelList head = head_forward_kernels(cfg, {1, 4096, 2});
  EXPECT_EQ(names(head), (std::vector<std::string>{"final_norm", "lm_head_gemm", "softmax_xent"}));
  EXPECT_EQ(find(head, "lm_head_gemm").shape, (Shape{4096, 128256, 4096, 1}));
  EXPECT_DOUBLE_EQ(find(head, "softmax_xent").flops, 5 * T * V);
  EXPECT_DOUBLE_EQ(find(head, "softmax_xent").bytes, p * T * V + 12 * T);
  const KernelList hb = head_backward_kernels(cfg, {1, 4096, 2});
  EXPECT_EQ(names(hb), (std::vector<std::string>{"softmax_xent_bwd", "lm_head_gemm_dgrad",
                                                 "lm_head_gemm_wgrad", "final_norm_bwd"}));
  const KernelList emb = embedding_forward_kernels(cfg, {1, 4096, 2});
  ASSERT_EQ(emb.size(), 1u);
  EXPECT_EQ(emb[0].cls, KernelClass::embedding);
  EXPECT_DOUBLE_EQ(emb[0].bytes, 4 * T + 2 * p * T * H);
  const KernelList adam = optimizer_kernels(1000, 2);
  ASSERT_EQ(adam.size(), 1u);
  EXPECT_EQ(adam[0].cls, KernelClass::optimizer);
  EXPECT_DOUBLE_EQ(adam[0].bytes, 30.0 * 1000);
  EXPECT_EQ(accumulate_kernels(10, 4)[0].cls, KernelClass::residual);
  EXPECT_DOUBLE_EQ(accumulate_kernels(10, 4)[0].bytes, 120.0);
  EXPECT_EQ(copy_kernels(100)[0].cls, KernelClass::copy);
  EXPECT_DOUBLE_EQ(copy_kernels(100)[0].bytes, 200.0);
}

// cost.h's totals are the kernel sums, and scaling by a layer count scales the kernel counts.
TEST(Kernels, CostTotalsAreKernelSums) {
  const ModelConfig cfg = *preset("gpt3-175b");
  const MicroBatchShape shape{1, 2048, 2};
  const OpCost fwd = layer_forward_cost(cfg, shape);
  double gemm = 0, attention = 0, elementwise = 0;
  for (const Kernel& k : fwd.kernels) {
    if (k.cls == KernelClass::gemm) {
      gemm += k.flops;
    } else if (is_flop_bound(k.cls)) {
      attention += k.flops;
    } else {
      elementwise += k.flops;
    }
  }
  EXPECT_DOUBLE_EQ(fwd.gemm_flops, gemm);
  EXPECT_DOUBLE_EQ(fwd.attention_flops, attention);
  EXPECT_DOUBLE_EQ(fwd.elementwise_flops, elementwise);
  const OpCost three = fwd * 3.0;
  EXPECT_DOUBLE_EQ(three.gemm_flops, 3 * gemm);
  for (const Kernel& k : three.kernels)
    EXPECT_EQ(k.count, 3) << k.name;
  EXPECT_EQ(cost_of(three.kernels).gemm_flops, three.gemm_flops);
}

}  // namespace
}  // namespace tawpipe::model
