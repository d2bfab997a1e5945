// Generated programs shared between runs with equal generator inputs (program_cache.h).
#include "schedules/program_cache.h"

#include <utility>

namespace tawpipe::schedules {
namespace {

// The input with the fields that do not shape the program's ops cleared.
ScheduleInput cache_key(const ScheduleInput& input) {
  ScheduleInput key = input;
  key.topology_name.clear();
  key.topology_hash.clear();
  key.threads = 0;
  return key;
}

bool same_input(const ScheduleInput& a, const ScheduleInput& b) {
  return a.replica_only == b.replica_only && a.node_of_rank == b.node_of_rank && a.dp == b.dp &&
         a.train == b.train && a.model == b.model && a.options == b.options;
}

// Heap bytes of a program, roughly: its op lists and pools (buffers' names are short).
std::size_t program_bytes(const ir::Program& p) {
  std::size_t bytes = sizeof(ir::Program);
  for (const ir::RankProgram& r : p.ranks) {
    bytes += r.ops.capacity() * sizeof(ir::Op) + r.dep_pool.capacity() * sizeof(ir::OpIndex) +
             r.buffer_pool.capacity() * sizeof(ir::BufferId) +
             r.buffers.size() * sizeof(ir::Buffer);
  }
  return bytes;
}

}  // namespace

const std::shared_ptr<const ir::Program>* ProgramCache::find(std::string_view schedule,
                                                             const ScheduleInput& key) const {
  for (const Entry& e : entries_)
    if (e.schedule == schedule && same_input(e.input, key)) return &e.program;
  return nullptr;
}

Expected<std::shared_ptr<const ir::Program>> ProgramCache::get(std::string_view schedule,
                                                               const ScheduleInput& input) {
  ScheduleInput key = cache_key(input);
  {
    std::lock_guard lock(mutex_);
    if (const auto* p = find(schedule, key)) {
      ++hits_;
      return *p;
    }
    ++misses_;
  }
  auto program = generate(schedule, input);
  if (!program.ok()) return program.error();
  auto shared = std::make_shared<const ir::Program>(std::move(*program));
  const std::size_t bytes = program_bytes(*shared);
  std::lock_guard lock(mutex_);
  if (const auto* p = find(schedule, key)) return *p;  // another worker was faster
  if (bytes > capacity_bytes_) return shared;
  while (bytes_ + bytes > capacity_bytes_ && !entries_.empty()) {
    bytes_ -= entries_.front().bytes;
    entries_.pop_front();
  }
  entries_.push_back(Entry{std::string(schedule), std::move(key), shared, bytes});
  bytes_ += bytes;
  return shared;
}

std::size_t ProgramCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

std::size_t ProgramCache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

}  // namespace tawpipe::schedules
