#include "exec/interpreter.h"

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
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    const ir::Op& op = rp.ops[i];
    const auto idx = static_cast<ir::OpIndex>(i);
    stream_ops_[op.stream].push_back(idx);
    if (op.kind == ir::OpKind::collective) {
      comm_collectives_[static_cast<std::size_t>(op.comm)].push_back(idx);
    }
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
  TAWPIPE_TRY(backend_.begin_iteration(step));
  IterationRecord rec;
  rec.begin = backend_.now();
  rec.ops.resize(n);
  std::vector<State> state(n, State::pending);
  std::vector<Nanos> issued_at(n, 0);
  std::vector<std::size_t> stream_next(stream_ops_.size(), 0);  // next op to issue per stream
  std::vector<std::size_t> stream_busy(stream_ops_.size(), 0);  // issued, not completed
  std::vector<std::size_t> comm_next(comm_collectives_.size(), 0);
  std::size_t completed = 0;
  std::vector<Completion> done;
  std::vector<ir::OpIndex> batch;
  const Nanos timeout = seconds_to_nanos(options_.timeout_seconds);

  auto ready = [&](ir::OpIndex i) {
    const ir::Op& op = rp.ops[static_cast<std::size_t>(i)];
    for (ir::OpIndex dep : ir::deps(rp, op)) {
      if (state[static_cast<std::size_t>(dep)] != State::done) return false;
    }
    if (op.kind == ir::OpKind::collective) {
      const auto c = static_cast<std::size_t>(op.comm);
      if (comm_collectives_[c][comm_next[c]] != i) return false;
    }
    return true;
  };

  // Posts every stream head that may start; returns whether anything was issued.
  auto issue_ready = [&]() -> Expected<bool> {
    bool any = false;
    for (std::size_t s = 0; s < stream_ops_.size(); ++s) {
      const auto& ops = stream_ops_[s];
      while (stream_busy[s] == 0 && stream_next[s] < ops.size()) {
        const ir::OpIndex head = ops[stream_next[s]];
        const std::int32_t group = rp.ops[static_cast<std::size_t>(head)].group;
        batch.clear();
        std::size_t k = stream_next[s];
        do {
          batch.push_back(ops[k++]);
        } while (group != ir::kNone && k < ops.size() &&
                 rp.ops[static_cast<std::size_t>(ops[k])].group == group);
        bool ok = true;
        for (ir::OpIndex i : batch)
          ok = ok && ready(i);
        if (!ok) break;
        if (options_.stall_op != ir::kNone && head <= options_.stall_op &&
            batch.back() >= options_.stall_op) {
          std::this_thread::sleep_for(std::chrono::duration<double>(options_.stall_seconds));
        }
        const Nanos t = backend_.now();
        for (ir::OpIndex i : batch) {
          const auto u = static_cast<std::size_t>(i);
          state[u] = State::issued;
          issued_at[u] = t;
          const ir::Op& op = rp.ops[u];
          if (op.kind == ir::OpKind::collective) ++comm_next[static_cast<std::size_t>(op.comm)];
        }
        TAWPIPE_TRY(backend_.issue(batch));
        stream_busy[s] = batch.size();
        stream_next[s] = k;
        any = true;
      }
    }
    return any;
  };

  while (completed < n) {
    auto issued = issue_ready();
    if (!issued.ok()) return issued.error();
    // The oldest op in flight bounds how long we may block (watchdog).
    ir::OpIndex oldest = ir::kNone;
    Nanos oldest_t = std::numeric_limits<Nanos>::max();
    for (std::size_t i = 0; i < n; ++i) {
      if (state[i] == State::issued && issued_at[i] < oldest_t) {
        oldest_t = issued_at[i];
        oldest = static_cast<ir::OpIndex>(i);
      }
    }
    if (oldest == ir::kNone) {
      return make_error("rank " + std::to_string(rank_) +
                        ": no op can start and none is running (the program deadlocks)");
    }
    const Nanos deadline =
        timeout > 0 ? oldest_t + timeout : backend_.now() + seconds_to_nanos(1.0);
    done.clear();
    TAWPIPE_TRY(backend_.wait(deadline, done));
    for (const Completion& c : done) {
      const auto u = static_cast<std::size_t>(c.op);
      state[u] = State::done;
      rec.ops[u] = OpTiming{c.op, c.start - rec.begin, c.end - rec.begin};
      rec.end = std::max(rec.end, c.end);
      ++completed;
      --stream_busy[rp.ops[u].stream];
    }
    if (done.empty() && timeout > 0 && backend_.now() >= deadline) {
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
