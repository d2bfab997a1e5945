#include "exec/interpreter.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <thread>

namespace tawpipe::exec {
namespace {

enum class State : std::uint8_t { pending, issued, done };

Nanos seconds_to_nanos(double s) {
  return static_cast<Nanos>(s * 1e9);
}

std::string comm_name(const ir::Program& p, ir::CommId c) {
  if (c < 0 || static_cast<std::size_t>(c) >= p.communicators.size()) return "?";
  return p.communicators[static_cast<std::size_t>(c)].name;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

Interpreter::Interpreter(const ir::Program& program, ir::Rank rank, Backend& backend,
                         InterpreterOptions options)
    : program_(program), rank_(rank), backend_(backend), options_(options) {
  const ir::RankProgram& rp = program_.ranks[static_cast<std::size_t>(rank_)];
  stream_ops_.resize(program_.streams.size());
  comm_collectives_.resize(program_.communicators.size());
  preds_.resize(rp.ops.size());
  succs_.resize(rp.ops.size());
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    const ir::Op& op = rp.ops[i];
    const auto idx = static_cast<ir::OpIndex>(i);
    auto& preds = preds_[i];
    if (!stream_ops_[op.stream].empty()) preds.push_back(stream_ops_[op.stream].back());
    for (ir::OpIndex dep : ir::deps(rp, op))
      preds.push_back(dep);
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (ir::OpIndex p : preds)
      succs_[static_cast<std::size_t>(p)].push_back(idx);
    stream_ops_[op.stream].push_back(idx);
    if (op.kind == ir::OpKind::collective) {
      comm_collectives_[static_cast<std::size_t>(op.comm)].push_back(idx);
    }
    if (op.kind == ir::OpKind::send || op.kind == ir::OpKind::recv ||
        op.kind == ir::OpKind::collective)
      comm_ops_.push_back(idx);
  }
}

std::string Interpreter::describe_wait(const ir::Program& p, ir::Rank rank, ir::OpIndex index) {
  const ir::Op& op = p.ranks[static_cast<std::size_t>(rank)].ops[static_cast<std::size_t>(index)];
  switch (op.kind) {
    case ir::OpKind::send:
      return "send to rank " + std::to_string(op.peer) + " on comm " + comm_name(p, op.comm);
    case ir::OpKind::recv:
      return "recv from rank " + std::to_string(op.peer) + " on comm " + comm_name(p, op.comm);
    case ir::OpKind::collective: {
      std::string s = std::string(ir::name(op.collective)) + " on comm " + comm_name(p, op.comm);
      if (op.peer != ir::kNone) s += " root rank " + std::to_string(op.peer);
      return s;
    }
    case ir::OpKind::compute:
      return std::string("compute ") + ir::name(op.compute) + " [" +
             std::to_string(op.layer_begin) + "," + std::to_string(op.layer_end) + ")";
    default:
      return ir::name(op.kind);
  }
}

Expected<IterationRecord> Interpreter::run_iteration(std::int64_t step) {
  const ir::RankProgram& rp = program_.ranks[static_cast<std::size_t>(rank_)];
  const std::size_t n = rp.ops.size();
  // 0: issue an op when its inputs are complete (host); N: issue ahead, N ops in flight at most.
  const std::size_t ahead = backend_.issue_ahead();
  // Collectives of a communicator in program order over all its streams, or (host backend: one
  // MPI communicator per (communicator, stream)) only within each stream, which the stream's
  // FIFO already gives.
  const bool per_communicator = backend_.collective_order() == CollectiveOrder::communicator;
  TAWPIPE_TRY(backend_.begin_iteration(step));
  IterationRecord rec;
  rec.begin = backend_.now();
  rec.ops.resize(n);
  std::vector<State> state(n, State::pending);
  // Watchdog bookkeeping: an issued op "could run" once its predecessors (stream order and
  // dependencies) completed; `blocked` counts those still outstanding, `runnable_at` is when
  // the last of them completed (or when the op was issued, if later).
  std::vector<std::uint32_t> blocked(n, 0);
  std::vector<Nanos> runnable_at(n, 0);
  std::vector<std::size_t> stream_next(stream_ops_.size(), 0);  // next op to issue per stream
  std::vector<std::size_t> stream_busy(stream_ops_.size(), 0);  // issued, not completed
  std::vector<std::size_t> comm_next(comm_collectives_.size(), 0);
  std::size_t comm_cursor = 0;  // issue-ahead: next communication op in program order
  std::size_t completed = 0, in_flight = 0;
  std::vector<Completion> done;
  std::vector<ir::OpIndex> batch;
  const Nanos timeout = seconds_to_nanos(options_.timeout_seconds);

  auto is_comm = [&](ir::OpIndex i) {
    const ir::OpKind k = rp.ops[static_cast<std::size_t>(i)].kind;
    return k == ir::OpKind::send || k == ir::OpKind::recv || k == ir::OpKind::collective;
  };
  auto ready = [&](ir::OpIndex i) {
    const ir::Op& op = rp.ops[static_cast<std::size_t>(i)];
    for (ir::OpIndex dep : ir::deps(rp, op)) {
      const State d = state[static_cast<std::size_t>(dep)];
      if (ahead > 0 ? d == State::pending : d != State::done) return false;
    }
    if (op.kind == ir::OpKind::collective && per_communicator) {
      const auto c = static_cast<std::size_t>(op.comm);
      if (comm_collectives_[c][comm_next[c]] != i) return false;
    }
    return true;
  };
  // The batch (one op or its whole group) headed by stream s's next op; false when the stream
  // is finished or the batch may not be issued yet.
  auto head_batch = [&](std::size_t s) {
    const auto& ops = stream_ops_[s];
    batch.clear();
    if (stream_next[s] >= ops.size()) return false;
    if (ahead == 0 && stream_busy[s] != 0) return false;
    const ir::OpIndex head = ops[stream_next[s]];
    const std::int32_t group = rp.ops[static_cast<std::size_t>(head)].group;
    std::size_t k = stream_next[s];
    do {
      batch.push_back(ops[k++]);
    } while (group != ir::kNone && k < ops.size() &&
             rp.ops[static_cast<std::size_t>(ops[k])].group == group);
    for (ir::OpIndex i : batch)
      if (!ready(i)) return false;
    if (ahead > 0) {
      // Communication in program order (by the group's first communication op).
      while (comm_cursor < comm_ops_.size() &&
             state[static_cast<std::size_t>(comm_ops_[comm_cursor])] != State::pending)
        ++comm_cursor;
      for (ir::OpIndex i : batch) {
        if (!is_comm(i)) continue;
        if (comm_cursor >= comm_ops_.size() || comm_ops_[comm_cursor] != i) return false;
        break;
      }
    }
    return true;
  };
  auto post = [&](std::size_t s) -> Status {
    const ir::OpIndex head = batch.front();
    if (options_.stall_op != ir::kNone && head <= options_.stall_op &&
        batch.back() >= options_.stall_op) {
      std::this_thread::sleep_for(std::chrono::duration<double>(options_.stall_seconds));
    }
    const Nanos t = backend_.now();
    for (ir::OpIndex i : batch) {
      const auto u = static_cast<std::size_t>(i);
      state[u] = State::issued;
      runnable_at[u] = t;
      blocked[u] = 0;
      for (ir::OpIndex p : preds_[u])
        blocked[u] += state[static_cast<std::size_t>(p)] != State::done;
      const ir::Op& op = rp.ops[u];
      if (op.kind == ir::OpKind::collective) ++comm_next[static_cast<std::size_t>(op.comm)];
    }
    TAWPIPE_TRY(backend_.issue(batch));
    stream_busy[s] += batch.size();
    stream_next[s] += batch.size();
    in_flight += batch.size();
    return Status::success();
  };

  // Host: posts every stream head whose inputs are complete.
  auto issue_ready = [&]() -> Status {
    for (std::size_t s = 0; s < stream_ops_.size(); ++s) {
      while (head_batch(s))
        TAWPIPE_TRY(post(s));
    }
    return Status::success();
  };
  // Issue-ahead: posts, lowest program index first, every stream head whose inputs are issued,
  // until the bound on ops in flight is reached.
  auto issue_ahead = [&]() -> Status {
    for (;;) {
      std::size_t best = stream_ops_.size();
      ir::OpIndex best_op = ir::kNone;
      for (std::size_t s = 0; s < stream_ops_.size(); ++s) {
        if (stream_next[s] >= stream_ops_[s].size()) continue;
        const ir::OpIndex head = stream_ops_[s][stream_next[s]];
        if ((best_op == ir::kNone || head < best_op) && head_batch(s)) {
          best = s;
          best_op = head;
        }
      }
      if (best == stream_ops_.size()) return Status::success();
      head_batch(best);
      if (in_flight > 0 && in_flight + batch.size() > ahead) return Status::success();
      TAWPIPE_TRY(post(best));
    }
  };

  while (completed < n) {
    TAWPIPE_TRY(ahead > 0 ? issue_ahead() : issue_ready());
    // The op that could run for the longest bounds how long we may block (watchdog).
    ir::OpIndex oldest = ir::kNone;
    Nanos oldest_t = std::numeric_limits<Nanos>::max();
    for (std::size_t i = 0; i < n; ++i) {
      if (state[i] == State::issued && blocked[i] == 0 && runnable_at[i] < oldest_t) {
        oldest_t = runnable_at[i];
        oldest = static_cast<ir::OpIndex>(i);
      }
    }
    if (in_flight == 0) {
      return make_error("rank " + std::to_string(rank_) +
                        ": no op can start and none is running (the program deadlocks)");
    }
    const Nanos deadline = timeout > 0 && oldest != ir::kNone
                               ? oldest_t + timeout
                               : backend_.now() + seconds_to_nanos(1.0);
    done.clear();
    TAWPIPE_TRY(backend_.wait(deadline, done));
    for (const Completion& c : done) {
      const auto u = static_cast<std::size_t>(c.op);
      state[u] = State::done;
      rec.ops[u] = OpTiming{c.op, c.start - rec.begin, c.end - rec.begin, c.cpu, c.preemptions};
      rec.end = std::max(rec.end, c.end);
      ++completed;
      --in_flight;
      --stream_busy[rp.ops[u].stream];
      for (ir::OpIndex v : succs_[u]) {
        const auto w = static_cast<std::size_t>(v);
        if (state[w] == State::issued && blocked[w] > 0 && --blocked[w] == 0)
          runnable_at[w] = std::max(runnable_at[w], c.end);
      }
    }
    if (done.empty() && timeout > 0 && oldest != ir::kNone && backend_.now() >= deadline) {
      return make_error("rank " + std::to_string(rank_) + ": timeout after " +
                        format_seconds(options_.timeout_seconds) + " s waiting for op " +
                        std::to_string(oldest) + " (" + describe_wait(program_, rank_, oldest) +
                        ")");
    }
  }
  if (n == 0) rec.end = rec.begin;
  TAWPIPE_TRY(backend_.end_iteration());
  return rec;
}

}  // namespace tawpipe::exec
