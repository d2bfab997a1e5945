#include "schedules/pipeline.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <span>
#include <string>
#include <string_view>

#include "common/model/cost.h"

namespace tawpipe::schedules::detail {
namespace {

using ir::BufferRole;
using ir::ComputeKind;
using ir::OpIndex;

/// Buffers of one (chunk, micro-batch) on a stage.
struct MicroBuffers {
  ir::BufferId act_in = ir::kNone, act_out = ir::kNone, grad_in = ir::kNone, grad_out = ir::kNone,
               stash = ir::kNone;
  // Split backward only (pipeline.h, "Zero-bubble memory"); kNone when empty.
  ir::BufferId keep = ir::kNone, b_only = ir::kNone, w_new = ir::kNone;  // `stash` is `reuse`
};

/// A short list of buffer ids kept inline: an op's reads, writes or held buffers are at most a
/// handful, and heap vectors for them cost a malloc and free each (~4 % of generating a 1F1B
/// probe on 3x8-a100).
class BufferList {
 public:
  BufferList() = default;
  BufferList(std::initializer_list<ir::BufferId> ids) { append(ids); }
  void push_back(ir::BufferId b) {
    assert(n_ < v_.size());
    v_[n_++] = b;
  }
  void append(std::span<const ir::BufferId> ids) {
    for (ir::BufferId b : ids)
      push_back(b);
  }
  void append(std::initializer_list<ir::BufferId> ids) {
    append(std::span<const ir::BufferId>(ids.begin(), ids.size()));
  }
  bool empty() const { return n_ == 0; }
  const ir::BufferId* begin() const { return v_.data(); }
  const ir::BufferId* end() const { return v_.data() + n_; }
  std::span<const ir::BufferId> span() const { return {v_.data(), n_}; }

 private:
  std::array<ir::BufferId, 8> v_{};
  std::size_t n_ = 0;
};

/// The buffers of `ids` that exist (kNone dropped), in order.
BufferList present(std::initializer_list<ir::BufferId> ids) {
  BufferList out;
  for (ir::BufferId b : ids) {
    if (b != ir::kNone) out.push_back(b);
  }
  return out;
}

/// The suffix of a (chunk, micro-batch) buffer's name, ".c<chunk>.m<micro>" (".m<micro>"
/// without chunks), and names with it, built in place: five names per micro-batch and rank, for
/// which string concatenations and their temporaries were ~5 % of generating a 1F1B probe.
class NameSuffix {
 public:
  /// `chunk` < 0: no chunk part.
  NameSuffix(std::int32_t chunk, std::int32_t micro) {
    if (chunk >= 0) add(".c", chunk);
    add(".m", micro);
  }
  std::string name(std::string_view prefix) const {
    std::string out;
    out.reserve(prefix.size() + size_);
    out.append(prefix).append(text_.data(), size_);
    return out;
  }

 private:
  void add(std::string_view tag, std::int32_t value) {
    for (char ch : tag)
      text_[size_++] = ch;
    size_ = static_cast<std::size_t>(
        std::to_chars(text_.data() + size_, text_.data() + text_.size(), value).ptr - text_.data());
  }
  std::array<char, 32> text_{};  // two tags and two int32 values
  std::size_t size_ = 0;
};

/// One model chunk on one rank.
struct Chunk {
  std::int32_t global = 0;  ///< global pipeline stage v*P + i
  std::int32_t begin = 0, end = 0;
  bool first = false, last = false;  ///< runs the embedding / the head
  ir::Rank prev = ir::kNone, next = ir::kNone;
  Owned block;
  std::vector<MicroBuffers> bufs;  ///< per micro-batch
};

/// Costs shared by every chunk (all chunks have the same number of layers).
struct Costs {
  ir::CostId fwd, bwd, bwd_in, bwd_w, head, emb_f, emb_b;
  std::uint64_t stash_bytes = 0;  ///< fused backward: everything stored but act_in
  SplitStash split;               ///< split backward
};

/// Registers the costs in the order 1F1B always used (forward, backward, head, embedding), then
/// B and W when the orders split backwards; `fused` / `split` say which backwards occur.
Costs make_costs(Emitter& e, const Context& ctx, std::int32_t layers, bool fused, bool split) {
  const model::ModelConfig& mc = ctx.input->model;
  const model::RecomputePolicy policy = ctx.input->train.recompute;
  const model::MicroBatchShape& sh = ctx.shape;
  const double n = layers;
  Costs c{};
  const std::uint64_t a = ctx.activation_bytes;
  const auto stored =
      static_cast<std::uint64_t>(layers * model::layer_stored_activation_bytes(mc, sh, policy));
  c.stash_bytes = stored > a ? stored - a : 0;
  if (split) c.split = split_stash(mc, sh, policy, layers, a);
  const auto workspace =
      static_cast<std::uint64_t>(model::layer_backward_working_set_bytes(mc, sh, policy));
  const model::OpCost recompute = model::layer_recompute_cost(mc, sh, policy) * n;
  c.fwd = e.cost(to_ir(model::layer_forward_cost(mc, sh) * n));
  c.bwd = fused ? e.cost(to_ir(model::layer_backward_cost(mc, sh) * n, recompute, workspace))
                : ir::kNone;
  c.head = e.cost(head_cost(ctx));
  c.emb_f = e.cost(to_ir(model::embedding_forward_cost(mc, sh)));
  c.emb_b = e.cost(to_ir(model::embedding_backward_cost(mc, sh)));
  if (split) {
    // B holds the recomputation and the backward working set; W is GEMMs on held tensors, after
    // re-applying the first layer's attention norm to act_in (pipeline.h).
    c.bwd_in = e.cost(to_ir(model::layer_backward_input_cost(mc, sh) * n, recompute, workspace));
    c.bwd_w = e.cost(to_ir(model::layer_backward_weight_cost(mc, sh) * n,
                           model::cost_of(model::weight_gradient_recompute_kernels(mc, sh))));
  }
  return c;
}

}  // namespace

SplitStash split_stash(const model::ModelConfig& cfg, const model::MicroBatchShape& shape,
                       model::RecomputePolicy policy, std::int32_t layers,
                       std::uint64_t boundary_bytes) {
  const auto n = static_cast<std::uint64_t>(layers);
  const std::uint64_t a = boundary_bytes;
  const auto stored =
      n * static_cast<std::uint64_t>(model::layer_stored_activation_bytes(cfg, shape, policy));
  const model::WeightGradientBytes w = model::layer_weight_gradient_bytes(cfg, shape);
  const auto x = n * static_cast<std::uint64_t>(w.linear_inputs);
  const auto held = n * static_cast<std::uint64_t>(w.total());
  assert(stored >= a && x >= a && held >= 2 * a);
  SplitStash s;
  // The linear inputs are stored unless the layer is recomputed in full; W reads all but the
  // first layer's attention-norm output, which it re-creates from act_in. Op-level SAC stores
  // only some of them (memory.h) and recomputes the rest in B, so, as under kFull, W keeps what
  // B's recomputation re-creates.
  s.keep = policy == model::RecomputePolicy::kFull || policy == model::RecomputePolicy::kSelectiveOp
               ? 0
               : x - a;
  const std::uint64_t b_read = stored - a - s.keep;    // stored, read by B only (act_in aside)
  const std::uint64_t w_read = held - 2 * a - s.keep;  // created by B for W (grad_in aside)
  s.reuse = std::min(b_read, w_read);
  s.b_only = b_read - s.reuse;
  s.w_new = w_read - s.reuse;
  return s;
}

Status check_pipeline_split(const Context& ctx, std::int32_t chunks) {
  const std::int32_t P = ctx.replica_ranks;
  const std::int64_t L = ctx.layers;
  const auto fits = [&](std::int64_t p) { return p * chunks <= L && L % (p * chunks) == 0; };
  // Interleaved chunks hand activations from stage to stage; with one stage per pipeline the
  // hand-off would be a send to the rank itself (the verifier rejects the program).
  const auto staged = [&](std::int64_t p) { return chunks == 1 || p >= 2; };
  std::vector<std::int64_t> ok_dp;
  for (std::int64_t d : divisors(ctx.world)) {
    if (fits(ctx.world / d) && staged(ctx.world / d)) ok_dp.push_back(d);
  }
  if (!staged(P)) {
    return make_error(
        ctx.method + ": " + std::to_string(chunks) +
        " interleaved chunks need at least 2 pipeline stages, dp " + std::to_string(ctx.dp) +
        " leaves 1 (ranks/dp = " + std::to_string(ctx.world) + "/" + std::to_string(ctx.dp) +
        "); use dp in {" + join_numbers(ok_dp) + "} or one chunk");
  }
  if (fits(P)) return Status::success();
  const std::string what =
      chunks == 1 ? std::to_string(P) + " pipeline stages"
                  : std::to_string(P) + " pipeline stages x " + std::to_string(chunks) + " chunks";
  return make_error(ctx.method + ": " + std::to_string(L) + " layers do not split evenly over " +
                    what + " (ranks/dp = " + std::to_string(ctx.world) + "/" +
                    std::to_string(ctx.dp) + "); use dp in {" + join_numbers(ok_dp) + "}");
}

std::int32_t peak_in_flight(const std::vector<Step>& order) {
  std::int32_t now = 0, peak = 0;
  for (const Step& s : order) {
    if (s.pass == Pass::forward) peak = std::max(peak, ++now);
    if (s.pass == Pass::backward || s.pass == Pass::backward_weight) --now;
  }
  return peak;
}

ir::Program emit_pipeline(const Context& ctx, const PipelineSpec& spec, const StageOrders& orders) {
  const std::int32_t P = ctx.replica_ranks;
  const std::int32_t V = spec.chunks;
  const std::int32_t N = static_cast<std::int32_t>(ctx.batch.micro_batches);
  const std::int32_t Lc = ctx.layers / (P * V);
  const model::RecomputePolicy policy = ctx.input->train.recompute;

  Emitter e(make_header(ctx, model::to_string(policy)), ctx.world, ctx.stored_ranks);
  const ir::StreamId compute = 0;
  const ir::StreamId s_fwd = e.stream("p2p_fwd");
  const ir::StreamId s_bwd = e.stream("p2p_bwd");
  const ir::StreamId s_grad = e.stream("grad_sync");
  const ir::StreamId s_fwd_recv = V > 1 ? e.stream("p2p_fwd_recv") : s_fwd;
  const ir::StreamId s_bwd_recv = V > 1 ? e.stream("p2p_bwd_recv") : s_bwd;
  const std::uint64_t a = ctx.activation_bytes;
  bool fused = false, split = false;
  for (const auto& order : orders) {
    for (const Step& s : order) {
      fused = fused || s.pass == Pass::backward;
      split = split || s.pass == Pass::backward_input;
    }
  }
  const Costs cost = make_costs(e, ctx, Lc, fused, split);

  // Pipeline d is pipeline 0 moved by `base` (its communicators, ranks and sample ids); the
  // `stage` groups span every pipeline. A replica-compact program (ScheduleInput::replica_only)
  // stores pipeline 0 and only counts the others' ops.
  for (std::int32_t d = 0; d < ctx.dp; ++d) {
    const ir::Rank base = d * P;
    std::vector<ir::Rank> members(static_cast<std::size_t>(P));
    for (std::int32_t i = 0; i < P; ++i)
      members[static_cast<std::size_t>(i)] = base + i;
    // Activations forward and their gradients backward travel on separate communicators: NCCL
    // runs one communicator's operations one at a time on a GPU (sim/run/tables.cpp
    // build_comm_order), and a stage's send forward and receive backward must be in flight
    // together, as in Megatron-LM's batched send_forward_recv_backward. With virtual chunks
    // the activations wrap around (P-1 -> 0), so every edge between global chunks k and k + 1
    // gets its own pair: one sender and one receiver each, no cycle.
    const ir::CommId pp = e.builder().communicator("pipeline" + std::to_string(d), members);
    const std::int32_t edges = V == 1 ? 1 : P * V - 1;
    std::vector<ir::CommId> fwd_comm(static_cast<std::size_t>(edges)), bwd_comm(fwd_comm.size());
    for (std::int32_t k = 0; k < edges; ++k) {
      const std::string sk = V == 1 ? "" : std::to_string(k);
      const std::string name = "pipeline" + std::to_string(d);
      fwd_comm[static_cast<std::size_t>(k)] =
          V == 1 ? pp : e.builder().distinct_communicator(name + ".fwd" + sk, members);
      bwd_comm[static_cast<std::size_t>(k)] =
          e.builder().distinct_communicator(name + ".bwd" + sk, members);
    }
    // The communicators of the edge between global chunks k and k + 1.
    const auto edge_fwd = [&](std::int32_t k) {
      return fwd_comm[static_cast<std::size_t>(V == 1 ? 0 : k)];
    };
    const auto edge_bwd = [&](std::int32_t k) {
      return bwd_comm[static_cast<std::size_t>(V == 1 ? 0 : k)];
    };

    for (std::int32_t i = 0; i < P; ++i) {
      const ir::Rank r = base + i;
      std::vector<Chunk> chunks(static_cast<std::size_t>(V));
      for (std::int32_t v = 0; v < V; ++v) {
        Chunk& c = chunks[static_cast<std::size_t>(v)];
        c.global = v * P + i;
        c.begin = c.global * Lc;
        c.end = c.begin + Lc;
        c.first = c.global == 0;
        c.last = c.global == P * V - 1;
        c.prev = c.first ? ir::kNone : base + (c.global - 1) % P;
        c.next = c.last ? ir::kNone : base + (c.global + 1) % P;
        c.block =
            declare_owned(e, r, V == 1 ? "stage" : "chunk" + std::to_string(v),
                          weights_ref(c.begin, c.end), Lc * ctx.layer_params, ctx.weight_bytes, 4);
      }
      const bool has_emb = i == 0 || i == P - 1;
      Owned emb;
      if (has_emb) {
        emb =
            declare_owned(e, r, "emb", embedding_ref(), ctx.embedding_params, ctx.weight_bytes, 4);
      }
      // Per (chunk, micro-batch) buffers, named by micro-batch (and chunk when V > 1).
      for (std::int32_t v = 0; v < V; ++v) {
        Chunk& c = chunks[static_cast<std::size_t>(v)];
        c.bufs.resize(static_cast<std::size_t>(N));
        for (std::int32_t m = 0; m < N; ++m) {
          MicroBuffers& b = c.bufs[static_cast<std::size_t>(m)];
          const NameSuffix sm(V == 1 ? -1 : v, m);
          b.act_in = e.buffer(r, sm.name("act.in"), a, BufferRole::activation, false);
          b.act_out = e.buffer(r, sm.name("act.out"), a, BufferRole::activation, false);
          b.grad_in = e.buffer(r, sm.name("agrad.in"), a, BufferRole::activation_grad, false);
          b.grad_out = e.buffer(r, sm.name("agrad.out"), a, BufferRole::activation_grad, false);
          const auto stash = [&](std::string_view name, std::uint64_t bytes) {
            return bytes ? e.buffer(r, sm.name(name), bytes, BufferRole::workspace, false)
                         : ir::kNone;
          };
          if (!split) {
            b.stash = stash("stash", cost.stash_bytes);
          } else {
            b.stash = stash("stash", cost.split.reuse);
            b.keep = stash("wgrad.x", cost.split.keep);
            b.b_only = stash("stash.b", cost.split.b_only);
            b.w_new = stash("wgrad.dy", cost.split.w_new);
          }
        }
      }

      OpIndex last_compute = ir::kNone;  // the latest compute op in program order
      auto track = [&](OpIndex op) {
        last_compute = op;
        return op;
      };
      auto forward = [&](Chunk& c, std::int32_t m) {
        const MicroBuffers& b = c.bufs[static_cast<std::size_t>(m)];
        const std::int32_t sample = d * N + m;
        OpIndex ready = ir::kNone;
        if (c.first) {
          e.alloc(r, compute, b.act_in);
          ready = track(e.builder().compute(r, compute, ComputeKind::embedding_forward,
                                            ir::kEmbeddingLayer, 0, sample, cost.emb_f,
                                            {emb.weights}, {b.act_in}));
        } else {
          e.alloc(r, s_fwd_recv, b.act_in, V > 1 ? Deps{last_compute} : Deps{});
          const Deps none;
          ready = e.builder().recv(r, s_fwd_recv, c.prev, edge_fwd(c.global - 1), Bytes(a),
                                   b.act_in, none.span());
        }
        e.alloc(r, compute, b.act_out);
        // What the forward stores: the stash (fused backward), or its split by reader.
        const BufferList stored = present({b.stash, b.keep, b.b_only});
        if (!stored.empty()) e.alloc(r, compute, stored.span());
        const Deps deps{ready};
        const BufferList reads{c.block.weights, b.act_in};
        BufferList writes{b.act_out};
        writes.append(stored.span());
        const OpIndex f =
            e.builder().compute(r, compute, ComputeKind::forward, c.begin, c.end, sample, cost.fwd,
                                reads.span(), writes.span(), deps.span());
        track(f);
        if (!c.last) {
          const Deps after{f};
          e.builder().send(r, s_fwd, c.next, edge_fwd(c.global), Bytes(a), b.act_out, after.span());
          e.free(r, s_fwd, b.act_out);
        } else {
          // Last chunk: loss forward and backward right away.
          e.alloc(r, compute, b.grad_in);
          track(e.builder().compute(r, compute, ComputeKind::head, ir::kEmbeddingLayer, 0, sample,
                                    cost.head, {emb.weights, b.act_out}, {b.grad_in, emb.grad}));
          e.free(r, compute, b.act_out);
        }
      };

      // Fused backward, or B (input gradient) of a split one: B frees what only it reads and
      // leaves W its inputs (pipeline.h, "Zero-bubble memory").
      auto backward = [&](Chunk& c, std::int32_t m, bool input_only) {
        const MicroBuffers& b = c.bufs[static_cast<std::size_t>(m)];
        const std::int32_t sample = d * N + m;
        OpIndex ready = ir::kNone;
        if (!c.last) {
          e.alloc(r, s_bwd_recv, b.grad_in, V > 1 ? Deps{last_compute} : Deps{});
          const Deps none;
          ready = e.builder().recv(r, s_bwd_recv, c.next, edge_bwd(c.global), Bytes(a), b.grad_in,
                                   none.span());
        }
        e.alloc(r, compute, b.grad_out);
        if (b.w_new != ir::kNone) e.alloc(r, compute, b.w_new);
        const Deps deps{ready};
        BufferList reads{c.block.weights, b.act_in, b.grad_in};
        reads.append(present({b.stash, b.keep, b.b_only}).span());
        BufferList writes{b.grad_out};
        if (input_only) {
          writes.append(present({b.stash, b.w_new}).span());
        } else {
          writes.push_back(c.block.grad);
        }
        const OpIndex op = e.builder().compute(
            r, compute, input_only ? ComputeKind::backward_input : ComputeKind::backward, c.begin,
            c.end, sample, input_only ? cost.bwd_in : cost.bwd, reads.span(), writes.span(),
            deps.span());
        if (input_only) {
          if (b.b_only != ir::kNone) e.free(r, compute, b.b_only);
        } else {
          e.free(r, compute, b.act_in);
          e.free(r, compute, b.grad_in);
          if (b.stash != ir::kNone) e.free(r, compute, b.stash);
        }
        track(op);
        if (!c.first) {
          const Deps after{op};
          e.builder().send(r, s_bwd, c.prev, edge_bwd(c.global - 1), Bytes(a), b.grad_out,
                           after.span());
          e.free(r, s_bwd, b.grad_out);
        } else {
          track(e.builder().compute(r, compute, ComputeKind::embedding_backward,
                                    ir::kEmbeddingLayer, 0, sample, cost.emb_b, {b.grad_out},
                                    {emb.grad}));
          e.free(r, compute, b.grad_out);
        }
      };

      // W: the weight gradient from what B left alive, then release all of it.
      auto backward_weight = [&](Chunk& c, std::int32_t m) {
        const MicroBuffers& b = c.bufs[static_cast<std::size_t>(m)];
        const std::int32_t sample = d * N + m;
        BufferList held{b.act_in, b.grad_in};
        held.append(present({b.stash, b.keep, b.w_new}).span());
        BufferList reads{c.block.weights};
        reads.append(held.span());
        const BufferList writes{c.block.grad};
        track(e.builder().compute(r, compute, ComputeKind::backward_weight, c.begin, c.end, sample,
                                  cost.bwd_w, reads.span(), writes.span()));
        e.free(r, compute, held.span());
      };

      for (const Step& s : orders[static_cast<std::size_t>(i)]) {
        Chunk& c = chunks[static_cast<std::size_t>(s.chunk)];
        switch (s.pass) {
          case Pass::forward:
            forward(c, s.micro);
            break;
          case Pass::backward:
            backward(c, s.micro, false);
            break;
          case Pass::backward_input:
            backward(c, s.micro, true);
            break;
          case Pass::backward_weight:
            backward_weight(c, s.micro);
            break;
        }
      }

      // Gradient synchronisation, then AdamW. Order of collectives is the same on every member
      // of each communicator: embedding (pipeline ends) first, then data parallel, then the
      // synchronous optimizer's gradient norm.
      OpIndex emb_ready = ir::kNone;
      std::vector<OpIndex> chunk_ready(static_cast<std::size_t>(V), ir::kNone);
      if (has_emb && P > 1) {
        const ir::CommId ends =
            e.builder().communicator("embedding" + std::to_string(d), {base, base + P - 1});
        const Deps deps{last_compute};
        emb_ready =
            e.builder().collective(r, s_grad, ir::CollectiveKind::all_reduce, ends, ir::kNone,
                                   Bytes(emb.grad_bytes), emb.grad, emb.grad, deps.span());
      }
      if (ctx.dp > 1) {
        const ir::CommId dpc = replica_peers(e, ctx, P, i, "stage");
        const Deps deps{last_compute};
        for (std::int32_t v = 0; v < V; ++v) {
          chunk_ready[static_cast<std::size_t>(v)] =
              all_reduce_grad(e, r, s_grad, dpc, chunks[static_cast<std::size_t>(v)].block, deps);
        }
        if (has_emb) emb_ready = all_reduce_grad(e, r, s_grad, dpc, emb, deps);
      }
      if (spec.sync_optimizer) {
        const ir::BufferId norm = e.buffer(r, "grad.norm", 4, BufferRole::workspace, true);
        const Deps deps{last_compute, emb_ready, chunk_ready.back()};
        const OpIndex synced = e.builder().collective(r, s_grad, ir::CollectiveKind::all_reduce, pp,
                                                      ir::kNone, Bytes(4), norm, norm, deps.span());
        emb_ready = synced;
        std::fill(chunk_ready.begin(), chunk_ready.end(), synced);
      }
      for (std::int32_t v = 0; v < V; ++v) {
        emit_optimizer(e, r, compute, chunks[static_cast<std::size_t>(v)].block, ctx.weight_bytes,
                       Deps{chunk_ready[static_cast<std::size_t>(v)], last_compute});
      }
      if (has_emb)
        emit_optimizer(e, r, compute, emb, ctx.weight_bytes, Deps{emb_ready, last_compute});
    }
  }
  return std::move(e).finish();
}

}  // namespace tawpipe::schedules::detail
