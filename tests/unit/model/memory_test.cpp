// Activation memory per layer against Korthikanti et al. 2022 (arXiv 2205.05198) §4, attention
// workspace sizes and training-state bytes. Expected values are derived in the comments.
#include <gtest/gtest.h>

#include "common/model/memory.h"
#include "common/model/presets.h"

namespace tawpipe::model {
namespace {

ModelConfig get(const char* name) {
  auto m = preset(name);
  EXPECT_TRUE(m.ok()) << name;
  return *m;
}

// GPT-3 175B layer (h = 12288, a = 96, GELU 4h, no GQA), s = 2048, b = 2, 16-bit activations.
// Korthikanti's per-layer count: none = s*b*h*(34 + 5*a*s/h), selective = 34*s*b*h,
// full = 2*s*b*h. Our eager-attention count has no dropout, which removes from the paper's sum
//   - the two 1-byte s*b*h masks after the attention and MLP projections: 2*s*b*h;
//   - the attention-dropout mask (a*s^2*b) and dropout output (2*a*s^2*b): 3*a*s^2*b,
// so eager none = K(none) - 2sbh - 3as^2b = 32sbh + 2as^2b, eager selective = K(sel) - 2sbh,
// full = K(full) exactly.
TEST(LayerActivations, EagerGptMatchesKorthikantiWithoutDropout) {
  const ModelConfig cfg = get("gpt3-175b");
  const std::int64_t s = 2048, b = 2, h = 12288, a = 96;
  const MicroBatchShape shape{b, s, 2};
  const auto eager = [&](RecomputePolicy p) {
    return layer_activation_bytes(cfg, shape, p, AttentionImpl::kEager).total();
  };
  EXPECT_EQ(korthikanti_layer_bytes(s, b, h, a, RecomputePolicy::kNone),
            s * b * h * 34 + 5 * a * s * s * b);
  EXPECT_EQ(eager(RecomputePolicy::kNone),
            korthikanti_layer_bytes(s, b, h, a, RecomputePolicy::kNone) - 2 * s * b * h -
                3 * a * s * s * b);
  EXPECT_EQ(eager(RecomputePolicy::kNone), 32 * s * b * h + 2 * a * s * s * b);
  EXPECT_EQ(eager(RecomputePolicy::kSelective),
            korthikanti_layer_bytes(s, b, h, a, RecomputePolicy::kSelective) - 2 * s * b * h);
  EXPECT_EQ(eager(RecomputePolicy::kFull),
            korthikanti_layer_bytes(s, b, h, a, RecomputePolicy::kFull));
  // Where the paper puts them: attention 10sbh (its 11 minus a mask), MLP 18sbh, norms 4sbh.
  const LayerActivationBytes parts =
      layer_activation_bytes(cfg, shape, RecomputePolicy::kNone, AttentionImpl::kEager);
  EXPECT_EQ(parts.attention, 10 * s * b * h);
  EXPECT_EQ(parts.mlp, 18 * s * b * h);
  EXPECT_EQ(parts.norms, 4 * s * b * h);
  EXPECT_EQ(parts.attention_core, 2 * a * s * s * b);
}

// Fused attention stores no s x s tensor at any policy: none and selective keep the same
// 32sbh + the fp32 log-sum-exp 4*s*b*a; full keeps 2sbh. Doubling s doubles every term (O(s)).
TEST(LayerActivations, FusedAttentionHasNoQuadraticTerm) {
  const ModelConfig cfg = get("gpt3-175b");
  const std::int64_t s = 2048, b = 2, h = 12288, a = 96;
  const MicroBatchShape shape{b, s, 2};
  const std::int64_t selective = 32 * s * b * h + 4 * s * b * a;
  EXPECT_EQ(layer_stored_activation_bytes(cfg, shape, RecomputePolicy::kSelective), selective);
  EXPECT_EQ(layer_stored_activation_bytes(cfg, shape, RecomputePolicy::kNone), selective);
  EXPECT_EQ(layer_stored_activation_bytes(cfg, shape, RecomputePolicy::kFull), 2 * s * b * h);
  const MicroBatchShape twice{b, 2 * s, 2};
  for (RecomputePolicy p :
       {RecomputePolicy::kNone, RecomputePolicy::kSelective, RecomputePolicy::kFull})
    EXPECT_EQ(layer_stored_activation_bytes(cfg, twice, p),
              2 * layer_stored_activation_bytes(cfg, shape, p));
  EXPECT_GT(layer_backward_working_set_bytes(cfg, shape, RecomputePolicy::kFull),
            layer_backward_working_set_bytes(cfg, shape, RecomputePolicy::kSelective));
}

// Llama 3 8B (GQA: Q 4096 wide, K and V 1024; SwiGLU F = 14336), s = 8192, b = 1, bf16:
//   norms     2 * T * H * 2                    = 2 * 8192 * 4096 * 2          = 134217728
//   attention T * (H + q + 2 kv + q) * 2       = 8192 * 14336 * 2             = 234881024
//   LSE       4 * T * heads                    = 4 * 8192 * 32                = 1048576
//   MLP       T * (H + 3F) * 2                 = 8192 * 47104 * 2             = 771751936
//   total                                                                    = 1141899264
TEST(LayerActivations, LlamaGqaSwiGluTensorByTensor) {
  const ModelConfig cfg = get("llama3-8b");
  const MicroBatchShape shape{1, 8192, 2};
  const LayerActivationBytes a = layer_activation_bytes(cfg, shape, RecomputePolicy::kSelective);
  EXPECT_EQ(a.norms, 134217728);
  EXPECT_EQ(a.attention, 234881024);
  EXPECT_EQ(a.attention_lse, 1048576);
  EXPECT_EQ(a.mlp, 771751936);
  EXPECT_EQ(a.attention_core, 0);
  EXPECT_EQ(a.total(), 1141899264);
  EXPECT_EQ(layer_activation_bytes(cfg, shape, RecomputePolicy::kFull).total(), 8192 * 4096 * 2);
}

// torchtitan's op-level SAC (memory.h, precision.h kSelectiveOp), Llama 3 8B, s = 8192, b = 1,
// bf16 (T = 8192):
//   block input   T * H * 2                 = 8192 * 4096 * 2                = 67108864
//   attention     T * (wq 4096 + wv 1024 + O 4096) * 2 = 8192 * 9216 * 2     = 150994944
//   LSE           4 * T * 32                                                  = 1048576
//   MLP           T * (w1 14336 + w2 4096) * 2 = 8192 * 18432 * 2            = 301989888
//   total                                                                    = 521142272
// = 0.456 of kSelective's 1141899264 (above). The backward working set adds the recomputed
// rest, 1141899264 - 521142272 = 620756992 bytes, to the gradient buffers and attention
// workspace that every policy has.
TEST(LayerActivations, LlamaSelectiveOpKeepsSavedOpOutputs) {
  const ModelConfig cfg = get("llama3-8b");
  const MicroBatchShape shape{1, 8192, 2};
  const LayerActivationBytes a = layer_activation_bytes(cfg, shape, RecomputePolicy::kSelectiveOp);
  EXPECT_EQ(a.layer_input, 67108864);
  EXPECT_EQ(a.norms, 0);
  EXPECT_EQ(a.attention, 150994944);
  EXPECT_EQ(a.attention_lse, 1048576);
  EXPECT_EQ(a.mlp, 301989888);
  EXPECT_EQ(a.total(), 521142272);
  EXPECT_EQ(layer_backward_working_set_bytes(cfg, shape, RecomputePolicy::kSelectiveOp) -
                layer_backward_working_set_bytes(cfg, shape, RecomputePolicy::kSelective),
            1141899264 - 521142272);
  // GPT-3 175B (qw = kvw = h = 12288, GELU F = 4h), s = 2048, b = 2: input h, wq h, wv h, O h,
  // up 4h = 8 values per token = 16 s*b*h bytes, plus the LSE 4*s*b*a.
  const std::int64_t s = 2048, b = 2, h = 12288, heads = 96;
  EXPECT_EQ(
      layer_stored_activation_bytes(get("gpt3-175b"), {b, s, 2}, RecomputePolicy::kSelectiveOp),
      16 * s * b * h + 4 * s * b * heads);
}

// What a deferred W reads (memory.h): the input x and output gradient dy of every weight GEMM.
// tiny (H = 64, qw = kvw = 64, F = 192, SwiGLU), T = 64 tokens at p = 4 bytes:
//   x:  qkv 64, o_proj 64, gate_up 64, down 192            = 384 columns -> 98304 B
//   dy: qkv 192, o_proj 64, gate_up 384, down 64           = 704 columns -> 180224 B
TEST(WeightGradientBytes, LinearInputsAndOutputGradients) {
  const ModelConfig cfg = get("tiny");
  const MicroBatchShape shape{1, 64, 4};
  const WeightGradientBytes w = layer_weight_gradient_bytes(cfg, shape);
  EXPECT_EQ(w.linear_inputs, 384 * 64 * 4);
  EXPECT_EQ(w.output_grads, 704 * 64 * 4);
}

// GPT-3 layer (qw = kvw = h, GELU F = 4h): x = 2h + h + 4h = 7h, dy = 3h + h + 4h + h = 9h
// values per token, x + dy = 16 s*b*h values = 32 s*b*h bytes at 16 bit: the memory Qi et al.
// (arXiv 2401.10241, Table 1) give for W, against B's 34sbh + 5as^2b.
TEST(WeightGradientBytes, GptLayerMatchesZeroBubbleTable) {
  const std::int64_t s = 2048, b = 2, h = 12288;
  const WeightGradientBytes w = layer_weight_gradient_bytes(get("gpt3-175b"), {b, s, 2});
  EXPECT_EQ(w.linear_inputs, 14 * s * b * h);
  EXPECT_EQ(w.total(), 32 * s * b * h);
}

// The identity the split backward's in-place hand-over rests on (schedules/pipeline.h): with
// fused attention, what a layer stores under none / selective is exactly x + dy + the fp32
// log-sum-exp, for every preset (SwiGLU or GELU, with or without GQA and biases). Under full
// recomputation only the layer input is stored.
TEST(WeightGradientBytes, StoredIsWeightGradientInputsPlusLse) {
  for (const std::string& name : model_registry().names()) {
    const ModelConfig cfg = get(name.c_str());
    const MicroBatchShape shape{2, 512, 2};
    const LayerActivationBytes stored =
        layer_activation_bytes(cfg, shape, RecomputePolicy::kSelective);
    EXPECT_EQ(stored.total(),
              layer_weight_gradient_bytes(cfg, shape).total() + stored.attention_lse)
        << name;
  }
}

// The paper's workload (H = 4096, 32 heads, s = 16384, b = 1): the fused kernel's own memory is
// the fp32 LSE and D, 2 * 4 * 32 * 16384 = 4 MiB per layer, plus the backward's fp32 dQ
// accumulator, 4 * 16384 * 4096 = 256 MiB; eager attention would hold the bf16 scores and their
// gradient, 2 * 2 * 32 * 16384^2 = 32 GiB.
TEST(AttentionWorkspace, FusedIsLinearInSequenceLength) {
  const ModelConfig cfg = get("llama-h4096-l48");
  const MicroBatchShape shape{1, 16384, 2};
  EXPECT_EQ(attention_workspace_bytes(cfg, shape),
            (std::int64_t{4} << 20) + (std::int64_t{256} << 20));
  EXPECT_EQ(attention_workspace_bytes(cfg, shape, AttentionImpl::kEager), std::int64_t{32} << 30);
}

// algorithms.md §5: one activation b = 1, s = 16384 in fp16 is 32 / 64 / 128 MiB for
// H = 1024 / 2048 / 4096.
TEST(LayerActivations, BoundaryTensorMatchesThePaperTable) {
  EXPECT_EQ(activation_bytes_per_token_boundary(get("llama-h1024-l48"), 2) * 16384, 32 << 20);
  EXPECT_EQ(activation_bytes_per_token_boundary(get("llama-h2048-l48"), 2) * 16384, 64 << 20);
  EXPECT_EQ(activation_bytes_per_token_boundary(get("llama-h4096-l48"), 2) * 16384, 128 << 20);
}

// Logits (bf16) plus one fp32 T x V tensor: Llama 2 7B, T = 4096, V = 32000: 4096*32000*6 B.
TEST(HeadWorkingSet, LogitsAndFp32Softmax) {
  EXPECT_EQ(head_working_set_bytes(get("llama2-7b"), MicroBatchShape{1, 4096, 2}),
            std::int64_t{4096} * 32000 * 6);
}

// llm.c's in-place classifier keeps only the bf16 logits, T * V * 2 (the GPT-3 preset, V 50257,
// at micro-batch 64 x 1024: T = 65536); fused-fp32 adds an fp32 T x V, T * V * 6.
TEST(HeadWorkingSet, InPlaceKeepsOnlyTheLogits) {
  const ModelConfig gpt = get("gpt3-175b");  // vocab 50257; the shape is what matters here
  const MicroBatchShape shape{64, 1024, 2};
  EXPECT_EQ(head_working_set_bytes(gpt, shape, LossKernel::kInPlace),
            std::int64_t{65536} * 50257 * 2);
  EXPECT_EQ(head_working_set_bytes(gpt, shape, LossKernel::kFusedFp32),
            std::int64_t{65536} * 50257 * 6);
}

// ZeRO §3.1 with K = 12: 2 (fp16 weights) + 12 (fp32 master, m, v); our gradient accumulator is
// fp32 (4) like Megatron's main_grad, so 18 B per parameter at bf16 and 20 at fp32.
TEST(StateBytes, MixedPrecisionAdamW) {
  EXPECT_EQ(state_bytes_per_param(2).total(), 18);
  EXPECT_EQ(state_bytes_per_param(4).total(), 20);
}

}  // namespace
}  // namespace tawpipe::model
