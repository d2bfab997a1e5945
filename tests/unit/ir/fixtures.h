/// \file
/// Small hand-built valid programs for the IR tests, plus helpers to break them.
#pragma once

#include "common/ir/program.h"

namespace tawpipe::ir::testing {

/// 2 ranks, 2 layers, pipeline (GPipe order): r0 holds layer 0 and the embedding, r1 layer 1
/// and the head (tied embedding: both hold weights[-1,0) and all-reduce its gradient).
/// Samples 0 and 1 pass activation / activation-gradient by send/recv.
Program pipeline_program();

/// 2-rank data parallel: both hold weights[0,2) and the embedding; one sample each; layer
/// gradient reduced to r0 then broadcast back; embedding gradient all-reduced.
Program data_parallel_program();

/// 2-rank FSDP: layers [0,1) and [1,2) sharded in 2 pieces; all_gather before forward and
/// backward, reduce_scatter after backward, optimizer on the own piece.
Program fsdp_program();

struct WeightPassingOptions {
  bool send_gradient_twice = false;  ///< r0 sends the layer-1 gradient twice, r1 adds both
};
/// 2-rank weight passing: rank r owns layer r and embeds sample r. Weights are exchanged by a
/// grouped send/recv; the layer-1 gradient goes to its owner by send/recv + accumulate, the
/// layer-0 gradient by reduce.
Program weight_passing_program(const WeightPassingOptions& options = {});

/// The program without op `op` of `rank`: dependencies on it are dropped, later indices shift.
Program delete_op(const Program& program, Rank rank, OpIndex op);

/// The program with every run of consecutive alloc ops (or free ops) of one rank on one stream,
/// where only the run's first op has dependencies, merged into one alloc (free) op listing all
/// their buffers. Dependencies on merged ops point to the merged op; later indices shift.
Program merge_alloc_free_runs(const Program& program);

/// Index of the `nth` (0-based) op of `rank` satisfying `pred`, or kNone.
template <class Pred>
OpIndex find_op(const Program& program, Rank rank, Pred pred, int nth = 0) {
  const auto& ops = program.ranks[static_cast<std::size_t>(rank)].ops;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (pred(ops[i]) && nth-- == 0) return static_cast<OpIndex>(i);
  return kNone;
}

/// Index of the buffer named `name` on `rank`, or kNone.
BufferId buffer_named(const Program& program, Rank rank, const char* name);

}  // namespace tawpipe::ir::testing
