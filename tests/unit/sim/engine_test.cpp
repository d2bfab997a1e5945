// Engine: handler dispatch, clock, FIFO ties, cancellation, run_until, stop, determinism.
#include "sim/engine/engine.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "tests/unit/sim/test_rng.h"

namespace tawpipe::sim {
namespace {

struct Fired {
  std::int64_t time_ps;
  std::uint64_t data;
  friend bool operator==(const Fired&, const Fired&) = default;
};

// Two handlers receive only their own events; the clock equals each event's time when its
// handler runs.
TEST(Engine, DispatchesToAddressedHandlerAtEventTime) {
  Engine engine;
  std::vector<Fired> a, b;
  const HandlerId ha = engine.add_handler([&](const Event& e) {
    a.push_back({engine.now().picoseconds(), e.data});
  });
  const HandlerId hb = engine.add_handler([&](const Event& e) {
    b.push_back({engine.now().picoseconds(), e.data});
  });
  engine.schedule_at(SimTime::ps(20), Event{hb, 0, 1});
  engine.schedule_at(SimTime::ps(10), Event{ha, 0, 2});
  engine.schedule_at(SimTime::ps(30), Event{ha, 0, 3});
  EXPECT_EQ(engine.run(), 3u);
  EXPECT_EQ(a, (std::vector<Fired>{{10, 2}, {30, 3}}));
  EXPECT_EQ(b, (std::vector<Fired>{{20, 1}}));
  EXPECT_EQ(engine.now(), SimTime::ps(30));
  EXPECT_EQ(engine.events_processed(), 3u);
}

// Event 0 at t=5 schedules event 9 at t=5 (now); events 1 and 2 were already queued at t=5,
// so sequence order gives 0, 1, 2, 9.
TEST(Engine, EventsScheduledAtNowRunAfterEarlierTies) {
  Engine engine;
  std::vector<std::uint64_t> order;
  HandlerId h = 0;
  h = engine.add_handler([&](const Event& e) {
    order.push_back(e.data);
    if (e.data == 0) engine.schedule_after(SimTime(), Event{h, 0, 9});
  });
  for (std::uint64_t i = 0; i < 3; ++i)
    engine.schedule_at(SimTime::ps(5), Event{h, 0, i});
  engine.run();
  EXPECT_EQ(order, (std::vector<std::uint64_t>{0, 1, 2, 9}));
}

// An event due past SimTime's range (a workload far too large for its devices) does not wrap
// around into the past: the engine records the overflow and stops after the current handler,
// so the simulator can report it (sim/run/event_loop.cpp) instead of printing a negative time.
TEST(Engine, TimePastItsRangeIsRecordedAndStopsTheRun) {
  Engine engine;
  std::vector<std::uint64_t> order;
  HandlerId h = 0;
  h = engine.add_handler([&](const Event& e) {
    order.push_back(e.data);
    if (e.data == 0) engine.schedule_after(SimTime::max(), Event{h, 0, 1});  // past the range
    if (e.data == 0) engine.schedule_after(SimTime::ps(1), Event{h, 0, 2});
  });
  engine.schedule_at(SimTime::ps(1000), Event{h, 0, 0});
  EXPECT_FALSE(engine.time_overflowed());
  engine.run();
  EXPECT_TRUE(engine.time_overflowed());
  EXPECT_EQ(order, (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(engine.now(), SimTime::ps(1000));

  Engine negative;  // a duration converted from a double beyond the range comes out negative
  const HandlerId hn = negative.add_handler([](const Event&) {});
  negative.schedule_after(SimTime::ps(-5), Event{hn, 0, 0});
  EXPECT_TRUE(negative.time_overflowed());
}

// A handler reschedules a "completion" (as the network model does when a rate changes): the
// cancelled one never fires.
TEST(Engine, CancelledEventNeverFires) {
  Engine engine;
  std::vector<Fired> fired;
  EventHandle completion;
  HandlerId h = 0;
  h = engine.add_handler([&](const Event& e) {
    fired.push_back({engine.now().picoseconds(), e.data});
    if (e.data == 1) {  // rate change: move the completion from t=100 to t=60
      EXPECT_TRUE(engine.cancel(completion));
      completion = engine.schedule_at(SimTime::ps(60), Event{h, 0, 2});
    }
  });
  completion = engine.schedule_at(SimTime::ps(100), Event{h, 0, 2});
  engine.schedule_at(SimTime::ps(50), Event{h, 0, 1});
  engine.run();
  EXPECT_EQ(fired, (std::vector<Fired>{{50, 1}, {60, 2}}));
  EXPECT_FALSE(engine.is_pending(completion));
  EXPECT_FALSE(engine.cancel(completion));
}

// Events at 10, 20, 30: run_until(20) handles two and leaves the clock at 20; run_until(25)
// handles none and moves the clock to 25; run() handles the last.
TEST(Engine, RunUntilHandlesUpToLimitAndAdvancesClock) {
  Engine engine;
  const HandlerId h = engine.add_handler([](const Event&) {});
  for (int t : {10, 20, 30})
    engine.schedule_at(SimTime::ps(t), Event{h, 0, 0});
  EXPECT_EQ(engine.run_until(SimTime::ps(20)), 2u);
  EXPECT_EQ(engine.now(), SimTime::ps(20));
  EXPECT_EQ(engine.run_until(SimTime::ps(25)), 0u);
  EXPECT_EQ(engine.now(), SimTime::ps(25));
  EXPECT_EQ(engine.pending(), 1u);
  EXPECT_EQ(engine.run(), 1u);
  EXPECT_EQ(engine.now(), SimTime::ps(30));
}

TEST(Engine, StopLeavesRemainingEventsQueued) {
  Engine engine;
  std::vector<std::uint64_t> seen;
  const HandlerId h = engine.add_handler([&](const Event& e) {
    seen.push_back(e.data);
    if (e.data == 1) engine.stop();
  });
  for (std::uint64_t i = 0; i < 4; ++i) {
    engine.schedule_at(SimTime::ps(static_cast<std::int64_t>(i)), Event{h, 0, i});
  }
  EXPECT_EQ(engine.run(), 2u);
  EXPECT_EQ(engine.now(), SimTime::ps(1));
  EXPECT_EQ(engine.pending(), 2u);
  EXPECT_EQ(engine.run(), 2u);
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1, 2, 3}));
}

// A small random simulation: each event schedules one or two successors with random delays
// (many of them zero, to exercise ties) and sometimes cancels a random pending event. The trace
// of (time, data) must be identical across two runs with the same seed.
std::vector<Fired> random_simulation(std::uint64_t seed) {
  testing::TestRng rng(seed);
  Engine engine;
  std::vector<Fired> trace;
  std::vector<EventHandle> handles;
  std::uint64_t next_id = 0;
  HandlerId h = 0;
  h = engine.add_handler([&](const Event& e) {
    trace.push_back({engine.now().picoseconds(), e.data});
    if (trace.size() > 20000) return;
    const std::uint32_t successors = 1 + rng.below(2);
    for (std::uint32_t s = 0; s < successors; ++s) {
      const auto delay = static_cast<std::int64_t>(rng.chance(0.3) ? 0 : rng.below(1000));
      handles.push_back(engine.schedule_after(SimTime::ps(delay), Event{h, 0, next_id++}));
    }
    if (!handles.empty() && rng.chance(0.2))
      engine.cancel(handles[rng.below(static_cast<std::uint32_t>(handles.size()))]);
  });
  for (int i = 0; i < 50; ++i)
    engine.schedule_at(SimTime(), Event{h, 0, next_id++});
  engine.run();
  return trace;
}

TEST(Engine, IdenticalRunsGiveIdenticalTraces) {
  const std::vector<Fired> first = random_simulation(42);
  const std::vector<Fired> second = random_simulation(42);
  ASSERT_GT(first.size(), 1000u);
  EXPECT_EQ(first, second);
  // Times never decrease, i.e. the clock is monotone.
  for (std::size_t i = 1; i < first.size(); ++i)
    EXPECT_LE(first[i - 1].time_ps, first[i].time_ps);
}

// Two engines in one process do not share state.
TEST(Engine, EnginesAreIndependent) {
  Engine a, b;
  int count_a = 0, count_b = 0;
  const HandlerId ha = a.add_handler([&](const Event&) { ++count_a; });
  const HandlerId hb = b.add_handler([&](const Event&) { ++count_b; });
  a.schedule_at(SimTime::ps(1), Event{ha, 0, 0});
  b.schedule_at(SimTime::ps(1), Event{hb, 0, 0});
  b.schedule_at(SimTime::ps(2), Event{hb, 0, 0});
  a.run();
  EXPECT_EQ(count_a, 1);
  EXPECT_EQ(count_b, 0);
  b.run();
  EXPECT_EQ(count_b, 2);
}

}  // namespace
}  // namespace tawpipe::sim
