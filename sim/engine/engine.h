/// \file
/// The discrete-event engine: a clock, an `EventQueue`, and a table of handlers.
///
/// Subsystems (network model, compute model, program executor) each register one handler and
/// schedule plain `Event` values addressed to it; the engine pops events in (time, sequence)
/// order, advances the clock and calls the addressed handler. Adding a subsystem is one
/// `add_handler` call, never an edit to a central enum or switch.
///
/// An `Engine` owns all of its state: there are no globals or singletons, so independent
/// simulations may run concurrently in different threads (each engine on one thread).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/units.h"
#include "sim/engine/event_queue.h"

namespace tawpipe::sim {

/// A simulation clock driving registered handlers from an event queue.
class Engine {
 public:
  /// Receives the events addressed to it. Called with the clock already set to the event's
  /// time; it may schedule (at `now()` or later) and cancel events, and call `stop()`.
  using Handler = std::function<void(const Event&)>;

  Engine() = default;
  // Handlers usually capture `this` of their owner and the owner keeps a reference to the
  // engine; moving the engine would silently break that link.
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Registers `handler` and returns the id to put in `Event::handler`. Handlers live as long as
  /// the engine. Preconditions: `handler` is non-empty; not called from inside a handler.
  HandlerId add_handler(Handler handler);

  /// Current simulated time: the time of the event being (or last) handled, or the limit
  /// reached by `run_until`. Starts at zero.
  SimTime now() const { return now_; }

  /// Schedules `event` at absolute `time`. Precondition: `time >= now()` and `event.handler` was
  /// returned by `add_handler`. Events at equal times fire in the order they were scheduled.
  EventHandle schedule_at(SimTime time, const Event& event);

  /// Schedules `event` at `now()` in O(1), for events that are never cancelled or moved (no
  /// handle). Same order as `schedule_after(SimTime(), event)`.
  void schedule_now(const Event& event) {
    assert(event.handler < handlers_.size());
    queue_.push_ordered(now_, event);
  }

  /// Schedules `event` at `now() + delay`. Precondition: `delay >= 0`.
  EventHandle schedule_after(SimTime delay, const Event& event) {
    return schedule_at(later(delay), event);
  }

  /// Cancels a pending event; false if it already fired or was cancelled (see EventQueue).
  bool cancel(EventHandle handle) { return queue_.cancel(handle); }

  /// Moves a pending event to `now() + delay` with payload `event` (or schedules it there if
  /// `handle` is not pending), and returns its handle: the same order as `cancel` then
  /// `schedule_after`, cheaper (EventQueue::reschedule).
  EventHandle reschedule_after(EventHandle handle, SimTime delay, const Event& event) {
    assert(event.handler < handlers_.size());
    return queue_.reschedule(handle, later(delay), event);
  }

  /// True once an event was due past the end of SimTime's range (2^63 ps, about 106 days): a
  /// workload far too large for its devices. The event is kept at SimTime::max(), and `run`
  /// stops after the current handler; the caller reports it (sim/run/event_loop.cpp).
  bool time_overflowed() const { return overflowed_; }

  /// True if `handle` names an event that has neither fired nor been cancelled.
  bool is_pending(EventHandle handle) const { return queue_.is_pending(handle); }

  /// Handles events until the queue is empty or a handler calls `stop()`. Returns the number
  /// of events handled by this call.
  std::uint64_t run();

  /// Handles every event with time <= `limit` (unless a handler calls `stop()`), then sets the
  /// clock to `limit` if it stopped for lack of earlier events. Precondition: `limit >= now()`.
  /// Returns the number of events handled by this call.
  std::uint64_t run_until(SimTime limit);

  /// Makes the running `run`/`run_until` return after the current handler, leaving the clock at
  /// that event's time. Pending events stay queued; a later `run` resumes with them. Has no
  /// effect outside a run (each run starts afresh).
  void stop() { stop_requested_ = true; }

  /// Number of pending events.
  std::size_t pending() const { return queue_.size(); }

  /// Events handled since construction, over all `run` calls.
  std::uint64_t events_processed() const { return events_processed_; }

 private:
  std::uint64_t run_loop(SimTime limit);

  /// `now() + delay`, or SimTime::max() (and the overflow recorded) past SimTime's range; a
  /// negative delay (a duration converted from a double beyond the range) counts as past it.
  SimTime later(SimTime delay) {
    std::int64_t t = 0;
    if (delay < SimTime() || __builtin_add_overflow(now_.picoseconds(), delay.picoseconds(), &t)) {
      overflowed_ = true;
      return SimTime::max();
    }
    return SimTime::ps(t);
  }

  EventQueue queue_;
  std::vector<Handler> handlers_;
  SimTime now_;
  std::uint64_t events_processed_ = 0;
  bool stop_requested_ = false;
  bool running_ = false;
  bool overflowed_ = false;
};

}  // namespace tawpipe::sim
