// TawPipe: Wu & Chen, "TawPipe: Topology-Aware Weight Pipeline Parallelism for Accelerating
// Long-Context Large Models Training", AAAI 2026 (arXiv 2511.09741); algorithms.md §2. This is
// the paper's INTENDED semantics (§2.5: the compute of slot t reads the buffer filled during slot
// t-1), not the released code's buffer swap.
//
// The schedule in prose. Each of the P ranks of a replica is a data-parallel worker pushing its
// own micro-batches through the whole model. The L decoder layers are cut into P shards of L/P
// layers; shard k is bound to rank (k mod G)*S + floor(k/G) ("device-bound storage"), which owns
// its fp16 weights, fp32 master copy, AdamW moments and gradient accumulator. Ranks form G
// groups of S = P/G (by default one group per node) that run in lock-step, group g staggered g
// slots behind group 0. A slot is one shard's compute: per micro-batch P forward slots over shards
// 0..P-1 (loss forward+backward after the last), then P backward slots over shards P-1..0
// (shard-level recompute + backward). While slot t computes, the shard of slot t+1 is
// prefetched on a "weights" stream into the other half of a double buffer: an owner in the group
// broadcasts its own copy; a remote shard is first sent point-to-point by its owner to the
// group's staging rank with the owner's local index (a "rail"), which then broadcasts it. Every
// point-to-point transfer runs on a two-rank communicator of its pair, on a stream of its own
// (see the communicators below). The
// shard at the forward->backward and backward->forward turnarounds stays resident. On a
// "grads" stream the gradient of each backward slot is reduced inside the group one slot later,
// to the owner if it is in the group, else to the group's local-index-0 rank, which sends it to
// the owner on another node; the owner adds it into its accumulator. At the end: embedding
// backward of the last micro-batch, a global all-reduce of the replicated embedding/norm/head
// gradient, (dp > 1) an all-reduce of each shard's gradient among its owners in all replicas,
// and AdamW on the own shard and the embedding. Options: groups=N overrides the grouping,
// grouping=off is the paper's "without GWPS" ablation (G = 1), overlap=off its "without CCO"
// ablation (a slot's prefetch and gradient traffic wait for the slot's compute, and the next
// compute waits for them).
#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "schedules/detail.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {
namespace {

using detail::Deps;
using ir::BufferId;
using ir::BufferRole;
using ir::ComputeKind;
using ir::OpIndex;
using ir::Rank;

/// Shape of one replica's schedule; ranks here are replica-local.
struct Shape {
  std::int32_t P = 0, G = 0, S = 0, N = 0, Ls = 0;
  std::int32_t owner(std::int32_t k) const { return (k % G) * S + k / G; }
  std::int32_t group_of(std::int32_t r) const { return r / S; }
  std::int32_t computes() const { return 2 * P * N; }
  bool backward(std::int32_t c) const { return c % (2 * P) >= P; }
  std::int32_t shard(std::int32_t c) const {
    const std::int32_t i = c % (2 * P);
    return i < P ? i : 2 * P - 1 - i;
  }
  std::int32_t micro_batch(std::int32_t c) const { return c / (2 * P); }
  /// Compute c needs a new shard (not resident from compute c-1).
  bool fetches(std::int32_t c) const { return c == 0 || shard(c) != shard(c - 1); }
};

/// Per-rank buffers and emission state.
struct RankState {
  Rank rank = 0;  ///< global rank
  detail::Owned own, emb;
  BufferId wst[2] = {ir::kNone, ir::kNone};
  BufferId gst[2] = {ir::kNone, ir::kNone};
  BufferId grecv = ir::kNone;
  std::vector<BufferId> act, agrad;
  OpIndex last_reader[2] = {ir::kNone, ir::kNone};  ///< last compute reading wst[i]
  OpIndex fetched = ir::kNone;                      ///< op that completed the pending fetch
  OpIndex compute_this_slot = ir::kNone;
  OpIndex comm_prev_slot = ir::kNone;  ///< overlap=off: the next compute waits for these
  OpIndex comm_this_slot = ir::kNone;
  OpIndex pending_grad = ir::kNone;  ///< previous slot's backward, reduced in this slot
  int pending_gst = 0;
  OpIndex fresh_grad = ir::kNone;  ///< this slot's backward
  int fresh_gst = 0;
  OpIndex last_grad_op = ir::kNone;
  OpIndex last_compute = ir::kNone;
};

/// Derives G from the options and the placement of the replica's ranks on nodes.
Expected<std::int32_t> choose_groups(const detail::Context& ctx, ir::Rank base) {
  TAWPIPE_TRY(detail::check_options(ctx, {"groups", "grouping", "overlap"}));
  auto grouping = detail::on_off_option(ctx, "grouping", true);
  if (!grouping.ok()) return grouping.error();
  const std::int32_t R = ctx.replica_ranks;
  const std::string groups = detail::option(ctx, "groups", "");
  if (!*grouping) {
    if (!groups.empty()) return make_error("tawpipe: groups= and grouping=off contradict");
    return 1;
  }
  if (!groups.empty()) {
    std::int32_t g = 0;
    try {
      std::size_t used = 0;
      g = std::stoi(groups, &used);
      if (used != groups.size()) g = 0;
    } catch (...) {
      g = 0;
    }
    if (g <= 0 || R % g != 0) {
      return make_error("tawpipe: groups=" + groups + " must divide the " + std::to_string(R) +
                        " ranks of a replica; valid: " + detail::join_numbers(detail::divisors(R)));
    }
    return g;
  }
  // One group per node: the replica's ranks must cover whole runs of equal length.
  const auto& nodes = ctx.input->node_of_rank;
  std::int32_t runs = 0, run_len = -1, len = 0;
  std::vector<std::int32_t> seen;
  for (std::int32_t i = 0; i <= R; ++i) {
    const bool boundary = i == R || (i > 0 && nodes[static_cast<std::size_t>(base + i)] !=
                                                  nodes[static_cast<std::size_t>(base + i - 1)]);
    if (boundary) {
      const std::int32_t node = nodes[static_cast<std::size_t>(base + i - 1)];
      if ((run_len != -1 && len != run_len) ||
          std::find(seen.begin(), seen.end(), node) != seen.end()) {
        return make_error(
            "tawpipe: the ranks of a replica do not split into equal per-node "
            "groups; pass groups=N (valid: " +
            detail::join_numbers(detail::divisors(R)) + ")");
      }
      seen.push_back(node);
      run_len = len;
      len = 0;
      ++runs;
    }
    ++len;
  }
  return runs;
}

}  // namespace

Expected<ir::Program> generate_tawpipe(const ScheduleInput& input) {
  auto ctx_or = detail::make_context("tawpipe", input, &detail::every_rank);
  if (!ctx_or.ok()) return ctx_or.error();
  const detail::Context& ctx = *ctx_or;
  auto overlap_or = detail::on_off_option(ctx, "overlap", true);
  if (!overlap_or.ok()) return overlap_or.error();
  const bool overlap = *overlap_or;

  Shape sh;
  sh.P = ctx.replica_ranks;
  sh.N = static_cast<std::int32_t>(ctx.batch.micro_batches);
  const std::int32_t L = ctx.layers;
  if (sh.P > L || L % sh.P != 0) {
    std::vector<std::int64_t> ok_dp;
    for (std::int64_t d : detail::divisors(ctx.world)) {
      if (ctx.world / d <= L && L % (ctx.world / d) == 0) ok_dp.push_back(d);
    }
    return make_error("tawpipe: " + std::to_string(L) + " layers cannot be cut into " +
                      std::to_string(sh.P) +
                      " equal shards (one per rank of a replica); use dp "
                      "in {" +
                      detail::join_numbers(ok_dp) + "}");
  }
  sh.Ls = L / sh.P;
  for (std::int32_t d = 0; d < ctx.dp; ++d) {
    auto g = choose_groups(ctx, d * sh.P);
    if (!g.ok()) return g.error();
    if (d > 0 && *g != sh.G) {
      return make_error("tawpipe: replicas span different numbers of nodes; pass groups=N");
    }
    sh.G = *g;
  }
  sh.S = sh.P / sh.G;

  const model::ModelConfig& mc = input.model;
  const std::int64_t wb = ctx.weight_bytes;
  const auto w = static_cast<std::uint64_t>(sh.Ls * ctx.layer_params * wb);
  const std::uint64_t a = ctx.activation_bytes;
  const auto workspace = static_cast<std::uint64_t>(
      sh.Ls *
          model::layer_stored_activation_bytes(mc, ctx.shape, model::RecomputePolicy::kSelective) +
      model::layer_backward_working_set_bytes(mc, ctx.shape, model::RecomputePolicy::kSelective));

  detail::Emitter e(detail::make_header(ctx, "full"), ctx.world, ctx.stored_ranks);
  auto& b = e.builder();
  const ir::StreamId compute = 0;
  const ir::StreamId s_w = e.stream("weights");
  const ir::StreamId s_g = e.stream("grads");
  const ir::CostId c_fwd = e.cost(detail::to_ir(model::layer_forward_cost(mc, ctx.shape) * sh.Ls));
  const ir::CostId c_bwd = e.cost(detail::to_ir(
      model::layer_backward_cost(mc, ctx.shape) * sh.Ls,
      model::layer_recompute_cost(mc, ctx.shape, model::RecomputePolicy::kFull) * sh.Ls,
      workspace));
  const ir::CostId c_head = e.cost(detail::head_cost(ctx));
  const ir::CostId c_emb_f = e.cost(detail::to_ir(model::embedding_forward_cost(mc, ctx.shape)));
  const ir::CostId c_emb_b = e.cost(detail::to_ir(model::embedding_backward_cost(mc, ctx.shape)));
  const ir::CostId c_acc = e.cost(detail::accumulate_cost(sh.Ls * ctx.layer_params, wb));

  std::vector<Rank> all(static_cast<std::size_t>(ctx.world));
  for (Rank r = 0; r < ctx.world; ++r)
    all[static_cast<std::size_t>(r)] = r;
  const ir::CommId world = b.communicator("world", all);

  // Replica d is replica 0 moved by `base`: the same code, with only the communicators' names and
  // members, the sample ids and ranks shifted; `world` and the `owners` groups span every replica
  // and map onto themselves. So a replica-compact program (ScheduleInput::replica_only) stores
  // replica 0 and only counts the others' ops (their communicators are still created here, in
  // the full program's order).
  for (std::int32_t d = 0; d < ctx.dp; ++d) {
    const Rank base = d * sh.P;
    std::vector<Rank> members(static_cast<std::size_t>(sh.P));
    for (std::int32_t i = 0; i < sh.P; ++i)
      members[static_cast<std::size_t>(i)] = base + i;
    // Point-to-point communicators, as the paper's code gets them (algorithms.md 2.4): it
    // creates four global process groups pg[0..3] and sends weights on pg[s % 2] and gradients
    // on pg[s % 2 + 1] (s = the slot counter), each with a single dist.isend / dist.irecv. For a
    // single send or receive PyTorch's ProcessGroupNCCL (pointToPoint: "For single P2P, preserve
    // the old two-rank behavior") creates a TWO-RANK NCCL communicator per pair of ranks and
    // process group, with its own NCCL stream; only batch_isend_irecv (WeiPipe's code) uses the
    // group's communicator. So every pair and process group here is a distinct 2-member
    // communicator: NCCL sizes its channels for 2 ranks (2 per network peer instead of 1 on
    // the 24-rank world), runs different pairs concurrently, and runs the two halves of an
    // exchange on one pair one after the other, in the code's order.
    const std::string replica = ctx.dp == 1 ? "world" : "replica" + std::to_string(d);
    std::vector<ir::CommId> group_comm(static_cast<std::size_t>(sh.G));
    for (std::int32_t g = 0; g < sh.G; ++g) {
      std::vector<Rank> gm(members.begin() + g * sh.S, members.begin() + (g + 1) * sh.S);
      group_comm[static_cast<std::size_t>(g)] =
          b.communicator("r" + std::to_string(d) + ".group" + std::to_string(g), gm);
    }

    std::map<std::tuple<int, std::int32_t, std::int32_t>, ir::CommId> pairs;
    auto pair = [&](int pg, std::int32_t u, std::int32_t v) {
      const auto lo = std::min(u, v), hi = std::max(u, v);
      auto [it, fresh] = pairs.try_emplace({pg, lo, hi}, 0);
      if (fresh)
        it->second =
            b.distinct_communicator(replica + ".pg" + std::to_string(pg) + "." +
                                        std::to_string(base + lo) + ":" + std::to_string(base + hi),
                                    {base + lo, base + hi});
      return it->second;
    };
    // Streams of the pair communicators, by process group and peer (replica-local). The IR
    // has at most 256 streams: beyond kPeerStreams peers, peers share streams (modulo).
    constexpr std::int32_t kPeerStreams = 80;
    std::vector<ir::StreamId> peer_streams(3 * static_cast<std::size_t>(kPeerStreams), 0);
    auto peer_stream = [&](int pg, std::int32_t peer) {
      const std::int32_t slot = peer % kPeerStreams;
      ir::StreamId& id = peer_streams[static_cast<std::size_t>(pg * kPeerStreams + slot)];
      if (id == 0) id = e.stream("p2p.pg" + std::to_string(pg) + ".peer" + std::to_string(slot));
      return id;
    };
    std::vector<RankState> rs(static_cast<std::size_t>(sh.P));
    for (std::int32_t i = 0; i < sh.P; ++i) {
      RankState& s = rs[static_cast<std::size_t>(i)];
      s.rank = base + i;
      const Rank r = s.rank;
      std::int32_t k_own = 0;
      while (sh.owner(k_own) != i)
        ++k_own;
      s.own = detail::declare_owned(e, r, "shard",
                                    detail::weights_ref(k_own * sh.Ls, (k_own + 1) * sh.Ls),
                                    sh.Ls * ctx.layer_params, wb, wb);
      s.emb =
          detail::declare_owned(e, r, "emb", detail::embedding_ref(), ctx.embedding_params, wb, wb);
      for (int x = 0; x < 2; ++x) {
        s.wst[x] = e.buffer(r, "wst." + std::to_string(x), w, BufferRole::weight_staging, true);
        s.gst[x] = e.buffer(r, "gst." + std::to_string(x), w, BufferRole::gradient_staging, false);
      }
      s.grecv = e.buffer(r, "grecv", w, BufferRole::gradient_staging, false);
      for (std::int32_t k = 0; k <= sh.P; ++k) {
        s.act.push_back(e.buffer(r, "act." + std::to_string(k), a, BufferRole::activation, false));
        s.agrad.push_back(
            e.buffer(r, "agrad." + std::to_string(k), a, BufferRole::activation_grad, false));
      }
    }
    auto st = [&](std::int32_t local) -> RankState& { return rs[static_cast<std::size_t>(local)]; };

    std::vector<int> cur(static_cast<std::size_t>(sh.G), 1);  // staging half of each group
    const std::int32_t last_slot = sh.computes() + sh.G - 1;
    for (std::int32_t t = -1; t <= last_slot; ++t) {
      for (auto& s : rs) {
        s.compute_this_slot = ir::kNone;
        s.comm_prev_slot = s.comm_this_slot;
        s.comm_this_slot = ir::kNone;
        s.pending_grad = s.fresh_grad;
        s.pending_gst = s.fresh_gst;
        s.fresh_grad = ir::kNone;
      }
      // Phase 1: compute of slot t.
      for (std::int32_t g = 0; g < sh.G; ++g) {
        const std::int32_t c = t - g;
        if (c < 0 || c >= sh.computes()) continue;
        const std::int32_t k = sh.shard(c);
        const std::int32_t m = sh.micro_batch(c);
        const int x = cur[static_cast<std::size_t>(g)];
        for (std::int32_t l = g * sh.S; l < (g + 1) * sh.S; ++l) {
          RankState& s = st(l);
          const Rank r = s.rank;
          const std::int32_t sample = r * sh.N + m;
          const auto ku = static_cast<std::size_t>(k);
          Deps deps{s.fetched, overlap ? ir::kNone : s.comm_prev_slot};
          s.fetched = ir::kNone;
          OpIndex op = ir::kNone;
          if (!sh.backward(c)) {
            if (k == 0) {
              e.alloc(r, compute, s.act[0]);
              b.compute(r, compute, ComputeKind::embedding_forward, ir::kEmbeddingLayer, 0, sample,
                        c_emb_f, {s.emb.weights}, {s.act[0]});
            }
            e.alloc(r, compute, s.act[ku + 1]);
            op = b.compute(r, compute, ComputeKind::forward, k * sh.Ls, (k + 1) * sh.Ls, sample,
                           c_fwd, {s.wst[x], s.act[ku]}, {s.act[ku + 1]}, deps.span());
            if (k == sh.P - 1) {
              e.alloc(r, compute, s.agrad[ku + 1]);
              b.compute(r, compute, ComputeKind::head, ir::kEmbeddingLayer, 0, sample, c_head,
                        {s.emb.weights, s.act[ku + 1]}, {s.agrad[ku + 1], s.emb.grad});
              e.free(r, compute, s.act[ku + 1]);
            }
          } else {
            const int gx = c % 2;
            e.alloc(r, compute, s.gst[gx]);
            e.alloc(r, compute, s.agrad[ku]);
            op = b.compute(r, compute, ComputeKind::backward, k * sh.Ls, (k + 1) * sh.Ls, sample,
                           c_bwd, {s.wst[x], s.act[ku], s.agrad[ku + 1]}, {s.agrad[ku], s.gst[gx]},
                           deps.span());
            e.free(r, compute, s.act[ku]);
            e.free(r, compute, s.agrad[ku + 1]);
            s.fresh_grad = op;
            s.fresh_gst = gx;
            s.last_compute = op;
            if (k == 0 && m + 1 < sh.N) {  // the last micro-batch's is emitted at the end
              s.last_compute =
                  b.compute(r, compute, ComputeKind::embedding_backward, ir::kEmbeddingLayer, 0,
                            sample, c_emb_b, {s.agrad[0]}, {s.emb.grad});
              e.free(r, compute, s.agrad[0]);
            }
          }
          s.last_reader[x] = op;
          s.compute_this_slot = op;
        }
      }

      // Phase 2: weights for slot t+1. P2P deliveries of remote shards, then broadcasts.
      struct Msg {
        std::int32_t src, dst;  // replica-local
        BufferId src_buf, dst_buf;
        int x;
        OpIndex dep;  ///< sender-side dependency
      };
      std::vector<Msg> msgs;
      struct Bcast {
        std::int32_t g, root;
        bool root_owns;
        int x;
      };
      std::vector<Bcast> bcasts;
      for (std::int32_t g = 0; g < sh.G; ++g) {
        const std::int32_t c = t + 1 - g;
        if (c < 0 || c >= sh.computes() || !sh.fetches(c)) continue;
        const std::int32_t k = sh.shard(c);
        const int x = 1 - cur[static_cast<std::size_t>(g)];
        cur[static_cast<std::size_t>(g)] = x;
        const std::int32_t o = sh.owner(k);
        std::int32_t root = o;
        if (sh.group_of(o) != g) {
          root = g * sh.S + o % sh.S;  // staging rank on the owner's rail
          msgs.push_back({o, root, st(o).own.weights, st(root).wst[x], x, ir::kNone});
        }
        bcasts.push_back({g, root, root == o, x});
      }
      // One NCCL stream per pair communicator (PyTorch): with overlap, a rank's P2P with each
      // peer runs on its own stream; the ops of one pair and process group are posted in the
      // code's order (the rank of the lower group sends first) and run one after the other.
      std::vector<const Msg*> mine;  // one rank's messages, reused
      auto emit_p2p = [&](const std::vector<Msg>& list, ir::StreamId stream, bool weights, int pg) {
        for (std::int32_t l = 0; l < sh.P; ++l) {
          RankState& s = st(l);
          OpIndex alloc_op = ir::kNone;
          for (const Msg& mm : list) {
            if (!weights && mm.dst == l) alloc_op = e.alloc(s.rank, stream, mm.dst_buf);
          }
          // Sends, then receives, each in list order; but the two halves of an exchange with
          // one peer go in the code's order: the rank of the lower group sends first.
          mine.clear();
          for (const Msg& mm : list) {
            if (mm.src == l) mine.push_back(&mm);
          }
          for (const Msg& mm : list) {
            if (mm.dst == l) mine.push_back(&mm);
          }
          for (std::size_t i = 0; i < mine.size(); ++i) {
            for (std::size_t j = i + 1; j < mine.size(); ++j) {
              const Msg& u = *mine[i];
              const Msg& v = *mine[j];
              if (u.src != v.dst || u.dst != v.src) continue;
              const bool send_first = sh.group_of(l) < sh.group_of(u.src == l ? u.dst : u.src);
              if ((u.src == l) != send_first) std::swap(mine[i], mine[j]);
            }
          }
          for (const Msg* mp : mine) {
            const Msg& mm = *mp;
            const bool sending = mm.src == l;
            const std::int32_t peer = sending ? mm.dst : mm.src;
            const ir::StreamId ps = overlap ? peer_stream(pg, peer) : stream;
            const ir::CommId comm = pair(pg, mm.src, mm.dst);
            const OpIndex after_compute = overlap ? ir::kNone : s.compute_this_slot;
            if (sending) {
              const Deps deps{mm.dep, after_compute};
              const OpIndex op =
                  b.send(s.rank, ps, base + peer, comm, Bytes(w), mm.src_buf, deps.span());
              s.comm_this_slot = op;
              if (!weights) s.comm_this_slot = e.free(s.rank, stream, mm.src_buf, Deps{op});
              continue;
            }
            const Deps deps{weights ? s.last_reader[mm.x] : alloc_op, after_compute};
            const OpIndex op =
                b.recv(s.rank, ps, base + peer, comm, Bytes(w), mm.dst_buf, deps.span());
            s.comm_this_slot = op;
            if (weights) {
              s.fetched = op;
              continue;
            }
            // gradient: the owner adds it into its accumulator
            const Deps after_recv{op};
            b.compute(s.rank, stream, ComputeKind::accumulate, s.own.layer_begin, s.own.layer_end,
                      ir::kNone, c_acc, {mm.dst_buf}, {s.own.grad}, after_recv.span());
            s.comm_this_slot = e.free(s.rank, stream, mm.dst_buf);
          }
        }
      };
      emit_p2p(msgs, s_w, true, (t + 2) % 2);
      for (const Bcast& bc : bcasts) {
        for (std::int32_t l = bc.g * sh.S; l < (bc.g + 1) * sh.S; ++l) {
          RankState& s = st(l);
          const Deps deps{s.last_reader[bc.x], s.fetched,
                          overlap ? ir::kNone : s.compute_this_slot};
          const BufferId src = (l == bc.root && bc.root_owns) ? s.own.weights : s.wst[bc.x];
          if (sh.S == 1) {
            if (bc.root_owns) {
              s.fetched = b.copy(s.rank, s_w, src, s.wst[bc.x], Bytes(w), deps.span());
              s.comm_this_slot = s.fetched;
            }
            continue;
          }
          s.fetched = b.collective(s.rank, s_w, ir::CollectiveKind::broadcast,
                                   group_comm[static_cast<std::size_t>(bc.g)], base + bc.root,
                                   Bytes(w), src, s.wst[bc.x], deps.span());
          s.comm_this_slot = s.fetched;
        }
      }

      // Phase 3: gradients of slot t-1's backward: reduce in the group, then to a remote owner.
      std::vector<Msg> gmsgs;
      for (std::int32_t g = 0; g < sh.G; ++g) {
        const std::int32_t c = t - 1 - g;
        if (c < 0 || c >= sh.computes() || !sh.backward(c)) continue;
        const std::int32_t k = sh.shard(c);
        const std::int32_t o = sh.owner(k);
        const std::int32_t root = sh.group_of(o) == g ? o : g * sh.S;
        for (std::int32_t l = g * sh.S; l < (g + 1) * sh.S; ++l) {
          RankState& s = st(l);
          const BufferId gbuf = s.gst[s.pending_gst];
          Deps deps{s.pending_grad, overlap ? ir::kNone : s.compute_this_slot};
          if (sh.S > 1) {
            s.comm_this_slot = b.collective(s.rank, s_g, ir::CollectiveKind::reduce,
                                            group_comm[static_cast<std::size_t>(g)], base + root,
                                            Bytes(w), gbuf, gbuf, deps.span());
            deps = Deps{};
          }
          if (l == o) {
            b.compute(s.rank, s_g, ComputeKind::accumulate, s.own.layer_begin, s.own.layer_end,
                      ir::kNone, c_acc, {gbuf}, {s.own.grad}, deps.span());
            s.comm_this_slot = e.free(s.rank, s_g, gbuf);
          } else if (l == root) {
            gmsgs.push_back(
                {root, o, gbuf, st(o).grecv, 0, sh.S > 1 ? s.comm_this_slot : s.pending_grad});
          } else {
            s.comm_this_slot = e.free(s.rank, s_g, gbuf);
          }
        }
      }
      emit_p2p(gmsgs, s_g, false, (t + 2) % 2 + 1);
    }

    // End of the iteration: last embedding backward, gradient all-reduces, AdamW.
    for (auto& s : rs) {
      const Rank r = s.rank;
      const std::int32_t sample = r * sh.N + sh.N - 1;
      const OpIndex eb = b.compute(r, compute, ComputeKind::embedding_backward, ir::kEmbeddingLayer,
                                   0, sample, c_emb_b, {s.agrad[0]}, {s.emb.grad});
      e.free(r, compute, s.agrad[0]);
      const Deps after_eb{eb};
      const OpIndex emb_sync =
          b.collective(r, s_g, ir::CollectiveKind::all_reduce, world, ir::kNone,
                       Bytes(s.emb.grad_bytes), s.emb.grad, s.emb.grad, after_eb.span());
      OpIndex own_sync = emb_sync;  // grads stream order: every accumulate is before it
      if (ctx.dp > 1) {
        const ir::CommId oc = detail::replica_peers(e, ctx, sh.P, r - base, "owners");
        own_sync = detail::all_reduce_grad(e, r, s_g, oc, s.own, {});
      }
      detail::emit_optimizer(e, r, compute, s.own, wb, Deps{own_sync});
      detail::emit_optimizer(e, r, compute, s.emb, wb, Deps{emb_sync});
    }
  }
  return std::move(e).finish();
}

}  // namespace tawpipe::schedules
