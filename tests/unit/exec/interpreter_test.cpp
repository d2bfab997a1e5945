// The interpreter's scheduling against a fake backend that checks, at every issue(), the
// semantics of program.h: stream FIFO, dependencies done, groups posted together in one call,
// collectives of a communicator in program order (over its streams, or within each stream for a
// backend whose collective_order() says so). The fake completes ops in an adversarial
// order (newest first) to shake out ordering assumptions.
#include <algorithm>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "common/ir/builder.h"
#include "exec/interpreter.h"

namespace tawpipe::exec {
namespace {

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(const ir::Program& p, ir::Rank r,
                       CollectiveOrder order = CollectiveOrder::communicator)
      : p_(p), rp_(p.ranks[static_cast<std::size_t>(r)]), order_(order) {}
  CollectiveOrder collective_order() const override { return order_; }
  Status prepare(const ir::Program&, ir::Rank) override { return Status::success(); }
  Status begin_iteration(std::int64_t) override {
    done_.clear();
    in_flight_.clear();
    return Status::success();
  }
  Status issue(std::span<const ir::OpIndex> ops) override {
    calls.emplace_back(ops.begin(), ops.end());
    for (ir::OpIndex i : ops) {
      const ir::Op& op = rp_.ops[static_cast<std::size_t>(i)];
      for (ir::OpIndex d : ir::deps(rp_, op)) {
        EXPECT_TRUE(done_.count(d)) << "op " << i << " issued before its dep " << d;
      }
      // Every earlier op of the same stream has completed.
      for (ir::OpIndex j = 0; j < i; ++j) {
        const ir::Op& prev = rp_.ops[static_cast<std::size_t>(j)];
        const bool same_group = op.group != ir::kNone && prev.group == op.group;
        if (prev.stream == op.stream && !same_group) {
          EXPECT_TRUE(done_.count(j)) << "op " << i << " overtook op " << j << " on its stream";
        }
      }
      if (op.kind == ir::OpKind::collective) {
        collectives_issued.push_back(i);
      }
      in_flight_.push_back(i);
      ++clock_;
    }
    return Status::success();
  }
  Status wait(Nanos, std::vector<Completion>& done) override {
    if (in_flight_.empty()) return Status::success();
    const ir::OpIndex i = in_flight_.back();  // newest first
    in_flight_.pop_back();
    done_.insert(i);
    done.push_back({i, clock_, clock_ + 1});
    ++clock_;
    return Status::success();
  }
  Status end_iteration() override { return Status::success(); }
  Nanos now() const override { return clock_; }

  std::vector<std::vector<ir::OpIndex>> calls;
  std::vector<ir::OpIndex> collectives_issued;

 private:
  const ir::Program& p_;
  const ir::RankProgram& rp_;
  CollectiveOrder order_;
  std::set<ir::OpIndex> done_;
  std::vector<ir::OpIndex> in_flight_;
  Nanos clock_ = 0;
};

/// Rank r's two buffers and its first op, an accumulate of x into y on stream 0.
struct RankStart {
  ir::BufferId x, y;
  ir::OpIndex c0;
};
RankStart start_rank(ir::ProgramBuilder& b, ir::Rank r) {
  const ir::BufferId x = b.buffer(r, "x", Bytes(64), ir::BufferRole::activation, true);
  const ir::BufferId y = b.buffer(r, "y", Bytes(64), ir::BufferRole::activation, true);
  return {x, y, b.compute(r, 0, ir::ComputeKind::accumulate, 0, 1, ir::kNone, ir::kNone, {x}, {y})};
}

/// Rank 0: a compute chain on stream 0, a grouped send+recv exchange and two collectives on a
/// comm stream, and a second comm stream whose op depends on the exchange.
ir::Program make_program() {
  ir::ProgramBuilder b(ir::Header{}, 2);
  const ir::StreamId s1 = b.stream("comm");
  const ir::StreamId s2 = b.stream("other");
  const ir::CommId world = b.communicator("world", {0, 1});
  for (ir::Rank r = 0; r < 2; ++r) {
    const auto [x, y, c0] = start_rank(b, r);
    const std::int32_t g = b.new_group();
    const ir::OpIndex dep[] = {c0};
    b.send(r, s1, 1 - r, world, Bytes(64), y, dep, g);
    const ir::OpIndex rcv = b.recv(r, s1, 1 - r, world, Bytes(64), x, {}, g);
    b.compute(r, 0, ir::ComputeKind::accumulate, 0, 1, ir::kNone, ir::kNone, {x}, {y});
    const ir::OpIndex after[] = {rcv};
    b.collective(r, s2, ir::CollectiveKind::all_reduce, world, ir::kNone, Bytes(64), y, y, after);
    b.collective(r, s1, ir::CollectiveKind::all_reduce, world, ir::kNone, Bytes(64), x, x);
    b.compute(r, 0, ir::ComputeKind::accumulate, 0, 1, ir::kNone, ir::kNone, {x}, {y});
  }
  return std::move(b).finish();
}

TEST(Interpreter, RespectsStreamsDepsGroupsAndCollectiveOrder) {
  const ir::Program p = make_program();
  FakeBackend fake(p, 0);
  Interpreter interp(p, 0, fake);
  auto rec = interp.run_iteration(0);
  ASSERT_TRUE(rec.ok()) << rec.error().to_string();
  ASSERT_EQ(rec->ops.size(), p.ranks[0].ops.size());
  // The send+recv group came in one call.
  const auto group = std::find_if(fake.calls.begin(), fake.calls.end(),
                                  [](const auto& c) { return c.size() == 2; });
  ASSERT_NE(group, fake.calls.end());
  EXPECT_EQ((*group)[0] + 1, (*group)[1]);
  // Collectives of `world` in program order, although the second one became ready first.
  ASSERT_EQ(fake.collectives_issued.size(), 2u);
  EXPECT_LT(fake.collectives_issued[0], fake.collectives_issued[1]);
  for (const OpTiming& t : rec->ops)
    EXPECT_LE(t.start, t.end);
}

/// Per rank: collective A (stream "a") waits for a compute op; collective B of the same
/// communicator, later in program order, is on stream "b" and waits for nothing.
ir::Program make_two_stream_collectives() {
  ir::ProgramBuilder b(ir::Header{}, 2);
  const ir::StreamId sa = b.stream("a");
  const ir::StreamId sb = b.stream("b");
  const ir::CommId world = b.communicator("world", {0, 1});
  for (ir::Rank r = 0; r < 2; ++r) {
    const auto [x, y, c0] = start_rank(b, r);
    const ir::OpIndex dep[] = {c0};
    b.collective(r, sa, ir::CollectiveKind::all_reduce, world, ir::kNone, Bytes(64), y, y, dep);
    b.collective(r, sb, ir::CollectiveKind::all_reduce, world, ir::kNone, Bytes(64), x, x);
  }
  return std::move(b).finish();
}

// NCCL's order (the default): B waits until A is issued, although it could run from the start.
// The host backend's (one MPI communicator per stream): B is issued at once, before A, as the
// simulator's CPU topologies time it (sim/run/tables.cpp build_comm_order keeps no order there).
TEST(Interpreter, CollectiveOrderPerCommunicatorOrPerStream) {
  const ir::Program p = make_two_stream_collectives();
  const ir::OpIndex a = 1;
  const ir::OpIndex b = 2;
  ASSERT_EQ(p.ranks[0].ops[static_cast<std::size_t>(a)].kind, ir::OpKind::collective);
  ASSERT_EQ(p.ranks[0].ops[static_cast<std::size_t>(b)].kind, ir::OpKind::collective);
  {
    FakeBackend fake(p, 0);
    Interpreter interp(p, 0, fake);
    ASSERT_TRUE(interp.run_iteration(0).ok());
    EXPECT_EQ(fake.collectives_issued, (std::vector<ir::OpIndex>{a, b}));
  }
  {
    FakeBackend fake(p, 0, CollectiveOrder::stream);
    Interpreter interp(p, 0, fake);
    ASSERT_TRUE(interp.run_iteration(0).ok());
    EXPECT_EQ(fake.collectives_issued, (std::vector<ir::OpIndex>{b, a}));
    // B went out in the first pass, with the compute op, before anything completed.
    ASSERT_GE(fake.calls.size(), 2u);
    EXPECT_EQ(fake.calls[1], (std::vector<ir::OpIndex>{b}));
  }
}

TEST(Interpreter, RunsRepeatedIterations) {
  const ir::Program p = make_program();
  FakeBackend fake(p, 1);
  Interpreter interp(p, 1, fake);
  for (int step = 0; step < 3; ++step)
    ASSERT_TRUE(interp.run_iteration(step).ok());
}

/// A backend whose ops never complete: the watchdog names the oldest op in flight.
class StuckBackend final : public Backend {
 public:
  Status prepare(const ir::Program&, ir::Rank) override { return Status::success(); }
  Status begin_iteration(std::int64_t) override { return Status::success(); }
  Status issue(std::span<const ir::OpIndex>) override { return Status::success(); }
  Status wait(Nanos deadline, std::vector<Completion>&) override {
    now_ = std::max(now_, deadline);
    return Status::success();
  }
  Status end_iteration() override { return Status::success(); }
  Nanos now() const override { return now_; }

 private:
  Nanos now_ = 0;
};

TEST(Interpreter, WatchdogNamesTheStuckOp) {
  const ir::Program p = make_program();
  StuckBackend stuck;
  InterpreterOptions opt;
  opt.timeout_seconds = 2;
  Interpreter interp(p, 0, stuck, opt);
  auto rec = interp.run_iteration(0);
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().message,
            "rank 0: timeout after 2 s waiting for op 0 (compute accumulate [0,1))");
}

}  // namespace
}  // namespace tawpipe::exec
