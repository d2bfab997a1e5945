// Pipeline schedules against their papers' formulas (issue 16): 1F1B, interleaved 1F1B
// (1f1b[virtual=V]), ZB-H1 (zb1) and ZB-H2 (zb2).
//
// The bubble tests replay the generated IR on an ideal machine: a forward over n layers takes
// n*T_F, B n*T_B, W n*T_W, a fused backward n*(T_B + T_W); everything else (head, embedding,
// optimizer, P2P, collectives) takes no time; the IR's ordering rules (stream order, deps, P2P
// and collective rendezvous) decide when each op starts. On P stages with N >= P micro-batches of
// Ls layers per stage the formulas (Qi et al., ICLR 2024, Table 2; Narayanan et al. 2021 §2.2)
// give each stage's idle time within the iteration:
//   1F1B:              (P-1) (T_F + T_B + T_W) Ls
//   interleaved, V:    (P-1) (T_F + T_B + T_W) Ls / V          (bubble fraction (P-1)/(V N))
//   ZB-H1:             (P-1) (T_F + T_B - T_W) Ls              (T_W <= T_F)
//   ZB-H2:             (P-1) (T_F + T_B - 2 T_W) Ls, or 0 when negative, measured from the
//                      stage's first to its last pass (the paper's parallelogram; N >= 2P-1).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "common/ir/verifier.h"
#include "common/model/memory.h"
#include "common/model/presets.h"
#include "schedule_test_util.h"
#include "schedules/pipeline.h"

namespace tawpipe::schedules {
namespace {

using ir::ComputeKind;
using ir::OpKind;

struct Times {
  std::int64_t f, b, w;
};

struct RankTiming {
  std::int64_t busy = 0, first = -1, last = 0;
};

/// Ideal-machine replay (file comment). Returns per-rank busy time and first/last compute times.
std::vector<RankTiming> replay(const ir::Program& p, Times t) {
  const auto R = static_cast<std::size_t>(p.num_ranks());
  std::vector<std::vector<std::int64_t>> end(R), ready(R);
  std::vector<std::vector<char>> done(R), posted(R);
  // Partner of each P2P op (k-th send r->q on comm c matches the k-th recv at q from r on c) and
  // instance of each collective (k-th collective of a rank on comm c).
  std::vector<std::vector<std::pair<ir::Rank, ir::OpIndex>>> partner(R);
  std::map<std::tuple<int, int, int, int>, std::vector<ir::OpIndex>> sends, recvs;
  std::map<std::pair<int, int>, std::vector<std::pair<ir::Rank, ir::OpIndex>>> coll;
  std::vector<std::map<int, int>> coll_seen(R);
  std::map<std::pair<ir::Rank, ir::OpIndex>, std::pair<int, int>> instance_of;
  for (std::size_t r = 0; r < R; ++r) {
    const auto& ops = p.ranks[r].ops;
    end[r].assign(ops.size(), 0);
    ready[r].assign(ops.size(), 0);
    done[r].assign(ops.size(), 0);
    posted[r].assign(ops.size(), 0);
    partner[r].assign(ops.size(), {-1, -1});
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const ir::Op& op = ops[i];
      const auto ri = static_cast<int>(r);
      const auto ii = static_cast<ir::OpIndex>(i);
      if (op.kind == OpKind::send) sends[{ri, op.peer, op.comm, 0}].push_back(ii);
      if (op.kind == OpKind::recv) recvs[{op.peer, ri, op.comm, 0}].push_back(ii);
      if (op.kind == OpKind::collective) {
        const int k = coll_seen[r][op.comm]++;
        coll[{op.comm, k}].push_back({ri, ii});
        instance_of[{ri, ii}] = {op.comm, k};
      }
    }
  }
  for (const auto& [key, s] : sends) {
    const auto& rv = recvs[key];
    EXPECT_EQ(s.size(), rv.size());
    for (std::size_t k = 0; k < std::min(s.size(), rv.size()); ++k) {
      const int from = std::get<0>(key), to = std::get<1>(key);
      partner[static_cast<std::size_t>(from)][static_cast<std::size_t>(s[k])] = {to, rv[k]};
      partner[static_cast<std::size_t>(to)][static_cast<std::size_t>(rv[k])] = {from, s[k]};
    }
  }
  const auto duration = [&](const ir::Op& op) -> std::int64_t {
    if (op.kind != OpKind::compute) return 0;
    const std::int64_t n = op.layer_end - op.layer_begin;
    switch (op.compute) {
      case ComputeKind::forward:
        return n * t.f;
      case ComputeKind::backward:
        return n * (t.b + t.w);
      case ComputeKind::backward_input:
        return n * t.b;
      case ComputeKind::backward_weight:
        return n * t.w;
      default:
        return 0;
    }
  };
  std::vector<RankTiming> timing(R);
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::size_t r = 0; r < R; ++r) {
      const ir::RankProgram& rp = p.ranks[r];
      std::vector<std::int64_t> stream_end(p.streams.size(), 0);
      std::vector<char> stream_blocked(p.streams.size(), 0);
      for (std::size_t i = 0; i < rp.ops.size(); ++i) {
        const ir::Op& op = rp.ops[i];
        if (done[r][i]) {
          stream_end[op.stream] = std::max(stream_end[op.stream], end[r][i]);
          continue;
        }
        if (stream_blocked[op.stream]) continue;
        stream_blocked[op.stream] = 1;  // later ops of this stream wait for this one
        std::int64_t at = stream_end[op.stream];
        bool deps_done = true;
        for (ir::OpIndex dep : ir::deps(rp, op)) {
          deps_done = deps_done && done[r][static_cast<std::size_t>(dep)];
          at = std::max(at, end[r][static_cast<std::size_t>(dep)]);
        }
        if (!deps_done) continue;
        ready[r][i] = at;
        posted[r][i] = 1;
        if (op.kind == OpKind::send || op.kind == OpKind::recv) {
          const auto [q, j] = partner[r][i];
          const auto qs = static_cast<std::size_t>(q), js = static_cast<std::size_t>(j);
          if (!posted[qs][js]) continue;
          end[r][i] = end[qs][js] = std::max(at, ready[qs][js]);
          done[r][i] = done[qs][js] = 1;
        } else if (op.kind == OpKind::collective) {
          const auto& members = coll[instance_of[{static_cast<int>(r), static_cast<int>(i)}]];
          bool all = true;
          std::int64_t start = 0;
          for (const auto& [q, j] : members) {
            all = all && posted[static_cast<std::size_t>(q)][static_cast<std::size_t>(j)];
            start =
                std::max(start, ready[static_cast<std::size_t>(q)][static_cast<std::size_t>(j)]);
          }
          if (!all) continue;
          for (const auto& [q, j] : members) {
            end[static_cast<std::size_t>(q)][static_cast<std::size_t>(j)] = start;
            done[static_cast<std::size_t>(q)][static_cast<std::size_t>(j)] = 1;
          }
        } else {
          const std::int64_t d = duration(op);
          end[r][i] = at + d;
          done[r][i] = 1;
          if (d > 0) {
            RankTiming& rt = timing[r];
            rt.busy += d;
            rt.first = rt.first < 0 ? at : std::min(rt.first, at);
            rt.last = std::max(rt.last, at + d);
          }
        }
        progress = true;
      }
    }
  }
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t i = 0; i < done[r].size(); ++i)
      EXPECT_TRUE(done[r][i]) << "replay stuck at rank " << r << " op " << i;
  }
  return timing;
}

ir::Program generated(const char* method, std::int32_t P, std::int32_t layers, std::int32_t N,
                      std::map<std::string, std::string> options = {}) {
  const ir::Program p =
      testing::must_generate(method, testing::small_input(1, P, layers, N, 1, std::move(options)));
  const ir::VerifyResult v = ir::verify(p);
  EXPECT_TRUE(v.ok) << method << ": " << v.message;
  return p;
}

std::int64_t makespan(const std::vector<RankTiming>& t) {
  std::int64_t m = 0;
  for (const RankTiming& r : t)
    m = std::max(m, r.last);
  return m;
}

constexpr Times kCases[] = {{1, 1, 1}, {3, 4, 2}, {5, 6, 4}, {4, 6, 1}};

// 1F1B and ZB-H1 on the 4-stage example (P = 4, 2 layers per stage, N = 8): every stage idles
// exactly (P-1)(T_F + T_B + T_W) Ls, resp. (P-1)(T_F + T_B - T_W) Ls. With equal times that is
// 9 Ls against 3 Ls: ZB-H1 has a third of 1F1B's bubble.
TEST(PipelineBubble, OneFOneBAndZbH1MatchThePaper) {
  const std::int32_t P = 4, Ls = 2, N = 8;
  const ir::Program f1b = generated("1f1b", P, P * Ls, N);
  const ir::Program zb1 = generated("zb1", P, P * Ls, N);
  for (const Times& t : kCases) {
    SCOPED_TRACE(std::to_string(t.f) + "/" + std::to_string(t.b) + "/" + std::to_string(t.w));
    const auto a = replay(f1b, t);
    for (const RankTiming& r : a)
      EXPECT_EQ(makespan(a) - r.busy, (P - 1) * (t.f + t.b + t.w) * Ls);
    const auto z = replay(zb1, t);
    for (const RankTiming& r : z) {
      EXPECT_EQ(r.busy, N * (t.f + t.b + t.w) * Ls);
      EXPECT_EQ(makespan(z) - r.busy, (P - 1) * (t.f + t.b - t.w) * Ls);
    }
  }
}

// ZB-H2 (N = 8 >= 2P-1): from its first to its last pass the most idle stage (stage 0) waits
// max(0, (P-1)(T_F + T_B - 2 T_W)) Ls; none waits at all with equal times. The synchronous
// optimizer step still sees the pipeline skew: the iteration's idle per stage is then the fill,
// (P-1) T_F Ls on the last stage.
TEST(PipelineBubble, ZbH2MatchesThePaper) {
  const std::int32_t P = 4, Ls = 2, N = 8;
  const ir::Program zb2 = generated("zb2", P, P * Ls, N);
  for (const Times& t : kCases) {
    SCOPED_TRACE(std::to_string(t.f) + "/" + std::to_string(t.b) + "/" + std::to_string(t.w));
    const auto z = replay(zb2, t);
    std::int64_t worst = 0;
    for (const RankTiming& r : z) {
      EXPECT_EQ(r.busy, N * (t.f + t.b + t.w) * Ls);
      worst = std::max(worst, r.last - r.first - r.busy);
    }
    EXPECT_EQ(worst, std::max<std::int64_t>(0, (P - 1) * (t.f + t.b - 2 * t.w) * Ls));
    EXPECT_EQ(z.back().first, (P - 1) * t.f * Ls);
  }
}

// Interleaved 1F1B (Narayanan et al. §2.2.2): with V chunks per rank the bubble shrinks by V:
// idle (P-1)(T_F + T_B + T_W) Ls / V per stage, i.e. a bubble fraction (P-1)/(V N) of the ideal
// time N (T_F + T_B + T_W) Ls.
TEST(PipelineBubble, InterleavedOneFOneBDividesTheBubbleByV) {
  const std::int32_t P = 4, N = 8;
  for (const std::int32_t V : {2, 4}) {
    const std::int32_t Ls = 4;  // layers per rank: V chunks of Ls / V layers
    SCOPED_TRACE("V=" + std::to_string(V));
    const ir::Program p = generated("1f1b", P, P * Ls, N, {{"virtual", std::to_string(V)}});
    for (const Times& t : kCases) {
      const auto z = replay(p, t);
      for (const RankTiming& r : z) {
        EXPECT_EQ(r.busy, N * (t.f + t.b + t.w) * Ls);
        EXPECT_EQ((makespan(z) - r.busy) * V, (P - 1) * (t.f + t.b + t.w) * Ls);
      }
    }
  }
}

/// Per rank: the most micro-batches between their forward and the backward that releases them
/// (fused backward or W), from the IR's op order.
std::vector<std::int32_t> peak_in_flight(const ir::Program& p) {
  std::vector<std::int32_t> out;
  for (const ir::RankProgram& rp : p.ranks) {
    std::int32_t now = 0, peak = 0;
    for (const ir::Op& op : rp.ops) {
      if (op.kind != OpKind::compute) continue;
      if (op.compute == ComputeKind::forward) peak = std::max(peak, ++now);
      if (op.compute == ComputeKind::backward || op.compute == ComputeKind::backward_weight) --now;
    }
    out.push_back(peak);
  }
  return out;
}

// Peak activation memory in micro-batches: 1F1B stage i holds min(P-i, N); ZB-H1 P on every
// stage (1F1B's peak, which stage 0 has); ZB-H2 2P-1 on every stage (N >= 2P-1).
TEST(PipelineMemory, PeakInFlightMicroBatches) {
  const std::int32_t P = 4, N = 8;
  const auto f1b = peak_in_flight(generated("1f1b", P, P, N));
  const auto zb1 = peak_in_flight(generated("zb1", P, P, N));
  const auto zb2 = peak_in_flight(generated("zb2", P, P, N));
  for (std::int32_t i = 0; i < P; ++i) {
    const auto s = static_cast<std::size_t>(i);
    EXPECT_EQ(f1b[s], std::min(P - i, N));
    EXPECT_EQ(zb1[s], P);
    EXPECT_EQ(zb2[s], 2 * P - 1);
  }
  EXPECT_EQ(*std::max_element(zb1.begin(), zb1.end()), *std::max_element(f1b.begin(), f1b.end()));
}

// P2P traffic: one activation forward and one gradient backward per chunk boundary and
// micro-batch: 2 (P V - 1) N a bytes per pipeline (V = 1: 1F1B and both ZB schedules); the
// interleaved schedule's wrap from rank P-1 to rank 0 crosses nodes V-1 extra times per
// direction. 2 nodes x 2 GPUs, so node boundaries per direction: 1 (V = 1), 2V - 1 (V > 1).
TEST(PipelineTraffic, ActivationMessagesPerChunkBoundary) {
  const std::int32_t N = 4;
  for (const auto& [method, V] : std::vector<std::pair<const char*, std::int32_t>>{
           {"1f1b", 1}, {"zb1", 1}, {"zb2", 1}, {"1f1b", 2}, {"1f1b", 4}}) {
    SCOPED_TRACE(std::string(method) + " V=" + std::to_string(V));
    std::map<std::string, std::string> opt;
    if (V > 1) opt["virtual"] = std::to_string(V);
    const ScheduleInput in = testing::small_input(2, 2, 4 * V, N, 1, opt);
    const ir::Program p = testing::must_generate(method, in);
    ASSERT_TRUE(ir::verify(p).ok) << ir::verify(p).message;
    const auto a = static_cast<std::uint64_t>(in.train.seq_len * in.model.hidden * 2);
    const auto t = testing::p2p_traffic(p, in.node_of_rank);
    EXPECT_EQ(t.messages, static_cast<std::uint64_t>(2 * (4 * V - 1) * N));
    EXPECT_EQ(t.intra + t.inter, static_cast<std::uint64_t>(2 * (4 * V - 1) * N) * a);
    EXPECT_EQ(t.inter, static_cast<std::uint64_t>(2 * (2 * V - 1) * N) * a);
  }
}

// Zero-bubble programs split every decoder backward: per stage and micro-batch one B and one W,
// no fused backward, and one synchronous gradient-norm all-reduce per rank before AdamW.
TEST(ZeroBubble, SplitsEveryBackward) {
  for (const char* method : {"zb1", "zb2"}) {
    const ir::Program p = generated(method, 4, 8, 5);
    for (const ir::RankProgram& rp : p.ranks) {
      int b = 0, w = 0, fused = 0, norm = 0;
      for (const ir::Op& op : rp.ops) {
        b += op.kind == OpKind::compute && op.compute == ComputeKind::backward_input;
        w += op.kind == OpKind::compute && op.compute == ComputeKind::backward_weight;
        fused += op.kind == OpKind::compute && op.compute == ComputeKind::backward;
        norm += op.kind == OpKind::collective && op.bytes == 4;
      }
      EXPECT_EQ(b, 5);
      EXPECT_EQ(w, 5);
      EXPECT_EQ(fused, 0);
      EXPECT_EQ(norm, 1);
    }
  }
}

// The verifier's split-backward rules (program.h): W must read the held activation and gradient
// of its own sample, and B must not add a gradient nor W write an input gradient.
TEST(ZeroBubble, VerifierChecksSplitBackward) {
  const ir::Program p = generated("zb1", 4, 4, 4);
  ir::OpIndex w = ir::kNone;
  const auto& ops = p.ranks[1].ops;
  for (std::size_t i = 0; i < ops.size() && w == ir::kNone; ++i) {
    if (ops[i].kind == OpKind::compute && ops[i].compute == ComputeKind::backward_weight)
      w = static_cast<ir::OpIndex>(i);
  }
  ASSERT_NE(w, ir::kNone);
  {
    ir::Program q = p;
    q.ranks[1].ops[static_cast<std::size_t>(w)].compute = ComputeKind::backward_input;
    const ir::VerifyResult v = ir::verify(q);
    ASSERT_FALSE(v.ok);
    EXPECT_NE(v.message.find("backward_input writes 0 activation_grad operand(s), expected 1"),
              std::string::npos)
        << v.message;
  }
  {
    ir::Program q = p;
    q.ranks[1].ops[static_cast<std::size_t>(w)].sample += 1;
    const ir::VerifyResult v = ir::verify(q);
    ASSERT_FALSE(v.ok);
    EXPECT_NE(v.message.find("backward_weight reads"), std::string::npos) << v.message;
  }
}

// The split backward's stash (pipeline.h, "Zero-bubble memory") for a chunk of n layers, a the
// boundary activation, S the stored bytes per layer, x + dy what W reads per layer:
//  - F stores what 1F1B stores: a (act_in) + keep + reuse + b_only = n*S;
//  - after B exactly W's inputs stay: a (act_in) + a (grad_in) + keep + reuse + w_new =
//    n*(x + dy);
//  - none / selective: W's linear inputs are stored (keep = n*x - a) and B allocates nothing
//    (w_new = 0), freeing only the first attention-norm output and the log-sum-exps (b_only =
//    a + n*lse); full: only layer inputs are stored (keep = 0, reuse = (n-1) a) and B creates
//    the rest of what W reads.
TEST(ZeroBubble, SplitStashHoldsExactlyWhatWReads) {
  const model::ModelConfig cfg = model::preset("llama2-7b").value();
  const model::MicroBatchShape shape{1, 4096, 2};
  const auto a = static_cast<std::uint64_t>(shape.tokens() * cfg.hidden * 2);
  const auto x =
      static_cast<std::uint64_t>(model::layer_weight_gradient_bytes(cfg, shape).linear_inputs);
  const auto w = static_cast<std::uint64_t>(model::layer_weight_gradient_bytes(cfg, shape).total());
  for (const auto policy : {model::RecomputePolicy::kNone, model::RecomputePolicy::kSelective,
                            model::RecomputePolicy::kFull}) {
    const auto S =
        static_cast<std::uint64_t>(model::layer_stored_activation_bytes(cfg, shape, policy));
    const auto lse =
        static_cast<std::uint64_t>(model::layer_activation_bytes(cfg, shape, policy).attention_lse);
    for (const std::uint64_t n : {1u, 2u, 5u}) {
      SCOPED_TRACE(std::string(model::to_string(policy)) + " n=" + std::to_string(n));
      const detail::SplitStash st =
          detail::split_stash(cfg, shape, policy, static_cast<std::int32_t>(n), a);
      EXPECT_EQ(a + st.keep + st.reuse + st.b_only, n * S);
      EXPECT_EQ(2 * a + st.keep + st.reuse + st.w_new, n * w);
      if (policy == model::RecomputePolicy::kFull) {
        EXPECT_EQ(st.keep, 0u);
        EXPECT_EQ(st.reuse, (n - 1) * a);
        EXPECT_EQ(st.b_only, 0u);
      } else {
        EXPECT_EQ(st.keep, n * x - a);
        EXPECT_EQ(st.w_new, 0u);
        EXPECT_EQ(st.b_only, a + n * lse);
      }
    }
  }
}

// Freeing at B what W still reads is a use-after-free the verifier rejects: the free that follows
// a B (its B-only stash) is turned into a free of the linear inputs W reads later.
TEST(ZeroBubble, VerifierRejectsFreeingWInputsAtB) {
  ScheduleInput in = testing::small_input(1, 4, 8, 4, 1, {});
  in.train.recompute = model::RecomputePolicy::kSelective;
  ir::Program q = testing::must_generate("zb1", in);
  ASSERT_TRUE(ir::verify(q).ok) << ir::verify(q).message;
  ir::RankProgram& rp = q.ranks[1];
  const auto named = [&](const std::string& name) {
    for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
      if (rp.buffers[b].name == name) return static_cast<ir::BufferId>(b);
    }
    return ir::kNone;
  };
  const ir::BufferId b_only = named("stash.b.m0"), keep = named("wgrad.x.m0");
  ASSERT_NE(b_only, ir::kNone);
  ASSERT_NE(keep, ir::kNone);
  bool swapped = false;
  for (const ir::Op& op : rp.ops) {
    if (op.kind != OpKind::free || op.writes_count != 1) continue;
    ir::BufferId& freed = rp.buffer_pool[op.buffers_offset + op.reads_count];
    if (freed != b_only) continue;
    freed = keep;
    swapped = true;
  }
  ASSERT_TRUE(swapped);
  const ir::VerifyResult v = ir::verify(q);
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.message.find("'wgrad.x.m0'"), std::string::npos) << v.message;
}

TEST(Interleaved, RejectsWhatMegatronRejects) {
  auto odd = generate("1f1b", testing::small_input(1, 4, 8, 6, 1, {{"virtual", "2"}}));
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("multiple of the 4 pipeline stages"), std::string::npos);
  auto split = generate("1f1b", testing::small_input(1, 4, 4, 4, 1, {{"virtual", "2"}}));
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.error().message.find("4 pipeline stages x 2 chunks"), std::string::npos);
  auto bad = generate("1f1b", testing::small_input(1, 4, 8, 4, 1, {{"virtual", "x"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("positive integer"), std::string::npos);
}

}  // namespace
}  // namespace tawpipe::schedules
