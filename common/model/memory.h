/// \file
/// Device-memory accounting of one decoder layer and of the training state: what a layer keeps
/// from its forward until its backward (activations), what runs transiently (attention and loss
/// workspaces, the backward's gradient buffers), and how many bytes per parameter the weights,
/// gradients and optimizer state take. The schedules size the IR's buffers from these functions;
/// the simulator's memory model (sim/memory/) adds them up over time.
///
/// Activations follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
/// Transformer Models" (arXiv 2205.05198, §4.1), whose per-layer count with 16-bit activations,
/// eager attention and dropout is
///     s*b*h*(34 + 5*a*s/h) bytes  =  attention 11*s*b*h + 5*a*s^2*b,  MLP 19*s*b*h,  norms 4*s*b*h
/// (s tokens per sequence, b sequences, h hidden, a heads). Our models differ in three documented
/// ways, so this file counts tensor by tensor instead of using the constant 34:
///  1. no dropout: the two 1-byte s*b*h dropout masks and the attention-dropout mask and output
///     (a*s^2*b + 2*a*s^2*b) do not exist;
///  2. fused attention (FlashAttention-2, Dao 2023, arXiv 2307.08691; cuDNN SDPA): the s x s
///     scores never reach memory, neither in the forward nor for the backward. The kernel keeps
///     only its output O and an fp32 log-sum-exp per row and head (4*b*a*s bytes), so there is no
///     s^2 term at any recompute policy. The eager variant (`AttentionImpl::kEager`: softmax output
///     materialised at 16 bit, 2*a*s^2*b) is kept for comparison with the paper;
///  3. GQA, SwiGLU and any F: K and V are kv_width wide; a SwiGLU MLP keeps gate, up and their
///     product (3*T*F; its fused backward recomputes silu), a GELU MLP the GELU input and output.
/// Recomputation (Korthikanti §4.2-4.3): `selective` recomputes the attention core, which drops
/// exactly the s^2 term (so with fused attention it stores what `none` stores and only costs time);
/// `full` keeps only the layer input, 2*s*b*h.
///
/// `selective-op` is torchtitan's per-operator policy instead (precision.h kSelectiveOp): the
/// block input, the outputs of wq, wv, w1 and w2, and attention's O and log-sum-exp, per token
///     p*(H + q_width + kv_width + q_width + F + H) + 4*a bytes (SwiGLU; GELU: p*(H + 2*q_width +
///     kv_width + F) + 4*a).
/// For Llama-3-8B (H 4096, q_width 4096, kv_width 1024, F 14336, 32 heads) that is 2*31744 + 128
/// bytes per token and layer, against 2*69632 + 128 for `none` / `selective` (0.46 x).
#pragma once

#include <cstdint>

#include "common/model/cost.h"
#include "common/model/model.h"
#include "common/model/train_config.h"

namespace tawpipe::model {

/// How the attention core runs. Every compute backend of this project uses a fused kernel
/// (cuDNN SDPA or our tiled online-softmax kernel; the host backend computes block-wise), so
/// kFused is what schedules size; kEager exists for the paper's formula.
enum class AttentionImpl { kFused, kEager };

/// Bytes one decoder layer keeps alive between its forward and backward for one micro-batch,
/// split by where Korthikanti et al. count them.
struct LayerActivationBytes {
  std::int64_t norms = 0;           ///< inputs of the two norms (2*T*H*p)
  std::int64_t attention = 0;       ///< QKV input, Q, K, V, attention output (O-projection input)
  std::int64_t attention_core = 0;  ///< softmax output of eager attention (p*a*s^2*b), else 0
  std::int64_t attention_lse = 0;   ///< fused attention's fp32 log-sum-exp (4*b*a*s), else 0
  std::int64_t mlp = 0;             ///< MLP input and intermediates
  std::int64_t layer_input = 0;     ///< kFull, kSelectiveOp: the layer (checkpoint) input T*H*p

  std::int64_t total() const {
    return norms + attention + attention_core + attention_lse + mlp + layer_input;
  }
};

/// What one layer stores under `policy` (file comment). Preconditions: validate(cfg).ok(),
/// shape fields > 0.
LayerActivationBytes layer_activation_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                            RecomputePolicy policy,
                                            AttentionImpl impl = AttentionImpl::kFused);

/// Korthikanti et al.'s closed form for a GPT layer (eager attention, dropout, 4h GELU MLP,
/// 16-bit activations), for tests and documentation: none s*b*h*(34 + 5*a*s/h); selective
/// 34*s*b*h; full 2*s*b*h. Bytes. Precondition: `policy` is one of those three (the paper has
/// no per-operator policy).
std::int64_t korthikanti_layer_bytes(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t a,
                                     RecomputePolicy policy);

/// The attention kernel's own memory besides Q, K, V and O for one layer and micro-batch: fused,
/// the fp32 log-sum-exp (forward output kept for the backward), the backward's fp32
/// D = rowsum(dO * O) (2 * 4*b*a*s bytes) and the backward's fp32 dQ accumulator, 4*b*s*(a*d)
/// bytes: FlashAttention-2's backward (Dao 2023, Algorithm 2: dQ_i accumulated over the key
/// blocks in fp32, `dq_accum` in its code) and cuDNN's fused SDPA backward both keep it; all
/// O(s); eager, the p-byte s x s scores and their gradient, 2*p*a*s^2*b. This is what
/// `tawsim --print-model` shows as the attention workspace.
std::int64_t attention_workspace_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                       AttentionImpl impl = AttentionImpl::kFused);

/// Bytes of one hidden-state tensor per token: H * dtype_bytes. A layer/stage boundary activation
/// of a micro-batch is this times T (algorithms.md §5: a = 2*b*s*H in fp16).
std::int64_t activation_bytes_per_token_boundary(const ModelConfig& cfg, std::int64_t dtype_bytes);

/// layer_activation_bytes(cfg, shape, policy, kFused).total(): what the schedules stash per layer.
std::int64_t layer_stored_activation_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                           RecomputePolicy policy);

/// What a deferred weight-gradient pass (W of a zero-bubble pipeline, Qi et al., ICLR 2024,
/// arXiv 2401.10241 §2) needs of one decoder layer and micro-batch once B has run: for every
/// weight GEMM y = x W the wgrad kernel dW = x^T dy (kernels.h) reads its input x and its output
/// gradient dy, nothing else (bias gradients are column sums of dy in the same kernel; the norms'
/// weight gradients come out of their backward kernels, which are in B). The paper's Megatron
/// implementation keeps exactly these (sail-sg/zero-bubble-pipeline-parallelism,
/// megatron/core/pipeline_parallel/zerobubble/grad_store.py: WeightGradStore.put stores each
/// linear layer's total_input and grad_output until W pops them). Counted from the wgrad
/// kernels' shapes {in, out, T}, T * in * p and T * out * p bytes each:
///   LLaMA (SwiGLU)  x: norm output H (qkv), attention output qw (o_proj), norm output H
///                   (gate_up), SwiGLU product F (down)                      = 2H + qw + F
///                   dy: qw + 2 kvw (qkv), H (o_proj), 2F (gate_up), H (down) = 2H + qw + 2kvw + 2F
///   GPT (GELU)      x: as above with the GELU output F for down             = 2H + qw + F
///                   dy: qw + 2 kvw, H, F (up), H                            = 2H + qw + 2kvw + F
/// per token. For a GPT layer (qw = kvw = H, F = 4H) x + dy = 16 H values = 32 s*b*h bytes, the
/// activation memory Qi et al. list for W (Table 1). Everything else a layer stores (the norms'
/// inputs, Q, K, V, the SwiGLU gate and up / the GELU input, the attention log-sum-exp) is read
/// by B only. Of what `layer_activation_bytes` stores under kNone / kSelective, W keeps exactly
/// `linear_inputs`, and the B-only rest is as large as `output_grads` plus the log-sum-exp (the
/// identity that lets B hand its released bytes to the gradients it creates, pipeline.h).
struct WeightGradientBytes {
  std::int64_t linear_inputs = 0;  ///< x of every weight GEMM
  std::int64_t output_grads = 0;   ///< dy of every weight GEMM
  std::int64_t total() const { return linear_inputs + output_grads; }
};

/// The tensors W reads for one layer (comment above), from layer_backward_weight_kernels.
/// Independent of the recompute policy: under kFull, B recomputes the inputs and W keeps them.
WeightGradientBytes layer_weight_gradient_bytes(const ModelConfig& cfg,
                                                const MicroBatchShape& shape);

/// Transient peak while one layer runs its backward (on top of what is stored): the layer's
/// recomputed activations (kFull: the kSelective set; kSelectiveOp: the kNone set less the
/// kSelectiveOp set; otherwise 0), its gradient buffers (about
/// 2 * T * max(H, F) * p for the largest input/output gradient pair) and the attention workspace.
std::int64_t layer_backward_working_set_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                              RecomputePolicy policy);

/// Transient peak of the LM head + loss for one micro-batch. kFusedFp32: the logits T x V at the
/// compute dtype plus one fp32 T x V tensor that a fused cross-entropy (Megatron's
/// vocab_parallel_cross_entropy; liger/quack-style kernels) uses for the softmax and, in place,
/// for d(logits), T*V*(p + 4) bytes. kInPlace: the logits only, T*V*p, overwritten by d(logits)
/// (llm.c). An eager PyTorch loss that upcasts and saves log_softmax needs more (about T*V*12
/// in its backward; docs/validation.md), not offered.
std::int64_t head_working_set_bytes(const ModelConfig& cfg, const MicroBatchShape& shape,
                                    LossKernel loss = LossKernel::kFusedFp32);

/// Bytes per parameter of the training state with mixed precision and AdamW, as the ZeRO paper
/// counts it (Rajbhandari et al. 2020, arXiv 1910.02054, §3.1: 2 + 2 + K*1 with K = 12 for
/// fp32 master, momentum and variance) and as our schedules declare their buffers.
struct StateBytesPerParam {
  std::int64_t weights = 2;     ///< compute-dtype weights
  std::int64_t gradients = 4;   ///< fp32 gradient accumulator (Megatron's main_grad; FSDP shard)
  std::int64_t optimizer = 12;  ///< fp32 master copy + AdamW moments (4 + 8)
  std::int64_t total() const { return weights + gradients + optimizer; }
};

/// The state per parameter for `dtype_bytes`-wide compute weights (fp32 compute: weights 4).
StateBytesPerParam state_bytes_per_param(std::int64_t dtype_bytes);

}  // namespace tawpipe::model
