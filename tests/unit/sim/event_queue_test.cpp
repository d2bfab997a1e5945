// EventQueue: (time, sequence) order, FIFO ties, cancellation and in-place rescheduling.
#include "sim/engine/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace tawpipe::sim {
namespace {

Event ev(std::uint64_t data) {
  return Event{0, 0, data};
}

std::vector<std::uint64_t> drain(EventQueue& q) {
  std::vector<std::uint64_t> out;
  while (!q.empty())
    out.push_back(q.pop().event.data);
  return out;
}

// Pushed at times 30, 10, 20, 10, 10 (ids 0..4): pop order is by time, and the three events
// at t=10 come out in insertion order 1, 3, 4.
TEST(EventQueue, OrdersByTimeThenInsertion) {
  EventQueue q;
  q.push(SimTime::ns(30), ev(0));
  q.push(SimTime::ns(10), ev(1));
  q.push(SimTime::ns(20), ev(2));
  q.push(SimTime::ns(10), ev(3));
  q.push(SimTime::ns(10), ev(4));
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.next_time(), SimTime::ns(10));
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{1, 3, 4, 2, 0}));
}

TEST(EventQueue, SequenceNumbersIncreaseWithPushes) {
  EventQueue q;
  q.push(SimTime::ns(5), ev(0));
  q.push(SimTime::ns(1), ev(1));
  const ScheduledEvent first = q.pop();
  const ScheduledEvent second = q.pop();
  EXPECT_EQ(first.sequence, 1u);
  EXPECT_EQ(first.time, SimTime::ns(1));
  EXPECT_EQ(second.sequence, 0u);
  EXPECT_EQ(q.pushed(), 2u);
}

// Ties stay FIFO across a large heap (sift operations must not reorder equal times).
TEST(EventQueue, ManyTiesStayFifo) {
  EventQueue q;
  for (std::uint64_t i = 0; i < 1000; ++i)
    q.push(SimTime::ns(static_cast<std::int64_t>(i % 3)), ev(i));
  std::vector<std::uint64_t> expected;
  for (std::uint64_t t = 0; t < 3; ++t) {
    for (std::uint64_t i = t; i < 1000; i += 3)
      expected.push_back(i);
  }
  EXPECT_EQ(drain(q), expected);
}

TEST(EventQueue, CancelRemovesOnlyThatEvent) {
  EventQueue q;
  q.push(SimTime::ns(1), ev(0));
  const EventHandle h = q.push(SimTime::ns(2), ev(1));
  q.push(SimTime::ns(3), ev(2));
  EXPECT_TRUE(q.is_pending(h));
  EXPECT_TRUE(q.cancel(h));
  EXPECT_FALSE(q.is_pending(h));
  EXPECT_FALSE(q.cancel(h));  // twice: no effect
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{0, 2}));
}

TEST(EventQueue, CancelledTopIsSkippedByNextTime) {
  EventQueue q;
  const EventHandle h = q.push(SimTime::ns(1), ev(0));
  q.push(SimTime::ns(7), ev(1));
  ASSERT_TRUE(q.cancel(h));
  EXPECT_EQ(q.next_time(), SimTime::ns(7));
  EXPECT_EQ(q.pop().event.data, 1u);
  EXPECT_TRUE(q.empty());
}

// A handle whose event fired stays non-pending even after its slot is reused by a new event,
// and cancelling it must not cancel the new event.
TEST(EventQueue, StaleHandleDoesNotTouchReusedSlot) {
  EventQueue q;
  const EventHandle old = q.push(SimTime::ns(1), ev(0));
  EXPECT_EQ(q.pop().event.data, 0u);
  EXPECT_FALSE(q.is_pending(old));
  const EventHandle fresh = q.push(SimTime::ns(2), ev(1));
  EXPECT_EQ(fresh.slot, old.slot);  // reused, with a new generation
  EXPECT_FALSE(q.cancel(old));
  EXPECT_TRUE(q.is_pending(fresh));
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{1}));
}

TEST(EventQueue, DefaultHandleIsNeverPending) {
  EventQueue q;
  q.push(SimTime::ns(1), ev(0));
  EXPECT_FALSE(EventHandle{}.valid());
  EXPECT_FALSE(q.is_pending(EventHandle{}));
  EXPECT_FALSE(q.cancel(EventHandle{}));
}

// Cancelling 900 of 1000 events: the 100 survivors (every tenth id) still pop in time order,
// and size() counts live events only.
TEST(EventQueue, HeavyCancellationCompactsAndKeepsOrder) {
  EventQueue q;
  std::vector<EventHandle> handles;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    handles.push_back(q.push(SimTime::ps(static_cast<std::int64_t>(1000 - i)), ev(i)));
  }
  for (std::uint64_t i = 0; i < 1000; ++i) {
    if (i % 10 != 0) {
      EXPECT_TRUE(q.cancel(handles[i]));
    }
  }
  EXPECT_EQ(q.size(), 100u);
  std::vector<std::uint64_t> expected;
  for (std::uint64_t i = 1000; i-- > 0;) {
    if (i % 10 == 0) expected.push_back(i);
  }
  EXPECT_EQ(drain(q), expected);
}

// reschedule(h, t, e) is cancel(h) then push(t, e): a later sequence number, so at equal times
// it pops after events pushed before the reschedule; the handle stays valid.
TEST(EventQueue, RescheduleTakesTheNextSequenceNumber) {
  EventQueue q;
  const EventHandle a = q.push(SimTime::ns(5), ev(0));
  q.push(SimTime::ns(3), ev(1));
  const EventHandle moved = q.reschedule(a, SimTime::ns(3), ev(2));
  EXPECT_EQ(moved, a);
  EXPECT_TRUE(q.is_pending(moved));
  EXPECT_EQ(q.size(), 2u);
  const ScheduledEvent first = q.pop();
  EXPECT_EQ(first.event.data, 1u);
  const ScheduledEvent second = q.pop();
  EXPECT_EQ(second.event.data, 2u);
  EXPECT_EQ(second.sequence, 2u);  // pushes took 0 and 1
  EXPECT_FALSE(q.is_pending(moved));
  // Not pending any more: a reschedule is a push.
  const EventHandle again = q.reschedule(moved, SimTime::ns(9), ev(3));
  EXPECT_TRUE(q.is_pending(again));
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{3}));
}

// Random pushes, cancels and moves (seeded) on two queues, one moving events with reschedule,
// the other with cancel + push: identical (time, sequence, payload) pop sequences, also when
// pops interleave.
TEST(EventQueue, RescheduleEqualsCancelThenPush) {
  EventQueue a, b;
  std::vector<EventHandle> ha, hb;
  std::mt19937_64 rng(12345);
  std::vector<ScheduledEvent> out_a, out_b;
  for (int step = 0; step < 20000; ++step) {
    const auto op = rng() % 8;
    const auto t = SimTime::ps(static_cast<std::int64_t>(rng() % 64));  // many ties
    if (op < 3 || ha.empty()) {
      ha.push_back(a.push(t, ev(static_cast<std::uint64_t>(step))));
      hb.push_back(b.push(t, ev(static_cast<std::uint64_t>(step))));
    } else if (op < 6) {
      const std::size_t i = rng() % ha.size();
      ha[i] = a.reschedule(ha[i], t, ev(static_cast<std::uint64_t>(step)));
      b.cancel(hb[i]);
      hb[i] = b.push(t, ev(static_cast<std::uint64_t>(step)));
    } else if (op == 6) {
      const std::size_t i = rng() % ha.size();
      EXPECT_EQ(a.cancel(ha[i]), b.cancel(hb[i]));
    } else if (!a.empty()) {
      ASSERT_FALSE(b.empty());
      out_a.push_back(a.pop());
      out_b.push_back(b.pop());
    }
    ASSERT_EQ(a.size(), b.size());
  }
  while (!a.empty()) {
    out_a.push_back(a.pop());
    out_b.push_back(b.pop());
  }
  EXPECT_TRUE(b.empty());
  ASSERT_EQ(out_a.size(), out_b.size());
  for (std::size_t i = 0; i < out_a.size(); ++i) {
    EXPECT_EQ(out_a[i].time, out_b[i].time);
    EXPECT_EQ(out_a[i].sequence, out_b[i].sequence);
    EXPECT_EQ(out_a[i].event, out_b[i].event);
  }
}

// A reference queue (std::map keyed by (time, sequence), sequence counted here as the contract
// says: one per push, push_ordered and reschedule) against EventQueue under random pushes,
// ordered pushes at the clock (the last popped time, as an engine passes it), moves, cancels and
// pops (seeded; times from a small range for many ties, thousands pending at the peak): the
// same (time, sequence, payload) at every pop and the same size after every step.
TEST(EventQueue, MatchesAReferenceOrderWithOrderedPushes) {
  EventQueue q;
  std::map<std::pair<std::int64_t, std::uint64_t>, std::uint64_t> ref;
  struct Pending {
    EventHandle handle;
    std::pair<std::int64_t, std::uint64_t> key;
  };
  std::vector<Pending> handles;
  std::uint64_t sequence = 0;
  std::int64_t clock = 0;
  std::mt19937_64 rng(20261124);
  for (int step = 0; step < 200000; ++step) {
    const auto op = rng() % 16;
    const std::int64_t t = clock + static_cast<std::int64_t>(rng() % 32);
    const auto data = static_cast<std::uint64_t>(step);
    // Grow for the first half (pops rarer than pushes), then drain.
    const bool grow = step < 100000;
    if (op < (grow ? 6u : 3u)) {
      handles.push_back(Pending{q.push(SimTime::ps(t), ev(data)), {t, sequence}});
      ref[{t, sequence++}] = data;
    } else if (op < (grow ? 9u : 5u)) {
      q.push_ordered(SimTime::ps(clock), ev(data));
      ref[{clock, sequence++}] = data;
    } else if (op < 11 && !handles.empty()) {
      Pending& p = handles[rng() % handles.size()];
      const bool pending = q.is_pending(p.handle);
      ASSERT_EQ(pending, ref.count(p.key) == 1);
      if (pending) ref.erase(p.key);
      p.handle = q.reschedule(p.handle, SimTime::ps(t), ev(data));
      p.key = {t, sequence};
      ref[{t, sequence++}] = data;
    } else if (op == 11 && !handles.empty()) {
      Pending& p = handles[rng() % handles.size()];
      ASSERT_EQ(q.cancel(p.handle), ref.erase(p.key) == 1);
    } else if (!ref.empty()) {
      ASSERT_FALSE(q.empty());
      EXPECT_EQ(q.next_time(), SimTime::ps(ref.begin()->first.first));
      const ScheduledEvent e = q.pop();
      EXPECT_EQ(e.time.picoseconds(), ref.begin()->first.first);
      EXPECT_EQ(e.sequence, ref.begin()->first.second);
      EXPECT_EQ(e.event.data, ref.begin()->second);
      clock = e.time.picoseconds();
      ref.erase(ref.begin());
    }
    ASSERT_EQ(q.size(), ref.size());
    if (handles.size() > 4096) handles.erase(handles.begin(), handles.begin() + 2048);
  }
  EXPECT_EQ(q.empty(), ref.empty());
}

TEST(EventQueue, ClearInvalidatesHandles) {
  EventQueue q;
  const EventHandle h = q.push(SimTime::ns(1), ev(0));
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.is_pending(h));
  q.push(SimTime::ns(1), ev(1));
  q.push(SimTime::ns(1), ev(2));
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{1, 2}));
  q.push_ordered(SimTime::ns(2), ev(3));
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
}

}  // namespace
}  // namespace tawpipe::sim
