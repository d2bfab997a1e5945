/// \file
/// VerifiedPrograms: the programs that passed ir::verify(), so that a program simulated again
/// is not verified again.
///
/// Used by the simulator (sim/simulator.h, SimOptions::verified) in sweeps, whose points share
/// programs: schedules::ProgramCache hands out one immutable program object (a
/// `shared_ptr<const Program>`) to every point with equal generator inputs, and every fold
/// probe of those points. The identity is that object, never a configuration name: an entry
/// holds a weak reference, and a program counts as verified only while the very object that
/// was verified is alive. A const object cannot change, and no other live object can have its
/// address, so the answer is exact; once the object is freed (the cache evicts it) its entry is
/// void, and a new program at the same address is verified again. This costs O(1) per lookup,
/// where a content hash would read the whole program (measured on 1F1B's fold probes on 3x8-a100:
/// 40 M instructions, 6 % of the run).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/ir/program.h"

namespace tawpipe::ir {

/// Programs that passed ir::verify(), by object identity. Thread-safe.
class VerifiedPrograms {
 public:
  /// Whether this very object passed verification (and is alive: `program` holds it).
  bool contains(const std::shared_ptr<const Program>& program) const;
  /// Records that `program` passed verification.
  void insert(const std::shared_ptr<const Program>& program);

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const Program*, std::weak_ptr<const Program>> programs_;
  std::size_t live_bound_ = 64;  ///< entries after the last purge of expired ones (at least 64)
};

}  // namespace tawpipe::ir
