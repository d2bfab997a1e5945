// Compact-form verification (common/ir/verify_replicas.cpp) against whole-form verification:
// on a matrix of methods x topologies x dp, a replica-compact program and its whole form get
// the same verdict, stage and statistics; so do both forms with the same fault in every replica
// (an op deleted in replica 0 of the compact form, in every replica of the whole form); a
// compact program whose premises do not hold (communicators not shift-invariant, a transfer or
// a reduce_scatter across replicas) asks for its whole form, which the simulator then verifies.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/ir/verifier.h"
#include "schedules/workload.h"
#include "sim/simulator.h"
#include "tests/unit/schedules/schedule_test_util.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::ir {
namespace {

using Case = sim::testing::ReplicaCase;
using sim::testing::name;

schedules::Workload workload(const Case& c) {
  return sim::testing::workload_for(c.topology, "llama-h1024-l48",
                                    {"train.seq_len=2048", "train.micro_batches=3",
                                     "train.global_batch=0", "dp=" + std::to_string(c.dp)});
}

// The compact and whole programs of `c`, or false when the method rejects the configuration.
bool programs(const Case& c, std::shared_ptr<const Program>* compact,
              std::shared_ptr<const Program>* whole) {
  const schedules::Workload w = workload(c);
  const schedules::ScheduleVariant v{c.method, c.options, c.method};
  auto f = schedules::shared_program(w, v, false);
  auto p = schedules::shared_program(w, v, true);
  if (!f.ok()) return false;
  EXPECT_TRUE(p.ok()) << name(c);
  if (!p.ok()) return false;
  *compact = *p;
  *whole = *f;
  return true;
}

std::string verdict(const VerifyResult& v) {
  return v.ok ? "ok" : std::string(name(v.stage)) + (v.whole_form_needed ? " (whole form)" : "");
}

// Same verdict and stage; when both pass, the same statistics.
void expect_same(const VerifyResult& compact, const VerifyResult& whole, const std::string& what) {
  EXPECT_FALSE(compact.whole_form_needed) << what << ": " << compact.message;
  EXPECT_EQ(verdict(compact), verdict(whole))
      << what << "\n compact: " << compact.message << "\n whole:   " << whole.message;
  if (!compact.ok || !whole.ok) return;
  EXPECT_EQ(compact.stats.total_ops, whole.stats.total_ops) << what;
  EXPECT_EQ(compact.stats.ops_by_kind, whole.stats.ops_by_kind) << what;
  EXPECT_EQ(compact.stats.bytes_by_kind, whole.stats.bytes_by_kind) << what;
  EXPECT_EQ(compact.stats.collective_bytes, whole.stats.collective_bytes) << what;
  EXPECT_EQ(compact.stats.peak_live_bytes, whole.stats.peak_live_bytes) << what;
  EXPECT_EQ(compact.stats.persistent_bytes, whole.stats.persistent_bytes) << what;
}

TEST(VerifyReplicas, CompactAndWholeFormsAgreeOnGeneratedPrograms) {
  int checked = 0, valid = 0;
  for (const char* topology : {"4x8-h100-ndr", "3x8-a100", "2x4-pcie-ib"}) {
    for (const int dp : {2, 4, 8}) {
      for (const Case& c : sim::testing::replica_cases(topology, dp)) {
        std::shared_ptr<const Program> compact, whole;
        if (!programs(c, &compact, &whole)) continue;
        ASSERT_TRUE(compact->compact()) << name(c);
        const VerifyResult a = verify(*compact);
        const VerifyResult b = verify(*whole);
        expect_same(a, b, name(c));
        ++checked;
        valid += b.ok ? 1 : 0;
      }
    }
  }
  // Generator validity is the schedules tests' business; here most of the matrix must be valid
  // programs (and the rest fail alike in both forms).
  EXPECT_GE(checked, 40);
  EXPECT_GE(valid, 40);
}

// The same op deleted from replica 0 of the compact program and from every replica of the
// whole one: the compact program's whole form is exactly that faulty whole program.
// Ops `i` and `i + 1` of rank `r` swapped (dependency indices follow them), or false when the
// later one depends on the earlier (the swap would not be a program order).
bool swap_with_next(Program& p, Rank r, OpIndex i) {
  RankProgram& rp = p.ranks[static_cast<std::size_t>(r)];
  const auto a = static_cast<std::size_t>(i);
  if (a + 1 >= rp.ops.size()) return false;
  for (const OpIndex d : deps(rp, rp.ops[a + 1]))
    if (d == i) return false;
  std::swap(rp.ops[a], rp.ops[a + 1]);
  for (OpIndex& d : rp.dep_pool) {
    if (d == i) {
      d = i + 1;
    } else if (d == i + 1) {
      d = i;
    }
  }
  return true;
}

TEST(VerifyReplicas, FaultsInReplicaZeroAreFoundInCompactForm) {
  int faults = 0, failing = 0, swaps = 0;
  std::map<std::string, int> stages;
  for (const Case& c : {Case{"4x8-h100-ndr", "fsdp", {}, 4}, Case{"4x8-h100-ndr", "tawpipe", {}, 2},
                        Case{"3x8-a100", "weipipe", {}, 3}, Case{"4x8-h100-ndr", "1f1b", {}, 2},
                        Case{"3x8-a100", "zb1", {}, 3}}) {
    std::shared_ptr<const Program> compact, whole;
    ASSERT_TRUE(programs(c, &compact, &whole)) << name(c);
    const std::int32_t R = compact->stored_ranks;
    const std::int32_t k = compact->num_ranks() / R;
    for (Rank r = 0; r < R; r += std::max(1, R / 2)) {
      const auto ops = static_cast<OpIndex>(compact->ranks[static_cast<std::size_t>(r)].ops.size());
      // Every op kind of the rank at least once (its first and last op of each kind).
      std::map<OpKind, std::vector<OpIndex>> by_kind;
      for (OpIndex i = 0; i < ops; ++i) {
        auto& v = by_kind
            [compact->ranks[static_cast<std::size_t>(r)].ops[static_cast<std::size_t>(i)].kind];
        if (v.size() < 2) {
          v.push_back(i);
        } else {
          v[1] = i;
        }
      }
      for (const auto& [kind, victims] : by_kind) {
        for (const OpIndex victim : victims) {
          const Program p = schedules::testing::without_op(*compact, r, victim);
          Program w = *whole;
          for (std::int32_t d = 0; d < k; ++d)
            w = schedules::testing::without_op(w, r + d * R, victim);
          const std::string what = name(c) + ": r" + std::to_string(r) + " #" +
                                   std::to_string(victim) + " (" + ir::name(kind) + ") deleted";
          const VerifyResult a = verify(p);
          const VerifyResult b = verify(w);
          expect_same(a, b, what);
          ++faults;
          failing += a.ok ? 0 : 1;
          ++stages[verdict(a)];
          // The op swapped with the next one instead (deadlocks, matching).
          Program q = *compact;
          if (!swap_with_next(q, r, victim)) continue;
          w = *whole;
          for (std::int32_t d = 0; d < k; ++d)
            swap_with_next(w, r + d * R, victim);
          const VerifyResult e = verify(q);
          expect_same(e, verify(w),
                      name(c) + ": r" + std::to_string(r) + " #" + std::to_string(victim) +
                          " swapped with the next op");
          ++swaps;
          ++stages[verdict(e)];
        }
      }
    }
  }
  for (const auto& [stage, count] : stages)
    std::printf("%s: %d faults\n", stage.c_str(), count);
  // Most deletions break the program, at every stage.
  EXPECT_GE(faults, 60);
  EXPECT_GE(failing, faults * 3 / 4);
  EXPECT_GT(stages["matching"], 0);
  EXPECT_GT(stages["dataflow"], 0);
  EXPECT_GT(stages["deadlock"], 0);
  EXPECT_GE(swaps, 30);
}

TEST(VerifyReplicas, SampleFaultInReplicaZeroIsFoundInCompactForm) {
  std::shared_ptr<const Program> compact, whole;
  ASSERT_TRUE(programs({"4x8-h100-ndr", "fsdp", {}, 4}, &compact, &whole));
  Program p = *compact;
  for (Op& op : p.ranks[0].ops) {
    if (op.kind == OpKind::compute && op.compute == ComputeKind::forward) {
      op.sample += 1 << 20;
      break;
    }
  }
  const VerifyResult v = verify(p);
  EXPECT_FALSE(v.ok);
  EXPECT_FALSE(v.whole_form_needed);
  EXPECT_EQ(v.stage, VerifyStage::dataflow) << v.message;
}

// A gradient summed over replica 0 only (the all-reduce across replicas made replica-local):
// the optimizer sees 1/k of the contributions.
TEST(VerifyReplicas, GradientsMissingOtherReplicasAreIncomplete) {
  const Case c{"4x8-h100-ndr", "fsdp", {}, 4};
  std::shared_ptr<const Program> compact, whole;
  ASSERT_TRUE(programs(c, &compact, &whole));
  Program p = *compact;
  // Every replica-0 rank's collectives on cross-replica groups deleted, in reverse op order.
  const std::int32_t R = p.stored_ranks;
  int deleted = 0;
  for (Rank r = 0; r < R; ++r) {
    for (auto i = static_cast<OpIndex>(p.ranks[static_cast<std::size_t>(r)].ops.size()) - 1; i >= 0;
         --i) {
      const Op& op = p.ranks[static_cast<std::size_t>(r)].ops[static_cast<std::size_t>(i)];
      if (op.kind != OpKind::collective) continue;
      const auto& members = p.communicators[static_cast<std::size_t>(op.comm)].members;
      bool cross = false;
      for (Rank m : members)
        cross = cross || m >= R;
      if (!cross) continue;
      p = schedules::testing::without_op(p, r, i);
      ++deleted;
    }
  }
  ASSERT_GT(deleted, 0);
  const VerifyResult v = verify(p);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.stage, VerifyStage::dataflow) << v.message;
  EXPECT_NE(v.message.find("incomplete"), std::string::npos) << v.message;
}

TEST(VerifyReplicas, CommunicatorsThatAreNotShiftInvariantNeedTheWholeForm) {
  const Case c{"4x8-h100-ndr", "fsdp", {}, 4};
  std::shared_ptr<const Program> compact, whole;
  ASSERT_TRUE(programs(c, &compact, &whole));
  {
    Program p = *compact;
    p.communicators.back().members.pop_back();  // a cross-replica group misses a replica
    const VerifyResult v = verify(p);
    EXPECT_FALSE(v.ok);
    EXPECT_TRUE(v.whole_form_needed) << v.message;
  }
  {
    // A replica-local communicator of replica 1 whose member order is not its preimage's.
    Program p = *compact;
    bool swapped = false;
    for (Communicator& comm : p.communicators) {
      if (comm.members.size() >= 2 && comm.members.front() >= p.stored_ranks &&
          comm.members.back() < 2 * p.stored_ranks) {
        std::swap(comm.members[0], comm.members[1]);
        swapped = true;
        break;
      }
    }
    ASSERT_TRUE(swapped);
    const VerifyResult v = verify(p);
    EXPECT_TRUE(v.whole_form_needed) << v.message;
  }
}

TEST(VerifyReplicas, CollectivesOtherThanAllReduceAcrossReplicasNeedTheWholeForm) {
  std::shared_ptr<const Program> compact, whole;
  ASSERT_TRUE(programs({"4x8-h100-ndr", "fsdp", {}, 4}, &compact, &whole));
  Program p = *compact;
  const std::int32_t R = p.stored_ranks;
  bool changed = false;
  for (Rank r = 0; r < R && !changed; ++r) {
    for (Op& op : p.ranks[static_cast<std::size_t>(r)].ops) {
      if (op.kind != OpKind::collective || op.collective != CollectiveKind::all_reduce) continue;
      if (p.communicators[static_cast<std::size_t>(op.comm)].members.back() < R) continue;
      op.collective = CollectiveKind::broadcast;
      op.peer = r;
      changed = true;
      break;
    }
  }
  ASSERT_TRUE(changed);
  const VerifyResult v = verify(p);
  EXPECT_TRUE(v.whole_form_needed) << v.message;
}

TEST(VerifyReplicas, TransfersBetweenReplicasNeedTheWholeForm) {
  std::shared_ptr<const Program> compact, whole;
  ASSERT_TRUE(programs({"4x8-h100-ndr", "1f1b", {}, 2}, &compact, &whole));
  Program p = *compact;
  const std::int32_t R = p.stored_ranks;
  // A pair communicator {r, r + R} (maps onto itself with 2 replicas) and r's first send on it.
  bool changed = false;
  for (Rank r = 0; r < R && !changed; ++r) {
    for (Op& op : p.ranks[static_cast<std::size_t>(r)].ops) {
      if (op.kind != OpKind::send) continue;
      p.communicators.push_back({"across", {r, r + R}});
      op.comm = static_cast<CommId>(p.communicators.size() - 1);
      op.peer = r + R;
      changed = true;
      break;
    }
  }
  ASSERT_TRUE(changed);
  const VerifyResult v = verify(p);
  EXPECT_TRUE(v.whole_form_needed) << v.message;
}

TEST(VerifyReplicas, MalformedCompactStorageFailsStructure) {
  std::shared_ptr<const Program> compact, whole;
  ASSERT_TRUE(programs({"4x8-h100-ndr", "fsdp", {}, 4}, &compact, &whole));
  Program p = *compact;
  p.ranks[static_cast<std::size_t>(p.stored_ranks)] =
      whole->ranks[static_cast<std::size_t>(p.stored_ranks)];
  const VerifyResult v = verify(p);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.stage, VerifyStage::structure) << v.message;
  p = *compact;
  p.stored_ranks = 5;  // 32 ranks are no whole number of 5-rank replicas
  EXPECT_EQ(verify(p).stage, VerifyStage::structure);
}

// The simulator verifies a compact program as such, and its whole form where it must.
TEST(VerifyReplicas, SimulatorVerifiesTheWholeFormOnlyWhereNeeded) {
  const Case c{"4x8-h100-ndr", "fsdp", {}, 4};
  const schedules::Workload w = workload(c);
  const schedules::ScheduleVariant v{c.method, c.options, c.method};
  sim::SimOptions options;
  options.model = w.model;
  options.verify = true;
  int expansions = 0;
  const sim::FullProgram full = [&] {
    ++expansions;
    return schedules::shared_program(w, v, false);
  };
  auto compact = schedules::shared_program(w, v, true);
  ASSERT_TRUE(compact.ok());
  auto out = sim::run_simulation(**compact, w.topology, options, full);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_GT(out->replicas_collapsed, 1);
  EXPECT_EQ(expansions, 0);
  Program p = **compact;
  p.communicators.back().members.pop_back();
  out = sim::run_simulation(p, w.topology, options, full);
  EXPECT_EQ(expansions, 1);
  // The whole form (the generator's, with every replica's group intact) verifies and runs.
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  // A fault in the compact form is found without the whole form.
  Program q = **compact;
  q = schedules::testing::without_op(q, 0, 0);
  out = sim::run_simulation(q, w.topology, options, full);
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(sim::is_invalid_program(out.error())) << out.error().to_string();
  EXPECT_EQ(expansions, 1);
}

}  // namespace
}  // namespace tawpipe::ir
