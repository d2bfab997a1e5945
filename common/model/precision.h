/// \file
/// Numeric precision and activation-recomputation policy: the two small vocabularies shared by
/// the cost formulas (`cost.h`) and the training configuration (`train_config.h`).
///
/// Text forms (CLI, YAML, reports) are lower case: `bf16`, `fp16`, `fp32`; `none`, `selective`,
/// `full`. Parsing is case-sensitive and rejects anything else with a "did you mean".
#pragma once

#include <cstdint>
#include <string_view>

#include "common/error.h"

namespace tawpipe::model {

/// A floating-point storage/compute type.
enum class DType { kBf16, kFp16, kFp32 };

/// Width of one element in bytes: 2 for bf16 and fp16, 4 for fp32.
std::int64_t dtype_bytes(DType dtype);

/// `bf16`, `fp16` or `fp32`.
std::string_view to_string(DType dtype);

/// Parses `bf16`, `fp16` or `fp32`. Errors carry only a message ("unknown dtype 'bf61' (did you
/// mean 'bf16'?); known: bf16, fp16, fp32"); the caller adds file/line/key.
Expected<DType> parse_dtype(std::string_view text);

/// How activations are kept between a layer's forward and its backward.
enum class RecomputePolicy {
  /// Every intermediate tensor is kept, including the attention-score matrix of eager (non-fused)
  /// attention.
  kNone,
  /// Megatron-LM "selective" recompute (Korthikanti et al. 2022): the attention core (scores,
  /// softmax) is recomputed in backward, everything else is kept. FlashAttention always works this
  /// way, so with FlashAttention `kNone` and `kSelective` cost the same memory.
  kSelective,
  /// Full activation checkpointing at layer (or shard) boundaries: only the layer input is kept;
  /// the whole layer forward is re-run before its backward.
  kFull,
  /// torchtitan's per-operator selective activation checkpointing (`[activation_checkpoint]
  /// mode = "selective"`, `selective_ac_option = "op"`): each block runs under
  /// torch.utils.checkpoint with a policy that saves the outputs of the ops in a save list and
  /// recomputes everything else (pytorch/torchtitan,
  /// torchtitan/distributed/activation_checkpoint.py
  /// `_apply_op_sac`; save list `_op_sac_save_list` in torchtitan/models/llama3/infra/
  /// parallelize.py, commit 018740b). The list has aten.mm and the SDPA kernels; of the mm ops
  /// every second one (2nd, 4th, ...) is recomputed ("Saves output of all compute ops, except
  /// every second mm"). The block's projections run in the order of torchtitan's Llama, wq, wk,
  /// wv, wo, w1, w3, w2, so the outputs of wq, wv, w1, w2 and of attention (O and its fp32
  /// log-sum-exp) are kept with the block input; the norms, wk, RoPE, wo, the residual adds, w3
  /// and SwiGLU are recomputed. A GELU MLP (up, down) is counted by the same rule (wq, wv, up
  /// kept). Not Korthikanti's `selective`: memory.h has both.
  kSelectiveOp,
};

/// How the LM head's softmax cross-entropy holds its T x V tensors (memory.h
/// head_working_set_bytes).
enum class LossKernel {
  /// The logits at the compute dtype plus one fp32 T x V tensor that holds the softmax and, in
  /// place, d(logits) (Megatron's vocab-parallel cross-entropy on logits.float()).
  kFusedFp32,
  /// d(logits) overwrites the compute-dtype logits and no fp32 T x V tensor exists: llm.c's
  /// fused classifier (llmc/fused_classifier.cuh, "replaces logits with logit gradients").
  kInPlace,
};

/// `fused-fp32` or `in-place`.
std::string_view to_string(LossKernel kernel);

/// Parses `fused-fp32` or `in-place`, with a "did you mean" on error (message only).
Expected<LossKernel> parse_loss_kernel(std::string_view text);

/// `none`, `selective`, `full` or `selective-op`.
std::string_view to_string(RecomputePolicy policy);

/// Parses `none`, `selective`, `full` or `selective-op`, with a "did you mean" on error (message
/// only).
Expected<RecomputePolicy> parse_recompute(std::string_view text);

}  // namespace tawpipe::model
