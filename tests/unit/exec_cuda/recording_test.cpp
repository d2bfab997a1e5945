// The CUDA backend's logic on CPU: every rank of a program runs through DeviceBackend over the
// RecordingApi, then the call logs of all ranks are checked against each other and against the
// IR, for the four methods on 2x2 and 3x2 shapes (two iterations, so begin_iteration's cleanup
// is exercised too):
//  - the recorder's own checks (no pointer outside a live allocation, no free of an unknown
//    address, no wait on an event before it was recorded, no group end without a start);
//  - every event recorded before any stream waits on it (re-checked here on the log);
//  - NCCL groups balanced, never nested, one per IR group, holding only sends and recvs;
//  - every send matches a recv on the peer: same communicator, bytes and order per pair;
//  - every call serving an IR op runs on the CUDA stream of the op's IR stream, and each op
//    waits on exactly its cross-stream dependencies;
//  - every collective issued in the same order, with the same count, type and root, on all
//    members, and communicators split with key = the member's index.
#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "exec/device/device_backend.h"
#include "exec/interpreter.h"
#include "exec/recording/recording_api.h"
#include "exec/run_setup.h"

namespace tawpipe::exec::device {
namespace {

constexpr int kIterations = 2;
constexpr const char* kSixLayers = "model.layers=6";
constexpr const char* kBf16 = "train.compute_dtype=bf16";

struct RankLog {
  std::vector<Call> calls;
  std::vector<std::string> errors;
  std::vector<StreamHandle> streams;  ///< per IR stream
  std::map<CommHandle, int> color;    ///< handle -> IR communicator
};

struct Recorded {
  PreparedRun run;
  std::vector<RankLog> ranks;
};

Recorded record(const std::string& schedule, const std::string& topology,
                const std::vector<std::string>& sets = {}) {
  ProgramOptions o;
  o.workload.topology = topology;
  o.schedule = schedule;
  o.flag_sets = sets;
  auto prepared = prepare_run(o);
  EXPECT_TRUE(prepared.ok()) << (prepared.ok() ? "" : prepared.error().to_string());
  if (!prepared.ok()) return {};
  Recorded r{std::move(*prepared), {}};
  const ir::Program& p = r.run.program;
  for (ir::Rank rank = 0; rank < p.num_ranks(); ++rank) {
    RecordingApi api(2);
    RecordingBootstrap boot(rank, p.num_ranks(), 2);
    DeviceOptions opts;
    opts.model = r.run.model;
    opts.optimizer = r.run.train.optimizer;
    opts.poll_interval_ns = 0;
    DeviceBackend backend(api, boot, opts);
    Status s = backend.prepare(p, rank);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().to_string());
    if (!s.ok()) return r;
    Interpreter interp(p, rank, backend);
    for (int it = 0; it < kIterations; ++it) {
      auto rec = interp.run_iteration(it);
      EXPECT_TRUE(rec.ok()) << (rec.ok() ? "" : rec.error().to_string());
      auto loss = backend.take_loss_sum();
      EXPECT_TRUE(loss.ok());
    }
    RankLog log;
    log.calls = api.calls();
    log.errors = api.errors();
    for (std::size_t st = 0; st < p.streams.size(); ++st)
      log.streams.push_back(backend.stream_of(static_cast<ir::StreamId>(st)));
    for (std::size_t c = 0; c < p.communicators.size(); ++c) {
      const CommHandle h = backend.comm_of(static_cast<ir::CommId>(c));
      if (h >= 0) {
        EXPECT_EQ(api.comm_color(h), static_cast<int>(c));
        log.color[h] = static_cast<int>(c);
      }
    }
    r.ranks.push_back(std::move(log));
  }
  return r;
}

bool is_work(Call::Kind k) {
  using K = Call::Kind;
  return k == K::send || k == K::recv || k == K::collective || k == K::gemm || k == K::launch ||
         k == K::copy_device || k == K::copy_to_device || k == K::mem_alloc || k == K::mem_free ||
         k == K::mem_zero;
}

void check_logs(const Recorded& r) {
  const ir::Program& p = r.run.program;
  ASSERT_EQ(r.ranks.size(), static_cast<std::size_t>(p.num_ranks()));
  // Pairing: (comm, from, to) -> message sizes in order, on the sender's and receiver's side.
  std::map<std::tuple<int, ir::Rank, ir::Rank>, std::vector<std::uint64_t>> sent, received;
  // Collectives per communicator and member, in issue order.
  std::map<int, std::map<ir::Rank, std::vector<std::string>>> coll;
  for (ir::Rank rank = 0; rank < p.num_ranks(); ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const RankLog& log = r.ranks[static_cast<std::size_t>(rank)];
    const ir::RankProgram& rp = p.ranks[static_cast<std::size_t>(rank)];
    for (const std::string& e : log.errors)
      ADD_FAILURE() << "recorder: " << e;
    std::set<EventHandle> recorded;
    int depth = 0, groups = 0;
    std::vector<int> end_records(rp.ops.size(), 0), waits(rp.ops.size(), 0);
    for (const Call& c : log.calls) {
      const ir::Op* op = c.op >= 0 ? &rp.ops[static_cast<std::size_t>(c.op)] : nullptr;
      switch (c.kind) {
        case Call::Kind::event_record:
          recorded.insert(c.event);
          break;
        case Call::Kind::stream_wait_event:
          EXPECT_TRUE(recorded.count(c.event)) << "wait before record: " << c.to_string();
          if (op) ++waits[static_cast<std::size_t>(c.op)];
          break;
        case Call::Kind::group_start:
          ++depth;
          ++groups;
          EXPECT_EQ(depth, 1) << "nested NCCL group at " << c.to_string();
          ASSERT_NE(op, nullptr);
          EXPECT_NE(op->group, ir::kNone) << "NCCL group for an ungrouped op " << c.op;
          break;
        case Call::Kind::group_end:
          --depth;
          EXPECT_EQ(depth, 0) << "unbalanced group_end at " << c.to_string();
          break;
        default:
          break;
      }
      if (depth > 0 && is_work(c.kind)) {
        EXPECT_TRUE(c.kind == Call::Kind::send || c.kind == Call::Kind::recv)
            << "inside a group: " << c.to_string();
      }
      if (!op) continue;
      // Stream assignment: all work and event calls of an op on its IR stream's CUDA stream.
      if (c.stream >= 0 && c.kind != Call::Kind::stream_synchronize) {
        EXPECT_EQ(c.stream, log.streams.at(op->stream))
            << "op " << c.op << " on IR stream " << static_cast<int>(op->stream) << ": "
            << c.to_string();
      }
      if (c.kind == Call::Kind::send || c.kind == Call::Kind::recv) {
        const bool is_send = c.kind == Call::Kind::send;
        EXPECT_EQ(op->kind, is_send ? ir::OpKind::send : ir::OpKind::recv) << c.to_string();
        const int color = log.color.at(c.comm);
        EXPECT_EQ(color, op->comm);
        const ir::Rank peer = p.communicators[static_cast<std::size_t>(color)].members.at(
            static_cast<std::size_t>(c.peer));
        EXPECT_EQ(peer, op->peer);
        const std::uint64_t bytes = c.count * dtype_size(c.dtype);
        EXPECT_EQ(bytes, op->bytes);
        if (is_send)
          sent[{color, rank, peer}].push_back(bytes);
        else
          received[{color, peer, rank}].push_back(bytes);
      }
      if (c.kind == Call::Kind::collective) {
        EXPECT_EQ(op->kind, ir::OpKind::collective);
        const int color = log.color.at(c.comm);
        EXPECT_EQ(color, op->comm);
        coll[color][rank].push_back(std::string(name(c.collective)) + " " +
                                    std::to_string(c.count) + " " + name(c.dtype) + " root " +
                                    std::to_string(c.peer));
      }
      if (c.kind == Call::Kind::event_record && c.stream >= 0) {
        // The last record of an op is its end event; count records per op (start + end).
        ++end_records[static_cast<std::size_t>(c.op)];
      }
    }
    EXPECT_EQ(depth, 0) << "NCCL group left open";
    std::set<std::int32_t> ir_groups;
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      const ir::Op& op = rp.ops[i];
      if (op.group != ir::kNone) ir_groups.insert(op.group);
      EXPECT_EQ(end_records[i], 2 * kIterations) << "op " << i << ": start and end events";
      // Cross-stream dependencies of the op's whole group.
      std::set<ir::OpIndex> cross;
      for (std::size_t j = 0; j < rp.ops.size(); ++j) {
        const ir::Op& other = rp.ops[j];
        const bool same_batch = j == i || (op.group != ir::kNone && other.group == op.group);
        if (!same_batch) continue;
        for (ir::OpIndex d : ir::deps(rp, other))
          if (rp.ops[static_cast<std::size_t>(d)].stream != op.stream) cross.insert(d);
      }
      const bool head = op.group == ir::kNone || i == 0 || rp.ops[i - 1].group != op.group;
      if (head) {
        EXPECT_EQ(waits[i], static_cast<int>(cross.size()) * kIterations)
            << "op " << i << ": stream waits != cross-stream dependencies";
      }
    }
    EXPECT_EQ(groups, static_cast<int>(ir_groups.size()) * kIterations);
  }
  // Sends pair with receives across ranks, in order.
  EXPECT_EQ(sent, received);
  std::uint64_t messages = 0;
  for (const auto& [key, v] : sent)
    messages += v.size();
  // Collectives agree on every member.
  for (const auto& [color, by_rank] : coll) {
    const auto& members = p.communicators[static_cast<std::size_t>(color)].members;
    ASSERT_EQ(by_rank.size(), members.size()) << "comm " << color;
    for (const auto& [rank, seq] : by_rank)
      EXPECT_EQ(seq, by_rank.begin()->second)
          << "comm " << p.communicators[static_cast<std::size_t>(color)].name << " rank " << rank;
  }
  // Some traffic happened at all (guards against a vacuous pass).
  std::uint64_t ir_p2p = 0, ir_coll = 0;
  for (const ir::RankProgram& rp : p.ranks)
    for (const ir::Op& op : rp.ops) {
      ir_p2p += op.kind == ir::OpKind::send;
      ir_coll += op.kind == ir::OpKind::collective;
    }
  EXPECT_EQ(messages, ir_p2p * kIterations);
  std::uint64_t colls = 0;
  for (const auto& [color, by_rank] : coll)
    for (const auto& [rank, seq] : by_rank)
      colls += seq.size();
  EXPECT_EQ(colls, ir_coll * kIterations);
  EXPECT_GT(messages + colls, 0u);
}

/// Every rank splits every IR communicator in id order with key = the member index.
void check_splits(const Recorded& r) {
  const ir::Program& p = r.run.program;
  for (ir::Rank rank = 0; rank < p.num_ranks(); ++rank) {
    std::vector<std::pair<int, int>> splits;
    for (const Call& c : r.ranks[static_cast<std::size_t>(rank)].calls)
      if (c.kind == Call::Kind::comm_split) splits.emplace_back(c.color, c.key);
    ASSERT_EQ(splits.size(), p.communicators.size());
    for (std::size_t c = 0; c < splits.size(); ++c) {
      const auto& m = p.communicators[c].members;
      const auto it = std::find(m.begin(), m.end(), rank);
      if (it == m.end()) {
        EXPECT_LT(splits[c].first, 0);
      } else {
        EXPECT_EQ(splits[c].first, static_cast<int>(c));
        EXPECT_EQ(splits[c].second, static_cast<int>(it - m.begin()));
      }
    }
  }
}

struct Case {
  std::string schedule, topology;
  std::vector<std::string> sets;  ///< 3x2: six layers, so every method cuts them over 6 ranks
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.schedule << " on " << c.topology;
}

class RecordingTest : public ::testing::TestWithParam<Case> {};

TEST_P(RecordingTest, CallLogsAreConsistentAcrossRanks) {
  const Recorded r = record(GetParam().schedule, GetParam().topology, GetParam().sets);
  ASSERT_EQ(r.ranks.size(), static_cast<std::size_t>(r.run.program.num_ranks()));
  check_logs(r);
  check_splits(r);
}

INSTANTIATE_TEST_SUITE_P(
    Methods, RecordingTest,
    ::testing::Values(Case{"tawpipe", "2x2-cpu", {}}, Case{"tawpipe", "3x2-cpu", {kSixLayers}},
                      Case{"weipipe", "2x2-cpu", {}}, Case{"weipipe", "3x2-cpu", {kSixLayers}},
                      Case{"fsdp", "2x2-cpu", {}}, Case{"fsdp", "3x2-cpu", {kSixLayers}},
                      Case{"1f1b", "2x2-cpu", {}}, Case{"1f1b", "3x2-cpu", {kSixLayers}},
                      Case{"fsdp", "2x2-cpu", {kBf16}}, Case{"tawpipe", "2x2-cpu", {kBf16}}),
    [](const ::testing::TestParamInfo<Case>& param_info) {
      std::string n = param_info.param.schedule + "_" + param_info.param.topology;
      for (const std::string& set : param_info.param.sets)
        n += "_" + set.substr(set.find('=') + 1);
      std::replace_if(
          n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
      return n;
    });

TEST(RecordingBackend, NoDeviceIsAnErrorNotACrash) {
  ProgramOptions o;
  auto prepared = prepare_run(o);
  ASSERT_TRUE(prepared.ok());
  RecordingApi api(0);
  RecordingBootstrap boot(0, prepared->program.num_ranks(), 2);
  DeviceOptions opts;
  opts.model = prepared->model;
  DeviceBackend backend(api, boot, opts);
  Status s = backend.prepare(prepared->program, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("no CUDA device visible"), std::string::npos);
}

TEST(RecordingBackend, LocalRankFromLauncherEnvironment) {
  std::map<std::string, std::string> env;
  auto get = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_FALSE(local_rank_from_env(get).has_value());
  env["SLURM_LOCALID"] = "5";
  EXPECT_EQ(local_rank_from_env(get), 5);
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "3";
  EXPECT_EQ(local_rank_from_env(get), 3);  // Open MPI's wins under mpirun
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "x";
  EXPECT_EQ(local_rank_from_env(get), 5);  // unparsable: next source
}

TEST(RecordingBackend, DeviceIsLocalRankModuloDevices) {
  ProgramOptions o;
  auto prepared = prepare_run(o);
  ASSERT_TRUE(prepared.ok());
  for (int rank = 0; rank < prepared->program.num_ranks(); ++rank) {
    RecordingApi api(2);
    RecordingBootstrap boot(rank, prepared->program.num_ranks(), 4);
    DeviceOptions opts;
    opts.model = prepared->model;
    DeviceBackend backend(api, boot, opts);
    ASSERT_TRUE(backend.prepare(prepared->program, rank).ok());
    const auto& calls = api.calls();
    auto it = std::find_if(calls.begin(), calls.end(),
                           [](const Call& c) { return c.kind == Call::Kind::set_device; });
    ASSERT_NE(it, calls.end());
    EXPECT_EQ(it->peer, rank % 2);
    // Only rank 0 makes the NCCL unique id.
    const bool made = std::any_of(calls.begin(), calls.end(),
                                  [](const Call& c) { return c.kind == Call::Kind::unique_id; });
    EXPECT_EQ(made, rank == 0);
  }
}

TEST(RecordingBackend, WatchdogNamesTheStuckOpThenCommunicatorsAbort) {
  ProgramOptions o;
  auto prepared = prepare_run(o);
  ASSERT_TRUE(prepared.ok());
  const ir::Program& p = prepared->program;
  const ir::RankProgram& rp = p.ranks[0];
  const auto send = std::find_if(rp.ops.begin(), rp.ops.end(),
                                 [](const ir::Op& op) { return op.kind == ir::OpKind::send; });
  ASSERT_NE(send, rp.ops.end());
  const auto stuck = static_cast<ir::OpIndex>(send - rp.ops.begin());
  RecordingApi api(1);
  api.stall_op(stuck);
  RecordingBootstrap boot(0, p.num_ranks(), 2);
  DeviceOptions opts;
  opts.model = prepared->model;
  opts.poll_interval_ns = 1'000'000;
  DeviceBackend backend(api, boot, opts);
  ASSERT_TRUE(backend.prepare(p, 0).ok());
  InterpreterOptions io;
  io.timeout_seconds = 0.05;
  Interpreter interp(p, 0, backend, io);
  auto rec = interp.run_iteration(0);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.error().message.find("rank 0: timeout after 0.05 s waiting for op " +
                                     std::to_string(stuck) + " (send to rank"),
            std::string::npos)
      << rec.error().message;
  backend.abort_communicators();  // what tawexec does before exiting non-zero
  EXPECT_TRUE(std::any_of(api.calls().begin(), api.calls().end(),
                          [](const Call& c) { return c.kind == Call::Kind::comm_abort; }));
}

TEST(RecordingBackend, WatchdogAbortsEveryCommunicator) {
  ProgramOptions o;
  auto prepared = prepare_run(o);
  ASSERT_TRUE(prepared.ok());
  RecordingApi api(1);
  RecordingBootstrap boot(1, prepared->program.num_ranks(), 2);
  DeviceOptions opts;
  opts.model = prepared->model;
  DeviceBackend backend(api, boot, opts);
  ASSERT_TRUE(backend.prepare(prepared->program, 1).ok());
  backend.abort_communicators();
  backend.abort_communicators();  // idempotent
  std::set<CommHandle> aborted;
  for (const Call& c : api.calls()) {
    if (c.kind == Call::Kind::comm_abort) {
      EXPECT_TRUE(aborted.insert(c.comm).second);
    }
  }
  std::size_t member_of = 1;  // world
  for (const auto& comm : prepared->program.communicators) {
    member_of += static_cast<std::size_t>(std::count(comm.members.begin(), comm.members.end(), 1));
  }
  EXPECT_EQ(aborted.size(), member_of);
}

}  // namespace
}  // namespace tawpipe::exec::device
