#include "sim/engine/event_queue.h"

#include <cassert>

namespace tawpipe::sim {

EventHandle EventQueue::push(SimTime time, const Event& event) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    assert(slots_.size() < EventHandle::kNoSlot);
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[slot].event = event;
  heap_.emplace_back();
  sift_up(heap_.size() - 1, Entry{time.picoseconds(), next_sequence_++, slot});
  return EventHandle{slot, slots_[slot].generation};
}

bool EventQueue::cancel(EventHandle handle) {
  if (!is_pending(handle)) return false;
  const std::size_t index = slots_[handle.slot].pos;
  const Entry last = heap_.back();
  heap_.pop_back();
  if (index < heap_.size()) {  // the last entry fills the hole, up or down from there
    if (index > 0 && before(last, heap_[(index - 1) / 2])) {
      sift_up(index, last);
    } else {
      settle_down(index, last);
    }
  }
  release_slot(handle.slot);
  return true;
}

EventHandle EventQueue::reschedule(EventHandle handle, SimTime time, const Event& event) {
  if (!is_pending(handle)) return push(time, event);
  Slot& s = slots_[handle.slot];
  s.event = event;
  const std::size_t index = s.pos;
  // A new sequence number, as a push after the cancel would take: same pop order.
  const Entry e{time.picoseconds(), next_sequence_++, handle.slot};
  if (index > 0 && before(e, heap_[(index - 1) / 2])) {
    sift_up(index, e);
  } else {
    settle_down(index, e);
  }
  return handle;
}

bool EventQueue::is_pending(EventHandle handle) const {
  return handle.slot < slots_.size() && slots_[handle.slot].generation == handle.generation;
}

ScheduledEvent EventQueue::pop() {
  assert(!empty());
  const Entry top = heap_.front();
  const ScheduledEvent out{SimTime::ps(top.time_ps), top.sequence, slots_[top.slot].event};
  remove_top();
  release_slot(top.slot);
  return out;
}

void EventQueue::clear() {
  for (const Entry& e : heap_)
    release_slot(e.slot);
  heap_.clear();
}

void EventQueue::release_slot(std::uint32_t slot) {
  // A new generation invalidates the outstanding handle. Wrap-around would need 2^32 reuses of
  // one slot while a stale handle is still held; not a practical concern for simulations.
  ++slots_[slot].generation;
  free_slots_.push_back(slot);
}

void EventQueue::remove_top() {
  const Entry last = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0, last);
}

// Hole-based sifting: move the displaced entries once instead of swapping at every level.
void EventQueue::sift_up(std::size_t index, Entry e) {
  while (index > 0) {
    const std::size_t parent = (index - 1) / 2;
    if (!before(e, heap_[parent])) break;
    place(index, heap_[parent]);
    index = parent;
  }
  place(index, e);
}

void EventQueue::settle_down(std::size_t index, Entry e) {
  const std::size_t n = heap_.size();
  for (std::size_t child = 2 * index + 1; child < n; child = 2 * index + 1) {
    if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
    if (!before(heap_[child], e)) break;
    place(index, heap_[child]);
    index = child;
  }
  place(index, e);
}

void EventQueue::sift_down(std::size_t index, Entry e) {
  const std::size_t n = heap_.size();
  for (std::size_t child = 2 * index + 1; child < n; child = 2 * index + 1) {
    if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
    place(index, heap_[child]);
    index = child;
  }
  sift_up(index, e);
}

}  // namespace tawpipe::sim
