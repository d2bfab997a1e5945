#include "tests/unit/ir/fixtures.h"

#include <string>
#include <vector>

#include "common/ir/builder.h"

namespace tawpipe::ir::testing {
namespace {

TensorRef weights(std::int32_t b, std::int32_t e, std::int32_t piece = 0, std::int32_t pieces = 1) {
  TensorRef t;
  t.kind = TensorKind::weights;
  t.layer_begin = b;
  t.layer_end = e;
  t.piece = piece;
  t.pieces = pieces;
  return t;
}

Header header(const char* schedule) {
  Header h;
  h.schedule = schedule;
  h.options = {{"dp", "1"}, {"note", "test fixture"}};
  h.model = "tiny";
  h.layers = 2;
  h.model_params = 123456;
  h.seq_len = 16;
  h.micro_batch_size = 1;
  h.micro_batches = 2;
  h.global_batch = 2;
  h.dtype = "bf16";
  h.recompute = "full";
  h.topology = "test-2gpu";
  h.topology_hash = "abc123";
  h.placement = {0, 1};
  return h;
}

Cost unit_cost() {
  Cost c;
  c.flops = {1.5e9, 2e8, 1e7};
  c.bytes = {1e6, 2e6, 3.25e6};
  c.recompute_flops = 0.5e9;
  c.workspace_bytes = 4096;
  return c;
}

constexpr Bytes kAct{100};
constexpr Bytes kEmb{1000};
constexpr Bytes kLayer{2000};

std::string name_s(const char* base, int s, int b) {
  return std::string(base) + ".s" + std::to_string(s) + ".b" + std::to_string(b);
}

}  // namespace

Program pipeline_program() {
  ProgramBuilder b(header("test-pipeline"), 2);
  const StreamId comp = 0;
  const StreamId comm = b.stream("comm");
  const CommId world = b.communicator("world", {0, 1});
  const CostId cost = b.cost(unit_cost());
  {  // rank 0: embedding + layer 0
    const Rank r = 0;
    const BufferId wemb = b.buffer(r, "w.emb", kEmb, BufferRole::weights, true, weights(-1, 0));
    const BufferId wl0 = b.buffer(r, "w.l0", kLayer, BufferRole::weights, true, weights(0, 1));
    const BufferId gemb = b.buffer(r, "g.emb", kEmb, BufferRole::gradient, true);
    const BufferId gl0 = b.buffer(r, "g.l0", kLayer, BufferRole::gradient, true);
    BufferId act0[2], act1[2], ag1[2], ag0[2];
    OpIndex sent[2];
    for (int s = 0; s < 2; ++s) {
      act0[s] = b.buffer(r, name_s("act", s, 0), kAct, BufferRole::activation, false);
      act1[s] = b.buffer(r, name_s("act", s, 1), kAct, BufferRole::activation, false);
      ag1[s] = b.buffer(r, name_s("actgrad", s, 1), kAct, BufferRole::activation_grad, false);
      ag0[s] = b.buffer(r, name_s("actgrad", s, 0), kAct, BufferRole::activation_grad, false);
    }
    for (int s = 0; s < 2; ++s) {
      b.alloc(r, comp, act0[s]);
      b.compute(r, comp, ComputeKind::embedding_forward, kEmbeddingLayer, 0, s, cost, {wemb},
                {act0[s]});
      b.alloc(r, comp, act1[s]);
      const OpIndex f =
          b.compute(r, comp, ComputeKind::forward, 0, 1, s, cost, {wl0, act0[s]}, {act1[s]});
      const OpIndex d[] = {f};
      sent[s] = b.send(r, comm, 1, world, kAct, act1[s], d);
    }
    OpIndex last_eb = kNone;
    for (int s = 0; s < 2; ++s) {
      b.alloc(r, comm, ag1[s]);
      const OpIndex rv = b.recv(r, comm, 1, world, kAct, ag1[s]);
      b.alloc(r, comp, ag0[s]);
      const OpIndex ds[] = {sent[s]};
      b.free(r, comp, act1[s], ds);
      const OpIndex d[] = {rv};
      b.compute(r, comp, ComputeKind::backward, 0, 1, s, cost, {wl0, act0[s], ag1[s]},
                {ag0[s], gl0}, d);
      last_eb = b.compute(r, comp, ComputeKind::embedding_backward, kEmbeddingLayer, 0, s, cost,
                          {ag0[s]}, {gemb});
      b.free(r, comp, act0[s]);
      b.free(r, comp, ag1[s]);
      b.free(r, comp, ag0[s]);
    }
    const OpIndex d[] = {last_eb};
    const OpIndex ar =
        b.collective(r, comm, CollectiveKind::all_reduce, world, kNone, kEmb, gemb, gemb, d);
    const OpIndex da[] = {ar};
    b.compute(r, comp, ComputeKind::optimizer, kEmbeddingLayer, 0, kNone, cost, {gemb}, {wemb}, da);
    b.compute(r, comp, ComputeKind::optimizer, 0, 1, kNone, cost, {gl0}, {wl0});
  }
  {  // rank 1: layer 1 + head
    const Rank r = 1;
    const BufferId wemb = b.buffer(r, "w.emb", kEmb, BufferRole::weights, true, weights(-1, 0));
    const BufferId wl1 = b.buffer(r, "w.l1", kLayer, BufferRole::weights, true, weights(1, 2));
    const BufferId gemb = b.buffer(r, "g.emb", kEmb, BufferRole::gradient, true);
    const BufferId gl1 = b.buffer(r, "g.l1", kLayer, BufferRole::gradient, true);
    BufferId act1[2], act2[2], ag2[2], ag1[2];
    for (int s = 0; s < 2; ++s) {
      act1[s] = b.buffer(r, name_s("act", s, 1), kAct, BufferRole::activation, false);
      act2[s] = b.buffer(r, name_s("act", s, 2), kAct, BufferRole::activation, false);
      ag2[s] = b.buffer(r, name_s("actgrad", s, 2), kAct, BufferRole::activation_grad, false);
      ag1[s] = b.buffer(r, name_s("actgrad", s, 1), kAct, BufferRole::activation_grad, false);
    }
    OpIndex last_head = kNone;
    for (int s = 0; s < 2; ++s) {
      b.alloc(r, comm, act1[s]);
      const OpIndex rv = b.recv(r, comm, 0, world, kAct, act1[s]);
      b.alloc(r, comp, act2[s]);
      const OpIndex d[] = {rv};
      b.compute(r, comp, ComputeKind::forward, 1, 2, s, cost, {wl1, act1[s]}, {act2[s]}, d);
      b.alloc(r, comp, ag2[s]);
      last_head = b.compute(r, comp, ComputeKind::head, kEmbeddingLayer, 0, s, cost,
                            {wemb, act2[s]}, {ag2[s], gemb});
    }
    for (int s = 0; s < 2; ++s) {
      b.alloc(r, comp, ag1[s]);
      const OpIndex bw = b.compute(r, comp, ComputeKind::backward, 1, 2, s, cost,
                                   {wl1, act1[s], ag2[s]}, {ag1[s], gl1});
      const OpIndex d[] = {bw};
      b.send(r, comm, 0, world, kAct, ag1[s], d);
      b.free(r, comm, ag1[s]);
      b.free(r, comp, act1[s]);
      b.free(r, comp, act2[s]);
      b.free(r, comp, ag2[s]);
    }
    const OpIndex d[] = {last_head};
    const OpIndex ar =
        b.collective(r, comm, CollectiveKind::all_reduce, world, kNone, kEmb, gemb, gemb, d);
    const OpIndex da[] = {ar};
    b.compute(r, comp, ComputeKind::optimizer, kEmbeddingLayer, 0, kNone, cost, {gemb}, {wemb}, da);
    b.compute(r, comp, ComputeKind::optimizer, 1, 2, kNone, cost, {gl1}, {wl1});
  }
  return std::move(b).finish();
}

Program data_parallel_program() {
  ProgramBuilder b(header("test-dp"), 2);
  const StreamId comp = 0;
  const StreamId comm = b.stream("comm");
  const CommId world = b.communicator("world", {0, 1});
  const CostId cost = b.cost(unit_cost());
  for (Rank r = 0; r < 2; ++r) {
    const BufferId wemb = b.buffer(r, "w.emb", kEmb, BufferRole::weights, true, weights(-1, 0));
    const BufferId wl = b.buffer(r, "w.layers", kLayer, BufferRole::weights, true, weights(0, 2));
    const BufferId gemb = b.buffer(r, "g.emb", kEmb, BufferRole::gradient, true);
    const BufferId gl = b.buffer(r, "g.layers", kLayer, BufferRole::gradient, true);
    const BufferId act0 = b.buffer(r, "act.b0", kAct, BufferRole::activation, false);
    const BufferId act2 = b.buffer(r, "act.b2", kAct, BufferRole::activation, false);
    const BufferId ag2 = b.buffer(r, "actgrad.b2", kAct, BufferRole::activation_grad, false);
    const BufferId ag0 = b.buffer(r, "actgrad.b0", kAct, BufferRole::activation_grad, false);
    const std::int32_t s = r;
    b.alloc(r, comp, act0);
    b.compute(r, comp, ComputeKind::embedding_forward, kEmbeddingLayer, 0, s, cost, {wemb}, {act0});
    b.alloc(r, comp, act2);
    b.compute(r, comp, ComputeKind::forward, 0, 2, s, cost, {wl, act0}, {act2});
    b.alloc(r, comp, ag2);
    b.compute(r, comp, ComputeKind::head, kEmbeddingLayer, 0, s, cost, {wemb, act2}, {ag2, gemb});
    b.alloc(r, comp, ag0);
    const OpIndex bw =
        b.compute(r, comp, ComputeKind::backward, 0, 2, s, cost, {wl, act0, ag2}, {ag0, gl});
    const OpIndex eb = b.compute(r, comp, ComputeKind::embedding_backward, kEmbeddingLayer, 0, s,
                                 cost, {ag0}, {gemb});
    b.free(r, comp, act0);
    b.free(r, comp, act2);
    b.free(r, comp, ag2);
    b.free(r, comp, ag0);
    const OpIndex d1[] = {bw};
    b.collective(r, comm, CollectiveKind::reduce, world, 0, kLayer, gl, gl, d1);
    const OpIndex bc = b.collective(r, comm, CollectiveKind::broadcast, world, 0, kLayer, gl, gl);
    const OpIndex d2[] = {eb};
    const OpIndex ar =
        b.collective(r, comm, CollectiveKind::all_reduce, world, kNone, kEmb, gemb, gemb, d2);
    const OpIndex d3[] = {bc};
    b.compute(r, comp, ComputeKind::optimizer, 0, 2, kNone, cost, {gl}, {wl}, d3);
    const OpIndex d4[] = {ar};
    b.compute(r, comp, ComputeKind::optimizer, kEmbeddingLayer, 0, kNone, cost, {gemb}, {wemb}, d4);
  }
  return std::move(b).finish();
}

Program fsdp_program() {
  ProgramBuilder b(header("test-fsdp"), 2);
  const StreamId comp = 0;
  const StreamId comm = b.stream("comm");
  const CommId world = b.communicator("world", {0, 1});
  const CostId cost = b.cost(unit_cost());
  const Bytes shard{kLayer.count() / 2};
  for (Rank r = 0; r < 2; ++r) {
    const BufferId wemb = b.buffer(r, "w.emb", kEmb, BufferRole::weights, true, weights(-1, 0));
    const BufferId gemb = b.buffer(r, "g.emb", kEmb, BufferRole::gradient, true);
    BufferId ws[2], gs[2], act[3], ag[3];
    for (int l = 0; l < 2; ++l) {
      ws[l] = b.buffer(r, "w.l" + std::to_string(l) + ".shard", shard, BufferRole::weights, true,
                       weights(l, l + 1, r, 2));
      gs[l] = b.buffer(r, "g.l" + std::to_string(l) + ".shard", shard, BufferRole::gradient, true);
    }
    for (int i = 0; i < 3; ++i) {
      act[i] = b.buffer(r, "act.b" + std::to_string(i), kAct, BufferRole::activation, false);
      ag[i] =
          b.buffer(r, "actgrad.b" + std::to_string(i), kAct, BufferRole::activation_grad, false);
    }
    const std::int32_t s = r;
    b.alloc(r, comp, act[0]);
    b.compute(r, comp, ComputeKind::embedding_forward, kEmbeddingLayer, 0, s, cost, {wemb},
              {act[0]});
    for (int l = 0; l < 2; ++l) {
      const BufferId full =
          b.buffer(r, "w.full.f" + std::to_string(l), kLayer, BufferRole::weight_staging, false);
      b.alloc(r, comm, full);
      const OpIndex g =
          b.collective(r, comm, CollectiveKind::all_gather, world, kNone, kLayer, ws[l], full);
      b.alloc(r, comp, act[l + 1]);
      const OpIndex d[] = {g};
      b.compute(r, comp, ComputeKind::forward, l, l + 1, s, cost, {full, act[l]}, {act[l + 1]}, d);
      b.free(r, comp, full);
    }
    b.alloc(r, comp, ag[2]);
    b.compute(r, comp, ComputeKind::head, kEmbeddingLayer, 0, s, cost, {wemb, act[2]},
              {ag[2], gemb});
    OpIndex rs[2];
    for (int l = 1; l >= 0; --l) {
      const BufferId full =
          b.buffer(r, "w.full.b" + std::to_string(l), kLayer, BufferRole::weight_staging, false);
      const BufferId gfull =
          b.buffer(r, "g.full.b" + std::to_string(l), kLayer, BufferRole::gradient_staging, false);
      b.alloc(r, comm, full);
      const OpIndex g =
          b.collective(r, comm, CollectiveKind::all_gather, world, kNone, kLayer, ws[l], full);
      b.alloc(r, comp, ag[l]);
      b.alloc(r, comp, gfull);
      const OpIndex d[] = {g};
      const OpIndex bw = b.compute(r, comp, ComputeKind::backward, l, l + 1, s, cost,
                                   {full, act[l], ag[l + 1]}, {ag[l], gfull}, d);
      b.free(r, comp, full);
      const OpIndex db[] = {bw};
      rs[l] = b.collective(r, comm, CollectiveKind::reduce_scatter, world, kNone, kLayer, gfull,
                           gs[l], db);
      b.free(r, comm, gfull);
    }
    const OpIndex eb = b.compute(r, comp, ComputeKind::embedding_backward, kEmbeddingLayer, 0, s,
                                 cost, {ag[0]}, {gemb});
    for (int i = 0; i < 3; ++i) {
      b.free(r, comp, act[i]);
      b.free(r, comp, ag[i]);
    }
    const OpIndex d[] = {eb};
    const OpIndex ar =
        b.collective(r, comm, CollectiveKind::all_reduce, world, kNone, kEmb, gemb, gemb, d);
    for (int l = 0; l < 2; ++l) {
      const OpIndex dl[] = {rs[l]};
      b.compute(r, comp, ComputeKind::optimizer, l, l + 1, kNone, cost, {gs[l]}, {ws[l]}, dl);
    }
    const OpIndex da[] = {ar};
    b.compute(r, comp, ComputeKind::optimizer, kEmbeddingLayer, 0, kNone, cost, {gemb}, {wemb}, da);
  }
  return std::move(b).finish();
}

Program weight_passing_program(const WeightPassingOptions& options) {
  ProgramBuilder b(header("test-weight-passing"), 2);
  const StreamId comp = 0;
  const StreamId comm = b.stream("comm");
  const StreamId grad = b.stream("grad");
  const CommId world = b.communicator("world", {0, 1});
  const CostId cost = b.cost(unit_cost());
  const std::int32_t exchange = b.new_group();
  for (Rank r = 0; r < 2; ++r) {
    const Rank peer = 1 - r;
    const BufferId wemb = b.buffer(r, "w.emb", kEmb, BufferRole::weights, true, weights(-1, 0));
    const BufferId wown =
        b.buffer(r, "w.own", kLayer, BufferRole::weights, true, weights(r, r + 1));
    const BufferId wst = b.buffer(r, "w.stage", kLayer, BufferRole::weight_staging, true);
    const BufferId gemb = b.buffer(r, "g.emb", kEmb, BufferRole::gradient, true);
    const BufferId gown = b.buffer(r, "g.own", kLayer, BufferRole::gradient, true);
    const BufferId gst = b.buffer(r, "g.stage", kLayer, BufferRole::gradient_staging, false);
    BufferId act[3], ag[3];
    for (int i = 0; i < 3; ++i) {
      act[i] = b.buffer(r, "act.b" + std::to_string(i), kAct, BufferRole::activation, false);
      ag[i] =
          b.buffer(r, "actgrad.b" + std::to_string(i), kAct, BufferRole::activation_grad, false);
    }
    const BufferId w[2] = {r == 0 ? wown : wst, r == 1 ? wown : wst};  // weights of layer l
    const BufferId g[2] = {r == 0 ? gown : gst, r == 1 ? gown : gst};  // gradient of layer l
    b.send(r, comm, peer, world, kLayer, wown, {}, exchange);
    const OpIndex got = b.recv(r, comm, peer, world, kLayer, wst, {}, exchange);
    const std::int32_t s = r;
    b.alloc(r, comp, act[0]);
    b.compute(r, comp, ComputeKind::embedding_forward, kEmbeddingLayer, 0, s, cost, {wemb},
              {act[0]});
    const OpIndex dg[] = {got};
    for (int l = 0; l < 2; ++l) {
      b.alloc(r, comp, act[l + 1]);
      b.compute(r, comp, ComputeKind::forward, l, l + 1, s, cost, {w[l], act[l]}, {act[l + 1]},
                l == 0 ? std::span<const OpIndex>(dg) : std::span<const OpIndex>());
    }
    b.alloc(r, comp, ag[2]);
    b.compute(r, comp, ComputeKind::head, kEmbeddingLayer, 0, s, cost, {wemb, act[2]},
              {ag[2], gemb});
    b.alloc(r, comp, gst);
    OpIndex bw[2];
    for (int l = 1; l >= 0; --l) {
      b.alloc(r, comp, ag[l]);
      bw[l] = b.compute(r, comp, ComputeKind::backward, l, l + 1, s, cost,
                        {w[l], act[l], ag[l + 1]}, {ag[l], g[l]});
    }
    const OpIndex eb = b.compute(r, comp, ComputeKind::embedding_backward, kEmbeddingLayer, 0, s,
                                 cost, {ag[0]}, {gemb});
    // Layer 1's gradient: r0 sends its partial to the owner r1, which accumulates it.
    OpIndex last_grad = kNone;
    const int times = options.send_gradient_twice ? 2 : 1;
    if (r == 0) {
      const OpIndex d[] = {bw[1]};
      for (int k = 0; k < times; ++k)
        last_grad = b.send(r, grad, 1, world, kLayer, gst, d);
    } else {
      const BufferId in = b.buffer(r, "g.in", kLayer, BufferRole::gradient_staging, false);
      for (int k = 0; k < times; ++k) {
        b.alloc(r, grad, in);
        b.recv(r, grad, 0, world, kLayer, in);
        const OpIndex d[] = {bw[1]};
        b.compute(r, grad, ComputeKind::accumulate, 1, 2, kNone, cost, {in}, {gown}, d);
        last_grad = b.free(r, grad, in);
      }
    }
    // Layer 0's gradient: reduce to its owner r0 (in place there).
    const OpIndex d0[] = {bw[0], last_grad};
    const OpIndex red =
        b.collective(r, grad, CollectiveKind::reduce, world, 0, kLayer, g[0], g[0], d0);
    b.free(r, grad, gst);
    const OpIndex de[] = {eb};
    const OpIndex ar =
        b.collective(r, grad, CollectiveKind::all_reduce, world, kNone, kEmb, gemb, gemb, de);
    for (int i = 0; i < 3; ++i) {
      b.free(r, comp, act[i]);
      b.free(r, comp, ag[i]);
    }
    const OpIndex dr[] = {red};
    b.compute(r, comp, ComputeKind::optimizer, r, r + 1, kNone, cost, {gown}, {wown}, dr);
    const OpIndex da[] = {ar};
    b.compute(r, comp, ComputeKind::optimizer, kEmbeddingLayer, 0, kNone, cost, {gemb}, {wemb}, da);
  }
  return std::move(b).finish();
}

Program delete_op(const Program& program, Rank rank, OpIndex victim) {
  Program out = program;
  const RankProgram& in = program.ranks[static_cast<std::size_t>(rank)];
  RankProgram& rp = out.ranks[static_cast<std::size_t>(rank)];
  rp.ops.clear();
  rp.dep_pool.clear();
  rp.buffer_pool.clear();
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    if (static_cast<OpIndex>(i) == victim) continue;
    Op op = in.ops[i];
    op.deps_offset = static_cast<std::uint32_t>(rp.dep_pool.size());
    std::uint32_t count = 0;
    for (OpIndex d : deps(in, in.ops[i])) {
      if (d == victim) continue;
      rp.dep_pool.push_back(d > victim ? d - 1 : d);
      ++count;
    }
    op.deps_count = count;
    op.buffers_offset = static_cast<std::uint32_t>(rp.buffer_pool.size());
    for (BufferId b : reads(in, in.ops[i]))
      rp.buffer_pool.push_back(b);
    for (BufferId b : writes(in, in.ops[i]))
      rp.buffer_pool.push_back(b);
    rp.ops.push_back(op);
  }
  return out;
}

Program merge_alloc_free_runs(const Program& program) {
  Program out = program;
  for (std::size_t r = 0; r < program.ranks.size(); ++r) {
    const RankProgram& in = program.ranks[r];
    RankProgram& rp = out.ranks[r];
    rp.ops.clear();
    rp.dep_pool.clear();
    rp.buffer_pool.clear();
    std::vector<OpIndex> renamed(in.ops.size());
    for (std::size_t i = 0; i < in.ops.size(); ++i) {
      const Op& op = in.ops[i];
      const bool mergeable = (op.kind == OpKind::alloc || op.kind == OpKind::free) &&
                             op.deps_count == 0 && !rp.ops.empty() &&
                             rp.ops.back().kind == op.kind && rp.ops.back().stream == op.stream &&
                             renamed[i - 1] == static_cast<OpIndex>(rp.ops.size()) - 1;
      if (mergeable) {  // the previous op is the last one emitted: extend its buffer list
        for (BufferId b : writes(in, op))
          rp.buffer_pool.push_back(b);
        rp.ops.back().writes_count =
            static_cast<std::uint16_t>(rp.ops.back().writes_count + op.writes_count);
        renamed[i] = static_cast<OpIndex>(rp.ops.size()) - 1;
        continue;
      }
      Op copy = op;
      copy.deps_offset = static_cast<std::uint32_t>(rp.dep_pool.size());
      for (OpIndex d : deps(in, op))
        rp.dep_pool.push_back(renamed[static_cast<std::size_t>(d)]);
      copy.buffers_offset = static_cast<std::uint32_t>(rp.buffer_pool.size());
      for (BufferId b : reads(in, op))
        rp.buffer_pool.push_back(b);
      for (BufferId b : writes(in, op))
        rp.buffer_pool.push_back(b);
      renamed[i] = static_cast<OpIndex>(rp.ops.size());
      rp.ops.push_back(copy);
    }
  }
  return out;
}

BufferId buffer_named(const Program& program, Rank rank, const char* name) {
  const auto& bufs = program.ranks[static_cast<std::size_t>(rank)].buffers;
  for (std::size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].name == name) return static_cast<BufferId>(i);
  return kNone;
}

}  // namespace tawpipe::ir::testing
