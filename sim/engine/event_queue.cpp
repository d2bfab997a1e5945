#include "sim/engine/event_queue.h"

#include <cassert>
#include <stdexcept>

namespace tawpipe::sim {

std::uint64_t EventQueue::next_key(std::uint32_t slot) {
  if (next_sequence_ >> (64 - kSlotBits) != 0)
    throw std::length_error("event queue: more than 2^40 events scheduled");
  return next_sequence_++ << kSlotBits | slot;
}

EventHandle EventQueue::push(SimTime time, const Event& event) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (slots_.size() > kSlotMask)
      throw std::length_error("event queue: more than 2^24 events pending at once");
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[slot].event = event;
  heap_.emplace_back();
  sift_up(heap_.size() - 1, Entry{time.picoseconds(), next_key(slot)});
  return EventHandle{slot, slots_[slot].generation};
}

void EventQueue::push_ordered(SimTime time, const Event& event) {
  assert(fifo_head_ == fifo_.size() || fifo_.back().time_ps <= time.picoseconds());
  if (fifo_head_ == fifo_.size()) {  // drained: reuse the storage from its start
    fifo_.clear();
    fifo_head_ = 0;
  } else if (fifo_head_ >= 4096 && 2 * fifo_head_ >= fifo_.size()) {  // never drained: compact
    fifo_.erase(fifo_.begin(), fifo_.begin() + static_cast<std::ptrdiff_t>(fifo_head_));
    fifo_head_ = 0;
  }
  fifo_.push_back(Ordered{time.picoseconds(), next_key(0) >> kSlotBits, event});
}

bool EventQueue::cancel(EventHandle handle) {
  if (!is_pending(handle)) return false;
  const std::size_t index = slots_[handle.slot].pos;
  const Entry last = heap_.back();
  heap_.pop_back();
  if (index < heap_.size()) {  // the last entry fills the hole, up or down from there
    if (index > 0 && before(last, heap_[(index - 1) / 4])) {
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
  const Entry e{time.picoseconds(), next_key(handle.slot)};
  if (index > 0 && before(e, heap_[(index - 1) / 4])) {
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
  if (fifo_first()) {
    const Ordered& f = fifo_[fifo_head_++];
    return ScheduledEvent{SimTime::ps(f.time_ps), f.sequence, f.event};
  }
  const Entry top = heap_.front();
  const ScheduledEvent out{SimTime::ps(top.time_ps), top.sequence(), slots_[top.slot()].event};
  remove_top();
  release_slot(top.slot());
  return out;
}

void EventQueue::clear() {
  for (const Entry& e : heap_)
    release_slot(e.slot());
  heap_.clear();
  fifo_.clear();
  fifo_head_ = 0;
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
    const std::size_t parent = (index - 1) / 4;
    if (!before(e, heap_[parent])) break;
    place(index, heap_[parent]);
    index = parent;
  }
  place(index, e);
}

void EventQueue::settle_down(std::size_t index, Entry e) {
  const std::size_t n = heap_.size();
  while (4 * index + 1 < n) {
    const std::size_t child = min_child(index, n);
    if (!before(heap_[child], e)) break;
    place(index, heap_[child]);
    index = child;
  }
  place(index, e);
}

void EventQueue::sift_down(std::size_t index, Entry e) {
  const std::size_t n = heap_.size();
  while (4 * index + 1 < n) {
    const std::size_t child = min_child(index, n);
    place(index, heap_[child]);
    index = child;
  }
  sift_up(index, e);
}

}  // namespace tawpipe::sim
