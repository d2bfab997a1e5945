// Analytical tests of the flow-level network model (sim/network/network_model.h) on the shipped
// dgx-a100 topology: GPU -> NVSwitch -> GPU routes of two links, each 300 GB/s x 0.91 per
// direction with 500 ns latency per hop. Let C = 273e9 B/s and h = 1 us (route latency).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sim/engine/engine.h"
#include "sim/network/network_model.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

constexpr double kC = 300e9 * 0.91;

class NetworkTest : public ::testing::Test {
 protected:
  NetworkTest()
      : topo_(testing::shipped("dgx-a100")),
        net_(engine_, topo_, nullptr,
             [this](std::uint64_t token) { done_[token] = engine_.now(); }) {}

  void start(int src, int dst, double bytes, std::uint64_t token) {
    const auto route = topo_.route(src, dst);
    net_.start(route, bytes, net_.path_latency(route), token);
  }

  topo::Topology topo_;
  Engine engine_;
  std::map<std::uint64_t, SimTime> done_;
  NetworkModel net_;
};

TEST_F(NetworkTest, RouteIsTwoNvswitchLinks) {
  const auto route = topo_.route(0, 1);
  ASSERT_EQ(route.size(), 2u);
  EXPECT_DOUBLE_EQ(net_.link_bytes_per_second(route[0]), kC);
  EXPECT_EQ(net_.path_latency(route), SimTime::us(1));
}

// One flow alone: t = h + B / C.
TEST_F(NetworkTest, OneFlowIsLatencyPlusBytesOverEffectiveCapacity) {
  const double bytes = 1e9;
  start(0, 1, bytes, 7);
  engine_.run();
  ASSERT_EQ(done_.count(7), 1u);
  EXPECT_EQ(done_[7].picoseconds(), SimTime::us(1).picoseconds() + testing::ceil_ps(bytes / kC));
  EXPECT_EQ(net_.active_transfers(), 0u);
}

// Two flows 0->1 and 0->2 share GPU 0's uplink: C/2 each, t = h + 2B / C for both.
TEST_F(NetworkTest, TwoFlowsOnOneLinkGetHalfEach) {
  const double bytes = 1e9;
  start(0, 1, bytes, 1);
  start(0, 2, bytes, 2);
  engine_.run();
  const std::int64_t expected = SimTime::us(1).picoseconds() + testing::ceil_ps(2 * bytes / kC);
  EXPECT_EQ(done_[1].picoseconds(), expected);
  EXPECT_EQ(done_[2].picoseconds(), expected);
  // GPU 0's uplink carried both flows and was busy for 2B/C.
  const auto up0 = topo_.route(0, 1)[0];
  EXPECT_DOUBLE_EQ(net_.link_bytes()[static_cast<std::size_t>(up0)], 2 * bytes);
  EXPECT_NEAR(net_.link_busy(engine_.now())[static_cast<std::size_t>(up0)].seconds(),
              2 * bytes / kC, 1e-11);
}

// The classic max-min example (Bertsekas & Gallager 6.5.2): a long flow 0->1 crosses links
// up0 and down1; short flow 0->2 shares up0, short flow 3->1 shares down1. Max-min gives all
// three C/2. The short flows carry S = 1 GB and finish at t1 = h + 2S/C; the long flow (L = 3 GB)
// has L - S left and then runs alone at C: t_long = h + 2S/C + (L - S)/C = h + (L + S)/C.
TEST_F(NetworkTest, LongFlowAcrossTwoLinksAgainstTwoShortOnes) {
  const double s = 1e9, l = 3e9;
  start(0, 1, l, 10);
  start(0, 2, s, 11);
  start(3, 1, s, 12);
  engine_.run();
  const double h = 1e-6;
  EXPECT_NEAR(done_[11].seconds(), h + 2 * s / kC, 2e-12);
  EXPECT_NEAR(done_[12].seconds(), h + 2 * s / kC, 2e-12);
  EXPECT_NEAR(done_[10].seconds(), h + (l + s) / kC, 4e-12);
}

// A zero-byte transfer costs its latency only.
TEST_F(NetworkTest, ZeroBytesCostLatency) {
  start(0, 5, 0.0, 3);
  engine_.run();
  EXPECT_EQ(done_[3], SimTime::us(1));
}

// Usage samples: one flow gives a sample of C on both links at its start and 0 at its end.
TEST_F(NetworkTest, UsageSamplesFollowRates) {
  net_.record_usage(true);
  start(0, 1, 1e9, 1);
  engine_.run();
  const auto& u = net_.usage_samples();
  ASSERT_EQ(u.size(), 4u);
  EXPECT_DOUBLE_EQ(u[0].bytes_per_second, kC);
  EXPECT_DOUBLE_EQ(u[3].bytes_per_second, 0.0);
}

}  // namespace
}  // namespace tawpipe::sim
