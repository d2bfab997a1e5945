#include "sim/engine/engine.h"

#include <cassert>
#include <utility>

namespace tawpipe::sim {

HandlerId Engine::add_handler(Handler handler) {
  assert(handler);
  // Registering from inside a handler could reallocate handlers_ under the running callable.
  assert(!running_);
  handlers_.push_back(std::move(handler));
  return static_cast<HandlerId>(handlers_.size() - 1);
}

EventHandle Engine::schedule_at(SimTime time, const Event& event) {
  assert(event.handler < handlers_.size());
  // Scheduling in the past would make the clock run backwards: a bug in the caller, or a time
  // computed past SimTime's range that wrapped around (recorded: time_overflowed()).
  if (time < now_) {
    assert(time < SimTime() && "scheduled in the past");
    overflowed_ = true;
    time = SimTime::max();
  }
  return queue_.push(time, event);
}

std::uint64_t Engine::run() {
  return run_loop(SimTime::max());
}

std::uint64_t Engine::run_until(SimTime limit) {
  assert(limit >= now_);
  const std::uint64_t handled = run_loop(limit);
  // Without a stop request every event up to `limit` has been handled, so the clock may move
  // to `limit`; after a stop it stays at the last handled event.
  if (!stop_requested_) now_ = limit;
  return handled;
}

std::uint64_t Engine::run_loop(SimTime limit) {
  stop_requested_ = false;
  running_ = true;
  std::uint64_t handled = 0;
  while (!stop_requested_ && !overflowed_ && !queue_.empty() && queue_.next_time() <= limit) {
    const ScheduledEvent next = queue_.pop();
    now_ = next.time;
    ++handled;
    ++events_processed_;
    handlers_[next.event.handler](next.event);
  }
  running_ = false;
  return handled;
}

}  // namespace tawpipe::sim
