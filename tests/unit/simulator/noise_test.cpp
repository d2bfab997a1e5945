// The replay of a calibrated fixed-work-quantum noise trace (sim/run/noise.h): the arithmetic of
// one unit's availability, checked by hand, and what it does to ranks that synchronise.
#include "sim/run/noise.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sim/simulator.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

profile::NoiseTrace trace(std::vector<std::vector<double>> units) {
  profile::NoiseTrace t;
  t.quantum = SimTime::ms(1);
  t.units = std::move(units);
  return t;
}

// Unit 0's quanta take 1, 2, 1, 1 ms for 1 ms of work each: one period is 5 ms of wall time and
// 4 ms of work. Every figure below is worked out by hand from that.
TEST(NoiseReplay, ElapsedIntegratesTheUnitsAvailability) {
  const profile::NoiseTrace t = trace({{1, 2, 1, 1}, {1, 1}});
  auto r = NoiseReplay::make(t, 2, SimTime());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->elapsed(0, SimTime(), SimTime::ms(1)), SimTime::ms(1));
  EXPECT_EQ(r->elapsed(0, SimTime(), SimTime::ms(2)), SimTime::ms(3));  // 1 + the slow quantum
  // From 0.5 ms: 0.5 ms of work by 1 ms, then 0.5 ms of work at half speed by 2 ms.
  EXPECT_EQ(r->elapsed(0, SimTime::us(500), SimTime::ms(1)), SimTime::us(1500));
  // Across the period's end: 0.5 ms (0.5 of work) to 5 ms, then 3.5 of work: 1 + 2 + 1 + 0.5.
  EXPECT_EQ(r->elapsed(0, SimTime::us(4500), SimTime::ms(4)), SimTime::ms(5));
  // Many periods: 4 ms of work per 5 ms.
  EXPECT_EQ(r->elapsed(0, SimTime(), SimTime::ms(400)), SimTime::ms(500));
  // A unit at the reference speed changes nothing, wherever the job starts.
  EXPECT_EQ(r->elapsed(1, SimTime::us(1234), SimTime::us(777)), SimTime::us(777));
  EXPECT_EQ(r->elapsed(0, SimTime::ms(3), SimTime()), SimTime());
  // The offset moves the trace's start: simulated time 0 is trace time 1 ms, the slow quantum.
  auto shifted = NoiseReplay::make(t, 2, SimTime::ms(1));
  ASSERT_TRUE(shifted.ok());
  EXPECT_EQ(shifted->elapsed(0, SimTime(), SimTime::ms(1)), SimTime::ms(2));
  // The span is the shortest unit's: 2 ms.
  EXPECT_EQ(NoiseReplay::span(t), SimTime::ms(2));
}

TEST(NoiseReplay, NeedsAUnitPerCore) {
  auto r = NoiseReplay::make(trace({{1, 1}}), 2, SimTime());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("1 unit(s)"), std::string::npos) << r.error().message;
}

// localhost-cpu (one rank per core): `rounds` rounds of a 1 GFLOP GEMM (~100 ms at the
// topology's CPU rate) on both ranks, each followed by a 4-byte all-reduce, which both must post:
// the ranks synchronise every round.
ir::Program lock_step(const topo::Topology& t, int rounds) {
  ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
  const ir::CommId pair = b.communicator("pair", {0, 1});
  const ir::CostId c = b.cost(testing::gemm_cost(1e9));
  for (ir::Rank r = 0; r < 2; ++r) {
    const ir::BufferId buf = b.buffer(r, "buf", Bytes(4), ir::BufferRole::gradient, true);
    for (int i = 0; i < rounds; ++i) {
      b.compute(r, 0, ir::ComputeKind::forward, 0, 1, 0, c, {}, {});
      b.collective(r, 0, ir::CollectiveKind::all_reduce, pair, ir::kNone, Bytes(4), buf, buf);
    }
  }
  return std::move(b).finish();
}

Expected<SimOutput> run(const ir::Program& p, const topo::Topology& t,
                        std::optional<profile::NoiseTrace> noise, int replicates = 1) {
  SimOptions o;
  o.profile = profile::Profile{};
  o.profile->noise = std::move(noise);
  o.noise_replicates = replicates;
  return run_simulation(p, t, o);
}

// The mechanism the replay exists for: two cores that each lose time in one quantum of 8 (a
// quantum that takes 3) lose it at the same moments (correlated, what slows the whole machine)
// or at different moments (independent noise). Each core's own speed is the same in both
// traces (mean stretch 10 / 8), but ranks that wait for each other every round pay every core's
// detours only when the noise is independent.
TEST(NoiseReplay, IndependentNoiseSlowsRanksThatSynchronise) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  const ir::Program p = lock_step(t, 40);
  // Quanta as long as one GEMM.
  auto none = run(p, t, std::nullopt);
  ASSERT_TRUE(none.ok()) << none.error().to_string();
  const double base = none->report.iteration_time.seconds();
  auto noise = [&](std::vector<double> a, std::vector<double> b) {
    profile::NoiseTrace n;
    n.quantum = SimTime::from_seconds(base / 40);
    n.units = {std::move(a), std::move(b)};
    return n;
  };
  std::vector<double> first(64, 1.0), fifth(64, 1.0), flat(64, 1.0);
  for (std::size_t i = 0; i < 64; i += 8) {
    first[i] = 3.0;
    fifth[i + 4] = 3.0;
  }
  auto neutral = run(p, t, noise(flat, flat));
  auto together = run(p, t, noise(first, first));
  auto apart = run(p, t, noise(first, fifth));
  ASSERT_TRUE(neutral.ok() && together.ok() && apart.ok());
  // Stretches of 1 are the calibrated rates: the replay is neutral.
  EXPECT_NEAR(neutral->report.iteration_time.seconds(), base, 1e-9);
  // Correlated: both cores lose 2 quanta in 10, so the iteration takes ~1.25x.
  EXPECT_GT(together->report.iteration_time.seconds(), 1.15 * base);
  EXPECT_LT(together->report.iteration_time.seconds(), 1.35 * base);
  // Independent: every core's detours delay both ranks: ~1.5x.
  EXPECT_GT(apart->report.iteration_time.seconds(),
            1.1 * together->report.iteration_time.seconds());
}

// Replicates start the trace at offsets spread over its span; the reported one is the median.
TEST(NoiseReplay, ReplicatesReportTheMedian) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  const ir::Program p = lock_step(t, 3);
  profile::NoiseTrace n;
  n.quantum = SimTime::ms(10);
  n.units = {{1.0, 3.0, 1.0, 1.0, 2.0}, {1.0, 1.0, 1.0, 1.0, 1.0}};
  auto r = run(p, t, n, 5);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->noise_iterations.size(), 5u);
  std::vector<SimTime> sorted = r->noise_iterations;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_LT(sorted.front(), sorted.back());  // the offsets meet different noise
  EXPECT_EQ(r->report.iteration_time, sorted[2]);
  EXPECT_EQ(r->noise_iterations[static_cast<std::size_t>(r->noise_replicate)], sorted[2]);
  // Off: no replay, no replicates.
  SimOptions o;
  o.profile = profile::Profile{};
  o.profile->noise = n;
  o.noise = false;
  auto off = run_simulation(p, t, o);
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->noise_iterations.empty());
  EXPECT_LT(off->report.iteration_time, sorted.front());
  // A trace of fewer units than the host's cores is an error, not a silent reuse.
  n.units.pop_back();
  auto bad = run(p, t, n);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("calibrate on the run's layout"), std::string::npos);
}

}  // namespace
}  // namespace tawpipe::sim
