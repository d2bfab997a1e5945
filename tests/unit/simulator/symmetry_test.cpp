// Property tests of replica symmetry (sim/symmetry/symmetry.h): on a matrix of methods x
// topologies x data-parallel degrees, simulating one replica for all must give the full
// simulation's figures: iteration time within 0.1 %, every rank's peak memory equal, every
// rank's and every link's bytes equal (up to the last bits of the double sums), link busy time
// within 0.1 % of the iteration. Symmetry must actually apply on part of the matrix, or the test
// proves nothing; where it does not, the reason must be given.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "schedules/workload.h"
#include "sim/fold/fold.h"
#include "sim/symmetry/symmetry.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

struct Case {
  std::string topology;
  std::string method;
  int dp;
};

std::string name(const Case& c) {
  return c.method + " on " + c.topology + ", dp " + std::to_string(c.dp);
}

schedules::Workload workload(const Case& c) {
  return testing::workload_for(c.topology, "llama-h1024-l48",
                               {"train.seq_len=2048", "train.micro_batches=4",
                                "train.global_batch=0", "dp=" + std::to_string(c.dp)});
}

// Returns the replicas collapsed (1: none).
int check(const Case& c) {
  const schedules::Workload w = workload(c);
  schedules::ScheduleVariant v{c.method, {}, c.method};
  SimOptions options;
  options.model = w.model;
  options.symmetry = false;
  auto full = simulate_workload(w, v, options, false);
  options.symmetry = true;
  auto sym = simulate_workload(w, v, options, false);
  if (!full.ok()) {
    EXPECT_FALSE(sym.ok()) << name(c);
    return 1;
  }
  EXPECT_TRUE(sym.ok()) << name(c) << ": " << sym.error().to_string();
  if (!sym.ok()) return 1;
  EXPECT_EQ(full->fold.replicas_collapsed, 1) << name(c);
  EXPECT_EQ(full->fold.symmetry_note, "--no-symmetry") << name(c);
  const report::Report& a = full->output.report;
  const report::Report& b = sym->output.report;
  const double ta = a.iteration_time.seconds();
  EXPECT_NEAR(b.iteration_time.seconds(), ta, 1e-3 * ta) << name(c);
  EXPECT_NEAR(b.mfu, a.mfu, 1e-3 * a.mfu + 1e-12) << name(c);
  EXPECT_EQ(b.rank_stats.size(), a.rank_stats.size()) << name(c);
  for (std::size_t r = 0; r < a.rank_stats.size() && r < b.rank_stats.size(); ++r) {
    const report::RankStats& x = a.rank_stats[r];
    const report::RankStats& y = b.rank_stats[r];
    EXPECT_EQ(y.peak_memory_bytes, x.peak_memory_bytes) << name(c) << " rank " << r;
    EXPECT_NEAR(y.compute.seconds(), x.compute.seconds(), 1e-3 * ta) << name(c) << " rank " << r;
    EXPECT_NEAR(y.exposed_comm.seconds(), x.exposed_comm.seconds(), 1e-3 * ta)
        << name(c) << " rank " << r;
    EXPECT_NEAR(y.inter_node_bytes_sent, x.inter_node_bytes_sent,
                1e-9 * x.inter_node_bytes_sent + 1.0)
        << name(c) << " rank " << r;
    EXPECT_NEAR(y.intra_node_bytes_sent, x.intra_node_bytes_sent,
                1e-9 * x.intra_node_bytes_sent + 1.0)
        << name(c) << " rank " << r;
  }
  EXPECT_EQ(b.links.size(), a.links.size()) << name(c);
  for (std::size_t l = 0; l < a.links.size() && l < b.links.size(); ++l) {
    EXPECT_EQ(b.links[l].name, a.links[l].name) << name(c);
    EXPECT_NEAR(b.links[l].bytes, a.links[l].bytes, 1e-9 * a.links[l].bytes + 1.0)
        << name(c) << " link " << a.links[l].name;
    EXPECT_NEAR(b.links[l].busy.seconds(), a.links[l].busy.seconds(), 1e-3 * ta)
        << name(c) << " link " << a.links[l].name;
  }
  EXPECT_EQ(b.op_classes.size(), a.op_classes.size()) << name(c);
  for (std::size_t k = 0; k < a.op_classes.size() && k < b.op_classes.size(); ++k) {
    EXPECT_EQ(b.op_classes[k].count, a.op_classes[k].count) << name(c);
    EXPECT_NEAR(b.op_classes[k].bytes, a.op_classes[k].bytes, 1e-9 * a.op_classes[k].bytes + 1.0)
        << name(c) << " " << a.op_classes[k].name;
  }
  if (sym->fold.replicas_collapsed > 1) {
    EXPECT_EQ(sym->fold.replicas_collapsed * sym->fold.replica_ranks,
              static_cast<int>(a.rank_stats.size()))
        << name(c);
  } else {
    EXPECT_FALSE(sym->fold.symmetry_note.empty()) << name(c);
  }
  return sym->fold.replicas_collapsed;
}

TEST(Symmetry, MatchesFullSimulationOnTheMatrix) {
  int collapsed = 0, cases = 0;
  for (const char* method : {"tawpipe", "weipipe", "fsdp", "1f1b"}) {
    for (const char* topology : {"4x8-h100-ndr", "4x8-a100-hdr", "3x8-a100"}) {
      for (const int dp : {2, 4, 8}) {
        if (std::string(topology) == "3x8-a100" && dp == 8) continue;  // 24 ranks
        const int k = check({topology, method, dp});
        ++cases;
        collapsed += k > 1 ? 1 : 0;
      }
    }
  }
  std::printf("collapsed %d of %d configurations\n", collapsed, cases);
  EXPECT_GE(collapsed, cases / 4);
}

// One replica: nothing to collapse, and the note says why.
TEST(Symmetry, SingleReplicaIsNotCollapsed) {
  const schedules::Workload w = workload({"3x8-a100", "tawpipe", 1});
  SimOptions options;
  auto r = simulate_workload(w, {"tawpipe", {}, "tawpipe"}, options, false);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->fold.replicas_collapsed, 1);
  EXPECT_FALSE(r->fold.symmetry_note.empty());
}

// The program check: FSDP with hybrid sharding has replicas of 32 / dp ranks; changing one op of
// one replica breaks it.
TEST(Symmetry, ProgramCheckFindsReplicasAndRejectsADifference) {
  const schedules::Workload w = workload({"4x8-h100-ndr", "fsdp", 4});
  auto program = schedules::build_program(w, {"fsdp", {}, "fsdp"});
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  std::string why;
  auto sym = find_replica_symmetry(*program, w.topology, why);
  ASSERT_TRUE(sym.has_value()) << why;
  EXPECT_EQ(sym->replica_ranks, 8);
  EXPECT_EQ(sym->replicas, 4);
  for (ir::Op& op : program->ranks[9].ops) {
    if (op.kind == ir::OpKind::copy || op.kind == ir::OpKind::send ||
        op.kind == ir::OpKind::collective) {
      op.bytes += 1;
      break;
    }
  }
  EXPECT_FALSE(find_replica_symmetry(*program, w.topology, why).has_value());
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace tawpipe::sim
