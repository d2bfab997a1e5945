// The kernel catalogue (kernels.h). FLOP and byte conventions are cost.h's; the per-element
// FLOP counts of the element-wise kernels are stated here, next to the code that uses them.
// They are estimates (a fused kernel may do fewer passes); what matters is that the simulator
// and the executors use the same numbers.
#include "common/model/kernels.h"

#include <cassert>
#include <utility>

#include "common/model/cost.h"

namespace tawpipe::model {
namespace {

// Element-wise FLOPs per element.
constexpr double kRmsNormFwd = 4.0;       // square, accumulate, scale by rsqrt, multiply weight
constexpr double kLayerNormFwd = 8.0;     // mean, centre, square, accumulate, scale, weight, bias
constexpr double kNormBwdFactor = 2.0;    // backward of a norm ~ twice its forward
constexpr double kRopePerElement = 3.0;   // x*cos + rotate(x)*sin
constexpr double kSwiGluFwd = 5.0;        // sigmoid (exp, add, divide), * gate, * up
constexpr double kSwiGluBwd = 10.0;       // recompute sigmoid, silu and silu', three products
constexpr double kGeluFwd = 8.0;          // tanh approximation
constexpr double kGeluBwd = 12.0;         // its derivative times the upstream gradient
constexpr double kCrossEntropyFwd = 5.0;  // per logit: max, subtract, exp, sum, pick target
constexpr double kCrossEntropyBwd = 4.0;  // per logit: subtract max, exp, divide by sum, - one-hot
constexpr double kAdamWFlops = 14.0;      // per parameter
constexpr double kFp32 = 4.0;             // bytes of the fp32 side tensors (LSE, loss, ids)

// Dimensions of one micro-batch, integer (for shapes) and double (for FLOPs and bytes).
struct Dims {
  std::int64_t tokens, seq, batch, h, f, qw, kvw, heads, head_dim, p;
  double dt, dh, df, dqw, dkvw, dp;
};

Dims dims_of(const ModelConfig& cfg, const MicroBatchShape& shape) {
  assert(shape.batch > 0 && shape.seq_len > 0 && shape.dtype_bytes > 0);
  Dims d{shape.tokens(),
         shape.seq_len,
         shape.batch,
         cfg.hidden,
         cfg.effective_ffn(),
         cfg.q_width(),
         cfg.kv_width(),
         cfg.heads,
         cfg.effective_head_dim(),
         shape.dtype_bytes,
         0,
         0,
         0,
         0,
         0,
         0};
  const auto x = [](std::int64_t v) { return static_cast<double>(v); };
  d.dt = x(d.tokens);
  d.dh = x(d.h);
  d.df = x(d.f);
  d.dqw = x(d.qw);
  d.dkvw = x(d.kvw);
  d.dp = x(d.p);
  return d;
}

Kernel make(std::string name, KernelClass cls, std::array<std::int64_t, 4> shape, double flops,
            double bytes) {
  Kernel k;
  k.name = std::move(name);
  k.cls = cls;
  k.shape = shape;
  k.flops = flops;
  k.bytes = bytes;
  return k;
}

// A linear layer y = x W (+ b): x is T x in, W is in x out.
struct Linear {
  const char* name;
  std::int64_t in, out;
  bool bias;
};

std::vector<Linear> attention_linears(const ModelConfig& cfg, const Dims& d) {
  return {{"qkv_gemm", d.h, d.qw + 2 * d.kvw, cfg.biases}, {"o_proj_gemm", d.qw, d.h, cfg.biases}};
}

std::vector<Linear> mlp_linears(const ModelConfig& cfg, const Dims& d) {
  if (cfg.mlp == MlpKind::kSwiGLU)
    return {{"gate_up_gemm", d.h, 2 * d.f, cfg.biases}, {"down_gemm", d.f, d.h, cfg.biases}};
  return {{"up_gemm", d.h, d.f, cfg.biases}, {"down_gemm", d.f, d.h, cfg.biases}};
}

std::string bias_name(const Linear& l) {
  std::string s = l.name;
  return s.substr(0, s.size() - 5) + "_bias";  // "qkv_gemm" -> "qkv_bias"
}

// Forward GEMM: 2*T*in*out FLOPs; reads x and W, writes y. A bias is added in the GEMM
// epilogue: one add per output element, traffic the bias vector only.
void add_linear_fwd(KernelList& ks, const Dims& d, const Linear& l) {
  const double in = static_cast<double>(l.in), out = static_cast<double>(l.out);
  ks.push_back(make(l.name, KernelClass::gemm, {d.tokens, l.out, l.in, 1}, 2.0 * d.dt * in * out,
                    d.dp * (d.dt * in + in * out + d.dt * out)));
  if (l.bias) {
    Kernel b =
        make(bias_name(l), KernelClass::residual, {d.tokens, l.out, 0, 0}, d.dt * out, d.dp * out);
    b.fused = true;
    ks.push_back(std::move(b));
  }
}

// dgrad: dx (T x in) = dy (T x out) W^T; reads dy and W, writes dx.
void add_linear_dgrad(KernelList& ks, const Dims& d, const Linear& l) {
  const double in = static_cast<double>(l.in), out = static_cast<double>(l.out);
  ks.push_back(make(std::string(l.name) + "_dgrad", KernelClass::gemm, {d.tokens, l.in, l.out, 1},
                    2.0 * d.dt * in * out, d.dp * (d.dt * out + in * out + d.dt * in)));
}

// wgrad: dW (in x out) = x^T dy; reads x and dy, writes dW; the bias gradient (column sums of
// dy: one add per output element, traffic the bias-gradient vector) in its epilogue.
void add_linear_wgrad(KernelList& ks, const Dims& d, const Linear& l) {
  const double in = static_cast<double>(l.in), out = static_cast<double>(l.out);
  ks.push_back(make(std::string(l.name) + "_wgrad", KernelClass::gemm, {l.in, l.out, d.tokens, 1},
                    2.0 * d.dt * in * out, d.dp * (d.dt * in + d.dt * out + in * out)));
  if (l.bias) {
    Kernel b = make(bias_name(l) + "_grad", KernelClass::residual, {d.tokens, l.out, 0, 0},
                    d.dt * out, d.dp * out);
    b.fused = true;
    ks.push_back(std::move(b));
  }
}

double norm_fwd_flops(const ModelConfig& cfg) {
  return cfg.norm == NormKind::kRMSNorm ? kRmsNormFwd : kLayerNormFwd;
}

// A norm over T x H: forward reads x and the weights, writes y; backward reads x, dy and the
// weights, writes dx and the weight (and bias) gradient, in one kernel.
Kernel norm(const ModelConfig& cfg, const Dims& d, std::string name, bool backward) {
  const double weights = static_cast<double>(norm_params(cfg));
  const double elems = d.dt * d.dh;
  if (!backward)
    return make(std::move(name), KernelClass::norm, {d.tokens, d.h, 0, 0},
                norm_fwd_flops(cfg) * elems, d.dp * (2.0 * elems + weights));
  return make(std::move(name) + "_bwd", KernelClass::norm, {d.tokens, d.h, 0, 0},
              kNormBwdFactor * norm_fwd_flops(cfg) * elems, d.dp * (3.0 * elems + 2.0 * weights));
}

// A residual add over T x H (backward: the gradient sum where the branches join): reads two,
// writes one.
Kernel residual(const Dims& d, std::string name) {
  return make(std::move(name), KernelClass::residual, {d.tokens, d.h, 0, 0}, d.dt * d.dh,
              3.0 * d.dp * d.dt * d.dh);
}

// RoPE rotates Q and K in place (backward: rotates dQ and dK back): reads and writes them.
Kernel rope(const Dims& d, bool backward) {
  const double elems = d.dt * (d.dqw + d.dkvw);
  return make(backward ? "rope_bwd" : "rope", KernelClass::rope, {d.tokens, d.qw + d.kvw, 0, 0},
              kRopePerElement * elems, 2.0 * d.dp * elems);
}

// The MLP activation over T x F. SwiGLU forward reads gate and up, writes their product;
// backward reads dh, gate, up, writes dgate, dup. GELU forward reads x, writes gelu(x);
// backward reads x and dy, writes dx.
Kernel activation(const ModelConfig& cfg, const Dims& d, bool backward) {
  const double elems = d.dt * d.df;
  const std::array<std::int64_t, 4> shape{d.tokens, d.f, 0, 0};
  if (cfg.mlp == MlpKind::kSwiGLU)
    return make(backward ? "swiglu_bwd" : "swiglu", KernelClass::activation, shape,
                (backward ? kSwiGluBwd : kSwiGluFwd) * elems,
                (backward ? 5.0 : 3.0) * d.dp * elems);
  return make(backward ? "gelu_bwd" : "gelu", KernelClass::activation, shape,
              (backward ? kGeluBwd : kGeluFwd) * elems, (backward ? 3.0 : 2.0) * d.dp * elems);
}

// Causal fused attention (FlashAttention-2, arXiv 2307.08691): forward 4*s^2*d*heads per
// sequence for the full mask, halved for the causal one; backward 2.5x forward.
double attention_fwd_flops(const Dims& d) {
  return 2.0 * static_cast<double>(d.batch) * static_cast<double>(d.seq) *
         static_cast<double>(d.seq) * d.dqw;
}

Kernel attention(const Dims& d, bool backward) {
  const std::array<std::int64_t, 4> shape{d.batch, d.heads, d.seq, d.head_dim};
  const double lse = kFp32 * d.dt * static_cast<double>(d.heads);
  Kernel k;
  if (!backward) {
    // Reads Q, K, V; writes O and the fp32 log-sum-exp per row and head.
    k = make("attention", KernelClass::attention_fwd, shape, attention_fwd_flops(d),
             d.dp * d.dt * (2.0 * d.dqw + 2.0 * d.dkvw) + lse);
  } else {
    // Reads Q, K, V, O, dO and the LSE; writes and reads D = rowsum(dO * O) (fp32); writes dQ,
    // dK, dV.
    k = make("attention_bwd", KernelClass::attention_bwd, shape, 2.5 * attention_fwd_flops(d),
             d.dp * d.dt * (4.0 * d.dqw + 4.0 * d.dkvw) + 3.0 * lse);
  }
  k.causal = true;
  return k;
}

// Softmax cross-entropy over T x V logits.
Kernel cross_entropy(const Dims& d, std::int64_t vocab, bool backward) {
  const double v = static_cast<double>(vocab);
  if (!backward)  // reads logits and target ids; writes the fp32 loss and log-sum-exp per token
    return make("softmax_xent", KernelClass::softmax_xent, {d.tokens, vocab, 0, 0},
                kCrossEntropyFwd * d.dt * v, d.dp * d.dt * v + 3.0 * kFp32 * d.dt);
  // reads logits, ids and the log-sum-exp; writes d(logits)
  return make("softmax_xent_bwd", KernelClass::softmax_xent, {d.tokens, vocab, 0, 0},
              kCrossEntropyBwd * d.dt * v, 2.0 * d.dp * d.dt * v + 2.0 * kFp32 * d.dt);
}

// One GEMM's backward in execution order, appended to the B and (optionally) W lists.
void add_linear_bwd(KernelList* b, KernelList* w, const Dims& d, const Linear& l) {
  if (b != nullptr) add_linear_dgrad(*b, d, l);
  if (w != nullptr) add_linear_wgrad(*w, d, l);
}

// The backward of a layer in execution order; B kernels go to `b`, W kernels to `w` (either may
// be the same list, or null to drop that part).
void layer_backward(const ModelConfig& cfg, const Dims& d, KernelList* b, KernelList* w) {
  const std::vector<Linear> attn = attention_linears(cfg, d);
  const std::vector<Linear> mlp = mlp_linears(cfg, d);
  const auto push = [&](Kernel k) {
    if (b != nullptr) b->push_back(std::move(k));
  };
  push(residual(d, "mlp_residual_bwd"));
  add_linear_bwd(b, w, d, mlp[1]);
  push(activation(cfg, d, true));
  add_linear_bwd(b, w, d, mlp[0]);
  push(norm(cfg, d, "mlp_norm", true));
  push(residual(d, "attn_residual_bwd"));
  add_linear_bwd(b, w, d, attn[1]);
  push(attention(d, true));
  if (cfg.position == PositionKind::kRoPE) push(rope(d, true));
  add_linear_bwd(b, w, d, attn[0]);
  push(norm(cfg, d, "attn_norm", true));
}

// What torchtitan's op-level SAC replays before a block's backward (precision.h kSelectiveOp):
// the forward without the saved ops. The saved projections (wq, wv, w1, w2; GELU: wq, wv, up)
// and attention return their stored outputs; the others run again: the attention norm, wk (the
// K columns of our fused QKV GEMM), RoPE, wo, the residual add, the MLP norm, w3 (the up half of
// the gate/up GEMM) and SwiGLU, or GELU. The last residual add is not replayed: nothing the
// backward reads depends on it (torch.utils.checkpoint stops the replay early).
KernelList layer_op_sac_recompute(const ModelConfig& cfg, const Dims& d) {
  const std::vector<Linear> attn = attention_linears(cfg, d);
  KernelList ks;
  ks.push_back(norm(cfg, d, "attn_norm", false));
  add_linear_fwd(ks, d, {"k_proj_gemm", d.h, d.kvw, cfg.biases});
  if (cfg.position == PositionKind::kRoPE) ks.push_back(rope(d, false));
  add_linear_fwd(ks, d, attn[1]);
  ks.push_back(residual(d, "attn_residual"));
  ks.push_back(norm(cfg, d, "mlp_norm", false));
  if (cfg.mlp == MlpKind::kSwiGLU) add_linear_fwd(ks, d, {"up_proj_gemm", d.h, d.f, cfg.biases});
  ks.push_back(activation(cfg, d, false));
  return ks;
}

}  // namespace

KernelList layer_forward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  const std::vector<Linear> attn = attention_linears(cfg, d);
  const std::vector<Linear> mlp = mlp_linears(cfg, d);
  KernelList ks;
  ks.push_back(norm(cfg, d, "attn_norm", false));
  add_linear_fwd(ks, d, attn[0]);
  if (cfg.position == PositionKind::kRoPE) ks.push_back(rope(d, false));
  ks.push_back(attention(d, false));
  add_linear_fwd(ks, d, attn[1]);
  ks.push_back(residual(d, "attn_residual"));
  ks.push_back(norm(cfg, d, "mlp_norm", false));
  add_linear_fwd(ks, d, mlp[0]);
  ks.push_back(activation(cfg, d, false));
  add_linear_fwd(ks, d, mlp[1]);
  ks.push_back(residual(d, "mlp_residual"));
  return ks;
}

KernelList layer_backward_input_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  KernelList b;
  layer_backward(cfg, dims_of(cfg, shape), &b, nullptr);
  return b;
}

KernelList layer_backward_weight_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  KernelList w;
  layer_backward(cfg, dims_of(cfg, shape), nullptr, &w);
  return w;
}

KernelList layer_backward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  KernelList all;
  layer_backward(cfg, dims_of(cfg, shape), &all, &all);
  return all;
}

KernelList layer_recompute_kernels(const ModelConfig& cfg, const MicroBatchShape& shape,
                                   RecomputePolicy policy) {
  KernelList ks;
  switch (policy) {
    case RecomputePolicy::kNone:
      break;
    case RecomputePolicy::kSelective:
      ks.push_back(attention(dims_of(cfg, shape), false));
      break;
    case RecomputePolicy::kFull:
      ks = layer_forward_kernels(cfg, shape);
      break;
    case RecomputePolicy::kSelectiveOp:
      ks = layer_op_sac_recompute(cfg, dims_of(cfg, shape));
      break;
  }
  for (Kernel& k : ks)
    k.recompute = true;
  return ks;
}

KernelList weight_gradient_recompute_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  Kernel k = norm(cfg, dims_of(cfg, shape), "attn_norm", false);
  k.recompute = true;
  return {k};
}

KernelList head_forward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  KernelList ks;
  ks.push_back(norm(cfg, d, "final_norm", false));
  add_linear_fwd(ks, d, {"lm_head_gemm", d.h, cfg.vocab, false});
  ks.push_back(cross_entropy(d, cfg.vocab, false));
  return ks;
}

KernelList head_backward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  KernelList ks;
  ks.push_back(cross_entropy(d, cfg.vocab, true));
  const Linear head{"lm_head_gemm", d.h, cfg.vocab, false};
  add_linear_dgrad(ks, d, head);
  add_linear_wgrad(ks, d, head);
  ks.push_back(norm(cfg, d, "final_norm", true));
  return ks;
}

KernelList embedding_forward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  // Reads the ids and one table row per token, writes the hidden states; a learned position row
  // is added in the same kernel (one more read, one add per element).
  double flops = 0.0;
  double bytes = kFp32 * d.dt + 2.0 * d.dp * d.dt * d.dh;
  if (cfg.position == PositionKind::kLearned) {
    flops += d.dt * d.dh;
    bytes += d.dp * d.dt * d.dh;
  }
  return {make("embedding_gather", KernelClass::embedding, {d.tokens, d.h, 0, 0}, flops, bytes)};
}

KernelList embedding_backward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  // Reads ids and dY, read-modify-writes one gradient row per token (and a position row).
  // Zeroing the gradient buffer belongs to whoever owns it (schedule), not to this op.
  double flops = d.dt * d.dh;
  double bytes = kFp32 * d.dt + 3.0 * d.dp * d.dt * d.dh;
  if (cfg.position == PositionKind::kLearned) {
    flops += d.dt * d.dh;
    bytes += 2.0 * d.dp * d.dt * d.dh;
  }
  return {
      make("embedding_scatter_add", KernelClass::embedding, {d.tokens, d.h, 0, 0}, flops, bytes)};
}

KernelList optimizer_kernels(std::int64_t params, std::int64_t compute_dtype_bytes) {
  assert(params >= 0 && compute_dtype_bytes > 0);
  const double n = static_cast<double>(params);
  // Reads param, grad, m, v (16 B), writes param, m, v (12 B), all fp32; plus the compute-dtype
  // copy of the weights.
  double bytes = 28.0 * n;
  if (compute_dtype_bytes < 4) bytes += static_cast<double>(compute_dtype_bytes) * n;
  return {make("adamw", KernelClass::optimizer, {params, 1, 0, 0}, kAdamWFlops * n, bytes)};
}

KernelList accumulate_kernels(std::int64_t elements, std::int64_t element_bytes) {
  const double n = static_cast<double>(elements);
  return {make("grad_accumulate", KernelClass::residual, {elements, 1, 0, 0}, n,
               3.0 * n * static_cast<double>(element_bytes))};
}

KernelList copy_kernels(std::int64_t bytes) {
  return {make("copy", KernelClass::copy, {bytes, 1, 0, 0}, 0.0, 2.0 * static_cast<double>(bytes))};
}

KernelList repeated(KernelList list, std::int64_t times) {
  assert(times >= 0);
  for (Kernel& k : list)
    k.count *= times;
  return list;
}

}  // namespace tawpipe::model
