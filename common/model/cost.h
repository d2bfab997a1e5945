/// \file
/// FLOPs and memory traffic of every compute op class, for forward and backward, per decoder
/// layer, LM head, embedding and optimizer step; model FLOPs for MFU (memory: memory.h).
///
/// These formulas are the single source for both the simulator's compute model and the
/// executor's kernels (the IR carries an `OpCost` on every compute op), so a measured-vs-predicted
/// gap is never a difference in accounting.
///
/// Conventions (all functions):
///  - One micro-batch of `batch` sequences of `seq_len` tokens, T = batch * seq_len tokens;
///    activations, weights and their gradients are in the compute dtype (`dtype_bytes` wide).
///  - FLOPs: a multiply-add is 2 FLOPs. A GEMM of an (m x k) by (k x n) matrix costs 2*m*k*n.
///  - Bytes are a memory-traffic estimate, not a footprint: every operand of an op is read once
///    and every output written once, at the compute dtype width (fp32 where stated: attention
///    log-sum-exp, loss, optimizer state). GEMMs are counted one at a time (Q, K, V projections
///    each read their input), biases are fused into the GEMM epilogue (their FLOPs are counted as
///    element-wise, their traffic is only the bias vector), and no cache reuse across ops.
///  - Attention is causal and fused (FlashAttention-2, Dao 2023, arXiv 2307.08691): forward
///    4 * s^2 * d_head * heads FLOPs per sequence for the full mask, halved for the causal mask
///    (FlashAttention-2's own convention, §4.1); the s x s score matrix never reaches memory.
///    Backward = 2.5 x forward FLOPs (five s x s matmuls against two: the backward recomputes
///    the scores), again per FlashAttention-2.
///  - Backward GEMMs = 2 x forward (one GEMM for the input gradient, one for the weight gradient),
///    and 2 x forward bytes (each reads two operands and writes one of the forward's sizes).
///  - Element-wise ops (norms, RoPE, residual adds, activation functions, bias adds, softmax of
///    the loss) use the per-element FLOP counts documented in cost.cpp; they matter for bytes,
///    hardly for FLOPs.
///  - Recomputation is not part of `layer_backward_cost`; schedules add `layer_recompute_cost`
///    (or the compute op's kind says "recompute") so model FLOPs and hardware FLOPs stay apart.
#pragma once

#include <cstdint>

#include "common/model/kernels.h"
#include "common/model/model.h"
#include "common/model/precision.h"

namespace tawpipe::model {

/// FLOPs and bytes of a compute op, split by op class (GEMM, fused attention, element-wise), the
/// classes whose achieved rates the simulator's compute model and calibration distinguish, and
/// the kernels behind them (kernels.h). The functions below build `kernels` from the catalogue
/// and the six totals as their sums (gemm -> gemm; attention_fwd/_bwd -> attention; every other
/// class -> element-wise), so the two always agree.
struct OpCost {
  double gemm_flops = 0.0;
  double attention_flops = 0.0;
  double elementwise_flops = 0.0;
  double gemm_bytes = 0.0;
  double attention_bytes = 0.0;
  double elementwise_bytes = 0.0;
  KernelList kernels;  ///< may be empty for hand-built costs (then only the totals are known)

  /// Sum over the three classes.
  double total_flops() const { return gemm_flops + attention_flops + elementwise_flops; }
  double total_bytes() const { return gemm_bytes + attention_bytes + elementwise_bytes; }

  /// Adds the totals and appends the kernels.
  OpCost& operator+=(const OpCost& o);
  /// Scales every total and every kernel count (e.g. by a number of layers or micro-batches).
  /// Precondition: k >= 0, and k is a whole number when there are kernels.
  OpCost& operator*=(double k);
  friend OpCost operator+(OpCost a, const OpCost& b) { return a += b; }
  friend OpCost operator*(OpCost a, double k) { return a *= k; }
  friend OpCost operator*(double k, OpCost a) { return a *= k; }
  friend bool operator==(const OpCost&, const OpCost&) = default;
};

/// The shape of one micro-batch as the cost formulas see it.
struct MicroBatchShape {
  std::int64_t batch = 1;        ///< sequences in the micro-batch (> 0)
  std::int64_t seq_len = 0;      ///< tokens per sequence (> 0)
  std::int64_t dtype_bytes = 2;  ///< compute dtype width: 2 (bf16/fp16) or 4 (fp32)

  /// batch * seq_len.
  std::int64_t tokens() const { return batch * seq_len; }
};

// Per decoder layer. Preconditions for all: validate(cfg).ok(), shape fields > 0.

/// One decoder layer forward: pre-norm, Q/K/V/O projections, RoPE (if used), causal fused
/// attention, two residual adds, pre-norm, MLP.
OpCost layer_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape);

/// One decoder layer backward (input and weight gradients), not including any recompute.
/// GEMMs 2x forward, attention 2.5x forward (FlashAttention-2), element-wise per cost.cpp.
OpCost layer_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape);
/// The per-op-class totals of `kernels` (count x per-kernel FLOPs and bytes), with the kernels.
OpCost cost_of(KernelList kernels);

/// The input-gradient half (B of a zero-bubble pipeline, Qi et al., ICLR 2024, arXiv 2401.10241
/// §2): the GEMMs that produce the gradient w.r.t. each GEMM input (= `layer_forward_cost`'s
/// GEMMs once), the whole attention backward and every element-wise backward (norms, RoPE,
/// residual joins, SwiGLU/GELU). Recomputation is not included, as above. Built from
/// kernels.h's layer_backward_input_kernels.
OpCost layer_backward_input_cost(const ModelConfig& cfg, const MicroBatchShape& shape);

/// The weight-gradient half (W): the GEMMs dW = X^T dY of every weight matrix (again the
/// forward's GEMMs once) with the bias gradients fused in their epilogues
/// (layer_backward_weight_kernels). layer_backward_input_cost + layer_backward_weight_cost ==
/// layer_backward_cost exactly.
OpCost layer_backward_weight_cost(const ModelConfig& cfg, const MicroBatchShape& shape);

// What a deferred W keeps alive between B and W: memory.h's layer_weight_gradient_bytes.

/// Extra forward work re-run before a layer's backward under `policy`: the whole
/// `layer_forward_cost` for kFull; the attention core for kSelective (Megatron re-runs it; with
/// FlashAttention its backward already recomputes the scores, so this is the forward kernel);
/// for kSelectiveOp the forward less its saved ops (kernels.cpp layer_op_sac_recompute); nothing
/// for kNone.
OpCost layer_recompute_cost(const ModelConfig& cfg, const MicroBatchShape& shape,
                            RecomputePolicy policy);

/// Final norm + LM head GEMM (T x H by H x V) + softmax cross-entropy (fp32 loss per token).
OpCost head_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape);
/// Backward of the above: d(logits) = softmax - one-hot, LM head input and weight gradients,
/// final norm backward.
OpCost head_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape);

/// Token-embedding gather (+ learned position add). No FLOPs except the position add.
OpCost embedding_forward_cost(const ModelConfig& cfg, const MicroBatchShape& shape);
/// Scatter-add of the output gradient into the embedding (and position) gradient rows.
OpCost embedding_backward_cost(const ModelConfig& cfg, const MicroBatchShape& shape);

/// One AdamW step over `params` parameters with fp32 master weights, fp32 gradients and fp32
/// moments: reads param, grad, m, v (16 B), writes param, m, v (12 B), and writes the compute-dtype
/// copy of the weights when `compute_dtype_bytes` < 4. 14 FLOPs per parameter (moment updates,
/// bias-corrected step, decoupled weight decay). All traffic counts as element-wise.
OpCost optimizer_step_cost(std::int64_t params, std::int64_t compute_dtype_bytes);

// Activation memory, workspaces and training-state bytes: common/model/memory.h.

// FLOPs per token, for MFU and HFU.

/// Whether attention FLOPs count the full s x s mask or only its causal half.
enum class AttentionMask { kCausal, kFull };

/// Model FLOPs per trained token (forward + backward = 3 x forward), split so reports can show
/// either convention. This project's default, used for MFU:
///   dense     = 6 * (L * layer_gemm_params + V * H)   [decoder matrices and the LM head GEMM;
///               embedding lookups, norms and biases are not matmul work and are left out]
///   attention = 6 * L * s * heads * head_dim for kCausal (= 6*L*H*s when heads*d = H),
///               12 * L * s * heads * head_dim for kFull (the PaLM/Megatron "12*L*H*s" term).
/// Versus hardware.md's "6*P_dec + 12*L*H*s": same up to the LM head (included here because it is
/// real GEMM work: 5 % of the H = 1024 paper model) and the causal halving (stated in reports).
struct FlopsPerToken {
  double dense_flops = 0.0;
  double attention_flops = 0.0;
  double total_flops() const { return dense_flops + attention_flops; }
};
FlopsPerToken model_flops_per_token(const ModelConfig& cfg, std::int64_t seq_len,
                                    AttentionMask mask = AttentionMask::kCausal);

/// Hardware FLOPs per token for HFU: GEMM + attention FLOPs that the kernels execute, i.e. the sum
/// of `layer_forward_cost`, `layer_backward_cost` (attention backward 2.5x), `layer_recompute_cost`
/// under `policy`, and the head forward/backward, divided by the tokens (element-wise excluded,
/// causal attention).
double hardware_flops_per_token(const ModelConfig& cfg, std::int64_t seq_len,
                                RecomputePolicy policy);

}  // namespace tawpipe::model
