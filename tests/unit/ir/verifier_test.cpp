// Verifier tests: the valid fixtures pass; hand-broken variants fail with a message naming the
// rank and op; deleting any single communication or compute op from a fixture makes it fail.
#include "common/ir/verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "common/ir/builder.h"
#include "common/ir/text.h"
#include "tests/unit/ir/fixtures.h"

namespace tawpipe::ir {
namespace {

using testing::buffer_named;
using testing::delete_op;
using testing::find_op;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Named {
  const char* name;
  std::function<Program()> make;
};
const Named kFixtures[] = {
    {"pipeline", testing::pipeline_program},
    {"data_parallel", testing::data_parallel_program},
    {"fsdp", testing::fsdp_program},
    {"weight_passing", [] { return testing::weight_passing_program(); }},
};

auto is_kind(OpKind k) {
  return [k](const Op& op) { return op.kind == k; };
}
auto is_compute(ComputeKind k) {
  return [k](const Op& op) { return op.kind == OpKind::compute && op.compute == k; };
}
auto is_collective(CollectiveKind k) {
  return [k](const Op& op) { return op.kind == OpKind::collective && op.collective == k; };
}

// Expects failure at `stage` with a message starting at `rank #op` and containing `what`.
void expect_failure(const Program& p, VerifyStage stage, Rank rank, OpIndex op,
                    const std::string& what) {
  const VerifyResult v = verify(p);
  ASSERT_FALSE(v.ok) << "unexpectedly valid";
  EXPECT_EQ(v.stage, stage) << v.message;
  EXPECT_EQ(v.rank, rank) << v.message;
  EXPECT_EQ(v.op, op) << v.message;
  if (op != kNone) {
    EXPECT_THAT(v.message, StartsWith(describe_op(p, rank, op, false)));
  }
  EXPECT_THAT(v.message, HasSubstr(what));
}

TEST(Verifier, FixturesAreValid) {
  for (const auto& f : kFixtures) {
    const VerifyResult v = verify(f.make());
    EXPECT_TRUE(v.ok) << f.name << ": " << v.message;
    EXPECT_GT(v.stats.total_ops, 20u) << f.name;
  }
}

TEST(Verifier, Statistics) {
  const Program p = testing::pipeline_program();
  const VerifyResult v = verify(p);
  ASSERT_TRUE(v.ok) << v.message;
  // r0 persistent: w.emb 1000 + w.l0 2000 + g.emb 1000 + g.l0 2000.
  EXPECT_EQ(v.stats.persistent_bytes[0].count(), 6000u);
  // Peak: both samples' act.b0 and act.b1 live (400) + ag1 + ag0 of sample 0 (200) while
  // backward's workspace (4096) runs: 6000 + 300 + 200 + 4096 (act.s0.b1 freed before).
  EXPECT_EQ(v.stats.peak_live_bytes[0].count(), 6000u + 300u + 200u + 4096u);
  EXPECT_EQ(v.stats.ops_by_kind[static_cast<std::size_t>(OpKind::send)], 4u);
  EXPECT_EQ(v.stats.bytes_by_kind[static_cast<std::size_t>(OpKind::send)], 400u);
  EXPECT_EQ(v.stats.collective_bytes[static_cast<std::size_t>(CollectiveKind::all_reduce)], 2000u);
}

// One alloc/free op may list several buffers (program.h rule 5): merging the fixtures' runs of
// frees and allocs keeps them valid with the same peak memory, and each listed buffer is checked.
TEST(Verifier, MultiBufferAllocAndFree) {
  for (const auto& f : kFixtures) {
    const Program original = f.make();
    const Program merged = testing::merge_alloc_free_runs(original);
    const VerifyResult a = verify(original);
    const VerifyResult b = verify(merged);
    ASSERT_TRUE(b.ok) << f.name << ": " << b.message;
    EXPECT_LT(b.stats.total_ops, a.stats.total_ops) << f.name << ": nothing was merged";
    EXPECT_EQ(b.stats.peak_live_bytes, a.stats.peak_live_bytes) << f.name;
  }
  const Program p = testing::merge_alloc_free_runs(testing::pipeline_program());
  const auto multi = [&](OpKind k) {
    return find_op(p, 0, [k](const Op& op) { return op.kind == k && op.writes_count > 1; });
  };
  const OpIndex fr = multi(OpKind::free);
  ASSERT_NE(fr, kNone);
  EXPECT_THAT(describe_op(p, 0, fr, false),
              HasSubstr("free buf=[act.s0.b0,actgrad.s0.b1,actgrad.s0.b0]"));
  {  // a persistent buffer in the list
    Program q = p;
    RankProgram& rp = q.ranks[0];
    rp.buffer_pool[rp.ops[static_cast<std::size_t>(fr)].buffers_offset + 1] =
        buffer_named(q, 0, "w.l0");
    expect_failure(q, VerifyStage::structure, 0, fr, "free of persistent buffer 'w.l0'");
  }
  {  // the same buffer twice: the second free touches a dead buffer
    Program q = p;
    RankProgram& rp = q.ranks[0];
    const auto at = rp.ops[static_cast<std::size_t>(fr)].buffers_offset;
    rp.buffer_pool[at + 1] = rp.buffer_pool[at];
    expect_failure(q, VerifyStage::dataflow, 0, fr, "frees dead buffer 'act.s0.b0'");
  }
  {  // an alloc/free op with no buffer at all
    Program q = p;
    q.ranks[0].ops[static_cast<std::size_t>(fr)].writes_count = 0;
    expect_failure(q, VerifyStage::structure, 0, fr, "at least 1 written buffers");
  }
}

// The per-rank stages run on several threads; a structure failure on two ranks is still
// reported for the first rank, whatever the thread count.
TEST(Verifier, FirstFailingRankWhateverTheThreadCount) {
  Program p = testing::pipeline_program();
  for (RankProgram& rp : p.ranks)
    rp.ops[0].stream = 9;  // unknown stream on every rank
  for (const int threads : {1, 2, 5}) {
    VerifyOptions options;
    options.threads = threads;
    const VerifyResult v = verify(p, options);
    ASSERT_FALSE(v.ok);
    EXPECT_EQ(v.stage, VerifyStage::structure);
    EXPECT_EQ(v.rank, 0) << "threads=" << threads;
    EXPECT_EQ(v.op, 0);
    EXPECT_THAT(v.message, HasSubstr("unknown stream 9"));
  }
}

TEST(Verifier, MissingRecv) {
  const Program good = testing::pipeline_program();
  const Program p = delete_op(good, 1, find_op(good, 1, is_kind(OpKind::recv), 1));
  // r0's second activation send has no recv any more.
  expect_failure(p, VerifyStage::matching, 0, find_op(p, 0, is_kind(OpKind::send), 1),
                 "no matching recv");
}

TEST(Verifier, MismatchedBytes) {
  Program p = testing::pipeline_program();
  const OpIndex rv = find_op(p, 1, is_kind(OpKind::recv));
  p.ranks[1].ops[static_cast<std::size_t>(rv)].bytes = 50;
  expect_failure(p, VerifyStage::matching, 0, find_op(p, 0, is_kind(OpKind::send)),
                 "bytes differ from the matching r1 #" + std::to_string(rv));
}

TEST(Verifier, SwappedCollectiveOrderOnOneRank) {
  Program p = testing::weight_passing_program();
  const OpIndex red = find_op(p, 1, is_collective(CollectiveKind::reduce));
  const OpIndex ar = find_op(p, 1, is_collective(CollectiveKind::all_reduce));
  auto& ops = p.ranks[1].ops;
  std::swap(ops[static_cast<std::size_t>(red)], ops[static_cast<std::size_t>(ar)]);
  expect_failure(p, VerifyStage::matching, 1, red, "kind all_reduce vs reduce");
}

TEST(Verifier, ForwardDependency) {
  Program p = testing::pipeline_program();
  const OpIndex f = find_op(p, 0, is_compute(ComputeKind::forward));
  auto& op = p.ranks[0].ops[static_cast<std::size_t>(f)];
  op.deps_offset = static_cast<std::uint32_t>(p.ranks[0].dep_pool.size());
  op.deps_count = 1;
  p.ranks[0].dep_pool.push_back(f + 2);
  expect_failure(p, VerifyStage::structure, 0, f, "which is not an earlier op");
}

// Every per-op structure fault is reported with its message, on an op outside any group (the
// verifier's fast path for those, verify_structure.cpp) and on one inside a group.
TEST(Verifier, StructureFaultsOnPlainAndGroupedOps) {
  struct Fault {
    const char* what;
    std::function<void(RankProgram&, Op&, OpIndex)> apply;
  };
  const Fault faults[] = {
      {"unknown op kind 9",
       [](RankProgram&, Op& op, OpIndex) { op.kind = static_cast<OpKind>(9); }},
      {"unknown stream 7", [](RankProgram&, Op& op, OpIndex) { op.stream = 7; }},
      {"dependency list outside the rank's dep_pool",
       [](RankProgram& rp, Op& op, OpIndex) {
         op.deps_offset = static_cast<std::uint32_t>(rp.dep_pool.size());
         op.deps_count = 1;
       }},
      {"buffer list outside the rank's buffer_pool",
       [](RankProgram& rp, Op& op, OpIndex) {
         op.buffers_offset = static_cast<std::uint32_t>(rp.buffer_pool.size());
       }},
      {"buffer id -3 out of range",
       [](RankProgram& rp, Op& op, OpIndex) { rp.buffer_pool[op.buffers_offset] = -3; }},
      {"out of range (rank has",
       [](RankProgram& rp, Op& op, OpIndex) {
         rp.buffer_pool[op.buffers_offset] = static_cast<BufferId>(rp.buffers.size());
       }},
      {"dependency on #-1, which is not an earlier op",
       [](RankProgram& rp, Op& op, OpIndex) {
         op.deps_offset = static_cast<std::uint32_t>(rp.dep_pool.size());
         op.deps_count = 1;
         rp.dep_pool.push_back(-1);
       }},
      {", which is not an earlier op",  // on itself
       [](RankProgram& rp, Op& op, OpIndex index) {
         op.deps_offset = static_cast<std::uint32_t>(rp.dep_pool.size());
         op.deps_count = 1;
         rp.dep_pool.push_back(index);
       }},
  };
  // A send outside any group (pipeline) and one inside a group (weight passing).
  const Program plain = testing::pipeline_program();
  const Program grouped = testing::weight_passing_program();
  const OpIndex plain_send = find_op(plain, 0, is_kind(OpKind::send));
  const OpIndex grouped_send = find_op(grouped, 0, is_kind(OpKind::send));
  ASSERT_EQ(plain.ranks[0].ops[static_cast<std::size_t>(plain_send)].group, kNone);
  ASSERT_NE(grouped.ranks[0].ops[static_cast<std::size_t>(grouped_send)].group, kNone);
  for (const Fault& f : faults) {
    for (const auto& [good, index] : {std::pair{&plain, plain_send}, {&grouped, grouped_send}}) {
      SCOPED_TRACE(f.what);
      Program p = *good;
      RankProgram& rp = p.ranks[0];
      f.apply(rp, rp.ops[static_cast<std::size_t>(index)], index);
      const VerifyResult v = verify(p);
      ASSERT_FALSE(v.ok);
      EXPECT_EQ(v.stage, VerifyStage::structure) << v.message;
      EXPECT_EQ(v.rank, 0) << v.message;
      EXPECT_EQ(v.op, index) << v.message;
      EXPECT_THAT(v.message, HasSubstr(f.what));
    }
  }
}

TEST(Verifier, ComputeOnWrongShard) {
  Program p = testing::weight_passing_program();
  // r1's forward of layer 0 reads its own layer-1 weights instead of the staged layer 0.
  const OpIndex f = find_op(p, 1, is_compute(ComputeKind::forward));
  auto& rp = p.ranks[1];
  rp.buffer_pool[rp.ops[static_cast<std::size_t>(f)].buffers_offset] = buffer_named(p, 1, "w.own");
  expect_failure(p, VerifyStage::dataflow, 1, f,
                 "forward reads weights[1,2) from 'w.own', expected weights[0,1)");
}

TEST(Verifier, GradientSentTwice) {
  const Program p = testing::weight_passing_program({.send_gradient_twice = true});
  expect_failure(p, VerifyStage::dataflow, 1, find_op(p, 1, is_compute(ComputeKind::optimizer)),
                 "duplicated contributions in gradient[1,2) in 'g.own': 3 of 2 contributions");
}

TEST(Verifier, GradientNeverReduced) {
  Program p = testing::data_parallel_program();
  for (Rank r = 0; r < 2; ++r) {
    p = delete_op(p, r, find_op(p, r, is_collective(CollectiveKind::broadcast)));
    p = delete_op(p, r, find_op(p, r, is_collective(CollectiveKind::reduce)));
  }
  expect_failure(p, VerifyStage::dataflow, 0, find_op(p, 0, is_compute(ComputeKind::optimizer)),
                 "incomplete gradient[0,2) in 'g.layers': 2 of 4 contributions");
}

TEST(Verifier, ReadOfFreedBuffer) {
  Program p = testing::pipeline_program();
  // r0 frees act.s0.b0 (needed by backward) instead of act.s0.b1.
  const OpIndex fr = find_op(p, 0, is_kind(OpKind::free));
  auto& rp = p.ranks[0];
  rp.buffer_pool[rp.ops[static_cast<std::size_t>(fr)].buffers_offset] =
      buffer_named(p, 0, "act.s0.b0");
  expect_failure(p, VerifyStage::dataflow, 0, find_op(p, 0, is_compute(ComputeKind::backward)),
                 "reads dead buffer 'act.s0.b0' (freed by #" + std::to_string(fr) + ")");
}

TEST(Verifier, DeadlockBothRecvFirst) {
  ProgramBuilder b(Header{}, 2);
  const CommId world = b.communicator("world", {0, 1});
  for (Rank r = 0; r < 2; ++r) {
    const BufferId in = b.buffer(r, "in", Bytes(8), BufferRole::workspace, true);
    const BufferId out = b.buffer(r, "out", Bytes(8), BufferRole::workspace, true);
    b.recv(r, 0, 1 - r, world, Bytes(8), in);
    b.send(r, 0, 1 - r, world, Bytes(8), out);
  }
  const Program p = std::move(b).finish();
  const VerifyResult v = verify(p);
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.stage, VerifyStage::deadlock);
  EXPECT_EQ(v.message,
            "deadlock: ops wait on each other: r0 #0 compute recv from=r1 comm=world bytes=8 "
            "buf=in -> r1 #1 compute send to=r0 comm=world bytes=8 buf=out -> r1 #0 compute recv "
            "from=r0 comm=world bytes=8 buf=in -> r0 #1 compute send to=r1 comm=world bytes=8 "
            "buf=out -> r0 #0 compute recv from=r1 comm=world bytes=8 buf=in");
  EXPECT_EQ(v.details.size(), 2u);
  // The same exchange as one group per rank is fine (NCCL group semantics).
  ProgramBuilder g(Header{}, 2);
  const CommId w2 = g.communicator("world", {0, 1});
  for (Rank r = 0; r < 2; ++r) {
    const BufferId in = g.buffer(r, "in", Bytes(8), BufferRole::workspace, true);
    const BufferId out = g.buffer(r, "out", Bytes(8), BufferRole::workspace, true);
    const std::int32_t group = g.new_group();
    g.recv(r, 0, 1 - r, w2, Bytes(8), in, {}, group);
    g.send(r, 0, 1 - r, w2, Bytes(8), out, {}, group);
  }
  const VerifyResult ok = verify(std::move(g).finish());
  EXPECT_TRUE(ok.ok) << ok.message;
}

TEST(Verifier, DifferentRootOnOneMember) {
  Program p = testing::data_parallel_program();
  const OpIndex bc = find_op(p, 1, is_collective(CollectiveKind::broadcast));
  p.ranks[1].ops[static_cast<std::size_t>(bc)].peer = 1;
  expect_failure(p, VerifyStage::matching, 1, bc, "root r1 vs r0");
}

TEST(Verifier, AllGatherWithWrongPiece) {
  Program p = testing::fsdp_program();
  p.ranks[1].buffers[static_cast<std::size_t>(buffer_named(p, 1, "w.l0.shard"))].initial.piece = 0;
  expect_failure(p, VerifyStage::dataflow, 1,
                 find_op(p, 1, is_collective(CollectiveKind::all_gather)),
                 "all_gather member 1 contributes weights[0,1)p0/2, expected weights[0,1)p1/2");
}

TEST(Verifier, OptimizerMissingForOwnedWeight) {
  const Program good = testing::fsdp_program();
  const Program p = delete_op(good, 1, find_op(good, 1, is_compute(ComputeKind::optimizer), 1));
  const VerifyResult v = verify(p);
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.stage, VerifyStage::dataflow);
  EXPECT_EQ(v.rank, 1);
  EXPECT_EQ(
      v.message,
      "r1: weights buffer 'w.l1.shard' (weights[1,2)p1/2) is never updated by an optimizer op");
}

TEST(Verifier, MembershipAndSizes) {
  Program p = testing::pipeline_program();
  const OpIndex s = find_op(p, 0, is_kind(OpKind::send));
  p.ranks[0].ops[static_cast<std::size_t>(s)].bytes = 101;
  expect_failure(p, VerifyStage::structure, 0, s, "holds 100 bytes, op moves 101");
  Program q = testing::pipeline_program();
  q.communicators.push_back(Communicator{"solo", {1}});
  q.ranks[0].ops[static_cast<std::size_t>(s)].comm = 1;
  expect_failure(q, VerifyStage::structure, 0, s, "r0 is not a member of communicator 'solo'");
}

TEST(Verifier, GroupNotConsecutive) {
  Program p = testing::weight_passing_program();
  p.ranks[0].ops[2].group = p.ranks[0].ops[0].group;  // op 1 is in the group, op 2 rejoins it?
  const VerifyResult v = verify(p);
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.stage, VerifyStage::structure);
  EXPECT_EQ(v.rank, 0);
}

TEST(Verifier, AccumulateIntoWrongBlock) {
  Program p = testing::weight_passing_program();
  const OpIndex acc = find_op(p, 1, is_compute(ComputeKind::accumulate));
  auto& rp = p.ranks[1];
  rp.buffer_pool[rp.ops[static_cast<std::size_t>(acc)].buffers_offset + 1] =
      buffer_named(p, 1, "g.emb");
  expect_failure(p, VerifyStage::dataflow, 1, acc,
                 "accumulates gradient[1,2) into 'g.emb', which holds gradient[-1,0)");
}

TEST(Verifier, SkipDataflow) {
  Program p = testing::fsdp_program();
  p.ranks[1].buffers[static_cast<std::size_t>(buffer_named(p, 1, "w.l0.shard"))].initial.piece = 0;
  EXPECT_TRUE(verify(p, VerifyOptions{.skip_dataflow = true}).ok);
}

// Property: every send, recv, collective and compute op is necessary.
TEST(Verifier, DeletingAnyEssentialOpFails) {
  for (const auto& f : kFixtures) {
    const Program good = f.make();
    for (Rank r = 0; r < good.num_ranks(); ++r) {
      const auto& ops = good.ranks[static_cast<std::size_t>(r)].ops;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].kind == OpKind::alloc || ops[i].kind == OpKind::free ||
            ops[i].kind == OpKind::copy)
          continue;
        const VerifyResult v = verify(delete_op(good, r, static_cast<OpIndex>(i)));
        EXPECT_FALSE(v.ok) << f.name << ": deleting "
                           << describe_op(good, r, static_cast<OpIndex>(i));
      }
    }
  }
}

// Robustness: random corruption of fields never crashes the verifier.
TEST(Verifier, CorruptedProgramsDoNotCrash) {
  std::uint64_t seed = 12345;
  const auto next = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    Program p = kFixtures[trial % 4].make();
    auto& rp = p.ranks[next() % 2];
    const auto v = static_cast<std::int32_t>(next() % 7) - 2;
    switch (next() % 9) {
      case 0:
        rp.dep_pool[next() % rp.dep_pool.size()] = v * 7;
        break;
      case 1:
        rp.buffer_pool[next() % rp.buffer_pool.size()] = v * 5;
        break;
      case 2:
        rp.ops[next() % rp.ops.size()].peer = v;
        break;
      case 3:
        rp.ops[next() % rp.ops.size()].comm = v;
        break;
      case 4:
        rp.ops[next() % rp.ops.size()].deps_offset += static_cast<std::uint32_t>(next() % 50);
        break;
      case 5:
        rp.ops[next() % rp.ops.size()].kind = static_cast<OpKind>(next() % 9);
        break;
      case 6:
        rp.ops[next() % rp.ops.size()].stream = static_cast<StreamId>(next() % 4);
        break;
      case 7:
        rp.ops[next() % rp.ops.size()].layer_end = v;
        break;
      default:
        rp.buffers[next() % rp.buffers.size()].initial.pieces = v;
        break;
    }
    (void)verify(p);
  }
}

}  // namespace
}  // namespace tawpipe::ir
