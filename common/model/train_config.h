/// \file
/// What one training iteration processes and how: sequence length, batch sizes, precision,
/// activation recomputation and the optimizer.
///
/// Defaults are the TawPipe paper's headline workload (algorithms.md §6): sequences of 16384
/// tokens, micro-batch 1, global batch 1536 sequences (the code's 64 micro-batches x 24 GPUs),
/// fp16 compute with fp32 master weights and fp32 AdamW (betas 0.9/0.95, weight decay 0.1 as in
/// the authors' `train-tawpipe.py`), activation checkpointing (the code re-runs each shard's
/// forward before its backward: `full`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/model/cost.h"
#include "common/model/precision.h"

namespace tawpipe::model {

/// AdamW hyper-parameters (Loshchilov & Hutter 2019, decoupled weight decay). Only the update
/// rule matters to the simulator (its cost); the host executor uses the values.
struct AdamWConfig {
  double lr = 3.0e-4;  ///< assumption: not recovered from the paper; LLaMA-2 7B/13B used 3e-4
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1.0e-8;  ///< PyTorch's default
  double weight_decay = 0.1;

  friend bool operator==(const AdamWConfig&, const AdamWConfig&) = default;
};

/// One iteration's workload. Give `micro_batches` (per data-parallel worker), `global_batch`, or
/// both (then they must agree); 0 means "not given". `resolve_batch` turns it into concrete counts
/// once the schedule knows how many data-parallel workers it has.
struct TrainConfig {
  std::int64_t seq_len = 16384;        ///< tokens per sequence
  std::int64_t micro_batch_size = 1;   ///< sequences per micro-batch
  std::int64_t micro_batches = 0;      ///< micro-batches per step per worker; 0 = from global_batch
  std::int64_t global_batch = 1536;    ///< sequences per step over all workers; 0 = from the above
  DType compute_dtype = DType::kFp16;  ///< weights and activations during forward/backward
  DType master_dtype = DType::kFp32;   ///< master weights, gradients at the step, AdamW moments
  RecomputePolicy recompute = RecomputePolicy::kFull;
  LossKernel loss_kernel = LossKernel::kFusedFp32;  ///< the loss's T x V memory (memory.h)
  AdamWConfig optimizer;
  std::uint64_t seed =
      1234;  ///< data and initialisation seed (executors), explicit for determinism

  /// The micro-batch shape the cost formulas take: micro_batch_size x seq_len at compute width.
  MicroBatchShape shape() const {
    return MicroBatchShape{micro_batch_size, seq_len, dtype_bytes(compute_dtype)};
  }

  friend bool operator==(const TrainConfig&, const TrainConfig&) = default;
};

/// Checks ranges: seq_len, micro_batch_size > 0; micro_batches, global_batch >= 0 and not both 0;
/// master_dtype fp32 (the only supported); lr > 0, 0 <= beta < 1, eps > 0, weight_decay >= 0.
/// The error's key_path names the field (`seq_len`, `optimizer.beta2`, ...).
Status validate(const TrainConfig& cfg);

/// Concrete batch counts for a given number of data-parallel workers.
struct ResolvedBatch {
  std::int64_t workers = 0;           ///< data-parallel workers the batch is split over
  std::int64_t micro_batch_size = 0;  ///< sequences per micro-batch
  std::int64_t micro_batches = 0;     ///< per worker per step
  std::int64_t global_batch = 0;      ///< workers * micro_batches * micro_batch_size

  friend bool operator==(const ResolvedBatch&, const ResolvedBatch&) = default;
};

/// Splits the global batch over `workers` data-parallel workers "as the schedule sees them"
/// (TawPipe/WeiPipe/FSDP: every GPU; 1F1B: the number of pipeline replicas). Errors when
/// global_batch is not a multiple of workers * micro_batch_size (the message suggests the nearest
/// valid global batches and micro-batch counts), when given micro_batches disagree with
/// global_batch, or when `validate` fails. Precondition: workers > 0.
Expected<ResolvedBatch> resolve_batch(const TrainConfig& cfg, std::int64_t workers);

/// Sets one field from text, as `--set train.KEY=VALUE` (prefix stripped). Keys: seq_len,
/// micro_batch_size, micro_batches, global_batch, compute_dtype, master_dtype, recompute, seed,
/// optimizer.lr, optimizer.beta1, optimizer.beta2, optimizer.eps, optimizer.weight_decay. Unknown
/// keys get a "did you mean"; on error `cfg` is unchanged.
Status apply_train_override(TrainConfig& cfg, std::string_view key, std::string_view value);

/// The keys `apply_train_override` accepts, in canonical order.
const std::vector<std::string>& train_keys();

/// One-line summary for report headers and the IR header: `seq 16384, micro-batch 1 x 64, global
/// 1536, fp16/fp32, recompute full, adamw lr 0.0003`. Micro-batches shown only when set.
std::string summary(const TrainConfig& cfg);

}  // namespace tawpipe::model
