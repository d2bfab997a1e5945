#include "sim/engine/event_queue.h"

#include <algorithm>
#include <cassert>
#include <utility>

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
  const std::uint32_t generation = slots_[slot].generation;
  heap_.push_back(Entry{time.picoseconds(), next_sequence_++, slot, generation});
  sift_up(heap_.size() - 1);
  ++live_;
  return EventHandle{slot, generation};
}

bool EventQueue::cancel(EventHandle handle) {
  if (!is_pending(handle)) return false;
  // The heap entry stays where it is and is recognised as stale by its generation.
  release_slot(handle.slot);
  --live_;
  // Compact once stale entries dominate, so a workload that reschedules every flow completion
  // many times keeps the heap O(live events). The threshold makes the O(n) rebuild amortised.
  const std::size_t stale = heap_.size() - live_;
  if (stale > 64 && stale > live_) compact();
  return true;
}

bool EventQueue::is_pending(EventHandle handle) const {
  return handle.slot < slots_.size() && slots_[handle.slot].generation == handle.generation;
}

SimTime EventQueue::next_time() {
  assert(!empty());
  drop_stale_top();
  return SimTime::ps(heap_.front().time_ps);
}

ScheduledEvent EventQueue::pop() {
  assert(!empty());
  drop_stale_top();
  const Entry top = heap_.front();
  const ScheduledEvent out{SimTime::ps(top.time_ps), top.sequence, slots_[top.slot].event};
  remove_top();
  release_slot(top.slot);
  --live_;
  return out;
}

void EventQueue::clear() {
  for (const Entry& e : heap_) {
    if (is_live(e)) release_slot(e.slot);
  }
  heap_.clear();
  live_ = 0;
}

void EventQueue::release_slot(std::uint32_t slot) {
  // A new generation invalidates both the outstanding handle and the heap entry. Wrap-around
  // would need 2^32 reuses of one slot while a stale handle is still held; not a practical
  // concern for simulations.
  ++slots_[slot].generation;
  free_slots_.push_back(slot);
}

void EventQueue::drop_stale_top() {
  while (!is_live(heap_.front()))
    remove_top();
}

void EventQueue::remove_top() {
  const Entry last = heap_.back();
  heap_.pop_back();
  if (heap_.empty()) return;
  // Floyd's bottom-up deletion: walk the hole at the root down the smaller-child path to a
  // leaf (one comparison per level), then sift the former last entry up from there. The last
  // entry almost always belongs near the bottom, so this beats a classic sift-down, which pays
  // two comparisons per level.
  const std::size_t n = heap_.size();
  std::size_t index = 0;
  for (std::size_t child = 1; child < n; child = 2 * index + 1) {
    if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
    heap_[index] = heap_[child];
    index = child;
  }
  heap_[index] = last;
  sift_up(index);
}

// Hole-based sifting: move the displaced entry once instead of swapping at every level.
void EventQueue::sift_up(std::size_t index) {
  Entry moving = heap_[index];
  while (index > 0) {
    const std::size_t parent = (index - 1) / 2;
    if (!before(moving, heap_[parent])) break;
    heap_[index] = heap_[parent];
    index = parent;
  }
  heap_[index] = moving;
}

void EventQueue::compact() {
  // Pop order depends only on the (time, sequence) keys, which are unique, so rebuilding the
  // heap cannot change which event comes out next.
  std::erase_if(heap_, [this](const Entry& e) { return !is_live(e); });
  std::make_heap(heap_.begin(), heap_.end(),
                 [](const Entry& a, const Entry& b) { return before(b, a); });
}

}  // namespace tawpipe::sim
