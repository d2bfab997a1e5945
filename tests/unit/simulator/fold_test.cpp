// Property tests of steady-state folding (sim/fold/fold.h): on a matrix of methods x topologies x
// micro-batch counts x data-parallel degrees, the folded iteration must match the fully
// simulated one: iteration time within 0.1 %, every rank's peak memory equal, every link's bytes
// equal (up to the last bits of the double sums), the same links. Folding must actually happen
// on the configurations where the rounds repeat, or the test proves nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "schedules/workload.h"
#include "sim/fold/fold.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

struct Case {
  std::string topology;
  std::string model;
  std::string method;
  int micro_batches;
  int dp;
};

std::string name(const Case& c) {
  return c.method + " on " + c.topology + " (" + c.model + "), " + std::to_string(c.micro_batches) +
         " micro-batches, dp " + std::to_string(c.dp);
}

schedules::Workload workload(const Case& c) {
  return testing::workload_for(
      c.topology, c.model,
      {"train.seq_len=" + std::string(c.topology == "2x2-cpu" ? "64" : "2048"),
       "train.micro_batches=" + std::to_string(c.micro_batches), "train.global_batch=0",
       "dp=" + std::to_string(c.dp)});
}

// Returns whether the case folded.
bool check(const Case& c) {
  const schedules::Workload w = workload(c);
  schedules::ScheduleVariant v{c.method, {}, c.method};
  SimOptions options;
  options.model = w.model;
  auto full = simulate_workload(w, v, options, false);
  auto folded = simulate_workload(w, v, options, true);
  if (!full.ok()) {
    // A configuration the method rejects must be rejected the same way when folding.
    EXPECT_FALSE(folded.ok()) << name(c);
    return false;
  }
  EXPECT_TRUE(folded.ok()) << name(c) << ": " << folded.error().to_string();
  if (!folded.ok()) return false;
  EXPECT_FALSE(full->fold.folded);
  const report::Report& a = full->output.report;
  const report::Report& b = folded->output.report;
  const double ta = a.iteration_time.seconds();
  const double tb = b.iteration_time.seconds();
  EXPECT_NEAR(tb, ta, 1e-3 * ta) << name(c);
  EXPECT_EQ(b.header.micro_batches, a.header.micro_batches) << name(c);
  EXPECT_EQ(b.header.global_batch, a.header.global_batch) << name(c);
  EXPECT_NEAR(b.tokens_per_second, a.tokens_per_second, 1e-3 * a.tokens_per_second) << name(c);
  EXPECT_NEAR(b.mfu, a.mfu, 1e-3 * a.mfu + 1e-12) << name(c);
  EXPECT_EQ(b.rank_stats.size(), a.rank_stats.size()) << name(c);
  for (std::size_t r = 0; r < a.rank_stats.size() && r < b.rank_stats.size(); ++r) {
    EXPECT_EQ(b.rank_stats[r].peak_memory_bytes, a.rank_stats[r].peak_memory_bytes)
        << name(c) << " rank " << r;
    const double ca = a.rank_stats[r].compute.seconds();
    EXPECT_NEAR(b.rank_stats[r].compute.seconds(), ca, 1e-3 * ta) << name(c) << " rank " << r;
    EXPECT_NEAR(b.rank_stats[r].inter_node_bytes_sent, a.rank_stats[r].inter_node_bytes_sent,
                1e-9 * a.rank_stats[r].inter_node_bytes_sent + 1.0)
        << name(c) << " rank " << r;
  }
  EXPECT_EQ(b.links.size(), a.links.size()) << name(c);
  for (std::size_t l = 0; l < a.links.size() && l < b.links.size(); ++l) {
    EXPECT_EQ(b.links[l].name, a.links[l].name) << name(c);
    EXPECT_NEAR(b.links[l].bytes, a.links[l].bytes, 1e-9 * a.links[l].bytes + 1.0)
        << name(c) << " link " << a.links[l].name;
  }
  for (std::size_t k = 0; k < a.op_classes.size() && k < b.op_classes.size(); ++k)
    EXPECT_EQ(b.op_classes[k].count, a.op_classes[k].count)
        << name(c) << " " << a.op_classes[k].name;
  if (folded->fold.folded) {
    EXPECT_EQ(folded->fold.rounds, a.header.micro_batches) << name(c);
    EXPECT_EQ(folded->fold.rounds_simulated + folded->fold.rounds_folded, folded->fold.rounds);
    EXPECT_GT(folded->fold.rounds_folded, 0);
  } else {
    EXPECT_FALSE(folded->fold.reason.empty()) << name(c);
  }
  return folded->fold.folded;
}

TEST(Fold, MatchesFullSimulationOnTheMatrix) {
  std::vector<Case> cases;
  for (const char* method : {"tawpipe", "weipipe", "fsdp", "1f1b"}) {
    for (const int mb : {40, 72}) {
      for (const int dp : {1, 2}) {
        cases.push_back({"2x4-pcie-ib", "tiny", method, mb, dp});
        cases.push_back({"4x8-h100-ndr", "llama-h1024-l48", method, mb, dp * 4});
      }
    }
  }
  int folded = 0;
  for (const Case& c : cases)
    folded += check(c) ? 1 : 0;
  // Every method repeats per micro-batch on these clusters except where the warm-up is longer
  // than the probes; at least half of the matrix must have folded.
  EXPECT_GE(folded, static_cast<int>(cases.size()) / 2);
  std::printf("folded %d of %zu configurations\n", folded, cases.size());
}

// The paper's cluster and model family (3x8-a100): the configurations of the comparison table.
TEST(Fold, PaperClusterMatchesFullSimulation) {
  int folded = 0;
  for (const char* method : {"tawpipe", "weipipe", "fsdp"})
    folded += check({"3x8-a100", "llama-h1024-l48", method, 48, 1}) ? 1 : 0;
  EXPECT_EQ(folded, 3);
}

// Probes run side by side when threads are available (fold.cpp prefetch, with speculative
// probes): the result must not depend on it. WeiPipe misses at (2, 3, 4) and folds from the
// shifted set (3, 4, 6) here; 1F1B searches several bases.
TEST(Fold, ThreadsDoNotChangeTheResult) {
  for (const char* method : {"tawpipe", "weipipe", "1f1b"}) {
    schedules::Workload w = workload({"3x8-a100", "llama-h1024-l48", method, 48, 1});
    const schedules::ScheduleVariant v{method, {}, method};
    SimOptions options;
    options.model = w.model;
    auto serial = simulate_workload(w, v, options, true);
    w.threads = 2;
    auto parallel = simulate_workload(w, v, options, true);
    ASSERT_TRUE(serial.ok() && parallel.ok()) << method;
    EXPECT_EQ(serial->fold.folded, parallel->fold.folded) << method;
    EXPECT_EQ(serial->fold.rounds_simulated, parallel->fold.rounds_simulated) << method;
    const report::Report& a = serial->output.report;
    const report::Report& b = parallel->output.report;
    EXPECT_EQ(a.iteration_time, b.iteration_time) << method;
    ASSERT_EQ(a.rank_stats.size(), b.rank_stats.size()) << method;
    for (std::size_t r = 0; r < a.rank_stats.size(); ++r) {
      EXPECT_EQ(a.rank_stats[r].compute, b.rank_stats[r].compute) << method << " rank " << r;
      EXPECT_EQ(a.rank_stats[r].peak_memory_bytes, b.rank_stats[r].peak_memory_bytes) << method;
    }
    ASSERT_EQ(a.links.size(), b.links.size()) << method;
    for (std::size_t l = 0; l < a.links.size(); ++l)
      EXPECT_EQ(a.links[l].bytes, b.links[l].bytes) << method << " " << a.links[l].name;
  }
}

// 1F1B on `w`, not folded: the reason must contain `why` and the iteration equal --no-fold's.
void expect_simulated_whole(const schedules::Workload& w, const std::string& why) {
  const schedules::ScheduleVariant v{"1f1b", {}, "1f1b"};
  SimOptions options;
  options.model = w.model;
  auto folded = simulate_workload(w, v, options, true);
  auto full = simulate_workload(w, v, options, false);
  ASSERT_TRUE(folded.ok() && full.ok());
  EXPECT_FALSE(folded->fold.folded);
  EXPECT_NE(folded->fold.reason.find(why), std::string::npos) << folded->fold.reason;
  EXPECT_EQ(folded->output.report.iteration_time, full->output.report.iteration_time);
}

// 1F1B on 3x8-a100 behind an 8 Gb/s NIC is network-bound and its rounds drift (fold.cpp): the
// search stops after two bases whose iteration time missed, and the whole iteration is
// simulated, equal to --no-fold.
TEST(Fold, DriftingRoundsAreSimulatedWhole) {
  expect_simulated_whole(
      testing::workload_for("3x8-a100", "llama-h4096-l48",
                            {"inter_node.nic.bandwidth=8Gb/s", "train.seq_len=16384"}),
      "drift");
}

// 1F1B over 24 stages holds up to 24 micro-batches at once on its first rank: a base whose last
// probe lies in that fill is skipped (fold.cpp), here the base 4 (its last probe, 8, holds all 8)
// after the base 2 missed; 30 micro-batches leave no larger base, so the whole iteration is
// simulated and says why. Without the skip the base 4 would run and miss on memory.
TEST(Fold, BasesInThePipelineFillAreSkipped) {
  expect_simulated_whole(workload({"3x8-a100", "llama-h1024-l48", "1f1b", 30, 1}),
                         "pipeline fill is longer than the probes: a rank holds all 8 ");
}

// Too few micro-batches: nothing to fold, and the reason says so.
TEST(Fold, CpuTopologiesAreSimulatedWhole) {
  // EEVDF's state on the shared cores is not periodic in rounds (sim/fold/fold.cpp): a CPU
  // topology is simulated whole, however many micro-batches.
  const schedules::Workload w = workload({"2x2-cpu", "tiny", "1f1b", 72, 2});
  SimOptions options;
  auto r = simulate_workload(w, {"1f1b", {}, "1f1b"}, options, true);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->fold.folded);
  EXPECT_NE(r->fold.reason.find("EEVDF"), std::string::npos) << r->fold.reason;
}

TEST(Fold, FewMicroBatchesAreSimulatedWhole) {
  const schedules::Workload w = workload({"2x2-cpu", "tiny", "tawpipe", 4, 1});
  SimOptions options;
  auto r = simulate_workload(w, {"tawpipe", {}, "tawpipe"}, options, true);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->fold.folded);
  EXPECT_NE(r->fold.reason.find("too few micro-batches"), std::string::npos) << r->fold.reason;
  EXPECT_EQ(r->fold.rounds_simulated, 4);
}

}  // namespace
}  // namespace tawpipe::sim
