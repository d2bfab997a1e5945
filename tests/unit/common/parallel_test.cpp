// parallel_for visits every index exactly once, each worker a contiguous block, for any thread
// count (more threads than indices included).
#include "common/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace tawpipe {
namespace {

TEST(ParallelFor, EveryIndexOnceInContiguousBlocks) {
  for (const int threads : {1, 2, 3, 7, 64}) {
    for (const std::int64_t n : {0, 1, 5, 100}) {
      std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
      std::vector<int> worker(static_cast<std::size_t>(n), -1);
      parallel_for(10, 10 + n, threads, [&](std::int64_t i, int w) {
        seen[static_cast<std::size_t>(i - 10)].fetch_add(1);
        worker[static_cast<std::size_t>(i - 10)] = w;
      });
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(seen[static_cast<std::size_t>(i)].load(), 1) << "i=" << i;
        if (i > 0) {  // workers take blocks in order
          EXPECT_GE(worker[static_cast<std::size_t>(i)], worker[static_cast<std::size_t>(i - 1)]);
        }
        EXPECT_LT(worker[static_cast<std::size_t>(i)], threads);
      }
    }
  }
}

TEST(ParallelFor, ResolveThreads) {
  EXPECT_EQ(resolve_threads(3), 3);
  EXPECT_GE(resolve_threads(0), 1);
}

}  // namespace
}  // namespace tawpipe
