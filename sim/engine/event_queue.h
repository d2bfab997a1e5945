/// \file
/// The simulator's pending-event set: a 4-ary min-heap ordered by (time, sequence).
///
/// Why this shape:
///  - Simulated time is an integer (`SimTime`, picoseconds), so ordering never depends on
///    floating-point rounding.
///  - Every push takes the next value of a per-queue sequence counter; events at the same time
///    therefore pop in insertion order (FIFO). The order is a pure function of the calls made,
///    which is what makes two runs of one simulation byte-identical.
///  - The payload is a 16-byte POD (`Event`) kept in a slot table beside the heap, whose entries
///    are 16 bytes (time; sequence and slot packed in one word, 40 + 24 bits): sifting moves
///    small entries, a node's four children share one or two cache lines, and scheduling never
///    allocates once the vectors have grown to their working size. Four children per node halve
///    the depth of a binary heap: a pop (the most frequent operation: every event is popped
///    once, ~1.2 M times per 1024-GPU run, with thousands pending) moves half as many entries,
///    each a dependent load and a slot update, for 1.5x the comparisons, which are cheap here.
///    Limits: 2^24 events pending at once and 2^40 pushes per queue (std::length_error beyond).
///  - Flow completion events are rescheduled whenever the max-min solver changes a rate, and
///    compute ops whenever communication kernels change their slow-down, so moving an event
///    must be cheap. The heap is indexed (each slot knows its entry's position): `reschedule()`
///    moves the entry in place, `cancel()` removes it, each in O(log n), and the heap holds live
///    events only (no stale entries to skip or compact).
///  - Events for the current instant that nobody cancels (the network model's solve request,
///    about 40 % of all events) skip the heap: `push_ordered` appends them to a FIFO, which is
///    sorted by construction, and `pop` takes the earlier of the FIFO's front and the heap's top.
///    The pop order is the one a single heap would give; only the cost changes (O(1) for them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/units.h"

namespace tawpipe::sim {

/// Index of a handler registered with an `Engine` (see engine.h).
using HandlerId = std::uint32_t;

/// What happens when an event fires: which handler receives it, plus two words that only that
/// handler interprets (typically an event kind and the index of a flow, op or rank). Being a
/// plain value keeps the queue allocation-free and the handlers free of pointers into it.
struct Event {
  HandlerId handler = 0;   ///< receiver, an id returned by `Engine::add_handler`
  std::uint32_t kind = 0;  ///< handler-defined discriminator
  std::uint64_t data = 0;  ///< handler-defined payload (an index, an id, ...)

  friend constexpr bool operator==(const Event&, const Event&) = default;
};

/// Names one scheduled event so that it can be cancelled. Default-constructed handles name no
/// event. A handle stays safe to use after its event fired or was cancelled: it then simply
/// no longer refers to a pending event (generation check), even if its slot has been reused.
struct EventHandle {
  static constexpr std::uint32_t kNoSlot = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t slot = kNoSlot;
  std::uint32_t generation = 0;

  /// True if this handle was returned by a push (it may since have fired or been cancelled).
  constexpr bool valid() const { return slot != kNoSlot; }
  friend constexpr bool operator==(const EventHandle&, const EventHandle&) = default;
};

/// An event as popped from the queue: when, in which order it was pushed, and what.
struct ScheduledEvent {
  SimTime time;
  std::uint64_t sequence = 0;  ///< unique per queue, increasing with each push
  Event event;
};

/// Pending events in (time, sequence) order. Not thread-safe; one per simulation.
class EventQueue {
 public:
  /// Schedules `event` at absolute `time` and returns a handle for `cancel`. O(log n).
  EventHandle push(SimTime time, const Event& event);

  /// Schedules `event` at `time` in O(1), without a handle (it cannot be cancelled or moved).
  /// Precondition: `time` is not earlier than that of any event pushed this way before (an
  /// engine passes its clock, which never goes back). Pops in the same (time, sequence) order
  /// as `push` would give it.
  void push_ordered(SimTime time, const Event& event);

  /// Cancels the pending event named by `handle`. Returns false, and does nothing, if the event
  /// already fired, was already cancelled, or the handle is default-constructed. O(log n).
  bool cancel(EventHandle handle);

  /// Moves the pending event named by `handle` to `time` with `event` as its payload, and
  /// returns its handle: exactly `cancel(handle)` then `push(time, event)` (it takes the next
  /// sequence number, so it pops after events pushed before at the same time), without
  /// leaving the heap. When `handle` is not pending it is `push(time, event)`. O(log n).
  EventHandle reschedule(EventHandle handle, SimTime time, const Event& event);

  /// True if `handle` names an event that is still pending.
  bool is_pending(EventHandle handle) const;

  /// Number of pending (not cancelled) events.
  std::size_t size() const { return heap_.size() + (fifo_.size() - fifo_head_); }
  bool empty() const { return heap_.empty() && fifo_head_ == fifo_.size(); }

  /// Time of the earliest pending event. Precondition: `!empty()`. O(1).
  SimTime next_time() const {
    return SimTime::ps(fifo_first() ? fifo_[fifo_head_].time_ps : heap_.front().time_ps);
  }

  /// Removes and returns the earliest pending event. Precondition: `!empty()`. O(log n).
  ScheduledEvent pop();

  /// Drops every pending event; outstanding handles become non-pending. Sequence numbers keep
  /// increasing so that a cleared queue still orders new ties by insertion.
  void clear();

  /// Total number of pushes so far (the next sequence number).
  std::uint64_t pushed() const { return next_sequence_; }

 private:
  static constexpr int kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  /// (time, sequence) order with the slot in the low bits of `key`: sequences are unique, so
  /// comparing keys compares sequences.
  struct Entry {
    std::int64_t time_ps;
    std::uint64_t key;  ///< sequence << kSlotBits | slot
    std::uint64_t sequence() const { return key >> kSlotBits; }
    std::uint32_t slot() const { return static_cast<std::uint32_t>(key & kSlotMask); }
  };
  struct Ordered {
    std::int64_t time_ps;
    std::uint64_t sequence;
    Event event;
  };
  struct Slot {
    Event event;
    std::uint32_t generation = 0;  ///< bumped when the slot's event fires or is cancelled
    std::uint32_t pos = 0;         ///< index of the event's entry in heap_ while pending
  };
  /// Branch-free (bitwise, not short-circuit): the outcome of a heap comparison is a coin
  /// flip, so a branch on it mispredicts half the time.
  static bool before(const Entry& a, const Entry& b) {
    return (a.time_ps < b.time_ps) | ((a.time_ps == b.time_ps) & (a.key < b.key));
  }
  void place(std::size_t index, const Entry& e) {
    heap_[index] = e;
    slots_[e.slot()].pos = static_cast<std::uint32_t>(index);
  }
  /// The next sequence number, packed with `slot` (throws std::length_error past 2^40 pushes).
  std::uint64_t next_key(std::uint32_t slot);
  /// Index of the earliest of the children of `index` (at least one exists: 4 index + 1 < n).
  std::size_t min_child(std::size_t index, std::size_t n) const {
    const std::size_t c = 4 * index + 1;
    if (c + 4 <= n) {  // a full node: a two-round tournament (keys are unique: no ties),
                       // indices selected arithmetically (no data-dependent branch)
      const Entry* h = heap_.data();
      const std::size_t a = c + static_cast<std::size_t>(before(h[c + 1], h[c]));
      const std::size_t b = c + 2 + static_cast<std::size_t>(before(h[c + 3], h[c + 2]));
      const std::size_t pick = static_cast<std::size_t>(before(h[b], h[a]));
      return a + pick * (b - a);
    }
    std::size_t best = c;
    for (std::size_t i = c + 1; i < n; ++i) {
      if (before(heap_[i], heap_[best])) best = i;
    }
    return best;
  }
  /// True if the FIFO's front pops before the heap's top (false when the FIFO is empty).
  bool fifo_first() const {
    if (fifo_head_ == fifo_.size()) return false;
    if (heap_.empty()) return true;
    const Ordered& f = fifo_[fifo_head_];
    const Entry& h = heap_.front();
    return f.time_ps < h.time_ps || (f.time_ps == h.time_ps && f.sequence < h.sequence());
  }
  void release_slot(std::uint32_t slot);
  /// Removes the earliest entry (the heap keeps its order).
  void remove_top();
  /// Puts `e` at the hole `index` and moves it up to its place.
  void sift_up(std::size_t index, Entry e);
  /// Walks the hole at `index` down the smallest-child path to a leaf, then sifts `e` up from
  /// there (Floyd's bottom-up deletion: no comparison with `e` on the way down; the moved
  /// entry almost always belongs near the bottom).
  void sift_down(std::size_t index, Entry e);
  /// Puts `e` at the hole `index` and moves it down while a child precedes it (a classic
  /// sift-down: a moved or refilled entry usually belongs near where it was).
  void settle_down(std::size_t index, Entry e);

  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<Ordered> fifo_;  ///< push_ordered's events from fifo_head_ on, in pop order
  std::size_t fifo_head_ = 0;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace tawpipe::sim
