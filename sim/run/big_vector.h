/// \file
/// `BigVector<T>`: a std::vector whose large buffers ask the kernel for transparent huge pages.
///
/// Why: the executor keeps a few flat arrays per op (hundreds of MB at 1024 ranks). With 4 KiB
/// pages every first touch is a page fault; on virtual machines a fault costs microseconds, and
/// profiles of one paper-size iteration showed more time in faults than in the event loop. Linux
/// backs 2 MiB-aligned regions advised with MADV_HUGEPAGE by huge pages (when THP is in `madvise`
/// or `always` mode), cutting the faults 512-fold. Elsewhere, or for small buffers, this is the
/// plain allocator.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tawpipe::sim {

/// Allocator that aligns buffers of >= 4 MiB to 2 MiB and advises huge pages.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kThreshold = std::size_t{4} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding, implicit by design

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kThreshold) return static_cast<T*>(::operator new(bytes));
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);  // advisory: failure only costs speed
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < kThreshold) {
      ::operator delete(p);
    } else {
      std::free(p);
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
