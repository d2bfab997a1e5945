/// \file
/// `BigVector<T>`: a std::vector whose large buffers ask the kernel for transparent huge pages
/// and are reused by the next simulation in the process.
///
/// Why huge pages: the executor keeps a few flat arrays per op (hundreds of MB at 1024 ranks).
/// With 4 KiB pages every first touch is a page fault; on virtual machines a fault costs
/// microseconds, and profiles of one paper-size iteration showed more time in faults than in the
/// event loop. Linux backs 2 MiB-aligned regions advised with MADV_HUGEPAGE by huge pages (when
/// THP is in `madvise` or `always` mode), cutting the faults 512-fold.
///
/// Why reuse: a process often simulates many programs in a row (folding's probes, sweeps, plan,
/// tests/bench). Large buffers taken from the malloc heap at 2 MiB alignment left holes of other
/// sizes behind, so each simulation placed its tables a little further on: measured on the
/// 24-GPU WeiPipe run repeated in one process, the resident set grew from 104 to 165 MiB and
/// every repetition faulted and zeroed fresh huge pages (clear_page_erms ~10 ms of ~190 ms). The
/// large buffers now come from their own mappings, and a freed one is kept (up to
/// `kBigCacheBytes` in all) for the next request of the same size, whose pages are then warm.
/// Elsewhere, or for small buffers, this is the plain allocator.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace tawpipe::sim {

/// Smallest buffer served by big_allocate (smaller ones use operator new).
inline constexpr std::size_t kBigThreshold = std::size_t{4} << 20;
/// Freed big buffers kept for reuse, in bytes at most (larger ones are unmapped at once).
inline constexpr std::size_t kBigCacheBytes = std::size_t{256} << 20;

/// A 2 MiB-aligned buffer of at least `bytes` (>= kBigThreshold) advised for huge pages: a
/// cached one of the same rounded size when there is one. Throws std::bad_alloc.
void* big_allocate(std::size_t bytes);
/// Returns a buffer of big_allocate(`bytes`) to the cache (or to the system past its limit).
void big_deallocate(void* p, std::size_t bytes) noexcept;

/// Allocator of BigVector: big_allocate for buffers of >= kBigThreshold bytes.
template <class T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding, implicit by design

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kBigThreshold) return static_cast<T*>(::operator new(bytes));
    return static_cast<T*>(big_allocate(bytes));
  }
  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kBigThreshold) {
      ::operator delete(p);
    } else {
      big_deallocate(p, bytes);
    }
  }
  template <class U>
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator<U>&) {
    return true;
  }
};

/// A vector for large per-op tables.
template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace tawpipe::sim
