// FLOP and byte formulas. Conventions are in cost.h; the per-element FLOP counts of the
// element-wise ops are stated here, next to the code that uses them. They are estimates (a
// fused kernel may do fewer passes); what matters is that the simulator and the executors use
// the same numbers.
#include "common/model/cost.h"

#include "common/model/memory.h"

#include <algorithm>
#include <cassert>

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

// Dimensions as doubles: products of token counts and widths can exceed 2^53 only beyond any
// realistic model, and FLOP counts are doubles anyway.
struct Dims {
  double tokens, seq, batch, h, f, qw, kvw, heads, p;
};

Dims dims_of(const ModelConfig& cfg, const MicroBatchShape& shape) {
  assert(shape.batch > 0 && shape.seq_len > 0 && shape.dtype_bytes > 0);
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  return Dims{d(shape.tokens()), d(shape.seq_len),       d(shape.batch),
              d(cfg.hidden),     d(cfg.effective_ffn()), d(cfg.q_width()),
              d(cfg.kv_width()), d(cfg.heads),           d(shape.dtype_bytes)};
}

// A forward GEMM of a (T x in) activation by an (in x out) weight: 2*T*in*out FLOPs; reads the
// activation and the weight, writes the output.
void add_gemm(OpCost& c, const Dims& d, double in, double out) {
  c.gemm_flops += 2.0 * d.tokens * in * out;
  c.gemm_bytes += d.p * (d.tokens * in + in * out + d.tokens * out);
}

// Forward GEMMs of a decoder layer; the backward is exactly twice this (cost.h).
OpCost layer_gemms(const ModelConfig& cfg, const Dims& d) {
  OpCost c;
  add_gemm(c, d, d.h, d.qw);   // Q
  add_gemm(c, d, d.h, d.kvw);  // K
  add_gemm(c, d, d.h, d.kvw);  // V
  add_gemm(c, d, d.qw, d.h);   // O
  if (cfg.mlp == MlpKind::kSwiGLU) {
    add_gemm(c, d, d.h, d.f);  // gate
    add_gemm(c, d, d.h, d.f);  // up
  } else {
    add_gemm(c, d, d.h, d.f);  // up
  }
  add_gemm(c, d, d.f, d.h);  // down
  return c;
}

// Output elements per token of all biased GEMMs of a layer (for bias adds and bias gradients).
double bias_outputs(const ModelConfig& cfg, const Dims& d) {
  if (!cfg.biases) return 0.0;
  const double mlp = cfg.mlp == MlpKind::kSwiGLU ? 2.0 * d.f + d.h : d.f + d.h;
  return d.qw + 2.0 * d.kvw + d.h + mlp;
}

double norm_fwd_flops(const ModelConfig& cfg) {
  return cfg.norm == NormKind::kRMSNorm ? kRmsNormFwd : kLayerNormFwd;
}

// One norm over T x H: forward reads x and writes y; backward reads x and dy, writes dx and the
// weight (and bias) gradient.
void add_norm(OpCost& c, const ModelConfig& cfg, const Dims& d, bool backward) {
  const double weights = static_cast<double>(norm_params(cfg));
  if (!backward) {
    c.elementwise_flops += norm_fwd_flops(cfg) * d.tokens * d.h;
    c.elementwise_bytes += d.p * (2.0 * d.tokens * d.h + weights);
  } else {
    c.elementwise_flops += kNormBwdFactor * norm_fwd_flops(cfg) * d.tokens * d.h;
    c.elementwise_bytes += d.p * (3.0 * d.tokens * d.h + 2.0 * weights);
  }
}

// Causal fused attention forward: 4*s^2*d*heads per sequence for the full mask, halved.
double attention_fwd_flops(const Dims& d) {
  return 2.0 * d.batch * d.seq * d.seq * d.qw;
}

OpCost attention_forward(const Dims& d) {
  OpCost c;
  c.attention_flops = attention_fwd_flops(d);
  // Reads Q, K, V; writes O and the fp32 log-sum-exp per row and head.
  c.attention_bytes = d.p * d.tokens * (2.0 * d.qw + 2.0 * d.kvw) + kFp32 * d.tokens * d.heads;
  return c;
}

OpCost attention_backward(const Dims& d) {
  OpCost c;
  c.attention_flops = 2.5 * attention_fwd_flops(d);
  // Reads Q, K, V, O, dO and the LSE; writes and reads D = rowsum(dO * O) (fp32); writes dQ, dK,
  // dV.
  c.attention_bytes =
      d.p * d.tokens * (4.0 * d.qw + 4.0 * d.kvw) + 3.0 * kFp32 * d.tokens * d.heads;
  return c;
}

// Element-wise work of a decoder layer outside the norms.
OpCost layer_elementwise(const ModelConfig& cfg, const Dims& d, bool backward) {
  OpCost c;
  add_norm(c, cfg, d, backward);
  add_norm(c, cfg, d, backward);
  if (cfg.position == PositionKind::kRoPE) {  // rotate Q and K (backward: rotate back dQ, dK)
    c.elementwise_flops += kRopePerElement * d.tokens * (d.qw + d.kvw);
    c.elementwise_bytes += 2.0 * d.p * d.tokens * (d.qw + d.kvw);
  }
  // Two residual adds (backward: the gradient sums where the residual branches join).
  c.elementwise_flops += 2.0 * d.tokens * d.h;
  c.elementwise_bytes += 2.0 * 3.0 * d.p * d.tokens * d.h;
  if (cfg.mlp == MlpKind::kSwiGLU) {
    // forward reads gate and up, writes their product; backward reads dh, gate, up, writes
    // dgate, dup.
    c.elementwise_flops += (backward ? kSwiGluBwd : kSwiGluFwd) * d.tokens * d.f;
    c.elementwise_bytes += (backward ? 5.0 : 3.0) * d.p * d.tokens * d.f;
  } else {
    // forward reads x, writes gelu(x); backward reads x and dy, writes dx.
    c.elementwise_flops += (backward ? kGeluBwd : kGeluFwd) * d.tokens * d.f;
    c.elementwise_bytes += (backward ? 3.0 : 2.0) * d.p * d.tokens * d.f;
  }
  // Biases fused into GEMM epilogues: one add per output element forward, one accumulate per
  // output element for the bias gradient; traffic is the bias vector only.
  const double outs = bias_outputs(cfg, d);
  c.elementwise_flops += d.tokens * outs;
  c.elementwise_bytes += d.p * outs;
  return c;
}

OpCost cross_entropy(const Dims& d, double vocab, bool backward) {
  OpCost c;
  if (!backward) {
    c.elementwise_flops = kCrossEntropyFwd * d.tokens * vocab;
    // Reads logits and target ids; writes the fp32 loss and log-sum-exp per token.
    c.elementwise_bytes = d.p * d.tokens * vocab + 3.0 * kFp32 * d.tokens;
  } else {
    c.elementwise_flops = kCrossEntropyBwd * d.tokens * vocab;
    // Reads logits, ids and the log-sum-exp; writes d(logits).
    c.elementwise_bytes = 2.0 * d.p * d.tokens * vocab + 2.0 * kFp32 * d.tokens;
  }
  return c;
}

}  // namespace

OpCost& OpCost::operator+=(const OpCost& o) {
  gemm_flops += o.gemm_flops;
  attention_flops += o.attention_flops;
  elementwise_flops += o.elementwise_flops;
  gemm_bytes += o.gemm_bytes;
  attention_bytes += o.attention_bytes;
  elementwise_bytes += o.elementwise_bytes;
  return *this;
}

OpCost& OpCost::operator*=(double k) {
  assert(k >= 0.0);
  gemm_flops *= k;
  attention_flops *= k;
  elementwise_flops *= k;
  gemm_bytes *= k;
  attention_bytes *= k;
  elementwise_bytes *= k;
  return *this;
}

OpCost layer_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  return layer_gemms(cfg, d) + attention_forward(d) + layer_elementwise(cfg, d, false);
}

OpCost layer_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  return layer_gemms(cfg, d) * 2.0 + attention_backward(d) + layer_elementwise(cfg, d, true);
}

OpCost layer_backward_input_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  return layer_gemms(cfg, d) + attention_backward(d) + layer_elementwise(cfg, d, true);
}

OpCost layer_backward_weight_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  return layer_gemms(cfg, dims_of(cfg, shape));
}

std::int64_t layer_weight_gradient_held_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                              RecomputePolicy policy) {
  const std::int64_t f = cfg.effective_ffn();
  const std::int64_t mlp_out = cfg.mlp == MlpKind::kSwiGLU ? 2 * f : f;
  const std::int64_t columns =
      cfg.q_width() + 2 * cfg.kv_width() + cfg.hidden + mlp_out + cfg.hidden;
  std::int64_t held = shape.tokens() * columns * shape.dtype_bytes;
  if (policy == RecomputePolicy::kFull) {
    held += layer_stored_activation_bytes(cfg, shape, RecomputePolicy::kSelective) -
            shape.tokens() * cfg.hidden * shape.dtype_bytes;
  }
  return held;
}

OpCost layer_recompute_cost(const ModelConfig& cfg, const MicroBatchShape& shape,
                            RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::kNone:
      return OpCost{};
    case RecomputePolicy::kSelective:
      return attention_forward(dims_of(cfg, shape));
    case RecomputePolicy::kFull:
      return layer_forward_cost(cfg, shape);
  }
  assert(false && "unhandled RecomputePolicy");
  return OpCost{};
}

OpCost head_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  const double vocab = static_cast<double>(cfg.vocab);
  OpCost c;
  add_norm(c, cfg, d, false);
  add_gemm(c, d, d.h, vocab);
  return c + cross_entropy(d, vocab, false);
}

OpCost head_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  const double vocab = static_cast<double>(cfg.vocab);
  OpCost gemm;
  add_gemm(gemm, d, d.h, vocab);
  OpCost c = cross_entropy(d, vocab, true) + gemm * 2.0;
  add_norm(c, cfg, d, true);
  return c;
}

OpCost embedding_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  OpCost c;
  // Reads the ids and one table row per token, writes the hidden states.
  c.elementwise_bytes = kFp32 * d.tokens + 2.0 * d.p * d.tokens * d.h;
  if (cfg.position == PositionKind::kLearned) {  // fused add of the position row
    c.elementwise_flops += d.tokens * d.h;
    c.elementwise_bytes += d.p * d.tokens * d.h;
  }
  return c;
}

OpCost embedding_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape) {
  const Dims d = dims_of(cfg, shape);
  OpCost c;
  // Reads ids and dY, read-modify-writes one gradient row per token. Zeroing the gradient
  // buffer belongs to whoever owns it (schedule), not to this op.
  c.elementwise_flops = d.tokens * d.h;
  c.elementwise_bytes = kFp32 * d.tokens + 3.0 * d.p * d.tokens * d.h;
  if (cfg.position == PositionKind::kLearned) {
    c.elementwise_flops += d.tokens * d.h;
    c.elementwise_bytes += 2.0 * d.p * d.tokens * d.h;
  }
  return c;
}

OpCost optimizer_step_cost(std::int64_t params, std::int64_t compute_dtype_bytes) {
  assert(params >= 0 && compute_dtype_bytes > 0);
  const double n = static_cast<double>(params);
  OpCost c;
  c.elementwise_flops = kAdamWFlops * n;
  c.elementwise_bytes = 28.0 * n;
  if (compute_dtype_bytes < 4) c.elementwise_bytes += static_cast<double>(compute_dtype_bytes) * n;
  return c;
}

FlopsPerToken model_flops_per_token(const ModelConfig& cfg, std::int64_t seq_len,
                                    AttentionMask mask) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  FlopsPerToken f;
  f.dense_flops = 6.0 * (d(cfg.layers) * d(layer_gemm_params(cfg)) + d(cfg.vocab) * d(cfg.hidden));
  const double per_layer = d(seq_len) * d(cfg.q_width());
  f.attention_flops = (mask == AttentionMask::kCausal ? 6.0 : 12.0) * d(cfg.layers) * per_layer;
  return f;
}

double hardware_flops_per_token(const ModelConfig& cfg, std::int64_t seq_len,
                                RecomputePolicy policy) {
  const MicroBatchShape shape{1, seq_len, 2};
  const OpCost layer = layer_forward_cost(cfg, shape) + layer_backward_cost(cfg, shape) +
                       layer_recompute_cost(cfg, shape, policy);
  const OpCost head = head_forward_cost(cfg, shape) + head_backward_cost(cfg, shape);
  const double matmul =
      static_cast<double>(cfg.layers) * (layer.gemm_flops + layer.attention_flops) +
      head.gemm_flops + head.attention_flops;
  return matmul / static_cast<double>(seq_len);
}

}  // namespace tawpipe::model
