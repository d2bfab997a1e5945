/// \file
/// Float arrays at a fixed alignment, for every buffer the host backend and its calibration
/// compute on or transfer (exec/host, exec/math's workspaces).
///
/// Why: plain new[] and std::vector hand out 16-byte aligned memory, and past glibc's dynamic
/// mmap threshold large arrays come from the heap at whatever offset its history leaves, so a
/// buffer's offset in a cache line and in a page depended on what had been allocated before it:
/// in one tawexec launch the programs' weight buffers started 0, 16, 32 or 48 bytes into a line
/// and at different page offsets, program by program. Measured (session 29, localhost-cpu, four
/// identical TawPipe programs in one launch, 60 interleaved steps; docs/validate-host.md): their
/// compute threads' CPU time per step differed by up to 0.9 % (642.5-648.2 ms on rank 0) with
/// 16-byte arrays, 0.6 % with 64-byte ones, and 0.2-0.4 % with page-aligned ones, the size of
/// the gaps between methods that scripts/validate-host compares. Page alignment puts every
/// buffer at the same offset in its pages in every program (and in the calibration), so no
/// program gains or loses by where the allocator happened to place it; 64 bytes (a cache line,
/// PyTorch's CPU allocator) still left the page offsets to the heap's history.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace tawpipe {

/// Alignment of every buffer (bytes): a page (hence also a cache line).
inline constexpr std::size_t kBufferAlignment = 4096;

struct AlignedDelete {
  void operator()(float* p) const noexcept {
    ::operator delete[](p, std::align_val_t{kBufferAlignment});
  }
};

/// An owned array of floats at kBufferAlignment.
using AlignedFloats = std::unique_ptr<float[], AlignedDelete>;

/// `n` uninitialised floats at kBufferAlignment (as std::make_unique_for_overwrite).
inline AlignedFloats make_aligned_floats(std::size_t n) {
  void* p = ::operator new[](std::max<std::size_t>(n, 1) * sizeof(float),
                             std::align_val_t{kBufferAlignment});
  return AlignedFloats(static_cast<float*>(p));
}

/// std::allocator at kBufferAlignment, for the calibration's vectors.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  explicit AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kBufferAlignment}));
  }
  void deallocate(T* p, std::size_t) noexcept {
    ::operator delete (p, std::align_val_t{kBufferAlignment});
  }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept {
    return true;
  }
};

/// A vector of floats at kBufferAlignment.
using AlignedVector = std::vector<float, AlignedAllocator<float>>;

}  // namespace tawpipe
