// ZeRO-3 fully sharded data parallelism, as PyTorch FSDP (Zhao et al., "PyTorch FSDP:
// Experiences on Scaling Fully Sharded Data Parallel", VLDB 2023, arXiv 2304.11277) and DeepSpeed
// ZeRO stage 3 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
// Parameter Models", SC 2020, arXiv 1910.02054) run it; algorithms.md §4.
//
// The schedule in prose. Every rank of a replica is a data-parallel worker with its own
// micro-batches. Each transformer block (and the embedding/final-norm/head block) is one FSDP unit
// whose flattened parameters are split into R equal pieces (padded like FSDP's FlatParameter),
// piece p living on replica rank p with its fp32 master copy, AdamW moments and fp32 gradient
// shard. For every micro-batch: all-gather the embedding unit, embed; for each block all-gather
// its parameters, run the forward, drop the gathered copy; all-gather the embedding unit for the
// head (loss forward + backward); then for each block in reverse all-gather its parameters again
// (DeepSpeed max_reuse_distance 0 / FSDP reshard-after-forward), recompute + backward, drop the
// copy, and reduce-scatter the block's gradient (every micro-batch, as both frameworks do),
// adding the received piece into the fp32 gradient shard; finally the embedding backward and its
// reduce-scatter. All-gathers run one unit ahead on their own stream (forward/backward prefetch),
// reduce-scatters on another, so both overlap compute. At the end each rank steps AdamW on its
// pieces only. With dp > 1 (hybrid sharding, FSDP's HYBRID_SHARD) the gradient pieces are first
// all-reduced among the ranks holding the same piece in every replica.
#include <string>
#include <vector>

#include "common/parallel.h"
#include "schedules/detail.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {
namespace {

using detail::Deps;
using ir::BufferRole;
using ir::ComputeKind;
using ir::OpIndex;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

Expected<ir::Program> generate_fsdp(const ScheduleInput& input) {
  auto ctx_or = detail::make_context("fsdp", input, &detail::every_rank);
  if (!ctx_or.ok()) return ctx_or.error();
  const detail::Context& ctx = *ctx_or;
  TAWPIPE_TRY(detail::check_options(ctx, {}));
  const std::int32_t R = ctx.replica_ranks;
  const std::int32_t L = ctx.layers;
  const std::int32_t N = static_cast<std::int32_t>(ctx.batch.micro_batches);
  const model::ModelConfig& mc = input.model;
  const model::RecomputePolicy policy = input.train.recompute;
  const std::int64_t wb = ctx.weight_bytes;

  detail::Emitter e(detail::make_header(ctx, model::to_string(policy)), ctx.world,
                    ctx.stored_ranks);
  const ir::StreamId compute = 0;
  const ir::StreamId s_ag = e.stream("all_gather");
  const ir::StreamId s_rs = e.stream("reduce_scatter");
  const ir::StreamId s_sync = e.stream("grad_sync");

  const std::int64_t layer_piece = ceil_div(ctx.layer_params, R);
  const std::int64_t emb_piece = ceil_div(ctx.embedding_params, R);
  const auto layer_full = static_cast<std::uint64_t>(layer_piece * R * wb);
  const auto emb_full = static_cast<std::uint64_t>(emb_piece * R * wb);
  const std::uint64_t a = ctx.activation_bytes;
  const auto stored =
      static_cast<std::uint64_t>(model::layer_stored_activation_bytes(mc, ctx.shape, policy));
  const std::uint64_t stash_bytes = stored > a ? stored - a : 0;
  const auto workspace =
      static_cast<std::uint64_t>(model::layer_backward_working_set_bytes(mc, ctx.shape, policy));

  const ir::CostId c_fwd = e.cost(detail::to_ir(model::layer_forward_cost(mc, ctx.shape)));
  const ir::CostId c_bwd =
      e.cost(detail::to_ir(model::layer_backward_cost(mc, ctx.shape),
                           model::layer_recompute_cost(mc, ctx.shape, policy), workspace));
  const ir::CostId c_head = e.cost(detail::head_cost(ctx));
  const ir::CostId c_emb_f = e.cost(detail::to_ir(model::embedding_forward_cost(mc, ctx.shape)));
  const ir::CostId c_emb_b = e.cost(detail::to_ir(model::embedding_backward_cost(mc, ctx.shape)));
  const ir::CostId c_acc_layer = e.cost(detail::accumulate_cost(layer_piece, 4));
  const ir::CostId c_acc_emb = e.cost(detail::accumulate_cost(emb_piece, 4));

  // The order in which units are used by compute in one micro-batch: embedding, blocks up,
  // embedding (head), blocks down. kEmbeddingLayer marks the embedding unit.
  struct Use {
    std::int32_t unit;
    bool backward;
  };
  std::vector<Use> uses;
  uses.push_back({ir::kEmbeddingLayer, false});
  for (std::int32_t l = 0; l < L; ++l)
    uses.push_back({l, false});
  uses.push_back({ir::kEmbeddingLayer, true});
  for (std::int32_t l = L - 1; l >= 0; --l)
    uses.push_back({l, true});

  // Communicators first (replica d's sharding group; with hybrid sharding, the group of each
  // piece across replicas), so that ranks can then be emitted in parallel.
  std::vector<ir::CommId> shard_comms(static_cast<std::size_t>(ctx.dp));
  std::vector<ir::CommId> piece_comms(static_cast<std::size_t>(R), ir::kNone);
  for (std::int32_t d = 0; d < ctx.dp; ++d) {
    std::vector<ir::Rank> members(static_cast<std::size_t>(R));
    for (std::int32_t i = 0; i < R; ++i)
      members[static_cast<std::size_t>(i)] = d * R + i;
    shard_comms[static_cast<std::size_t>(d)] = e.builder().communicator(
        ctx.dp == 1 ? std::string("world") : "replica" + std::to_string(d), members);
    if (d == 0 && ctx.dp > 1) {
      for (std::int32_t p = 0; p < R; ++p)
        piece_comms[static_cast<std::size_t>(p)] = detail::replica_peers(e, ctx, R, p, "piece");
    }
  }

  // Everything one rank emits; touches only that rank's state once the shared tables exist.
  const auto emit_rank = [&](const ir::Rank r) {
    {
      const std::int32_t d = r / R;
      const std::int32_t p = r % R;
      const ir::CommId shard_comm = shard_comms[static_cast<std::size_t>(d)];
      std::vector<detail::Owned> own(static_cast<std::size_t>(L));
      for (std::int32_t l = 0; l < L; ++l) {
        own[static_cast<std::size_t>(l)] = detail::declare_owned(
            e, r, "l" + std::to_string(l), detail::weights_ref(l, l + 1, p, R), layer_piece, wb, 4);
      }
      const detail::Owned emb =
          detail::declare_owned(e, r, "emb", detail::embedding_ref(p, R), emb_piece, wb, 4);
      // Two persistent gathered-block buffers (the prefetch window: DeepSpeed's max live
      // parameters of about one block plus the prefetched one); the much larger embedding unit
      // is gathered into a transient buffer only around its uses.
      const ir::BufferId full[2] = {
          e.buffer(r, "full.0", layer_full, BufferRole::weight_staging, true),
          e.buffer(r, "full.1", layer_full, BufferRole::weight_staging, true)};
      OpIndex full_reader[2] = {ir::kNone, ir::kNone};
      const ir::BufferId full_emb =
          e.buffer(r, "full.emb", emb_full, BufferRole::weight_staging, false);
      const ir::BufferId gfull[2] = {
          e.buffer(r, "gfull.0", layer_full, BufferRole::gradient_staging, false),
          e.buffer(r, "gfull.1", layer_full, BufferRole::gradient_staging, false)};
      const ir::BufferId gfull_emb =
          e.buffer(r, "gfull.emb", emb_full, BufferRole::gradient_staging, false);
      const auto lp_bytes = static_cast<std::uint64_t>(layer_piece * wb);
      const ir::BufferId gpiece[2] = {
          e.buffer(r, "gpiece.0", lp_bytes, BufferRole::gradient_staging, true),
          e.buffer(r, "gpiece.1", lp_bytes, BufferRole::gradient_staging, true)};
      const ir::BufferId gpiece_emb =
          e.buffer(r, "gpiece.emb", static_cast<std::uint64_t>(emb_piece * wb),
                   BufferRole::gradient_staging, false);
      std::vector<ir::BufferId> act(static_cast<std::size_t>(L + 1)), agrad(act.size()),
          stash(static_cast<std::size_t>(L), ir::kNone);
      for (std::int32_t l = 0; l <= L; ++l) {
        act[static_cast<std::size_t>(l)] =
            e.buffer(r, "act." + std::to_string(l), a, BufferRole::activation, false);
        agrad[static_cast<std::size_t>(l)] =
            e.buffer(r, "agrad." + std::to_string(l), a, BufferRole::activation_grad, false);
        if (l < L && stash_bytes) {
          stash[static_cast<std::size_t>(l)] =
              e.buffer(r, "stash." + std::to_string(l), stash_bytes, BufferRole::workspace, false);
        }
      }

      // Gathers, one use ahead of compute. Layer uses alternate between the two full buffers.
      const auto total_uses = static_cast<std::int64_t>(uses.size()) * N;
      std::vector<OpIndex> gathered(static_cast<std::size_t>(total_uses), ir::kNone);
      std::vector<ir::BufferId> slot_of(static_cast<std::size_t>(total_uses));
      std::int64_t layer_uses = 0;
      for (std::int64_t j = 0; j < total_uses; ++j) {
        const Use& u = uses[static_cast<std::size_t>(j % static_cast<std::int64_t>(uses.size()))];
        slot_of[static_cast<std::size_t>(j)] =
            u.unit == ir::kEmbeddingLayer ? full_emb : full[layer_uses++ % 2];
      }
      auto gather = [&](std::int64_t j) {
        const auto k = static_cast<std::size_t>(j);
        const Use& u = uses[static_cast<std::size_t>(j % static_cast<std::int64_t>(uses.size()))];
        const ir::BufferId dst = slot_of[k];
        const bool is_emb = u.unit == ir::kEmbeddingLayer;
        Deps none;
        if (is_emb) {
          e.alloc(r, s_ag, dst);
        } else {
          none.add(full_reader[dst == full[0] ? 0 : 1]);  // overwrite after the last reader
        }
        gathered[k] = e.builder().collective(
            r, s_ag, ir::CollectiveKind::all_gather, shard_comm, ir::kNone,
            Bytes(is_emb ? emb_full : layer_full),
            is_emb ? emb.weights : own[static_cast<std::size_t>(u.unit)].weights, dst, none.span());
      };

      OpIndex last_rs = ir::kNone;
      OpIndex last_compute = ir::kNone;
      std::int64_t backward_count = 0;
      // Reduce-scatter a full gradient and add the received piece into the fp32 shard.
      auto reduce_scatter = [&](OpIndex after, ir::BufferId src, ir::BufferId piece_buf,
                                const detail::Owned& dst, std::uint64_t full_bytes,
                                ir::CostId acc_cost) {
        const bool transient = piece_buf == gpiece_emb;
        if (transient) e.alloc(r, s_rs, piece_buf);
        const Deps deps{after};
        e.builder().collective(r, s_rs, ir::CollectiveKind::reduce_scatter, shard_comm, ir::kNone,
                               Bytes(full_bytes), src, piece_buf, deps.span());
        e.builder().compute(r, s_rs, ComputeKind::accumulate, dst.layer_begin, dst.layer_end,
                            ir::kNone, acc_cost, {piece_buf}, {dst.grad});
        last_rs = transient ? e.free(r, s_rs, {piece_buf, src}) : e.free(r, s_rs, src);
      };

      gather(0);
      for (std::int64_t j = 0; j < total_uses; ++j) {
        if (j + 1 < total_uses) gather(j + 1);
        const auto k = static_cast<std::size_t>(j);
        const std::int32_t m =
            static_cast<std::int32_t>(j / static_cast<std::int64_t>(uses.size()));
        const std::int32_t sample = r * N + m;
        const Use& u = uses[static_cast<std::size_t>(j % static_cast<std::int64_t>(uses.size()))];
        const ir::BufferId w = slot_of[k];
        const Deps deps{gathered[k]};
        auto& b = e.builder();
        if (u.unit == ir::kEmbeddingLayer && !u.backward) {
          e.alloc(r, compute, act[0]);
          b.compute(r, compute, ComputeKind::embedding_forward, ir::kEmbeddingLayer, 0, sample,
                    c_emb_f, {w}, {act[0]}, deps.span());
          e.free(r, compute, w);
        } else if (u.unit == ir::kEmbeddingLayer) {
          e.alloc(r, compute, {agrad[static_cast<std::size_t>(L)], gfull_emb});
          b.compute(r, compute, ComputeKind::head, ir::kEmbeddingLayer, 0, sample, c_head,
                    {w, act[static_cast<std::size_t>(L)]},
                    {agrad[static_cast<std::size_t>(L)], gfull_emb}, deps.span());
          e.free(r, compute, {act[static_cast<std::size_t>(L)], w});
        } else if (!u.backward) {
          const auto l = static_cast<std::size_t>(u.unit);
          OpIndex fwd_op = ir::kNone;
          if (stash_bytes) {
            e.alloc(r, compute, {act[l + 1], stash[l]});
            fwd_op = b.compute(r, compute, ComputeKind::forward, u.unit, u.unit + 1, sample, c_fwd,
                               {w, act[l]}, {act[l + 1], stash[l]}, deps.span());
          } else {
            e.alloc(r, compute, act[l + 1]);
            fwd_op = b.compute(r, compute, ComputeKind::forward, u.unit, u.unit + 1, sample, c_fwd,
                               {w, act[l]}, {act[l + 1]}, deps.span());
          }
          full_reader[w == full[0] ? 0 : 1] = fwd_op;
        } else {
          const auto l = static_cast<std::size_t>(u.unit);
          const ir::BufferId g = gfull[backward_count % 2];
          const ir::BufferId gp = gpiece[backward_count % 2];
          ++backward_count;
          e.alloc(r, compute, {agrad[l], g});
          const OpIndex bwd =
              stash_bytes
                  ? b.compute(r, compute, ComputeKind::backward, u.unit, u.unit + 1, sample, c_bwd,
                              {w, act[l], agrad[l + 1], stash[l]}, {agrad[l], g}, deps.span())
                  : b.compute(r, compute, ComputeKind::backward, u.unit, u.unit + 1, sample, c_bwd,
                              {w, act[l], agrad[l + 1]}, {agrad[l], g}, deps.span());
          full_reader[w == full[0] ? 0 : 1] = bwd;
          // Everything the backward consumed is released at once.
          if (stash_bytes) {
            e.free(r, compute, {act[l], agrad[l + 1], stash[l]});
          } else {
            e.free(r, compute, {act[l], agrad[l + 1]});
          }
          reduce_scatter(bwd, g, gp, own[l], layer_full, c_acc_layer);
          last_compute = bwd;
          if (u.unit == 0) {
            const OpIndex eb =
                b.compute(r, compute, ComputeKind::embedding_backward, ir::kEmbeddingLayer, 0,
                          sample, c_emb_b, {agrad[0]}, {gfull_emb});
            e.free(r, compute, agrad[0]);
            reduce_scatter(eb, gfull_emb, gpiece_emb, emb, emb_full, c_acc_emb);
            last_compute = eb;
          }
        }
      }

      // Hybrid sharding: all-reduce each piece across replicas, then AdamW on own pieces.
      std::vector<OpIndex> synced(static_cast<std::size_t>(L + 1), last_rs);
      if (ctx.dp > 1) {
        const ir::CommId dpc = piece_comms[static_cast<std::size_t>(p)];
        for (std::int32_t l = 0; l <= L; ++l) {
          const detail::Owned& o = l < L ? own[static_cast<std::size_t>(l)] : emb;
          synced[static_cast<std::size_t>(l)] =
              detail::all_reduce_grad(e, r, s_sync, dpc, o, Deps{last_rs});
        }
      }
      for (std::int32_t l = 0; l <= L; ++l) {
        const detail::Owned& o = l < L ? own[static_cast<std::size_t>(l)] : emb;
        detail::emit_optimizer(e, r, compute, o, wb,
                               Deps{synced[static_cast<std::size_t>(l)], last_compute});
      }
    }
  };
  // Rank 0 creates every cost; the other ranks only look them up, so they can run in parallel
  // (each rank's ops are emitted in order by one thread: the program does not depend on it).
  // Replica-compact (ScheduleInput::replica_only): the ranks of the other replicas would only be
  // counted, and while the tables are frozen they create nothing shared, so they are skipped.
  // Rank r of replica d is the image of rank r mod R: the same code with d only choosing the
  // replica's shard communicator (the shift's image of replica 0's) and the sample ids.
  emit_rank(0);
  e.builder().freeze_shared_tables(true);
  const std::int32_t emitted = ctx.stored_ranks > 0 ? ctx.stored_ranks : ctx.world;
  parallel_for(1, emitted, resolve_threads(input.threads),
               [&](std::int64_t r, int) { emit_rank(static_cast<ir::Rank>(r)); });
  e.builder().freeze_shared_tables(false);
  return std::move(e).finish();
}

}  // namespace tawpipe::schedules
