// Processor sharing of CPU cores (sim/run/core_sharing.h) and the shared-memory transport curves
// (sim/network/mpi_shm.h). Each case states the expected times, derived by hand.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/network/mpi_shm.h"
#include "sim/run/core_sharing.h"

namespace tawpipe::sim {
namespace {

SimTime ms(double v) {
  return SimTime::ps(static_cast<std::int64_t>(v * 1e9));
}

struct Harness {
  Engine engine;
  std::map<std::uint64_t, SimTime> done;
  CoreSharing cores{engine, 2, [this](std::uint64_t t) { done[t] = engine.now(); }};
};

TEST(CoreSharing, AloneKeepsItsWork) {
  Harness h;
  const int c0 = 0;
  h.cores.start(std::span<const int>(&c0, 1), SimTime(), ms(3), 1);
  h.engine.run();
  EXPECT_EQ(h.done[1], ms(3));
}

TEST(CoreSharing, TwoJobsOnOneCoreTakeTwiceTheirWork) {
  // Both run at 1/2 of core 0: each finishes at 2 x 1 ms. A job on core 1 is unaffected.
  Harness h;
  const int c0 = 0, c1 = 1;
  h.cores.start(std::span<const int>(&c0, 1), SimTime(), ms(1), 1);
  h.cores.start(std::span<const int>(&c0, 1), SimTime(), ms(1), 2);
  h.cores.start(std::span<const int>(&c1, 1), SimTime(), ms(1), 3);
  h.engine.run();
  EXPECT_EQ(h.done[1], ms(2));
  EXPECT_EQ(h.done[2], ms(2));
  EXPECT_EQ(h.done[3], ms(1));
}

TEST(CoreSharing, LateArrivalAfterDelay) {
  // Job 1 (1 ms) alone until 0.5 ms, when job 2 (1 ms of work, after a 0.5 ms delay) joins:
  // job 1 has 0.5 ms left at rate 1/2 -> ends at 1.5 ms; job 2 did 0.5 ms by then, finishes the
  // other 0.5 ms alone -> 2.0 ms.
  Harness h;
  const int c0 = 0;
  h.cores.start(std::span<const int>(&c0, 1), SimTime(), ms(1), 1);
  h.cores.start(std::span<const int>(&c0, 1), ms(0.5), ms(1), 2);
  h.engine.run();
  EXPECT_EQ(h.done[1], ms(1.5));
  EXPECT_EQ(h.done[2], ms(2));
}

TEST(CoreSharing, TwoCoreJobTakesItsSmallestShare) {
  // A copy on cores {0, 1} (2 ms) beside a compute job on core 0 (1 ms): both at 1/2 until the
  // compute ends at 2 ms (1 ms done each); the copy's last 1 ms runs alone -> 3 ms.
  Harness h;
  const int c0 = 0;
  const std::vector<int> both = {0, 1};
  h.cores.start(both, SimTime(), ms(2), 1);
  h.cores.start(std::span<const int>(&c0, 1), SimTime(), ms(1), 2);
  h.engine.run();
  EXPECT_EQ(h.done[2], ms(2));
  EXPECT_EQ(h.done[1], ms(3));
}

TEST(CoreSharing, BusyTimeCountsJobsButNotTheBackground) {
  // Core 0: a job from 1 to 3 ms (delay 1 ms, work 2 ms), then only background work (3 to 4 ms).
  // At 5 ms: busy 2 ms since 0, 1 ms since 2 ms, none since 3 ms.
  Harness h;
  const int c0 = 0;
  h.cores.start(std::span<const int>(&c0, 1), ms(1), ms(2), 1);
  std::map<double, SimTime> seen;
  h.engine.schedule_after(
      ms(3), Event{h.engine.add_handler([&](const Event&) { h.cores.add_background(0, ms(1), 9); }),
                   0, 0});
  h.engine.schedule_after(ms(5), Event{h.engine.add_handler([&](const Event&) {
                                         for (double from : {0.0, 2.0, 3.0})
                                           seen[from] = h.cores.busy_between(0, ms(from));
                                       }),
                                       0, 0});
  h.engine.run();
  EXPECT_EQ(seen[0.0], ms(2));
  EXPECT_EQ(seen[2.0], ms(1));
  EXPECT_EQ(seen[3.0], SimTime());
  EXPECT_EQ(h.cores.busy_between(1, SimTime()), SimTime());
}

TEST(CoreSharing, ContendedTimeCountsComputeWorkOfTwoProcesses) {
  // Core 0, slice zero (sliced jobs share like start): A (2 ms) and B (1 ms) of process 1 from
  // 0; C (1 ms) of process 2 from 1 ms. 0-1 ms A and B at 1/2 (0.5 ms done each); then all three
  // at 1/3: B's last 0.5 ms ends at 2.5 ms (A 1.0 left, C 0.5); then 1/2 each: C ends at 3.5 ms;
  // A alone ends at 4 ms. Two processes have work from 1 to 3.5 ms: 2.5 ms contended. With
  // owners as their own processes (no set_process_of) A and B contend from 0 to 3.5 ms.
  for (const bool grouped : {true, false}) {
    Harness h;
    if (grouped) h.cores.set_process_of([](std::uint64_t owner) { return owner >> 20; });
    const std::uint64_t a = (1u << 20) | 1, b = (1u << 20) | 2, c = (2u << 20) | 1;
    h.cores.start_sliced(0, ms(2), a, 1);
    h.cores.start_sliced(0, ms(1), b, 2);
    h.engine.schedule_after(
        ms(1),
        Event{h.engine.add_handler([&](const Event&) { h.cores.start_sliced(0, ms(1), c, 3); }), 0,
              0});
    // A shared job (owner 0: a copy) on core 1 beside one sliced job: no contention there.
    const int c1 = 1;
    h.cores.start(std::span<const int>(&c1, 1), SimTime(), ms(1), 4);
    h.cores.start_sliced(1, ms(1), c, 5);
    std::map<double, SimTime> seen;
    h.engine.schedule_after(ms(5), Event{h.engine.add_handler([&](const Event&) {
                                           for (double from : {0.0, 2.0, 3.0})
                                             seen[from] = h.cores.contended_between(0, ms(from));
                                           seen[-1.0] = h.cores.contended_between(1, SimTime());
                                         }),
                                         0, 0});
    h.engine.run();
    EXPECT_EQ(h.done[2], ms(2.5));
    EXPECT_EQ(h.done[3], ms(3.5));
    EXPECT_EQ(h.done[1], ms(4));
    EXPECT_EQ(seen[0.0], grouped ? ms(2.5) : ms(3.5)) << grouped;
    EXPECT_EQ(seen[2.0], ms(1.5)) << grouped;
    EXPECT_EQ(seen[3.0], ms(0.5)) << grouped;
    EXPECT_EQ(seen[-1.0], SimTime()) << grouped;
  }
}

TEST(MpiShm, CurveInterpolatesLinearlyInSizeAndExtrapolatesAtTheLastSlope) {
  ShmCurve c;
  c.op = ShmOp::sendrecv;
  c.points = {{8.0, ms(0.01)}, {1024.0, ms(0.02)}, {1048576.0, ms(1.0)}};
  EXPECT_EQ(curve_time(c, 4.0), ms(0.01));  // below the first point: its time
  // 32 bytes: 24/1016 of the way from 8 to 1024 -> 0.01 + 24/1016 * 0.01 ms.
  EXPECT_NEAR(curve_time(c, 32.0).seconds(), (0.01 + 24.0 / 1016.0 * 0.01) * 1e-3, 1e-12);
  // A copy of latency 0.05 ms at 8 GB/s measured at 4 and 16 MiB: exact at 12.9 MB between them
  // (1.66 ms; log-linear interpolation said 1.85 ms, 11 % over).
  auto copy_ms = [](double b) { return 0.05 + b / 8e9 * 1e3; };
  ShmCurve line;
  line.points = {{4194304.0, ms(copy_ms(4194304.0))}, {16777216.0, ms(copy_ms(16777216.0))}};
  EXPECT_NEAR(curve_time(line, 12853248.0).seconds(), copy_ms(12853248.0) * 1e-3, 1e-11);
  // 2 MiB: past the last point at (1 - 0.02) ms per (1 MiB - 1 KiB).
  const double slope = (1.0 - 0.02) * 1e-3 / (1048576.0 - 1024.0);
  EXPECT_NEAR(curve_time(c, 2097152.0).seconds(), 1e-3 + slope * 1048576.0, 1e-12);
}

TEST(MpiShm, EnvelopeLowersNoisyPointsToTheNextLargerTime) {
  // The /tmp/vh1 calibration's shape: 8 B at 150 us above 4 KiB at 7 us; 4 MiB at 6.8 ms under
  // 16 MiB at 7.6 ms stays (already increasing).
  ShmCurve c;
  c.points = {{8.0, ms(0.150)}, {4096.0, ms(0.007)}, {4194304.0, ms(6.8)}, {16777216.0, ms(7.6)}};
  monotone_envelope(c);
  EXPECT_EQ(c.points[0].second, ms(0.007));
  EXPECT_EQ(c.points[1].second, ms(0.007));
  EXPECT_EQ(c.points[2].second, ms(6.8));
  EXPECT_EQ(c.points[3].second, ms(7.6));
  ShmCurve dip;
  dip.points = {{8.0, ms(0.01)}, {1024.0, ms(0.5)}, {4096.0, ms(0.2)}, {65536.0, ms(1.0)}};
  monotone_envelope(dip);
  EXPECT_EQ(dip.points[1].second, ms(0.2));  // lowered to 4 KiB's time, never raised
  EXPECT_EQ(dip.points[0].second, ms(0.01));
}

TEST(MpiShm, CostSplitsLatencyAndCopyWork) {
  ShmCurve c;
  c.op = ShmOp::sendrecv;
  c.points = {{8.0, ms(0.01)}, {1048576.0, ms(0.5)}};
  const MpiShmModel m({c}, SimTime(), 1e9);
  const ShmCost cost = m.p2p(1048576.0);
  EXPECT_EQ(cost.latency, ms(0.01));
  EXPECT_EQ(cost.work, ms(0.49));
  // No all-gather curve: ring fallback, 3 steps of b/4 at 1 GB/s on 4 ranks, 3 latencies of 0.
  const ShmCost ag = m.collective(ir::CollectiveKind::all_gather, 4e6, 4);
  EXPECT_EQ(ag.work, ms(3.0));
}

TEST(MpiShm, CpuTimesAreTheWorkAndTheRestIsLatency) {
  // A message of 1 MiB takes 0.5 ms, 0.3 ms of it on a core: work 0.3 ms, latency 0.2 ms.
  ShmCurve p;
  p.op = ShmOp::sendrecv;
  p.points = {{8.0, ms(0.01)}, {1048576.0, ms(0.5)}};
  p.cpu = {{8.0, ms(0.004)}, {1048576.0, ms(0.3)}};
  // An all-gather on 4 ranks measured on 2 cores (2 members per core): 1 ms, 0.4 ms of CPU
  // time per member, so 0.8 ms of turns on each core and 0.2 ms of latency.
  ShmCurve ag;
  ag.op = ShmOp::all_gather;
  ag.ranks = 4;
  ag.points = {{4096.0, ms(0.1)}, {1048576.0, ms(1.0)}};
  ag.cpu = {{4096.0, ms(0.03)}, {1048576.0, ms(0.4)}};
  const MpiShmModel m({p, ag}, SimTime(), 1e9, 2);
  const ShmCost msg = m.p2p(1048576.0);
  EXPECT_EQ(msg.work, ms(0.3));
  EXPECT_EQ(msg.latency, ms(0.2));
  EXPECT_TRUE(msg.per_member);
  const ShmCost all = m.collective(ir::CollectiveKind::all_gather, 1048576.0, 4);
  EXPECT_EQ(all.work, ms(0.4));
  EXPECT_EQ(all.latency, ms(0.2));
  EXPECT_TRUE(all.per_member);
  // A CPU time above the elapsed time (clock granularity) is capped: no negative latency.
  ShmCurve odd = p;
  odd.cpu = {{8.0, ms(0.02)}, {1048576.0, ms(0.6)}};
  EXPECT_EQ(curve_cpu(odd, 1048576.0), ms(0.5));
  EXPECT_EQ(MpiShmModel({odd}, SimTime(), 1e9, 2).p2p(1048576.0).latency, SimTime());
}

TEST(MpiShm, DirectReduceSumsAreTheRootsCpuPastItsCopies) {
  // A message of 1 MiB costs 0.3 ms of CPU; a reduce of 1 MiB on 4 ranks costs its root 1.5 ms:
  // 3 messages' copies (0.9 ms), so 0.6 ms of sums.
  ShmCurve p;
  p.op = ShmOp::sendrecv;
  p.points = {{8.0, ms(0.01)}, {1048576.0, ms(0.5)}};
  p.cpu = {{8.0, ms(0.004)}, {1048576.0, ms(0.3)}};
  ShmCurve red;
  red.op = ShmOp::reduce;
  red.ranks = 4;
  red.points = {{8.0, ms(0.05)}, {1048576.0, ms(1.6)}};
  red.cpu = {{8.0, ms(0.02)}, {1048576.0, ms(1.5)}};
  const MpiShmModel m({p, red}, SimTime(), 1e9, 2);
  ASSERT_TRUE(m.reduce_sum_work(1048576.0, 4).has_value());
  EXPECT_EQ(*m.reduce_sum_work(1048576.0, 4), ms(0.6));
  EXPECT_EQ(*m.reduce_sum_work(8.0, 4), ms(0.008));  // 0.02 - 3 x 0.004 ms
  // Copies costing more than the whole call (3 x 0.3 ms > 0.2 ms): the sums cost nothing,
  // never less.
  ShmCurve tiny = red;
  tiny.cpu = {{8.0, ms(0.001)}, {1048576.0, ms(0.2)}};
  EXPECT_EQ(*MpiShmModel({p, tiny}, SimTime(), 1e9, 2).reduce_sum_work(1048576.0, 4), SimTime());
  // Without CPU times in either curve only the whole call is known.
  ShmCurve red_no_cpu = red;
  red_no_cpu.cpu.clear();
  EXPECT_FALSE(MpiShmModel({p, red_no_cpu}, SimTime(), 1e9, 2).reduce_sum_work(1048576.0, 4));
  ShmCurve p_no_cpu = p;
  p_no_cpu.cpu.clear();
  EXPECT_FALSE(MpiShmModel({p_no_cpu, red}, SimTime(), 1e9, 2).reduce_sum_work(1048576.0, 4));
  EXPECT_FALSE(m.reduce_sum_work(1048576.0, 1));
}

TEST(MpiShm, BroadcastRolesChargeTheRootAndTheMeanMember) {
  // A broadcast of 1 MiB on 2 ranks of one core: 4 ms, the root's thread 1.5 ms of CPU time and
  // the member's 2 ms (its copy), so 0.5 ms on no core.
  ShmCurve one;
  one.op = ShmOp::broadcast;
  one.one_core = true;
  one.points = {{8.0, ms(0.05)}, {1048576.0, ms(4.0)}};
  one.cpu = {{8.0, ms(0.02)}, {1048576.0, ms(2.0)}};
  one.root_cpu = {{8.0, ms(0.01)}, {1048576.0, ms(1.5)}};
  one.member_cpu = {{8.0, ms(0.02)}, {1048576.0, ms(2.0)}};
  // On 4 ranks spread over 2 cores (rank 0, the root, and rank 1 on core 0): 6 ms; root 2 ms,
  // members 1.5 ms each: core 0 has 3.5 ms of work, core 1 3 ms, so 2.5 ms of latency.
  ShmCurve four = one;
  four.one_core = false;
  four.ranks = 4;
  four.points = {{8.0, ms(0.2)}, {1048576.0, ms(6.0)}};
  four.cpu = {{8.0, ms(0.05)}, {1048576.0, ms(2.0)}};
  four.root_cpu = {{8.0, ms(0.05)}, {1048576.0, ms(2.0)}};
  four.member_cpu = {{8.0, ms(0.04)}, {1048576.0, ms(1.5)}};
  const MpiShmModel m({one, four}, SimTime(), 1e9, 2);
  const auto r1 = m.broadcast_roles(1048576.0, 2, true);
  ASSERT_TRUE(r1.has_value());
  EXPECT_EQ(r1->root_work, ms(1.5));
  EXPECT_EQ(r1->member_work, ms(2.0));
  EXPECT_EQ(r1->latency, ms(0.5));
  const auto r4 = m.broadcast_roles(1048576.0, 4);
  ASSERT_TRUE(r4.has_value());
  EXPECT_EQ(r4->root_work, ms(2.0));
  EXPECT_EQ(r4->member_work, ms(1.5));
  EXPECT_EQ(r4->latency, ms(2.5));
  // The busiest member's figure (collective()) is what a curve without roles gives, the root
  // free; a rank count not measured, or a curve without roles, has none.
  EXPECT_EQ(m.collective(ir::CollectiveKind::broadcast, 1048576.0, 4).work, ms(2.0));
  EXPECT_FALSE(m.broadcast_roles(1048576.0, 3));
  EXPECT_FALSE(m.broadcast_roles(1048576.0, 2));  // members on two cores: no 2-rank spread curve
  ShmCurve bare = four;
  bare.root_cpu.clear();
  bare.member_cpu.clear();
  EXPECT_FALSE(MpiShmModel({bare}, SimTime(), 1e9, 2).broadcast_roles(1048576.0, 4));
  // A cold curve at the size: halfway to its figures at a cold share of 0.5.
  ShmCurve cold = four;
  cold.cold_pool = 64.0 * 1048576.0;
  cold.points = {{1048576.0, ms(8.0)}};
  cold.cpu = {{1048576.0, ms(3.0)}};
  cold.root_cpu = {{1048576.0, ms(3.0)}};
  cold.member_cpu = {{1048576.0, ms(2.5)}};
  const auto half =
      MpiShmModel({four, cold}, SimTime(), 1e9, 2).broadcast_roles(1048576.0, 4, false, 0.5);
  ASSERT_TRUE(half.has_value());
  EXPECT_EQ(half->root_work, ms(2.5));
  EXPECT_EQ(half->member_work, ms(2.0));
  EXPECT_EQ(half->latency, ms(2.5));  // cold: 8 - max(3 + 2.5, 5) = 2.5
}

TEST(MpiShm, OneCoreCurvesServeMembersOnOneCore) {
  // A broadcast on 2 ranks measured on two cores (1 ms, 0.4 ms of the receiver's CPU) and on one
  // core (2 ms, 0.5 ms): on one core only the receiver copies, so 2 - 0.5 = 1.5 ms of latency.
  ShmCurve two;
  two.op = ShmOp::broadcast;
  two.points = {{8.0, ms(0.05)}, {1048576.0, ms(1.0)}};
  two.cpu = {{8.0, ms(0.01)}, {1048576.0, ms(0.4)}};
  ShmCurve one = two;
  one.one_core = true;
  one.points = {{8.0, ms(0.1)}, {1048576.0, ms(2.0)}};
  one.cpu = {{8.0, ms(0.01)}, {1048576.0, ms(0.5)}};
  const MpiShmModel m({two, one}, SimTime(), 1e9, 2);
  const ShmCost spread = m.collective(ir::CollectiveKind::broadcast, 1048576.0, 2, false);
  EXPECT_EQ(spread.latency, ms(0.6));
  EXPECT_EQ(spread.work, ms(0.4));
  const ShmCost packed = m.collective(ir::CollectiveKind::broadcast, 1048576.0, 2, true);
  EXPECT_EQ(packed.latency, ms(1.5));
  EXPECT_EQ(packed.work, ms(0.5));
  // A one-core curve serves only its own rank count: 4 ranks on one core scale the two-core one.
  EXPECT_EQ(m.collective(ir::CollectiveKind::broadcast, 1048576.0, 4, true).work,
            m.collective(ir::CollectiveKind::broadcast, 1048576.0, 4, false).work);
  // Without a one-core curve, members on one core get the two-core one.
  const MpiShmModel only_two({two}, SimTime(), 1e9, 2);
  EXPECT_EQ(only_two.collective(ir::CollectiveKind::broadcast, 1048576.0, 2, true).latency,
            ms(0.6));
}

/// A message's hot curve: 1 ms (0.8 ms of CPU) at 1 MiB.
ShmCurve hot_message() {
  ShmCurve hot;
  hot.op = ShmOp::sendrecv;
  hot.points = {{8.0, ms(0.01)}, {1048576.0, ms(1.0)}};
  hot.cpu = {{8.0, ms(0.005)}, {1048576.0, ms(0.8)}};
  return hot;
}

TEST(MpiShm, ColdShareMovesTheCostTowardsTheColdCurve) {
  // A message hot: 1 ms (0.8 ms of CPU) at 1 MiB; cold (buffers rotated over 64 MiB): 2 ms
  // (1.6 ms of CPU), measured from 1 MiB up.
  const ShmCurve hot = hot_message();
  ShmCurve cold = hot;
  cold.cold_pool = 64.0 * 1048576.0;
  cold.points = {{1048576.0, ms(2.0)}, {4194304.0, ms(8.0)}};
  cold.cpu = {{1048576.0, ms(1.6)}, {4194304.0, ms(6.4)}};
  const MpiShmModel m({hot, cold}, SimTime(), 1e9, 2);
  EXPECT_DOUBLE_EQ(m.cold_pool(), 64.0 * 1048576.0);
  EXPECT_EQ(m.p2p(1048576.0, false, 0.0).work, ms(0.8));
  EXPECT_EQ(m.p2p(1048576.0, false, 0.0).latency, ms(0.2));
  EXPECT_EQ(m.p2p(1048576.0, false, 1.0).work, ms(1.6));
  EXPECT_EQ(m.p2p(1048576.0, false, 1.0).latency, ms(0.4));
  EXPECT_EQ(m.p2p(1048576.0, false, 0.5).work, ms(1.2));
  // Below the cold curve's smallest size the hot curve, however cold.
  EXPECT_EQ(m.p2p(8.0, false, 1.0).latency, m.p2p(8.0, false, 0.0).latency);
  // The cold curve never serves as a hot one: without cold share the hot figures.
  EXPECT_EQ(m.p2p(4194304.0, false, 0.0).work, m.p2p(4194304.0).work);
  EXPECT_GT(m.p2p(4194304.0, false, 1.0).work, m.p2p(4194304.0).work);
  // A model without cold curves ignores the share.
  const MpiShmModel hot_only({hot}, SimTime(), 1e9, 2);
  EXPECT_DOUBLE_EQ(hot_only.cold_pool(), 0.0);
  EXPECT_EQ(hot_only.p2p(1048576.0, false, 1.0).work, ms(0.8));
}

TEST(MpiShm, AfterComputeSharesFollowTheCurvesMeasuredAfterCompute) {
  // A message hot: 0.8 ms of CPU at 1 MiB; cold: 1.6 ms; after 4 ms of compute: 2.0 ms, after
  // 16 ms: 3.0 ms (latency 0.2 ms on each).
  const ShmCurve hot = hot_message();
  ShmCurve cold = hot;
  cold.cold_pool = 64.0 * 1048576.0;
  cold.points = {{1048576.0, ms(1.8)}};
  cold.cpu = {{1048576.0, ms(1.6)}};
  ShmCurve short_burst = hot;
  short_burst.after_compute = 0.004;
  short_burst.points = {{1048576.0, ms(2.2)}, {4194304.0, ms(8.8)}};
  short_burst.cpu = {{1048576.0, ms(2.0)}, {4194304.0, ms(8.0)}};
  ShmCurve long_burst = short_burst;
  long_burst.after_compute = 0.016;
  long_burst.points = {{1048576.0, ms(3.2)}, {4194304.0, ms(12.8)}};
  long_burst.cpu = {{1048576.0, ms(3.0)}, {4194304.0, ms(12.0)}};
  const MpiShmModel m({hot, cold, short_burst, long_burst}, SimTime(), 1e9, 2);
  EXPECT_DOUBLE_EQ(m.longest_after_compute(), 0.016);
  const double mib = 1048576.0;
  // Wholly after compute: the curve of its burst; between two bursts linearly in log(seconds)
  // (8 ms: halfway); past the longest that one; below the shortest from the hot figure, linearly
  // in the seconds (1 ms: a quarter of the way to 2.0 ms).
  EXPECT_EQ(m.p2p(mib, false, Warmth(0.0, 1.0, 0.004)).work, ms(2.0));
  EXPECT_EQ(m.p2p(mib, false, Warmth(0.0, 1.0, 0.016)).work, ms(3.0));
  EXPECT_EQ(m.p2p(mib, false, Warmth(0.0, 1.0, 0.008)).work, ms(2.5));
  EXPECT_EQ(m.p2p(mib, false, Warmth(0.0, 1.0, 1.0)).work, ms(3.0));
  EXPECT_EQ(m.p2p(mib, false, Warmth(0.0, 1.0, 0.001)).work, ms(0.8 + 0.25 * 1.2));
  EXPECT_EQ(m.p2p(mib, false, Warmth(0.0, 1.0, 1.0)).latency, ms(0.2));
  // Shares add up: half hot, a quarter cold, a quarter after 4 ms of compute.
  EXPECT_EQ(m.p2p(mib, false, Warmth(0.25, 0.25, 0.004)).work, ms(0.4 + 0.4 + 0.5));
  // The after-compute curves never serve as hot or cold ones.
  EXPECT_EQ(m.p2p(mib).work, ms(0.8));
  EXPECT_EQ(m.p2p(mib, false, 1.0).work, ms(1.6));
  // Below their smallest size, and without them, after-compute buffers count as cold.
  EXPECT_EQ(m.p2p(8.0, false, Warmth(0.0, 1.0, 0.004)).work, m.p2p(8.0).work);
  const MpiShmModel no_after({hot, cold}, SimTime(), 1e9, 2);
  EXPECT_DOUBLE_EQ(no_after.longest_after_compute(), 0.0);
  EXPECT_EQ(no_after.p2p(mib, false, Warmth(0.0, 1.0, 0.004)).work, ms(1.6));
  EXPECT_EQ(no_after.p2p(mib, false, Warmth(0.5, 0.5, 0.004)).work, ms(1.6));
}

TEST(MpiShm, BroadcastRolesAfterCompute) {
  ShmCurve hot;
  hot.op = ShmOp::broadcast;
  hot.ranks = 2;
  hot.points = {{8.0, ms(0.01)}, {1048576.0, ms(4.0)}};
  hot.cpu = {{8.0, ms(0.005)}, {1048576.0, ms(2.0)}};
  hot.root_cpu = {{8.0, ms(0.005)}, {1048576.0, ms(1.0)}};
  hot.member_cpu = {{8.0, ms(0.005)}, {1048576.0, ms(2.0)}};
  ShmCurve after = hot;
  after.after_compute = 0.004;
  after.points = {{1048576.0, ms(6.0)}};
  after.cpu = {{1048576.0, ms(3.0)}};
  after.root_cpu = {{1048576.0, ms(1.5)}};
  after.member_cpu = {{1048576.0, ms(3.0)}};
  const MpiShmModel m({hot, after}, SimTime(), 1e9, 2);
  const auto h = m.broadcast_roles(1048576.0, 2);
  const auto a = m.broadcast_roles(1048576.0, 2, false, Warmth(0.0, 1.0, 0.004));
  ASSERT_TRUE(h && a);
  EXPECT_EQ(h->member_work, ms(2.0));
  EXPECT_EQ(a->member_work, ms(3.0));
  EXPECT_EQ(a->root_work, ms(1.5));
  EXPECT_EQ(a->latency, ms(3.0));  // 6 - max(1.5 + 0, 3) on two cores, one member each
  const auto half = m.broadcast_roles(1048576.0, 2, false, Warmth(0.0, 0.5, 0.004));
  ASSERT_TRUE(half);
  EXPECT_EQ(half->member_work, ms(2.5));
}

TEST(MpiShm, ColdFractionIsTheReuseDistanceOverThePool) {
  EXPECT_DOUBLE_EQ(cold_fraction(0.0, 64.0), 0.0);
  EXPECT_DOUBLE_EQ(cold_fraction(16.0, 64.0), 0.25);
  EXPECT_DOUBLE_EQ(cold_fraction(640.0, 64.0), 1.0);
  EXPECT_DOUBLE_EQ(cold_fraction(-1.0, 64.0), 1.0);  // never used
  EXPECT_DOUBLE_EQ(cold_fraction(640.0, 0.0), 0.0);  // no cold curves
}

// Time slices (start_sliced, slice 20 ms): compute threads share a core by EEVDF.
struct SlicedHarness {
  Engine engine;
  std::map<std::uint64_t, SimTime> done, first_run;
  /// Token -> the op its thread starts when it completes (token, work, owner, short_wake).
  std::map<std::uint64_t, std::tuple<std::uint64_t, SimTime, std::uint64_t, bool>> then;
  CoreSharing cores{engine, 1,
                    [this](std::uint64_t t) {
                      done[t] = engine.now();
                      if (auto it = then.find(t); it != then.end()) {
                        const auto [token, work, owner, short_wake] = it->second;
                        cores.start_sliced(0, work, owner, token, short_wake);
                      }
                    },
                    ms(20)};
  SlicedHarness() {
    cores.set_on_first_run([this](std::uint64_t t) { first_run[t] = engine.now(); });
  }
};

TEST(CoreSharing, SlicedThreadsTakeTurns) {
  // Thread 1's op (30 ms) holds the core for its 20 ms slice while thread 2's (10 ms) waits; the
  // slice ends at 20 ms and thread 2 runs 20..30 (done 30), then thread 1 its last 10 ms: 40.
  SlicedHarness h;
  h.cores.start_sliced(0, ms(30), 1, 1);
  h.cores.start_sliced(0, ms(10), 2, 2);
  h.engine.run();
  EXPECT_EQ(h.first_run[1], ms(0));
  EXPECT_EQ(h.first_run[2], ms(20));  // starts when its thread runs it
  EXPECT_EQ(h.done[2], ms(30));
  EXPECT_EQ(h.done[1], ms(40));
}

TEST(CoreSharing, AnOpBoundaryPassesTheCoreToAnEligibleWaitingThread) {
  // Thread 1 runs op 1 (5 ms) while thread 2's op (5 ms) waits, then op 3 (5 ms) is issued at
  // once. At 5 ms thread 1 has v 5, thread 2 v 0: V = 2.5, thread 1's lag is -2.5 (it sleeps
  // "delayed", keeps its v when op 3 wakes it), thread 2 is eligible: it runs 5..10, thread 1's
  // op 3 10..15. (A thread that kept its slice through op boundaries would end op 3 at 10.)
  SlicedHarness h;
  h.then[1] = {3, ms(5), 1, false};
  h.cores.start_sliced(0, ms(5), 1, 1);
  h.cores.start_sliced(0, ms(5), 2, 2);
  h.engine.run();
  EXPECT_EQ(h.done[1], ms(5));
  EXPECT_EQ(h.first_run[2], ms(5));
  EXPECT_EQ(h.done[2], ms(10));
  EXPECT_EQ(h.done[3], ms(15));
}

TEST(CoreSharing, AThreadOwedTimeKeepsTheCoreAtAnOpBoundary) {
  // Thread 2 (30 ms) runs its 20 ms request (v 20, new deadline 40); thread 1 (v 0, deadline
  // 20) then runs op 1 (10 ms): 20..30, v 10. It sleeps with lag (10 + 20) / 2 - 10 = 5 and op 3
  // (5 ms) wakes it at once: placed at V - 2 x 5 = 20 - 10 = 10 (lag scaled by (n + 1) / n, n =
  // 1), deadline 30; the pick after the boundary finds it eligible (V 15) and thread 2 not (20):
  // op 3 runs 30..35, thread 2 its last 10 ms 35..45. Had the core been picked when thread 1
  // slept, before op 3 woke it, thread 2 would have run 30..40 protected by its request.
  SlicedHarness h;
  h.then[1] = {3, ms(5), 1, false};
  h.cores.start_sliced(0, ms(30), 2, 2);
  h.cores.start_sliced(0, ms(10), 1, 1);
  h.engine.run();
  EXPECT_EQ(h.first_run[1], ms(20));
  EXPECT_EQ(h.done[1], ms(30));
  EXPECT_EQ(h.done[3], ms(35));
  EXPECT_EQ(h.done[2], ms(45));
}

TEST(CoreSharing, AThreadWakingInAShortSlicePreemptsAtOnce) {
  // Thread 1 runs a 30 ms op; at 5 ms thread 2, asleep in a short slice (its last op was
  // communication), wakes with a 2 ms op: it is eligible (placed at V) and preempts (the
  // kernel's PREEMPT_SHORT): 5..7; thread 1 ends at 32. Without short_wake it waits for thread
  // 1's request to end (20 ms) and ends at 22.
  for (const bool short_wake : {true, false}) {
    SlicedHarness h;
    const int c0 = 0;
    h.then[9] = {2, ms(2), 2, short_wake};
    h.cores.start_sliced(0, ms(30), 1, 1);
    h.cores.start(std::span<const int>(&c0, 1), ms(5), SimTime(), 9);  // a timer
    h.engine.run();
    EXPECT_EQ(h.first_run[2], short_wake ? ms(5) : ms(20));
    EXPECT_EQ(h.done[2], short_wake ? ms(7) : ms(22));
    EXPECT_EQ(h.done[1], ms(32));
  }
}

TEST(CoreSharing, AThreadAloneEndsItsRequestsOnTimeWhenAnotherWakes) {
  // Thread 1 runs a 100 ms op alone: its requests end at 20, 40, 60 ms (not events while it is
  // alone, replayed when the core is next touched). At 50 ms a timer wakes thread 2 (2 ms op, a
  // compute slice: no preemption), placed at V = 50, deadline 70. Thread 1's request ends at 60
  // (v 60, deadline 80): V = 55, thread 2 is eligible and earlier: it runs 60..62, thread 1 its
  // last 38 ms 62..100 + 2 = 102. (Requests not replayed: thread 1's request would have ended at
  // 20, and thread 2 would run at 50.)
  SlicedHarness h;
  const int c0 = 0;
  h.then[9] = {2, ms(2), 2, false};
  h.cores.start_sliced(0, ms(100), 1, 1);
  h.cores.start(std::span<const int>(&c0, 1), ms(50), SimTime(), 9);  // a timer
  h.engine.run();
  EXPECT_EQ(h.first_run[2], ms(60));
  EXPECT_EQ(h.done[2], ms(62));
  EXPECT_EQ(h.done[1], ms(102));
}

TEST(CoreSharing, CopiesPreemptTheHolder) {
  // A copy (2 ms, start: a communication thread's work, real-time in the backend) beside thread 1
  // holding the core (10 ms) and thread 2 waiting (10 ms): the copy runs alone 0..2 while thread
  // 1 is stopped (under processor sharing it would have ended at 4), thread 1 then runs 2..12,
  // thread 2 12..22. Two copies at once split the core between them.
  SlicedHarness h;
  const int c0 = 0;
  h.cores.start_sliced(0, ms(10), 1, 1);
  h.cores.start_sliced(0, ms(10), 2, 2);
  h.cores.start(std::span<const int>(&c0, 1), SimTime(), ms(2), 3);
  h.cores.start(std::span<const int>(&c0, 1), ms(23), ms(1), 4);
  h.cores.start(std::span<const int>(&c0, 1), ms(23), ms(1), 5);
  h.engine.run();
  EXPECT_EQ(h.done[3], ms(2));
  EXPECT_EQ(h.done[1], ms(12));
  EXPECT_EQ(h.done[2], ms(22));
  EXPECT_EQ(h.done[4], ms(25));
  EXPECT_EQ(h.done[5], ms(25));
}

TEST(CoreSharing, ACopyDelaysTheRequestEnd) {
  // A request is core time, not wall time: thread 1 (25 ms) holds the core, a copy (3 ms)
  // preempts it 0..3, so its v reaches its 20 ms deadline at 23, not 20; thread 2 (5 ms) runs
  // 23..28, thread 1 its last 5 ms 28..33.
  SlicedHarness h;
  const int c0 = 0;
  h.cores.start_sliced(0, ms(25), 1, 1);
  h.cores.start_sliced(0, ms(5), 2, 2);
  h.cores.start(std::span<const int>(&c0, 1), SimTime(), ms(3), 3);
  h.engine.run();
  EXPECT_EQ(h.done[3], ms(3));
  EXPECT_EQ(h.first_run[2], ms(23));
  EXPECT_EQ(h.done[2], ms(28));
  EXPECT_EQ(h.done[1], ms(33));
}

}  // namespace
}  // namespace tawpipe::sim
