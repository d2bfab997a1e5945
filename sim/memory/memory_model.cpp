#include "sim/memory/memory_model.h"

#include <cmath>
#include <utility>

namespace tawpipe::sim {

MemoryModel::MemoryModel(std::vector<std::uint64_t> persistent_bytes,
                         const std::vector<std::uint64_t>& capacity_bytes,
                         const MemoryOptions& options)
    : used_(std::move(persistent_bytes)),
      peak_(used_),
      peak_time_(used_.size()),
      usable_(used_.size(), 0) {
  for (std::size_t r = 0; r < used_.size() && r < capacity_bytes.size(); ++r) {
    const std::uint64_t cap = capacity_bytes[r];
    const auto reserve = options.reserve_fixed_bytes +
                         static_cast<std::uint64_t>(
                             std::llround(static_cast<double>(cap) * options.reserve_fraction));
    usable_[r] = cap > reserve ? cap - reserve : 0;
  }
}

}  // namespace tawpipe::sim
