// CPU accounting of the host backend (exec/host/cpu_account.h): a named thread's CPU time and
// context switches show up under its name, and the difference of two snapshots keeps only what
// happened between them.
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "exec/host/cpu_account.h"

namespace tawpipe::exec::host {
namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

TEST(CpuAccount, ChargesANamedThreadItsCpuTimeAndSleeps) {
  const CpuSnapshot before = take_cpu_snapshot();
  EXPECT_GT(before.all.total(), 0u);  // /proc/stat read
  std::thread worker([] {
    prctl(PR_SET_NAME, "acct_worker", 0UL, 0UL, 0UL);
    const double t0 = thread_cpu_ms();
    volatile double x = 0.0;
    while (thread_cpu_ms() - t0 < 30.0)  // 30 ms of CPU, however long that takes
      x = x + 1.0;
    for (int i = 0; i < 5; ++i)  // five voluntary switches at least
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const CpuSnapshot inside = take_cpu_snapshot();
    const auto it = inside.threads.find("acct_worker");
    ASSERT_NE(it, inside.threads.end());
    EXPECT_GE(it->second.cpu_ns, 29'000'000u);
    EXPECT_GE(it->second.voluntary, 5u);
  });
  worker.join();
  // The main thread's class is in both snapshots; what it did before `before` is not counted.
  const CpuSnapshot after = take_cpu_snapshot();
  const CpuSnapshot diff = cpu_difference(before, after);
  const std::string self = [] {
    char name[16] = {};
    prctl(PR_GET_NAME, name, 0UL, 0UL, 0UL);
    return std::string(name);
  }();
  ASSERT_TRUE(diff.threads.count(self));
  EXPECT_GT(before.threads.at(self).cpu_ns, 0u);
  EXPECT_EQ(diff.threads.at(self).cpu_ns,
            after.threads.at(self).cpu_ns - before.threads.at(self).cpu_ns);
  EXPECT_GE(after.all.total(), before.all.total());
  EXPECT_EQ(after.cpus.size(), static_cast<std::size_t>(sysconf(_SC_NPROCESSORS_CONF)));
}

TEST(CpuAccount, DifferencePerClassAndDescription) {
  CpuSnapshot a, b;
  a.threads["compute"] = {1'000'000, 0, 2, 1};
  b.threads["compute"] = {5'000'000, 2'000'000, 6, 3};
  b.threads["ring"] = {4'000'000, 0, 10, 0};  // started after `a`: counted from zero
  a.all = {50, 20, 10, 0};
  b.all = {150, 60, 30, 0};
  a.cpus = {{20, 10, 5, 0}, {30, 10, 5, 0}};
  b.cpus = {{60, 30, 15, 0}, {90, 30, 15, 0}};
  a.doorbell_timeouts = 3;
  b.doorbell_timeouts = 7;
  const CpuSnapshot d = cpu_difference(a, b);
  EXPECT_EQ(d.threads.at("compute").cpu_ns, 4'000'000u);
  EXPECT_EQ(d.threads.at("compute").queue_ns, 2'000'000u);
  EXPECT_EQ(d.threads.at("compute").voluntary, 4u);
  EXPECT_EQ(d.threads.at("compute").involuntary, 2u);
  EXPECT_EQ(d.threads.at("ring").cpu_ns, 4'000'000u);
  EXPECT_EQ(describe_threads(d, 2.0),
            "doorbell timeouts 2, compute 2.0 cpu 1.0 queue 2/1 cs, ring 2.0 cpu 0.0 queue 5/0 cs");
  EXPECT_EQ(d.all.idle, 20u);
  EXPECT_EQ(d.all.total(), 160u);
  ASSERT_EQ(d.cpus.size(), 2u);
  EXPECT_EQ(d.cpus[1].user, 60u);
  EXPECT_EQ(d.cpus[1].system, 20u);
  CpuSnapshot sum;  // two intervals add up
  cpu_accumulate(sum, d);
  cpu_accumulate(sum, d);
  EXPECT_EQ(sum.threads.at("compute").cpu_ns, 8'000'000u);
  EXPECT_EQ(sum.all.total(), 320u);
  ASSERT_EQ(sum.cpus.size(), 2u);
  EXPECT_EQ(sum.cpus[0].user, 80u);
  EXPECT_EQ(sum.doorbell_timeouts, 8u);
}

}  // namespace
}  // namespace tawpipe::exec::host
