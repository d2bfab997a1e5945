// Memory accounting. The tensor-by-tensor derivation is in memory.h; the comments here say which
// tensor each term is.
#include "common/model/memory.h"

#include <algorithm>
#include <cassert>

namespace tawpipe::model {
namespace {

constexpr std::int64_t kFp32 = 4;

}  // namespace

LayerActivationBytes layer_activation_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                            RecomputePolicy policy, AttentionImpl impl) {
  assert(shape.batch > 0 && shape.seq_len > 0 && shape.dtype_bytes > 0);
  const std::int64_t t = shape.tokens();
  const std::int64_t p = shape.dtype_bytes;
  const std::int64_t h = cfg.hidden;
  LayerActivationBytes a;
  if (policy == RecomputePolicy::kFull) {
    a.layer_input = t * h * p;  // Korthikanti §4.3: 2*s*b*h in 16 bit
    return a;
  }
  if (policy == RecomputePolicy::kSelectiveOp) {
    // torchtitan's op-level SAC (precision.h): the checkpointed block's input, the outputs of the
    // 1st, 3rd, 5th and 7th mm (wq: q_width, wv: kv_width, w1: F, w2: H) and attention's outputs
    // (O: q_width, the fp32 log-sum-exp); a GELU MLP keeps only its up projection's output F.
    a.layer_input = t * h * p;
    a.attention = t * (cfg.q_width() + cfg.kv_width() + cfg.q_width()) * p;
    a.attention_lse = kFp32 * t * cfg.heads;
    a.mlp = t * (cfg.effective_ffn() + (cfg.mlp == MlpKind::kSwiGLU ? h : 0)) * p;
    return a;
  }
  a.norms = 2 * t * h * p;  // the inputs of both norms (the residual stream twice)
  // QKV input (the first norm's output), Q and K (for QK^T), V, and the attention output, which is
  // also the O projection's input. Korthikanti: 2 + 4 + 2 + 2 = 10 s*b*h for a = h/d heads.
  a.attention = t * (h + cfg.q_width() + cfg.kv_width() + cfg.kv_width() + cfg.q_width()) * p;
  if (impl == AttentionImpl::kFused) {
    a.attention_lse = kFp32 * t * cfg.heads;  // one fp32 log-sum-exp per row and head
  } else if (policy == RecomputePolicy::kNone) {
    // Softmax output, p bytes per score (Korthikanti's 2*a*s^2*b without dropout), which
    // selective recomputation re-creates in the backward instead of storing.
    a.attention_core = p * cfg.heads * shape.seq_len * shape.seq_len * shape.batch;
  }
  const std::int64_t f = cfg.effective_ffn();
  // MLP input (second norm's output) plus SwiGLU gate, up and product (3F) or GELU input and
  // output (2F). Korthikanti's GELU MLP: 2 + 8 + 8 = 18 s*b*h of his 19 (the 19th is dropout).
  a.mlp = t * (h + (cfg.mlp == MlpKind::kSwiGLU ? 3 : 2) * f) * p;
  return a;
}

std::int64_t korthikanti_layer_bytes(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t a,
                                     RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::kNone:
      return 34 * s * b * h + 5 * a * s * s * b;
    case RecomputePolicy::kSelective:
      return 34 * s * b * h;
    case RecomputePolicy::kFull:
      return 2 * s * b * h;
    case RecomputePolicy::kSelectiveOp:  // not one of the paper's policies (precondition)
      break;
  }
  assert(false && "not one of Korthikanti et al.'s policies");
  return 0;
}

std::int64_t attention_workspace_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                       AttentionImpl impl) {
  const std::int64_t rows = shape.batch * cfg.heads * shape.seq_len;
  if (impl == AttentionImpl::kFused)  // LSE + backward's D + backward's fp32 dQ accumulator
    return 2 * kFp32 * rows + kFp32 * shape.tokens() * cfg.q_width();
  return 2 * shape.dtype_bytes * rows * shape.seq_len;  // scores and their gradient
}

std::int64_t activation_bytes_per_token_boundary(const ModelConfig& cfg, std::int64_t dtype_bytes) {
  return cfg.hidden * dtype_bytes;
}

std::int64_t layer_stored_activation_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                           RecomputePolicy policy) {
  return layer_activation_bytes(cfg, shape, policy, AttentionImpl::kFused).total();
}

WeightGradientBytes layer_weight_gradient_bytes(const ModelConfig& cfg,
                                                const MicroBatchShape& shape) {
  // Each wgrad GEMM dW (in x out) = x^T dy has shape {in, out, T}: it reads x (T x in) and
  // dy (T x out). Fused bias-gradient epilogues read the same dy.
  WeightGradientBytes w;
  for (const Kernel& k : layer_backward_weight_kernels(cfg, shape)) {
    if (k.cls != KernelClass::gemm) continue;
    const std::int64_t tokens = k.shape[2];
    w.linear_inputs += k.count * tokens * k.shape[0] * shape.dtype_bytes;
    w.output_grads += k.count * tokens * k.shape[1] * shape.dtype_bytes;
  }
  return w;
}

std::int64_t layer_backward_working_set_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                              RecomputePolicy policy) {
  const std::int64_t widest = std::max({cfg.hidden, cfg.effective_ffn(), cfg.q_width()});
  std::int64_t bytes = 2 * shape.tokens() * widest * shape.dtype_bytes;
  bytes += attention_workspace_bytes(cfg, shape, AttentionImpl::kFused);
  if (policy == RecomputePolicy::kFull) {
    bytes += layer_stored_activation_bytes(cfg, shape, RecomputePolicy::kSelective);
  } else if (policy == RecomputePolicy::kSelectiveOp) {
    // The recomputed tensors the backward reads besides the saved ones: what kNone stores and
    // op-level SAC does not (the block input is in both).
    bytes += layer_stored_activation_bytes(cfg, shape, RecomputePolicy::kNone) -
             layer_stored_activation_bytes(cfg, shape, RecomputePolicy::kSelectiveOp);
  }
  return bytes;
}

std::int64_t head_working_set_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                    LossKernel loss) {
  const std::int64_t fp32 = loss == LossKernel::kInPlace ? 0 : kFp32;
  return shape.tokens() * cfg.vocab * (shape.dtype_bytes + fp32);
}

StateBytesPerParam state_bytes_per_param(std::int64_t dtype_bytes) {
  StateBytesPerParam s;
  s.weights = dtype_bytes;
  return s;
}

}  // namespace tawpipe::model
