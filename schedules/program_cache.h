/// \file
/// ProgramCache: generated programs shared between runs whose generator inputs are equal.
///
/// A sweep over network or compute parameters (`--sweep inter_node.nic.bandwidth=...`) runs the
/// same methods on the same ranks, model and batch at every point, and steady-state folding
/// (sim/fold/fold.h) generates the same probe programs at every point. A generator's program is
/// a function of its ScheduleInput only, and of the topology only through `node_of_rank` and the
/// two header fields `topology` and `topology_hash` (copied from the input); so a program
/// generated for one point is the program of every point with an equal input up to those two
/// fields. The cache hands it out shared and unchanged: its header names the topology of the
/// point that generated it, and users that report the header must restore the two fields
/// (sim/cli/run.cpp does).
///
/// Thread-safe: sweep workers share one cache. A miss generates outside the lock (two workers
/// may generate the same program at once; the first stored is kept). Bounded: once the cached
/// programs exceed `capacity_bytes`, the oldest are dropped (first in, first out).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/ir/program.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {

class ProgramCache {
 public:
  explicit ProgramCache(std::size_t capacity_bytes = std::size_t{512} << 20)
      : capacity_bytes_(capacity_bytes) {}

  /// The program `generate(schedule, input)` returns, from the cache when an equal input
  /// (ignoring `topology_name`, `topology_hash` and `threads`) was generated before. Errors:
  /// the generator's (not cached).
  Expected<std::shared_ptr<const ir::Program>> get(std::string_view schedule,
                                                   const ScheduleInput& input);

  /// Lookups answered from the cache, and programs generated (for tests and benchmarks).
  std::size_t hits() const;
  std::size_t misses() const;

 private:
  struct Entry {
    std::string schedule;
    ScheduleInput input;  ///< topology_name, topology_hash and threads cleared
    std::shared_ptr<const ir::Program> program;
    std::size_t bytes = 0;
  };
  const std::shared_ptr<const ir::Program>* find(std::string_view schedule,
                                                 const ScheduleInput& key) const;

  std::size_t capacity_bytes_;
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  ///< oldest first
  std::size_t bytes_ = 0;
  std::size_t hits_ = 0;
  std::size_t misses_ = 0;
};

}  // namespace tawpipe::schedules
