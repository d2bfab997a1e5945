/// \file
/// Internals shared by the generators (not part of the public API): the resolved sizes of one
/// run (`Context`), option parsing, cost conversion, owned-block declaration and an `Emitter`
/// that wraps the IR builder with the bookkeeping every generator needs (buffer reuse after
/// free, small dependency lists).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ir/builder.h"
#include "common/model/cost.h"
#include "common/model/memory.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules::detail {

/// Sizes every generator derives from its input. Layers are int32 because the IR stores them so.
struct Context {
  const ScheduleInput* input = nullptr;
  std::string method;                 ///< registry name, for messages
  std::int32_t world = 0;             ///< ranks in the program
  std::int32_t dp = 1;                ///< data-parallel replicas
  std::int32_t replica_ranks = 0;     ///< world / dp
  std::int32_t layers = 0;            ///< decoder layers L
  std::int64_t layer_params = 0;      ///< phi
  std::int64_t embedding_params = 0;  ///< every non-decoder parameter (the kEmbeddingLayer block)
  std::int64_t weight_bytes = 2;      ///< compute dtype width
  model::MicroBatchShape shape;
  model::ResolvedBatch batch;          ///< micro-batches per worker (rank, or pipeline for 1f1b)
  std::uint64_t activation_bytes = 0;  ///< one boundary activation: b*s*H*dtype
  /// Ranks whose ops are stored: replica 0's with ScheduleInput::replica_only and dp > 1 (the
  /// program is then replica-compact), else 0 (every rank).
  std::int32_t stored_ranks = 0;
};

/// Worker count of the methods in which every rank trains its own micro-batches (TawPipe,
/// WeiPipe, FSDP): the whole world, whatever dp.
inline std::int64_t every_rank(std::int32_t world, std::int32_t /*dp*/) {
  return world;
}

/// Validates model, training config, dp and rank count, and resolves the batch over `workers`
/// data-parallel workers (a function of world and dp, given by the method).
Expected<Context> make_context(std::string method, const ScheduleInput& input,
                               std::int64_t (*workers)(std::int32_t world, std::int32_t dp));

/// Errors on option keys not in `known`.
Status check_options(const Context& ctx, std::initializer_list<std::string_view> known);
/// The option `key`, or `fallback` when absent.
std::string option(const Context& ctx, std::string_view key, std::string_view fallback);
/// An on/off option.
Expected<bool> on_off_option(const Context& ctx, std::string_view key, bool fallback);

/// The program header for this run.
ir::Header make_header(const Context& ctx, std::string_view recompute);

/// model::OpCost (+ recomputation, + transient workspace) as an ir::Cost.
ir::Cost to_ir(const model::OpCost& cost, const model::OpCost& recompute = {},
               std::uint64_t workspace_bytes = 0);
/// LM head + loss forward and backward of one micro-batch, with the logits and fp32 softmax as its
/// transient workspace (model::head_working_set_bytes).
ir::Cost head_cost(const Context& ctx);
/// Element-wise sum of `elements` values of `element_bytes` each (accumulate ops).
ir::Cost accumulate_cost(std::int64_t elements, std::int64_t element_bytes);

/// Divisors of n in ascending order (for "valid settings" suggestions).
std::vector<std::int64_t> divisors(std::int64_t n);
/// "a, b, c" of numbers.
std::string join_numbers(const std::vector<std::int64_t>& values);

/// Weights block identities (program.h content rules).
ir::TensorRef weights_ref(std::int32_t begin, std::int32_t end, std::int32_t piece = 0,
                          std::int32_t pieces = 1);
ir::TensorRef embedding_ref(std::int32_t piece = 0, std::int32_t pieces = 1);

/// Up to 8 dependencies; kNone entries are dropped, so callers can pass "maybe" ops.
class Deps {
 public:
  Deps() = default;
  Deps(std::initializer_list<ir::OpIndex> ops) {
    for (ir::OpIndex op : ops)
      add(op);
  }
  void add(ir::OpIndex op) {
    if (op == ir::kNone) return;
    for (std::size_t i = 0; i < n_; ++i) {
      if (v_[i] == op) return;
    }
    assert(n_ < v_.size());
    v_[n_++] = op;
  }
  std::span<const ir::OpIndex> span() const { return {v_.data(), n_}; }

 private:
  std::array<ir::OpIndex, 8> v_{};
  std::size_t n_ = 0;
};

/// The ProgramBuilder plus per-buffer "last free" tracking: re-allocating a buffer that was freed
/// on another stream must wait for that free, which `alloc` adds automatically.
class Emitter {
 public:
  /// `stored_ranks`: see ir::ProgramBuilder (0: every rank is stored). Ranks not stored only
  /// count their ops and buffers here too.
  Emitter(ir::Header header, std::int32_t ranks, std::int32_t stored_ranks = 0);

  ir::ProgramBuilder& builder() { return b_; }
  ir::StreamId stream(std::string_view name) { return b_.stream(name); }

  ir::BufferId buffer(ir::Rank rank, std::string name, std::uint64_t bytes, ir::BufferRole role,
                      bool persistent, ir::TensorRef initial = {});
  /// alloc, depending on `deps` and on the previous free of the same buffer.
  ir::OpIndex alloc(ir::Rank rank, ir::StreamId stream, ir::BufferId buf, Deps deps = {});
  ir::OpIndex free(ir::Rank rank, ir::StreamId stream, ir::BufferId buf, Deps deps = {});
  /// One alloc (free) op for several buffers released or acquired together.
  ir::OpIndex alloc(ir::Rank rank, ir::StreamId stream, std::initializer_list<ir::BufferId> bufs,
                    Deps deps = {});
  ir::OpIndex free(ir::Rank rank, ir::StreamId stream, std::initializer_list<ir::BufferId> bufs,
                   Deps deps = {});
  ir::OpIndex alloc(ir::Rank rank, ir::StreamId stream, std::span<const ir::BufferId> bufs,
                    Deps deps = {});
  ir::OpIndex free(ir::Rank rank, ir::StreamId stream, std::span<const ir::BufferId> bufs,
                   Deps deps = {});

  ir::CostId cost(const ir::Cost& c) { return b_.cost(c); }
  ir::Program finish() && { return std::move(b_).finish(); }

 private:
  ir::ProgramBuilder b_;
  std::vector<std::vector<ir::OpIndex>> last_free_;  ///< [rank][buffer], stored ranks only
};

/// The persistent state of one owned block on one rank: compute-dtype weights, fp32 master copy,
/// AdamW moments and the gradient accumulator (starts empty).
struct Owned {
  ir::BufferId weights = ir::kNone;
  ir::BufferId master = ir::kNone;
  ir::BufferId state = ir::kNone;
  ir::BufferId grad = ir::kNone;
  std::int32_t layer_begin = 0;  ///< kEmbeddingLayer for the embedding block
  std::int32_t layer_end = 0;
  std::int64_t params = 0;  ///< parameters in this rank's copy or piece
  std::uint64_t weight_bytes = 0;
  std::uint64_t grad_bytes = 0;
};

/// Declares the four buffers of an owned block named `prefix` (`w.<prefix>`, ...).
Owned declare_owned(Emitter& e, ir::Rank rank, const std::string& prefix, ir::TensorRef block,
                    std::int64_t params, std::int64_t weight_bytes_per_param,
                    std::int64_t grad_bytes_per_param);

/// AdamW on an owned block: reads its complete gradient, updates weights, master and moments.
ir::OpIndex emit_optimizer(Emitter& e, ir::Rank rank, ir::StreamId stream, const Owned& block,
                           std::int64_t compute_dtype_bytes, Deps deps);

/// The communicator joining position `local` of every data-parallel replica (replicas are
/// contiguous blocks of `replica_size` ranks), named `<prefix><local>`: where each owned block's
/// gradient is all-reduced across replicas before the optimizer step.
ir::CommId replica_peers(Emitter& e, const Context& ctx, std::int32_t replica_size,
                         std::int32_t local, const std::string& prefix);

/// In-place all-reduce of `block`'s gradient on `comm`.
ir::OpIndex all_reduce_grad(Emitter& e, ir::Rank rank, ir::StreamId stream, ir::CommId comm,
                            const Owned& block, Deps deps);

}  // namespace tawpipe::schedules::detail
