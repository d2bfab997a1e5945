#include "common/host_wait.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tawpipe::host_wait {
namespace {

// By hand, without overshoot: sleeps of 4, 8, 16, 32, 64 us end at 124 us; then 100 us each
// (the short-wait cap; 1/8 of the wait is below it) ending at 224, 324, ..., 824 us (7 more);
// then 1/8 of the wait: 824/8 = 103 us -> 927 us, 927/8 = 115 us -> 1042 us >= 1 ms: 14.
TEST(HostWait, WakeupsOfAOneMillisecondWait) {
  EXPECT_EQ(wakeups(1'000'000, 0), 14.0);
  EXPECT_EQ(wakeups(0, 0), 0.0);
  EXPECT_EQ(wakeups(1, 0), 1.0);  // the first sleep
}

// With a 100 us overshoot the first sleeps end at 104, 212, 328, 460, 624 us; the sixth sleep
// is min(128, max(624/8, 100)) = 100 -> 824 us, then 103 + 100 -> 1027 us >= 1 ms: 7 wake-ups.
TEST(HostWait, OvershootMeansFewerWakeups) {
  EXPECT_EQ(wakeups(1'000'000, 100'000), 7.0);
}

// A long wait sleeps the longest sleep, 2 ms, once the wait is 16 ms old: a 1 s wait adds about
// 490 wake-ups of 2 ms past that (530 in all), far fewer than a 100 us poll (10,000).
TEST(HostWait, LongWaitsSleepTwoMilliseconds) {
  EXPECT_EQ(next_sleep_ns(2'000'000, 100'000'000), 2'000'000);
  EXPECT_EQ(next_sleep_ns(4'000, 0), 8'000);
  EXPECT_EQ(next_sleep_ns(64'000, 0), 100'000);
  const double n = wakeups(1'000'000'000, 0);
  EXPECT_GT(n, 490.0);
  EXPECT_LT(n, 560.0);
}

// The sleeps of the 1 ms wait above, in order: 4, 8, 16, 32, 64 us, seven of 100 us, 103 and
// 115 us (integer nanoseconds: 824'000 / 8 = 103'000, 927'000 / 8 = 115'875).
TEST(HostWait, SleepsOfAOneMillisecondWait) {
  std::vector<std::int64_t> sleeps;
  for_each_sleep(1'000'000, 0, [&](std::int64_t sleep_ns, double count) {
    for (int i = 0; i < static_cast<int>(count); ++i)
      sleeps.push_back(sleep_ns);
  });
  const std::vector<std::int64_t> want = {4'000,   8'000,   16'000,  32'000,  64'000,
                                          100'000, 100'000, 100'000, 100'000, 100'000,
                                          100'000, 100'000, 103'000, 115'875};
  EXPECT_EQ(sleeps, want);
}

}  // namespace
}  // namespace tawpipe::host_wait
