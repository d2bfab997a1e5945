/// \file
/// Internals shared by the activation-passing pipeline generators (1F1B, interleaved 1F1B,
/// ZB-H1, ZB-H2): a method only decides each stage's order of compute passes; `emit_pipeline`
/// turns the orders into IR (buffers, P2P, embedding and head, gradient synchronisation,
/// AdamW). Not part of the public API.
///
/// Layout. Each data-parallel replica is a pipeline of P = ranks/dp ranks; with V model chunks
/// per rank (Megatron's virtual pipeline) the model is cut into P*V chunks of L/(P*V) layers and
/// chunk c runs on rank c mod P (rank i holds chunks i, i+P, ..., as in Megatron-LM). The first
/// chunk also runs the embedding, the last chunk the final norm + LM head + loss; their
/// non-decoder block is all-reduced between rank 0 and rank P-1 (tied embeddings).
///
/// Streams: compute; p2p_fwd / p2p_bwd for activations and activation gradients; grad_sync for
/// the end-of-step collectives. With V = 1 each P2P stream holds a rank's receives and sends of
/// that direction in program order, as Megatron's blocking P2P does. With V > 1 the traffic
/// wraps around (rank P-1 feeds rank 0), so receives move to their own streams (p2p_fwd_recv,
/// p2p_bwd_recv), each posted once the compute op before the consuming pass has completed
/// (Megatron posts the next receive while computing): a stream then talks to one peer only,
/// which keeps the program deadlock-free.
///
/// Zero-bubble memory (split backward). Per (chunk, micro-batch) of n layers, with a = one
/// boundary activation, S = model::layer_stored_activation_bytes and X + dY =
/// model::layer_weight_gradient_bytes (W reads the input x and output gradient dy of every
/// weight GEMM, nothing else; memory.h derives them tensor by tensor):
///  - F stores what 1F1B stores, n*S (act_in plus the stash);
///  - after B, only what W reads stays: n*(X + dY). Two of those tensors are boundary buffers:
///    the last layer's down-projection output gradient is the received grad_in, and W keeps
///    act_in in place of the first layer's attention-norm output (same T x H size; W re-applies
///    that norm, model::weight_gradient_recompute_kernels), so the IR's W reads act_in and
///    grad_in as the content rules and the host executor expect (program.h);
///  - W frees the rest.
/// The stash is therefore split by who reads it: `keep` (stored tensors W reads), `reuse` and
/// `b_only` (stored tensors only B reads). B releases its B-only tensors layer by layer as it
/// creates the same layer's output gradients for W; the IR allocates and frees per op, so B writes
/// those gradients into `reuse` (the allocator's reuse of the released blocks), frees `b_only`
/// after it, and allocates `w_new` only for what exceeds the released bytes. The memory model thus
/// sees max(before B, after B) while B runs, as a layer-by-layer release would, plus B's one-layer
/// working set. With kNone / kSelective the B-only tensors are exactly dY plus the attention
/// log-sum-exp per layer (memory.h), so `w_new` is empty and a micro-batch holds n*S until B and
/// n*(S - lse) until W: Qi et al.'s M_W <= M_B (arXiv 2401.10241 §2.1, Table 1). Under kFull
/// only layer inputs are stored and B's recomputation produces X, which W keeps: n*(X + dY) per
/// deferred micro-batch where 1F1B holds n*a, so zero bubble with full recomputation needs more
/// than 1F1B.
#pragma once

#include <cstdint>
#include <vector>

#include "common/error.h"
#include "schedules/detail.h"

namespace tawpipe::schedules::detail {

/// A compute pass of one micro-batch on one model chunk of a stage.
enum class Pass : std::uint8_t {
  forward,          ///< F (embedding first on chunk 0, head + loss after it on the last chunk)
  backward,         ///< fused B + W (1F1B)
  backward_input,   ///< B: input gradient only; keeps alive only what W reads (file comment)
  backward_weight,  ///< W: weight gradient; frees what B left for it
};

struct Step {
  Pass pass = Pass::forward;
  std::int32_t chunk = 0;  ///< model chunk of this rank, 0..V-1
  std::int32_t micro = 0;  ///< micro-batch of the replica, 0..N-1
};

/// Program order of compute passes of every stage: orders[i] is stage i's list. Every (chunk,
/// micro) of a stage has exactly one forward and either one backward or one backward_input
/// followed (later) by one backward_weight.
using StageOrders = std::vector<std::vector<Step>>;

struct PipelineSpec {
  std::int32_t chunks = 1;  ///< V
  /// Zero bubble's synchronous optimizer step (Qi et al. §4 call the alternative post-validation):
  /// every stage all-reduces its fp32 squared gradient norm over the pipeline before AdamW, as
  /// Megatron's gradient clipping and inf/NaN check do, so no stage steps before the whole
  /// pipeline's gradients are final.
  bool sync_optimizer = false;
};

/// P = ctx.replica_ranks stages must split ctx.layers evenly into P*V chunks; otherwise an error
/// listing the dp values that work.
Status check_pipeline_split(const Context& ctx, std::int32_t chunks);

/// Emits the pipeline program of `orders` (the same orders in every replica).
ir::Program emit_pipeline(const Context& ctx, const PipelineSpec& spec, const StageOrders& orders);

/// Bytes of the split backward's stash buffers of one (chunk, micro-batch) of `layers` layers
/// (file comment); act_in and grad_in (`boundary_bytes` each) are not included.
struct SplitStash {
  std::uint64_t keep = 0;    ///< F..W: stored tensors W reads (linear inputs but the first)
  std::uint64_t reuse = 0;   ///< F..W: stored, read only by B, which refills them for W
  std::uint64_t b_only = 0;  ///< F..B: stored, read only by B, freed after B
  std::uint64_t w_new = 0;   ///< B..W: what B leaves for W beyond `reuse`
};
SplitStash split_stash(const model::ModelConfig& cfg, const model::MicroBatchShape& shape,
                       model::RecomputePolicy policy, std::int32_t layers,
                       std::uint64_t boundary_bytes);

/// Peak number of micro-batches a stage holds at once (forward done, backward or
/// backward_weight not yet), summed over chunks: the activation memory the order needs.
std::int32_t peak_in_flight(const std::vector<Step>& order);

}  // namespace tawpipe::schedules::detail
