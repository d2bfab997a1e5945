// 1F1B pipeline parallelism, as Megatron-LM runs it: "PipeDream-Flush" / non-interleaved 1F1B of
// Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC 2021 (arXiv 2104.04473), §2.2.1; schedule of Megatron-LM
// `forward_backward_pipelining_without_interleaving` (algorithms.md §4).
//
// The schedule in prose. Each data-parallel replica is a pipeline of P = ranks/dp stages; stage
// i holds decoder layers [i*L/P, (i+1)*L/P). Stage 0 also holds the embedding block, stage P-1
// the final norm + LM head; the IR's single non-decoder block (kEmbeddingLayer) therefore lives
// on both, and its gradient is all-reduced between them at the end of the step exactly as
// Megatron all-reduces tied word-embedding gradients. With N micro-batches stage i runs
// min(P-1-i, N) warm-up forwards, then alternates one forward and one backward (steady state),
// then drains the remaining backwards (cool-down). Every forward receives the boundary
// activation from stage i-1 and sends its output to stage i+1; every backward receives the
// activation gradient from stage i+1 and sends its input gradient to stage i-1 (b*s*H elements
// each way per micro-batch and stage boundary). The P2P runs on two comm streams (activations,
// activation gradients) so a stage can overlap them with compute. Recomputation follows
// train.recompute (Megatron's --recompute-activations is `selective`, --recompute-granularity
// full is `full`): what a stage keeps between a micro-batch's forward and backward is its input
// activation plus a stash of the stored per-layer tensors. Gradients accumulate in fp32 main
// grads (Megatron's DDP buffer); with dp > 1 each stage's gradient, and the embedding gradient on
// the first and last stage, is all-reduced across replicas before AdamW.
#include <algorithm>
#include <string>

#include "schedules/detail.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {
namespace {

using detail::Deps;
using ir::BufferRole;
using ir::ComputeKind;
using ir::OpIndex;

std::int64_t pipelines(std::int32_t /*world*/, std::int32_t dp) {
  return dp;
}

/// Per-rank emission state of one stage.
struct Stage {
  ir::Rank rank = 0;
  std::int32_t index = 0;  ///< stage i
  std::int32_t begin = 0, end = 0;
  ir::Rank prev = ir::kNone, next = ir::kNone;  ///< neighbouring stages' ranks
  detail::Owned block;
  detail::Owned emb;  ///< first or last stage only
  bool has_emb = false;
  ir::OpIndex last_compute = ir::kNone;
};

}  // namespace

Expected<ir::Program> generate_1f1b(const ScheduleInput& input) {
  auto ctx_or = detail::make_context("1f1b", input, &pipelines);
  if (!ctx_or.ok()) return ctx_or.error();
  const detail::Context& ctx = *ctx_or;
  TAWPIPE_TRY(detail::check_options(ctx, {}));
  const std::int32_t P = ctx.replica_ranks;
  const std::int32_t L = ctx.layers;
  if (P > L || L % P != 0) {
    std::vector<std::int64_t> ok_dp;
    for (std::int64_t d : detail::divisors(ctx.world)) {
      const std::int64_t p = ctx.world / d;
      if (p <= L && L % p == 0) ok_dp.push_back(d);
    }
    return make_error(
        "1f1b: " + std::to_string(L) + " layers do not split evenly over " + std::to_string(P) +
        " pipeline stages (ranks/dp = " + std::to_string(ctx.world) + "/" + std::to_string(ctx.dp) +
        "); use dp in {" + detail::join_numbers(ok_dp) + "}");
  }
  const std::int32_t N = static_cast<std::int32_t>(ctx.batch.micro_batches);
  const std::int32_t Ls = L / P;
  const model::RecomputePolicy policy = input.train.recompute;
  const model::ModelConfig& mc = input.model;

  detail::Emitter e(detail::make_header(ctx, model::to_string(policy)), ctx.world);
  const ir::StreamId compute = 0;
  const ir::StreamId s_fwd = e.stream("p2p_fwd");
  const ir::StreamId s_bwd = e.stream("p2p_bwd");
  const ir::StreamId s_grad = e.stream("grad_sync");

  const std::uint64_t a = ctx.activation_bytes;
  const auto stored =
      static_cast<std::uint64_t>(Ls * model::layer_stored_activation_bytes(mc, ctx.shape, policy));
  const std::uint64_t stash_bytes = stored > a ? stored - a : 0;
  const auto workspace =
      static_cast<std::uint64_t>(model::layer_backward_working_set_bytes(mc, ctx.shape, policy));
  const ir::CostId c_fwd = e.cost(detail::to_ir(model::layer_forward_cost(mc, ctx.shape) * Ls));
  const ir::CostId c_bwd =
      e.cost(detail::to_ir(model::layer_backward_cost(mc, ctx.shape) * Ls,
                           model::layer_recompute_cost(mc, ctx.shape, policy) * Ls, workspace));
  const ir::CostId c_head = e.cost(detail::to_ir(model::head_forward_cost(mc, ctx.shape) +
                                                 model::head_backward_cost(mc, ctx.shape)));
  const ir::CostId c_emb_f = e.cost(detail::to_ir(model::embedding_forward_cost(mc, ctx.shape)));
  const ir::CostId c_emb_b = e.cost(detail::to_ir(model::embedding_backward_cost(mc, ctx.shape)));

  for (std::int32_t d = 0; d < ctx.dp; ++d) {
    const ir::Rank base = d * P;
    std::vector<ir::Rank> members(static_cast<std::size_t>(P));
    for (std::int32_t i = 0; i < P; ++i)
      members[static_cast<std::size_t>(i)] = base + i;
    const ir::CommId pp = e.builder().communicator("pipeline" + std::to_string(d), members);

    for (std::int32_t i = 0; i < P; ++i) {
      Stage st;
      st.rank = base + i;
      st.index = i;
      st.begin = i * Ls;
      st.end = st.begin + Ls;
      st.prev = i > 0 ? st.rank - 1 : ir::kNone;
      st.next = i + 1 < P ? st.rank + 1 : ir::kNone;
      const ir::Rank r = st.rank;
      st.block = detail::declare_owned(e, r, "stage", detail::weights_ref(st.begin, st.end),
                                       Ls * ctx.layer_params, ctx.weight_bytes, 4);
      st.has_emb = (i == 0 || i == P - 1);
      if (st.has_emb) {
        st.emb = detail::declare_owned(e, r, "emb", detail::embedding_ref(), ctx.embedding_params,
                                       ctx.weight_bytes, 4);
      }
      // Per micro-batch activation buffers, named by micro-batch: up to P-i are in flight.
      std::vector<ir::BufferId> act_in(static_cast<std::size_t>(N)), act_out(act_in.size()),
          grad_in(act_in.size()), grad_out(act_in.size()), stash(act_in.size(), ir::kNone);
      for (std::int32_t m = 0; m < N; ++m) {
        const auto k = static_cast<std::size_t>(m);
        const std::string sm = ".m" + std::to_string(m);
        act_in[k] = e.buffer(r, "act.in" + sm, a, BufferRole::activation, false);
        act_out[k] = e.buffer(r, "act.out" + sm, a, BufferRole::activation, false);
        grad_in[k] = e.buffer(r, "agrad.in" + sm, a, BufferRole::activation_grad, false);
        grad_out[k] = e.buffer(r, "agrad.out" + sm, a, BufferRole::activation_grad, false);
        if (stash_bytes) {
          stash[k] = e.buffer(r, "stash" + sm, stash_bytes, BufferRole::workspace, false);
        }
      }

      auto forward = [&](std::int32_t m) {
        const auto k = static_cast<std::size_t>(m);
        const std::int32_t sample = d * N + m;
        OpIndex ready = ir::kNone;
        if (i == 0) {
          e.alloc(r, compute, act_in[k]);
          ready =
              e.builder().compute(r, compute, ComputeKind::embedding_forward, ir::kEmbeddingLayer,
                                  0, sample, c_emb_f, {st.emb.weights}, {act_in[k]});
        } else {
          e.alloc(r, s_fwd, act_in[k]);
          const Deps none;
          ready = e.builder().recv(r, s_fwd, st.prev, pp, Bytes(a), act_in[k], none.span());
        }
        e.alloc(r, compute, act_out[k]);
        if (stash[k] != ir::kNone) e.alloc(r, compute, stash[k]);
        const Deps deps{ready};
        OpIndex f = stash[k] != ir::kNone
                        ? e.builder().compute(r, compute, ComputeKind::forward, st.begin, st.end,
                                              sample, c_fwd, {st.block.weights, act_in[k]},
                                              {act_out[k], stash[k]}, deps.span())
                        : e.builder().compute(r, compute, ComputeKind::forward, st.begin, st.end,
                                              sample, c_fwd, {st.block.weights, act_in[k]},
                                              {act_out[k]}, deps.span());
        if (i + 1 < P) {
          const Deps after{f};
          e.builder().send(r, s_fwd, st.next, pp, Bytes(a), act_out[k], after.span());
          e.free(r, s_fwd, act_out[k]);
        } else {
          // Last stage: loss forward and backward right away (its warm-up is empty).
          e.alloc(r, compute, grad_in[k]);
          e.builder().compute(r, compute, ComputeKind::head, ir::kEmbeddingLayer, 0, sample, c_head,
                              {st.emb.weights, act_out[k]}, {grad_in[k], st.emb.grad});
          e.free(r, compute, act_out[k]);
        }
      };

      auto backward = [&](std::int32_t m) {
        const auto k = static_cast<std::size_t>(m);
        const std::int32_t sample = d * N + m;
        OpIndex ready = ir::kNone;
        if (i + 1 < P) {
          e.alloc(r, s_bwd, grad_in[k]);
          const Deps none;
          ready = e.builder().recv(r, s_bwd, st.next, pp, Bytes(a), grad_in[k], none.span());
        }
        e.alloc(r, compute, grad_out[k]);
        const Deps deps{ready};
        OpIndex b =
            stash[k] != ir::kNone
                ? e.builder().compute(r, compute, ComputeKind::backward, st.begin, st.end, sample,
                                      c_bwd, {st.block.weights, act_in[k], grad_in[k], stash[k]},
                                      {grad_out[k], st.block.grad}, deps.span())
                : e.builder().compute(r, compute, ComputeKind::backward, st.begin, st.end, sample,
                                      c_bwd, {st.block.weights, act_in[k], grad_in[k]},
                                      {grad_out[k], st.block.grad}, deps.span());
        e.free(r, compute, act_in[k]);
        e.free(r, compute, grad_in[k]);
        if (stash[k] != ir::kNone) e.free(r, compute, stash[k]);
        if (i > 0) {
          const Deps after{b};
          e.builder().send(r, s_bwd, st.prev, pp, Bytes(a), grad_out[k], after.span());
          e.free(r, s_bwd, grad_out[k]);
        } else {
          st.last_compute =
              e.builder().compute(r, compute, ComputeKind::embedding_backward, ir::kEmbeddingLayer,
                                  0, sample, c_emb_b, {grad_out[k]}, {st.emb.grad});
          e.free(r, compute, grad_out[k]);
        }
        if (i > 0) st.last_compute = b;
      };

      // Megatron's order: warm-up forwards, steady 1F1B, cool-down backwards.
      const std::int32_t warmup = std::min(P - 1 - i, N);
      for (std::int32_t m = 0; m < warmup; ++m)
        forward(m);
      for (std::int32_t m = 0; m < N - warmup; ++m) {
        forward(warmup + m);
        backward(m);
      }
      for (std::int32_t m = N - warmup; m < N; ++m)
        backward(m);

      // Gradient synchronisation, then AdamW. Order of collectives is the same on every member
      // of each communicator: embedding (pipeline ends) first, then data parallel.
      OpIndex emb_ready = ir::kNone;
      OpIndex stage_ready = ir::kNone;
      if (st.has_emb && P > 1) {
        const ir::CommId ends =
            e.builder().communicator("embedding" + std::to_string(d), {base, base + P - 1});
        const Deps deps{st.last_compute};
        emb_ready =
            e.builder().collective(r, s_grad, ir::CollectiveKind::all_reduce, ends, ir::kNone,
                                   Bytes(st.emb.grad_bytes), st.emb.grad, st.emb.grad, deps.span());
      }
      if (ctx.dp > 1) {
        const ir::CommId dpc = detail::replica_peers(e, ctx, P, i, "stage");
        const Deps deps{st.last_compute};
        stage_ready = detail::all_reduce_grad(e, r, s_grad, dpc, st.block, deps);
        if (st.has_emb) emb_ready = detail::all_reduce_grad(e, r, s_grad, dpc, st.emb, deps);
      }
      detail::emit_optimizer(e, r, compute, st.block, ctx.weight_bytes,
                             Deps{stage_ready, st.last_compute});
      if (st.has_emb) {
        detail::emit_optimizer(e, r, compute, st.emb, ctx.weight_bytes,
                               Deps{emb_ready, st.last_compute});
      }
    }
  }
  return std::move(e).finish();
}

}  // namespace tawpipe::schedules
