// Canonical text dump and builder behaviour.
#include "common/ir/text.h"

#include <gtest/gtest.h>

#include "common/ir/builder.h"
#include "tests/unit/ir/fixtures.h"

namespace tawpipe::ir {
namespace {

Program tiny() {
  Header h;
  h.schedule = "tiny";
  h.options = {{"groups", "1"}};
  h.model = "m";
  h.layers = 1;
  h.model_params = 10;
  h.dtype = "bf16";
  h.recompute = "none";
  h.topology = "t";
  h.topology_hash = "0f";
  h.placement = {0, 1};
  ProgramBuilder b(h, 2);
  const StreamId comm = b.stream("comm");
  const CommId world = b.communicator("world", {0, 1});
  Cost c;
  c.flops = {1e9, 0, 0.5};
  c.workspace_bytes = 2048;
  const CostId cost = b.cost(c);
  TensorRef w;
  w.kind = TensorKind::weights;
  w.layer_begin = 0;
  w.layer_end = 1;
  for (Rank r = 0; r < 2; ++r) {
    const BufferId own = b.buffer(r, "w.own", Bytes(806400000), BufferRole::weights, true, w);
    const BufferId stage =
        b.buffer(r, "w.stage", Bytes(806400000), BufferRole::weight_staging, false);
    const BufferId act = b.buffer(r, "act", Bytes(12), BufferRole::activation, false);
    b.alloc(r, comm, stage);
    const OpIndex bc =
        b.collective(r, comm, CollectiveKind::broadcast, world, 0, Bytes(806400000), own, stage);
    const OpIndex d[] = {bc};
    b.compute(r, 0, ComputeKind::forward, 0, 1, r, cost, {stage, act}, {act}, d);
    b.free(r, 0, stage);
  }
  return std::move(b).finish();
}

TEST(Text, Golden) {
  EXPECT_EQ(dump_text(tiny()),
            "tawpipe-ir 1\n"
            "schedule tiny groups=1\n"
            "model m layers=1 params=10\n"
            "train seq_len=0 micro_batch_size=0 micro_batches=0 global_batch=0 dtype=bf16 "
            "recompute=none\n"
            "topology t hash=0f placement=[0 1]\n"
            "ranks 2 streams 2 communicators 1 costs 1\n"
            "stream 0 compute\n"
            "stream 1 comm\n"
            "comm 0 world members=[0 1]\n"
            "cost 0 gemm=1000000000/0 attention=0/0 elementwise=0.5/0 recompute=0 "
            "workspace=2.048KB(2048)\n"
            "rank 0 buffers 3 ops 4\n"
            "r0 buf 0 w.own weights persistent 806.4MB(806400000) init=weights[0,1)\n"
            "r0 buf 1 w.stage weight_staging transient 806.4MB(806400000)\n"
            "r0 buf 2 act activation transient 12\n"
            "r0 #0 comm alloc buf=[w.stage] deps=[]\n"
            "r0 #1 comm broadcast comm=world root=r0 bytes=806.4MB(806400000) send=w.own "
            "recv=w.stage deps=[]\n"
            "r0 #2 compute forward layers=[0,1) sample=0 cost=0 reads=[w.stage,act] "
            "writes=[act] deps=[1]\n"
            "r0 #3 compute free buf=[w.stage] deps=[]\n"
            "rank 1 buffers 3 ops 4\n"
            "r1 buf 0 w.own weights persistent 806.4MB(806400000) init=weights[0,1)\n"
            "r1 buf 1 w.stage weight_staging transient 806.4MB(806400000)\n"
            "r1 buf 2 act activation transient 12\n"
            "r1 #0 comm alloc buf=[w.stage] deps=[]\n"
            "r1 #1 comm broadcast comm=world root=r0 bytes=806.4MB(806400000) send=w.own "
            "recv=w.stage deps=[]\n"
            "r1 #2 compute forward layers=[0,1) sample=1 cost=0 reads=[w.stage,act] "
            "writes=[act] deps=[1]\n"
            "r1 #3 compute free buf=[w.stage] deps=[]\n");
}

TEST(Text, Deterministic) {
  EXPECT_EQ(dump_text(testing::fsdp_program()), dump_text(testing::fsdp_program()));
}

TEST(Text, TensorsAndBytes) {
  TensorRef t;
  EXPECT_EQ(describe_tensor(t), "none");
  t.kind = TensorKind::gradient;
  t.layer_begin = 4;
  t.layer_end = 8;
  t.piece = 1;
  t.pieces = 4;
  EXPECT_EQ(describe_tensor(t), "gradient[4,8)p1/4");
  t = TensorRef{};
  t.kind = TensorKind::activation_grad;
  t.sample = 3;
  t.layer_begin = 2;
  EXPECT_EQ(describe_tensor(t), "actgrad(s3@2)");
  EXPECT_EQ(describe_bytes(999), "999");
  EXPECT_EQ(describe_bytes(1500000000), "1.5GB(1500000000)");
}

TEST(Text, DescribeOpIsRobust) {
  Program p = tiny();
  p.ranks[0].buffer_pool[0] = 77;
  EXPECT_EQ(describe_op(p, 0, 0), "r0 #0 comm alloc buf=[?77] deps=[]");
  EXPECT_EQ(describe_op(p, 5, 0), "r?5 #0 ?");
  EXPECT_EQ(describe_op(p, 0, 99), "r0 #99 ?");
}

TEST(Builder, DeduplicatesAndGroups) {
  ProgramBuilder b(Header{}, 3);
  EXPECT_EQ(b.stream("compute"), 0);
  const StreamId s = b.stream("comm");
  EXPECT_EQ(b.stream("comm"), s);
  const CommId a = b.communicator("pair", {0, 1});
  EXPECT_EQ(b.communicator("other-name", {0, 1}), a);
  EXPECT_NE(b.communicator("rev", {1, 0}), a);
  Cost c1;
  c1.flops[0] = 1;
  Cost c2 = c1;
  c2.workspace_bytes = 1;
  const CostId k = b.cost(c1);
  EXPECT_EQ(b.cost(c1), k);
  EXPECT_NE(b.cost(c2), k);
  EXPECT_NE(b.new_group(), b.new_group());
  const BufferId x = b.buffer(0, "x", Bytes(8), BufferRole::workspace, true);
  EXPECT_EQ(b.next_op(0), 0);
  const OpIndex s0 = b.send(0, s, 1, a, Bytes(8), x);
  const OpIndex d[] = {s0};
  const OpIndex s1 = b.send(0, s, 1, a, Bytes(8), x, d);
  EXPECT_EQ(b.next_op(0), 2);
  const Program p = std::move(b).finish();
  EXPECT_EQ(p.communicators[static_cast<std::size_t>(a)].name, "pair");
  const auto dl = deps(p.ranks[0], p.ranks[0].ops[static_cast<std::size_t>(s1)]);
  ASSERT_EQ(dl.size(), 1u);
  EXPECT_EQ(dl[0], s0);
  EXPECT_EQ(reads(p.ranks[0], p.ranks[0].ops[0])[0], x);
  EXPECT_TRUE(writes(p.ranks[0], p.ranks[0].ops[0]).empty());
}

TEST(Builder, EnumNamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(kLastComputeKind); ++i) {
    ComputeKind k{};
    ASSERT_TRUE(from_name(name(static_cast<ComputeKind>(i)), &k));
    EXPECT_EQ(static_cast<int>(k), i);
  }
  for (int i = 0; i <= static_cast<int>(BufferRole::workspace); ++i) {
    BufferRole k{};
    ASSERT_TRUE(from_name(name(static_cast<BufferRole>(i)), &k));
    EXPECT_EQ(static_cast<int>(k), i);
  }
  OpKind o{};
  EXPECT_FALSE(from_name("sned", &o));
}

#ifndef NDEBUG
TEST(BuilderDeathTest, AssertsOnGeneratorBugs) {
  ProgramBuilder b(Header{}, 2);
  const BufferId x = b.buffer(0, "x", Bytes(8), BufferRole::workspace, true);
  const OpIndex bad[] = {0};
  EXPECT_DEATH(b.alloc(0, 0, x, bad), "non-earlier");
  EXPECT_DEATH(b.alloc(2, 0, x), "rank out of range");
  EXPECT_DEATH(b.alloc(0, 0, 5), "buffer id out of range");
  const CommId w = b.communicator("w", {0, 1});
  const std::int32_t g = b.new_group();
  b.send(0, 0, 1, w, Bytes(8), x, {}, g);
  b.alloc(0, 0, x);
  EXPECT_DEATH(b.send(0, 0, 1, w, Bytes(8), x, {}, g), "not consecutive");
}
#endif

}  // namespace
}  // namespace tawpipe::ir
