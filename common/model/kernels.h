/// \file
/// The kernel catalogue: every IR compute op expanded into the kernels that really run for the
/// model kind, each with its class (kernel_class.h), shape, FLOPs and bytes. The per-op-class
/// totals of cost.h are sums over these lists (cost.h's functions are built from them), so the
/// simulator's per-kernel model, the executors and the reports count the same work.
///
/// One decoder layer, forward (T = batch * seq tokens, H hidden, F MLP width, qw = heads * d,
/// kvw = kv_heads * d):
///
///   LLaMA (RMSNorm, RoPE, SwiGLU)          GPT (LayerNorm, learned positions, GELU, biases)
///   attn_norm      norm  [T, H]            attn_norm      norm  [T, H]
///   qkv_gemm       gemm  T x (qw+2kvw) x H qkv_gemm       gemm  T x (qw+2kvw) x H
///   rope           rope  [T, qw+kvw]         qkv_bias     residual (fused epilogue)
///   attention      attention_fwd           attention      attention_fwd
///   o_proj_gemm    gemm  T x H x qw        o_proj_gemm    gemm  T x H x qw
///   attn_residual  residual [T, H]           o_proj_bias  residual (fused)
///   mlp_norm       norm  [T, H]            attn_residual  residual [T, H]
///   gate_up_gemm   gemm  T x 2F x H        mlp_norm       norm  [T, H]
///   swiglu         activation [T, F]       up_gemm        gemm  T x F x H (+ up_bias fused)
///   down_gemm      gemm  T x H x F         gelu           activation [T, F]
///   mlp_residual   residual [T, H]         down_gemm      gemm  T x H x F (+ down_bias fused)
///                                          mlp_residual   residual [T, H]
///
/// Backward runs the list in reverse; every GEMM y = x W (x: T x in, W: in x out) becomes
///   *_dgrad  gemm  T x in x out    dx = dy W^T         (input gradient:  list B)
///   *_wgrad  gemm  in x out x T    dW = x^T dy         (weight gradient: list W)
/// with biases' gradients fused into the wgrad epilogue (list W); attention_bwd, the norms'
/// backward (dx and dgamma in one kernel), rope, activation and residual backward are in B.
///
/// **Split backward (zero-bubble schedules).** `layer_backward_input_kernels` (B) and
/// `layer_backward_weight_kernels` (W) partition `layer_backward_kernels` exactly: B holds
/// everything on the critical path to the previous layer's activation gradient, W only the
/// weight-gradient GEMMs (and fused bias gradients). Cost a split backward with
/// `cost.h`'s `layer_backward_input_cost` / `layer_backward_weight_cost`.
///
/// Recomputation replays forward kernels (flagged `recompute`): selective = the attention core,
/// full = the whole forward list. The head is final norm + LM-head GEMM + softmax cross-entropy
/// (and their backward), the embedding a gather (forward) / scatter-add (backward), the
/// optimizer one fused AdamW kernel over the shard, a gradient accumulation one add kernel,
/// and casts / flatten / unflatten / weight copies a `copy` kernel.
///
/// Byte and FLOP conventions are cost.h's (read every operand once, write every output once,
/// compute-dtype width; FLOPs of element-wise kernels per element as stated in kernels.cpp).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "common/model/kernel_class.h"
#include "common/model/model.h"
#include "common/model/precision.h"

namespace tawpipe::model {

struct MicroBatchShape;

/// One kernel (or `count` identical kernels) of a compute op.
///
/// `shape` by class:
///   gemm                      {m, n, k, batch}: batch x (m x k) . (k x n); batch >= 1
///   attention_fwd, _bwd       {batch, heads, seq, head_dim}; `causal` says the mask
///   memory-bound classes      {rows, width, 0, 0}: rows x width elements (the width is the
///                             reduction dimension of norms and of the loss)
struct Kernel {
  std::string name;  ///< catalogue name, e.g. "qkv_gemm", "qkv_gemm_dgrad", "attn_norm"
  KernelClass cls = KernelClass::gemm;
  std::int64_t count = 1;  ///< identical kernels this row stands for (e.g. layers of an op)
  std::array<std::int64_t, 4> shape{};
  bool causal = false;     ///< attention: causal mask
  bool fused = false;      ///< runs in another kernel's epilogue: no launch, no time of its own
  bool recompute = false;  ///< replays forward work before a backward (HFU, not MFU)
  double flops = 0.0;      ///< per kernel (multiply-add = 2)
  double bytes = 0.0;      ///< per kernel, memory traffic
  friend bool operator==(const Kernel&, const Kernel&) = default;
  friend auto operator<=>(const Kernel&, const Kernel&) = default;
};

using KernelList = std::vector<Kernel>;

// Decoder layer (one layer, count = 1). Preconditions: validate(cfg).ok(), shape fields > 0.

/// The forward list of the file comment.
KernelList layer_forward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);
/// B: input-gradient part of the backward (dgrad GEMMs, attention and element-wise backward).
KernelList layer_backward_input_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);
/// W: weight-gradient part of the backward (wgrad GEMMs, fused bias gradients).
KernelList layer_backward_weight_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);
/// The full backward: B and W interleaved in execution order (each GEMM's dgrad then wgrad).
KernelList layer_backward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);
/// What `policy` replays before the backward (flagged `recompute`).
KernelList layer_recompute_kernels(const ModelConfig& cfg, const MicroBatchShape& shape,
                                   RecomputePolicy policy);

/// What a deferred W (zero-bubble pipelines) re-runs before its wgrad GEMMs: it keeps its
/// block's input activation instead of the first layer's attention-norm output, which has the
/// same T x H size and is what the first wgrad GEMM reads (schedules/pipeline.h), so it applies
/// that norm again: the attention norm's forward, once per block, flagged `recompute`.
KernelList weight_gradient_recompute_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);

/// Final norm, LM-head GEMM (T x V x H), softmax cross-entropy forward.
KernelList head_forward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);
/// Loss gradient, LM-head dgrad and wgrad, final norm backward.
KernelList head_backward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);
/// Token-embedding gather (with the learned-position add fused in).
KernelList embedding_forward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);
/// Scatter-add into the embedding (and position) gradient rows.
KernelList embedding_backward_kernels(const ModelConfig& cfg, const MicroBatchShape& shape);

/// One fused AdamW kernel over `params` parameters (fp32 master, gradient, moments; writes the
/// compute-dtype weights when `compute_dtype_bytes` < 4).
KernelList optimizer_kernels(std::int64_t params, std::int64_t compute_dtype_bytes);
/// A gradient accumulation: one element-wise add of `elements` values (reads 2, writes 1).
KernelList accumulate_kernels(std::int64_t elements, std::int64_t element_bytes);
/// A cast, flatten/unflatten or weight/gradient memcpy of `bytes` (reads and writes them).
KernelList copy_kernels(std::int64_t bytes);

/// `list` with every count multiplied by `times` (>= 0).
KernelList repeated(KernelList list, std::int64_t times);

}  // namespace tawpipe::model
