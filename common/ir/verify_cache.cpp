// The set of verified programs (verify_cache.h).
#include "common/ir/verify_cache.h"

#include <algorithm>

namespace tawpipe::ir {

bool VerifiedPrograms::contains(const std::shared_ptr<const Program>& program) const {
  if (!program) return false;
  std::lock_guard lock(mutex_);
  const auto it = programs_.find(program.get());
  // Not expired: the verified object is alive, and `program` (alive too) has its address, so
  // it is that object.
  return it != programs_.end() && !it->second.expired();
}

void VerifiedPrograms::insert(const std::shared_ptr<const Program>& program) {
  if (!program) return;
  std::lock_guard lock(mutex_);
  // Entries of freed programs are dropped now and then, so that a long sweep keeps the map
  // as small as the set of live programs.
  if (programs_.size() >= 2 * live_bound_) {
    std::erase_if(programs_, [](const auto& e) { return e.second.expired(); });
    live_bound_ = std::max<std::size_t>(64, programs_.size());
  }
  programs_[program.get()] = program;
}

}  // namespace tawpipe::ir
