// Buffers at a fixed alignment (common/aligned.h): whatever the heap held before, every array
// starts on a page, so a buffer's offset in a cache line and a page is the same in every program
// of a launch (docs/validate-host.md, session 29).
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "common/aligned.h"

namespace tawpipe {
namespace {

std::uintptr_t offset(const float* p) {
  return reinterpret_cast<std::uintptr_t>(p) % kBufferAlignment;
}

TEST(Aligned, ArraysStartOnAPageWhateverWasAllocatedBefore) {
  EXPECT_EQ(kBufferAlignment, 4096u);
  // Odd-sized allocations first move the heap's next free offset, as a program's labels,
  // options and tables do before its buffers.
  std::vector<std::unique_ptr<char[]>> clutter;
  for (std::size_t n : {1u, 23u, 100u, 4097u, 70000u, 300001u})
    clutter.push_back(std::make_unique<char[]>(n));
  for (std::size_t n : {1u, 17u, 1000u, 65536u, 3213312u, 12853248u / 4}) {
    const AlignedFloats a = make_aligned_floats(n);
    ASSERT_NE(a.get(), nullptr);
    EXPECT_EQ(offset(a.get()), 0u) << n;
    a[n - 1] = 1.0f;  // the whole array is usable
    AlignedVector v(n, 0.5f);
    EXPECT_EQ(offset(v.data()), 0u) << n;
    v.resize(2 * n + 3);  // reallocation keeps the alignment
    EXPECT_EQ(offset(v.data()), 0u) << n;
    EXPECT_EQ(v[0], 0.5f);
  }
  const AlignedFloats none = make_aligned_floats(0);  // an empty array is still an allocation
  EXPECT_NE(none.get(), nullptr);
}

}  // namespace
}  // namespace tawpipe
