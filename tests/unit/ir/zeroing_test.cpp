// Which buffers an executor zeroes (common/ir/zeroing.h): a buffer an alloc hands out, or a
// persistent one that does not keep its contents, is zeroed only when its first use can read it.
#include <gtest/gtest.h>

#include "common/ir/builder.h"
#include "common/ir/zeroing.h"

namespace tawpipe::ir {
namespace {

struct Fixture {
  Program program;
  BufferId act = 0, agrad = 0, grad = 0, whole = 0, half = 0, accum = 0, weights = 0;
  OpIndex alloc_act = 0, alloc_agrad = 0, alloc_grad = 0, alloc_whole = 0, alloc_half = 0;
};

// Rank 0 of a 2-rank program: a forward writes a fresh activation, a backward a fresh
// activation gradient and (adding into it) a fresh gradient; two receives fill fresh buffers,
// one whole and one half; a persistent gradient accumulator is added into each iteration; the
// weights keep their contents.
Fixture build() {
  Header h;
  h.schedule = "zeroing-test";
  h.dtype = "fp32";
  h.seq_len = 1;
  h.micro_batch_size = 1;
  h.placement = {0, 1};
  ProgramBuilder b(h, 2);
  const CommId pair = b.communicator("pair", {0, 1});
  const CostId c = b.cost(Cost{});
  Fixture f;
  f.weights = b.buffer(0, "w", Bytes(64), BufferRole::weights, true);
  f.act = b.buffer(0, "act", Bytes(64), BufferRole::activation, false);
  f.agrad = b.buffer(0, "agrad", Bytes(64), BufferRole::activation_grad, false);
  f.grad = b.buffer(0, "grad", Bytes(64), BufferRole::gradient_staging, false);
  f.whole = b.buffer(0, "whole", Bytes(64), BufferRole::weight_staging, false);
  f.half = b.buffer(0, "half", Bytes(64), BufferRole::weight_staging, false);
  f.accum = b.buffer(0, "accum", Bytes(64), BufferRole::gradient, true);
  const BufferId src = b.buffer(1, "src", Bytes(64), BufferRole::weights, true);
  f.alloc_act = b.alloc(0, 0, f.act);
  b.compute(0, 0, ComputeKind::forward, 0, 1, 0, c, {f.weights}, {f.act});
  f.alloc_agrad = b.alloc(0, 0, f.agrad);
  f.alloc_grad = b.alloc(0, 0, f.grad);
  b.compute(0, 0, ComputeKind::backward, 0, 1, 0, c, {f.weights, f.act}, {f.agrad, f.grad});
  b.compute(0, 0, ComputeKind::accumulate, 0, 1, 0, c, {f.grad}, {f.accum});
  f.alloc_whole = b.alloc(0, 0, f.whole);
  b.recv(0, 0, 1, pair, Bytes(64), f.whole);
  f.alloc_half = b.alloc(0, 0, f.half);
  b.recv(0, 0, 1, pair, Bytes(32), f.half);
  b.send(1, 0, 0, pair, Bytes(64), src);
  b.send(1, 0, 0, pair, Bytes(32), src);
  f.program = std::move(b).finish();
  return f;
}

// What the host backend's kernels overwrite: the whole output, at its buffer's size.
ZeroingPlan plan_of(const Fixture& f) {
  const RankProgram& rp = f.program.ranks[0];
  return plan_zeroing(f.program, 0, [&](const Op& op, BufferId b) -> std::uint64_t {
    return whole_output(rp, op) == b ? rp.buffers[static_cast<std::size_t>(b)].size.count() : 0;
  });
}

TEST(Zeroing, OnlyBuffersWhoseFirstUseCanReadThemAreZeroed) {
  const Fixture f = build();
  const ZeroingPlan plan = plan_of(f);
  auto zeroed = [&](OpIndex alloc) { return plan.on_alloc[static_cast<std::size_t>(alloc)]; };
  EXPECT_TRUE(zeroed(f.alloc_act).empty());    // the forward writes it whole
  EXPECT_TRUE(zeroed(f.alloc_agrad).empty());  // the backward writes its input gradient whole
  EXPECT_EQ(zeroed(f.alloc_grad), std::vector<BufferId>{f.grad});  // the backward adds into it
  EXPECT_TRUE(zeroed(f.alloc_whole).empty());                      // received whole
  EXPECT_EQ(zeroed(f.alloc_half), std::vector<BufferId>{f.half});  // received half
  EXPECT_EQ(plan.each_iteration[static_cast<std::size_t>(f.accum)], 1);
  EXPECT_EQ(plan.each_iteration[static_cast<std::size_t>(f.weights)], 0);
  const std::vector<std::uint64_t> bytes = zeroed_bytes_on_alloc(f.program.ranks[0], plan);
  EXPECT_EQ(bytes[static_cast<std::size_t>(f.alloc_grad)], 64u);
  EXPECT_EQ(bytes[static_cast<std::size_t>(f.alloc_half)], 64u);
  EXPECT_EQ(bytes[static_cast<std::size_t>(f.alloc_act)], 0u);
}

TEST(Zeroing, WholeOutputIsTheFirstOutputOfItsRoleUnlessItIsRead) {
  const Fixture f = build();
  const RankProgram& rp = f.program.ranks[0];
  auto op_of = [&](ComputeKind k) -> const Op& {
    for (const Op& op : rp.ops)
      if (op.kind == OpKind::compute && op.compute == k) return op;
    ADD_FAILURE() << "no such op";
    return rp.ops.front();
  };
  EXPECT_EQ(whole_output(rp, op_of(ComputeKind::forward)), f.act);
  EXPECT_EQ(whole_output(rp, op_of(ComputeKind::backward)), f.agrad);
  EXPECT_EQ(whole_output(rp, op_of(ComputeKind::accumulate)), kNone);
}

}  // namespace
}  // namespace tawpipe::ir
