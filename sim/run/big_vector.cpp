// Large buffers of BigVector (big_vector.h): own mappings, 2 MiB aligned and advised for huge
// pages, and a small cache of freed ones by rounded size.
#include "sim/run/big_vector.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

// Under AddressSanitizer the buffers come from the checked heap and are freed at once, uncached:
// mmap'd or cached memory is not tracked, so reads past a table's end or after its free would
// go unnoticed.
#if defined(__SANITIZE_ADDRESS__)
#define TAWPIPE_BIG_FROM_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAWPIPE_BIG_FROM_HEAP 1
#endif
#endif

namespace tawpipe::sim {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
/// Freed buffers kept at most (a simulation holds about ten large tables at once).
constexpr std::size_t kCachedBlocks = 32;

std::size_t rounded(std::size_t bytes) {
  return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

/// Freed buffers by rounded size, most recently freed last. Simulations free their tables in
/// a fixed order and the next one asks for the same sizes, so a short list searched linearly
/// is enough; sweeps in parallel threads share it under the lock.
struct Cache {
  std::mutex lock;
  std::vector<std::pair<void*, std::size_t>> blocks;
  std::size_t bytes = 0;
};

Cache& cache() {
  static Cache* c = [] {
    auto* made = new Cache;  // never destroyed: buffers may be freed during static teardown
    made->blocks.reserve(kCachedBlocks);
    return made;
  }();
  return *c;
}

#if defined(__linux__) && !defined(TAWPIPE_BIG_FROM_HEAP)
void* map_block(std::size_t size) {
  // Over-map by a huge page and trim both ends so that the block starts on a 2 MiB boundary.
  const std::size_t span = size + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t tail = aligned + size;
  if (start + span > tail) munmap(reinterpret_cast<void*>(tail), start + span - tail);
  void* p = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
  madvise(p, size, MADV_HUGEPAGE);  // advisory: failure only costs speed
#endif
  return p;
}
void unmap_block(void* p, std::size_t size) {
  munmap(p, size);
}
#else
void* map_block(std::size_t size) {
  void* p = std::aligned_alloc(kHugePage, size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void unmap_block(void* p, std::size_t) {
  std::free(p);
}
#endif

}  // namespace

void* big_allocate(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
#if defined(TAWPIPE_BIG_FROM_HEAP)
  return map_block(size);
#endif
  Cache& c = cache();
  {
    const std::lock_guard<std::mutex> hold(c.lock);
    for (std::size_t i = c.blocks.size(); i > 0; --i) {
      if (c.blocks[i - 1].second != size) continue;
      void* p = c.blocks[i - 1].first;
      c.blocks.erase(c.blocks.begin() + static_cast<std::ptrdiff_t>(i - 1));
      c.bytes -= size;
      return p;
    }
  }
  return map_block(size);
}

void big_deallocate(void* p, std::size_t bytes) noexcept {
  const std::size_t size = rounded(bytes);
#if defined(TAWPIPE_BIG_FROM_HEAP)
  unmap_block(p, size);
  return;
#endif
  Cache& c = cache();
  const std::lock_guard<std::mutex> hold(c.lock);
  // Kept unless too large or the list is full (it never grows here: no allocation, noexcept).
  if (size > kBigCacheBytes || c.blocks.size() == c.blocks.capacity()) {
    unmap_block(p, size);
    return;
  }
  c.blocks.emplace_back(p, size);
  c.bytes += size;
  // Past the limit: the oldest go back to the system.
  std::size_t drop = 0;
  while (c.bytes > kBigCacheBytes) {
    unmap_block(c.blocks[drop].first, c.blocks[drop].second);
    c.bytes -= c.blocks[drop].second;
    ++drop;
  }
  c.blocks.erase(c.blocks.begin(), c.blocks.begin() + static_cast<std::ptrdiff_t>(drop));
}

}  // namespace tawpipe::sim
