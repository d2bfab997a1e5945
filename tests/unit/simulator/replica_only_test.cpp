// Replica-compact generation (schedules/schedule.h ScheduleInput::replica_only): every generator
// must store exactly the full program's replica 0 and every shared table, its full program must
// have the replica period (so the ranks not stored are the images of the stored ones), and
// simulating the compact program must give the full program's report bit for bit: iteration
// time, every rank's peak memory and bytes, every link's bytes and busy time, op and kernel
// classes (the whole report JSON is compared). Also: where the symmetry does not hold, the
// compact program falls back to the full one.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/ir/verifier.h"
#include "common/report/report.h"
#include "schedules/workload.h"
#include "sim/simulator.h"
#include "sim/symmetry/symmetry.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

using Case = testing::ReplicaCase;
using testing::name;

std::string report_json(const report::Report& r) {
  std::ostringstream os;
  report::write_report_json(r, os);
  return os.str();
}

// 0: the generator rejects the configuration; 1: checked; 2: checked, replicas collapsed.
int check(const Case& c) {
  const schedules::Workload w =
      testing::workload_for(c.topology, "llama-h1024-l48",
                            {"train.seq_len=2048", "train.micro_batches=3", "train.global_batch=0",
                             "dp=" + std::to_string(c.dp)});
  const schedules::ScheduleVariant v{c.method, c.options, c.method};
  auto full = schedules::shared_program(w, v, false);
  auto compact = schedules::shared_program(w, v, true);
  if (!full.ok()) {  // a configuration the method cannot run: rejected alike
    EXPECT_FALSE(compact.ok()) << name(c);
    if (!compact.ok()) {
      EXPECT_EQ(compact.error().message, full.error().message) << name(c);
    }
    return 0;
  }
  EXPECT_TRUE(compact.ok()) << name(c) << ": " << compact.error().to_string();
  if (!compact.ok()) return 0;
  const ir::Program& f = **full;
  const ir::Program& p = **compact;
  const std::int32_t n = f.num_ranks();
  const std::int32_t R = n / c.dp;
  EXPECT_EQ(p.num_ranks(), n) << name(c);
  EXPECT_EQ(p.stored_ranks, c.dp > 1 ? R : 0) << name(c);
  if (p.num_ranks() != n) return 0;
  EXPECT_EQ(f.stored_ranks, 0) << name(c);
  EXPECT_EQ(p.header, f.header) << name(c);
  EXPECT_EQ(p.streams, f.streams) << name(c);
  EXPECT_EQ(p.communicators, f.communicators) << name(c);
  EXPECT_EQ(p.costs, f.costs) << name(c);
  for (std::int32_t r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r < R || c.dp == 1) {
      EXPECT_TRUE(p.ranks[i] == f.ranks[i]) << name(c) << ": rank " << r << " differs";
    } else {
      EXPECT_TRUE(p.ranks[i] == ir::RankProgram{}) << name(c) << ": rank " << r << " stored";
    }
  }
  // Compact programs verify in their compact form (common/ir/verify_replicas.cpp).
  const ir::VerifyResult verdict = ir::verify(p);
  EXPECT_TRUE(verdict.ok) << name(c) << ": " << verdict.message;
  EXPECT_FALSE(verdict.whole_form_needed) << name(c);
  std::string why;
  const auto sym = find_replica_symmetry(f, w.topology, why);
  if (c.dp > 1) {
    // The smallest period divides R, so the shift by R maps the full program onto itself.
    EXPECT_TRUE(sym.has_value()) << name(c) << ": " << why;
    if (sym) {
      EXPECT_EQ(R % sym->replica_ranks, 0) << name(c);
    }
    const auto csym = compact_replica_symmetry(p, w.topology, why);
    EXPECT_TRUE(csym.has_value()) << name(c) << ": " << why;
    if (csym) {
      EXPECT_EQ(csym->replica_ranks, R) << name(c);
    }
  }

  SimOptions options;
  options.model = w.model;
  auto a = run_simulation(f, w.topology, options);
  bool expanded = false;
  auto b = run_simulation(p, w.topology, options, [&] {
    expanded = true;
    return schedules::shared_program(w, v, false);
  });
  EXPECT_TRUE(a.ok()) << name(c) << ": " << a.error().to_string();
  EXPECT_TRUE(b.ok()) << name(c) << ": " << b.error().to_string();
  if (!a.ok() || !b.ok()) return 0;
  EXPECT_EQ(report_json(b->report), report_json(a->report)) << name(c);
  EXPECT_EQ(b->replicas_collapsed, a->replicas_collapsed) << name(c);
  EXPECT_EQ(b->symmetry_note, a->symmetry_note) << name(c);
  // The whole program is generated only where the symmetry did not hold.
  EXPECT_EQ(expanded, c.dp > 1 && b->replicas_collapsed == 1) << name(c);
  // Without symmetry the compact program needs its full form.
  options.symmetry = false;
  auto d = run_simulation(p, w.topology, options);
  EXPECT_EQ(d.ok(), c.dp == 1) << name(c);
  return b->replicas_collapsed > 1 ? 2 : 1;
}

TEST(ReplicaOnly, CompactProgramIsTheFullProgramsReplicaZero) {
  int checked = 0, collapsed = 0;
  for (const char* topology : {"4x8-h100-ndr", "3x8-a100"}) {
    for (const int dp : {1, 2, 4, 8}) {
      for (const Case& c : testing::replica_cases(topology, dp)) {
        const int k = check(c);
        checked += k > 0 ? 1 : 0;
        collapsed += k > 1 ? 1 : 0;
      }
    }
  }
  // Most of the matrix runs (the rest is rejected by the generators alike), and the compact
  // program is simulated as such on a good part of it.
  std::printf("checked %d configurations, %d collapsed\n", checked, collapsed);
  EXPECT_GE(checked, 40);
  EXPECT_GE(collapsed, checked / 4);
}

// A compact program whose communicators do not map between replicas is not collapsed: the
// simulator falls back to the full program.
TEST(ReplicaOnly, FallsBackWhenTheSymmetryDoesNotHold) {
  const schedules::Workload w = testing::workload_for(
      "4x8-h100-ndr", "llama-h1024-l48",
      {"train.seq_len=2048", "train.micro_batches=3", "train.global_batch=0", "dp=4"});
  const schedules::ScheduleVariant v{"fsdp", {}, "fsdp"};
  auto compact = schedules::shared_program(w, v, true);
  ASSERT_TRUE(compact.ok());
  ir::Program p = **compact;
  p.communicators.back().members.pop_back();  // a cross-replica group now misses a replica
  std::string why;
  EXPECT_FALSE(compact_replica_symmetry(p, w.topology, why).has_value());
  EXPECT_FALSE(why.empty());
  SimOptions options;
  options.model = w.model;
  bool expanded = false;
  auto out = run_simulation(p, w.topology, options, [&] {
    expanded = true;
    return schedules::shared_program(w, v, false);
  });
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_TRUE(expanded);
  auto reference = run_simulation(**schedules::shared_program(w, v, false), w.topology, options);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(report_json(out->report), report_json(reference->report));
}

}  // namespace
}  // namespace tawpipe::sim
