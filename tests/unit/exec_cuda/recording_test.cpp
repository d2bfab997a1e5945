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
//    members, and communicators split with key = the member's index;
//  - issue-ahead (exec/backend.h): no host synchronisation inside an iteration except the one
//    that ends it; every cross-stream dependency becomes an event wait; every communication op
//    is issued before the compute ops before it on other streams have been seen complete; NCCL
//    calls follow the program order; with a small bound, no more ops in flight (and events)
//    than the bound allows.
#include <algorithm>
#include <cstdint>
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

/// What the interpreter did, seen from the Backend seam: the order of issues and completions
/// and where each iteration began and ended in the call log.
struct SeamEvent {
  enum class Kind : std::uint8_t { begin, issue, complete, end } kind = Kind::issue;
  ir::OpIndex op = ir::kNone;
  std::size_t call = 0;  ///< calls logged so far
  std::size_t in_flight = 0;
};

/// A Backend that forwards to the DeviceBackend and logs the seam (SeamEvent).
class SeamLog final : public Backend {
 public:
  SeamLog(DeviceBackend& inner, const RecordingApi& api) : inner_(inner), api_(api) {}
  Status prepare(const ir::Program& p, ir::Rank r) override { return inner_.prepare(p, r); }
  Status begin_iteration(std::int64_t step) override {
    note(SeamEvent::Kind::begin, ir::kNone);
    return inner_.begin_iteration(step);
  }
  Status issue(std::span<const ir::OpIndex> ops) override {
    in_flight_ += ops.size();
    for (ir::OpIndex i : ops)
      note(SeamEvent::Kind::issue, i);
    return inner_.issue(ops);
  }
  Status wait(Nanos deadline, std::vector<Completion>& done) override {
    const std::size_t before = done.size();
    TAWPIPE_TRY(inner_.wait(deadline, done));
    for (std::size_t k = before; k < done.size(); ++k) {
      --in_flight_;
      note(SeamEvent::Kind::complete, done[k].op);
    }
    return Status::success();
  }
  Status end_iteration() override {
    note(SeamEvent::Kind::end, ir::kNone);
    return inner_.end_iteration();
  }
  Nanos now() const override { return inner_.now(); }
  std::size_t issue_ahead() const override { return inner_.issue_ahead(); }
  std::vector<SeamEvent> events;

 private:
  void note(SeamEvent::Kind k, ir::OpIndex op) {
    events.push_back({k, op, api_.calls().size(), in_flight_});
  }
  DeviceBackend& inner_;
  const RecordingApi& api_;
  std::size_t in_flight_ = 0;
};

struct RankLog {
  std::vector<SeamEvent> seam;
  int events_created = 0;
  std::vector<Call> calls;
  std::vector<std::string> errors;
  std::vector<StreamHandle> streams;  ///< per IR stream
  std::map<CommHandle, int> color;    ///< handle -> IR communicator
};

struct Recorded {
  PreparedRun run;
  std::vector<RankLog> ranks;
};

/// Ops in flight at most in record(): more than any test program has ops per rank, so that
/// the whole iteration is issued before anything completes, unless a test asks for less.
constexpr std::size_t kUnbounded = 1 << 20;

Recorded record(const std::string& schedule, const std::string& topology,
                const std::vector<std::string>& sets = {}, std::size_t max_in_flight = kUnbounded) {
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
    opts.max_in_flight = max_in_flight;
    DeviceBackend backend(api, boot, opts);
    SeamLog seam(backend, api);
    Status s = seam.prepare(p, rank);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().to_string());
    if (!s.ok()) return r;
    Interpreter interp(p, rank, seam);
    for (int it = 0; it < kIterations; ++it) {
      auto rec = interp.run_iteration(it);
      EXPECT_TRUE(rec.ok()) << (rec.ok() ? "" : rec.error().to_string());
      auto loss = backend.take_loss_sum();
      EXPECT_TRUE(loss.ok());
    }
    RankLog log;
    log.seam = std::move(seam.events);
    log.events_created = api.events_created();
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

/// `exact_waits`: every cross-stream dependency is an event wait (the whole iteration was
/// issued before anything completed); otherwise a dependency already seen complete may skip it.
void check_logs(const Recorded& r, bool exact_waits = true) {
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
      if (head && exact_waits) {
        EXPECT_EQ(waits[i], static_cast<int>(cross.size()) * kIterations)
            << "op " << i << ": stream waits != cross-stream dependencies";
      } else if (head) {
        EXPECT_LE(waits[i], static_cast<int>(cross.size()) * kIterations)
            << "op " << i << ": stream waits beyond the cross-stream dependencies";
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

bool is_comm(const ir::Op& op) {
  return op.kind == ir::OpKind::send || op.kind == ir::OpKind::recv ||
         op.kind == ir::OpKind::collective;
}

/// Issue-ahead, from the seam log of every rank and iteration (see the file comment).
/// `bound`: the ops-in-flight bound the run used (kUnbounded: the whole iteration is issued
/// before anything completes, so every comm op must be issued before the compute ops before it
/// on other streams have completed).
void check_issue_ahead(const Recorded& r, std::size_t bound) {
  const ir::Program& p = r.run.program;
  for (ir::Rank rank = 0; rank < p.num_ranks(); ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const RankLog& log = r.ranks[static_cast<std::size_t>(rank)];
    const ir::RankProgram& rp = p.ranks[static_cast<std::size_t>(rank)];
    const std::size_t n = rp.ops.size();
    std::size_t largest_group = 1;
    for (std::size_t i = 0; i < n; ++i) {
      if (rp.ops[i].group == ir::kNone) continue;
      largest_group = std::max<std::size_t>(
          largest_group, static_cast<std::size_t>(std::count_if(
                             rp.ops.begin(), rp.ops.end(),
                             [&](const ir::Op& o) { return o.group == rp.ops[i].group; })));
    }
    int iterations = 0;
    std::size_t pairs = 0;
    for (std::size_t e = 0; e < log.seam.size(); ++e) {
      if (log.seam[e].kind != SeamEvent::Kind::begin) continue;
      ++iterations;
      std::size_t end = e;
      while (end < log.seam.size() && log.seam[end].kind != SeamEvent::Kind::end)
        ++end;
      ASSERT_LT(end, log.seam.size()) << "iteration without end";
      // No synchronisation from begin_iteration to end_iteration; end_iteration's own.
      const std::size_t next =
          end + 1 < log.seam.size() ? log.seam[end + 1].call : log.calls.size();
      for (std::size_t c = log.seam[e].call; c < log.seam[end].call; ++c)
        EXPECT_FALSE(RecordingApi::synchronises(log.calls[c].kind))
            << "host synchronisation inside iteration " << iterations << ": "
            << log.calls[c].to_string();
      EXPECT_TRUE(
          std::any_of(log.calls.begin() + static_cast<std::ptrdiff_t>(log.seam[end].call),
                      log.calls.begin() + static_cast<std::ptrdiff_t>(next),
                      [](const Call& c) { return c.kind == Call::Kind::stream_synchronize; }))
          << "no synchronisation at the end of iteration " << iterations;
      // Positions of issue and completion per op in this iteration; the bound.
      std::vector<std::size_t> issued(n, SIZE_MAX), completed(n, SIZE_MAX);
      for (std::size_t k = e + 1; k < end; ++k) {
        const SeamEvent& ev = log.seam[k];
        auto& slot = ev.kind == SeamEvent::Kind::issue ? issued : completed;
        const auto u = static_cast<std::size_t>(ev.op);
        EXPECT_EQ(slot[u], SIZE_MAX) << "op " << ev.op << " issued or completed twice";
        slot[u] = k;
        if (ev.kind == SeamEvent::Kind::issue) {
          EXPECT_LE(ev.in_flight, std::max(bound, largest_group)) << "op " << ev.op;
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_NE(issued[i], SIZE_MAX) << "op " << i << " never issued";
        ASSERT_NE(completed[i], SIZE_MAX) << "op " << i << " never reported complete";
        EXPECT_LT(issued[i], completed[i]);
      }
      // Issue-ahead: a comm op goes out before the compute before it on another stream is done.
      if (bound == kUnbounded) {
        for (std::size_t c = 0; c < n; ++c) {
          if (!is_comm(rp.ops[c])) continue;
          for (std::size_t k = 0; k < c; ++k) {
            if (rp.ops[k].kind != ir::OpKind::compute || rp.ops[k].stream == rp.ops[c].stream)
              continue;
            ++pairs;
            EXPECT_LT(issued[c], completed[k])
                << "comm op " << c << " waited for compute op " << k << " to complete";
          }
        }
      }
    }
    EXPECT_EQ(iterations, kIterations);
    if (bound == kUnbounded) {
      // Every rank of every method computes before it communicates on another stream.
      EXPECT_GT(pairs, 0u) << "no comm op after a compute op on another stream";
    } else {
      EXPECT_LE(log.events_created, 2 * static_cast<int>(std::max(bound, largest_group)) + 1);
    }
    // NCCL calls in program order, a group by its first op, within each iteration.
    ir::OpIndex last = ir::kNone;
    for (const Call& c : log.calls) {
      if (c.kind == Call::Kind::stream_synchronize) last = ir::kNone;  // iteration end
      if (c.kind != Call::Kind::send && c.kind != Call::Kind::recv &&
          c.kind != Call::Kind::collective)
        continue;
      ir::OpIndex head = c.op;
      const ir::Op& op = rp.ops[static_cast<std::size_t>(c.op)];
      if (op.group != ir::kNone) {
        for (std::size_t j = 0; j < n; ++j)
          if (rp.ops[j].group == op.group) {
            head = static_cast<ir::OpIndex>(j);
            break;
          }
      }
      if (last != ir::kNone) {
        EXPECT_GE(head, last) << "NCCL call out of program order: " << c.to_string();
      }
      last = head;
    }
  }
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
  check_issue_ahead(r, kUnbounded);
}

TEST_P(RecordingTest, BoundedIssueAheadKeepsFewOpsInFlight) {
  // Three ops in flight at most: the iteration still completes (waiting for completions), with
  // at most 2 x 3 + 1 events, no synchronisation inside it, and the same NCCL traffic.
  constexpr std::size_t kBound = 3;
  const Recorded r = record(GetParam().schedule, GetParam().topology, GetParam().sets, kBound);
  ASSERT_EQ(r.ranks.size(), static_cast<std::size_t>(r.run.program.num_ranks()));
  check_logs(r, /*exact_waits=*/false);
  check_issue_ahead(r, kBound);
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
