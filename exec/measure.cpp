#include "exec/measure.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "common/model/cost.h"

namespace tawpipe::exec {
namespace {

using Interval = std::pair<Nanos, Nanos>;

/// Merges intervals into disjoint sorted ones.
std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

Nanos length(const std::vector<Interval>& v) {
  Nanos s = 0;
  for (const Interval& i : v)
    s += i.second - i.first;
  return s;
}

/// Length of `a` not covered by `b` (both merged).
Nanos uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  Nanos covered = 0;
  for (const Interval& x : a) {
    for (const Interval& y : b) {
      const Nanos lo = std::max(x.first, y.first), hi = std::min(x.second, y.second);
      if (hi > lo) covered += hi - lo;
    }
  }
  return length(a) - covered;
}

SimTime to_time(Nanos ns) {
  return SimTime::ps(ns * 1000);
}

bool is_comm(ir::OpKind k) {
  return k == ir::OpKind::send || k == ir::OpKind::recv || k == ir::OpKind::collective;
}

std::string class_name(const ir::Op& op) {
  switch (op.kind) {
    case ir::OpKind::compute:
      return ir::name(op.compute);
    case ir::OpKind::collective:
      return ir::name(op.collective);
    default:
      return ir::name(op.kind);
  }
}

}  // namespace

report::Report measured_report(const ir::Program& program, const model::ModelConfig& model,
                               const Measurement& m) {
  report::Report r;
  r.kind = "measured";
  r.producer = m.producer;
  r.header = program.header;
  r.ranks = program.num_ranks();
  r.iteration_time = SimTime::from_seconds(m.mean_iteration_seconds);
  r.tokens_per_iteration =
      static_cast<double>(program.header.global_batch) * program.header.seq_len;
  if (m.mean_iteration_seconds > 0) {
    r.tokens_per_second = r.tokens_per_iteration / m.mean_iteration_seconds;
  }
  r.model_flops = model::model_flops_per_token(model, program.header.seq_len).total_flops() *
                  r.tokens_per_iteration;
  std::map<std::string, report::OpClassTotals> classes;
  // Classes with an op without a CPU time (transfers posted together, exec/host host_backend.cpp):
  // their sum would cover only some ops, so they report none.
  std::set<std::string> partial_cpu;
  Nanos first_begin = 0;
  for (std::size_t rank = 0; rank < m.ranks.size(); ++rank)
    first_begin = rank == 0 ? m.ranks[0].begin : std::min(first_begin, m.ranks[rank].begin);
  for (std::size_t rank = 0; rank < m.ranks.size(); ++rank) {
    const ir::RankProgram& rp = program.ranks[rank];
    const IterationRecord& rec = m.ranks[rank];
    std::vector<Interval> compute, comm;
    report::RankStats stats;
    Nanos comm_sum = 0;
    for (const OpTiming& t : rec.ops) {
      const ir::Op& op = rp.ops[static_cast<std::size_t>(t.op)];
      report::OpRecord& o = r.ops.emplace_back();
      o.rank = static_cast<ir::Rank>(rank);
      o.op = t.op;
      o.start = to_time(t.start);
      o.end = to_time(t.end);
      if (t.cpu >= 0) {
        o.cpu = to_time(t.cpu);
        o.preemptions = t.preemptions;
      }
      if (op.kind == ir::OpKind::alloc || op.kind == ir::OpKind::free) continue;
      if (op.stream == 0) compute.emplace_back(t.start, t.end);
      if (is_comm(op.kind)) {
        comm.emplace_back(t.start, t.end);
        comm_sum += t.end - t.start;
      }
      report::OpClassTotals& c = classes[class_name(op)];
      c.name = class_name(op);
      ++c.count;
      c.total += to_time(t.end - t.start);
      if (t.cpu >= 0) {
        c.cpu = c.cpu.value_or(SimTime()) + to_time(t.cpu);
        if (t.preemptions >= 0)
          c.preemptions = std::max<std::int64_t>(c.preemptions, 0) + t.preemptions;
      } else {
        partial_cpu.insert(c.name);
      }
      if (op.kind == ir::OpKind::compute && op.cost != ir::kNone) {
        for (double f : program.costs[static_cast<std::size_t>(op.cost)].flops) {
          c.flops += f;
          r.hardware_flops += f;
        }
      } else {
        c.bytes += static_cast<double>(op.bytes);
      }
    }
    const auto busy = merge(std::move(compute));
    const auto in_flight = merge(std::move(comm));
    const Nanos span = rec.end - rec.begin;
    stats.compute = to_time(length(busy));
    stats.exposed_comm = to_time(uncovered(in_flight, busy));
    stats.idle = to_time(std::max<Nanos>(0, span - length(busy) - uncovered(in_flight, busy)));
    stats.comm_sum = to_time(comm_sum);
    if (rank < m.peak_bytes.size()) stats.peak_memory_bytes = m.peak_bytes[rank];
    if (m.shared_clock) stats.start_offset = to_time(rec.begin - first_begin);
    r.rank_stats.push_back(stats);
  }
  for (auto& [name, totals] : classes) {
    if (partial_cpu.count(name) != 0) {
      totals.cpu.reset();
      totals.preemptions = -1;
    }
    r.op_classes.push_back(std::move(totals));
  }
  return r;
}

std::vector<std::size_t> interleave_order(std::int64_t round, std::size_t n) {
  std::vector<std::size_t> order(n);
  if (n == 0) return order;
  const auto shift = static_cast<std::size_t>(round / 2) % n;
  for (std::size_t i = 0; i < n; ++i)
    order[i] = (shift + i) % n;
  if (round % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace tawpipe::exec
