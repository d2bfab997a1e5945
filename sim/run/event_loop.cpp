// The executor's event loop (executor_impl.h): posts units when their dependencies and stream
// predecessor are done, starts and completes ops, and accounts compute / exposed-communication
// time per rank. It only touches flat vectors: no allocation or string work per event.
#include "sim/run/executor_impl.h"

#include <algorithm>
#include <cmath>

namespace tawpipe::sim::detail {

void Executor::on_event(const Event& e) {
  if (e.kind == kOpDone) {
    complete_op(idx(e.data));
  } else {
    complete_collective(static_cast<std::uint32_t>(e.data));
  }
  drain();
}

void Executor::post_unit(std::int32_t unit) {
  if (!thread_idle_since_.empty() && runs_on_thread(unit))  // its thread slept since then
    charge_handoff_wakeup(rt_[unit_ops_[units_[idx(unit)].first_op]].rank,
                          engine_.now() - thread_idle_since_[idx(unit)]);
  const std::uint32_t end = units_[idx(unit) + 1].first_op;
  for (std::uint32_t i = units_[idx(unit)].first_op; i < end; ++i)
    start_op(unit_ops_[i]);
}

void Executor::start_op(std::size_t g) {
  RtOp& op = rt_[g];
  const ir::Rank r = op.rank;
  const SimTime now = engine_.now();
  res_.op_start[g] = now;
  op.state = 1;
  switch (op.kind) {
    case ir::OpKind::compute:
    case ir::OpKind::copy: {
      account(r);
      RankClock& c = clock_[idx(r)];
      ++c.compute_running;
      SimTime t = op.duration;
      if (options_.sm_contention > 0.0 && c.comm_running > 0)
        t = SimTime::ps(static_cast<std::int64_t>(
            std::ceil(static_cast<double>(t.picoseconds()) * (1.0 + options_.sm_contention))));
      if (op.kind == ir::OpKind::compute && op.bytes > 0)
        memory_->add(r, MemoryKind::workspace, op.bytes, now);
      if (cores_) {
        start_compute_on_core(g, t);
      } else if (contention_model_) {
        start_compute_contended(g, t);
      } else {
        engine_.schedule_after(t, Event{handler_, kOpDone, g});
      }
      break;
    }
    case ir::OpKind::alloc:
    case ir::OpKind::free:
      move_memory(g, now);
      if (!zero_bytes_.empty() && zero_bytes_[g] > 0) {  // CPU topologies: the backend's fill
        start_zeroing(g);
        break;
      }
      immediate_.push_back(static_cast<std::uint32_t>(g));
      break;
    case ir::OpKind::send:
    case ir::OpKind::recv: {
      account(r);
      ++clock_[idx(r)].comm_running;
      const std::size_t partner = idx(op.link);
      if (rt_[partner].state == 1) start_p2p(op.kind == ir::OpKind::send ? g : partner);
      break;
    }
    case ir::OpKind::collective: {
      account(r);
      ++clock_[idx(r)].comm_running;
      const auto inst = static_cast<std::uint32_t>(op.link);
      Instance& in = instances_[inst];
      const bool last = ++in.arrived == in.members;
      if (shm_) {  // CPU topologies: some collectives copy as their members post
        if (in.member_start == kStartUndecided) in.member_start = member_start_mode(inst, g);
        if (in.member_start != kStartWhole) post_member_shm(inst, g);
      }
      if (last) start_collective(inst);
      break;
    }
  }
}

void Executor::complete_op(std::size_t g) {
  if (!last_touch_.empty()) note_touch(g);
  RtOp& op = rt_[g];
  const ir::Rank r = op.rank;
  if (is_compute(op.kind)) {
    account(r);
    --clock_[idx(r)].compute_running;
    if (contention_model_) finish_compute_contended(g);
    if (op.kind == ir::OpKind::compute && op.bytes > 0)
      memory_->remove(r, MemoryKind::workspace, op.bytes, engine_.now());
  } else if (is_comm(op.kind)) {
    account(r);
    --clock_[idx(r)].comm_running;
  }
  res_.op_end[g] = engine_.now();
  op.state = 2;
  ++completed_;
  const std::int32_t u = op.unit;
  UnitLink& unit = unit_links_[idx(u)];
  if (--unit.pending == 0) {
    if (!thread_idle_since_.empty()) {  // CPU topologies: the hand-offs' wake-ups
      const bool thread = runs_on_thread(u);
      if (unit.next != kNoUnit)
        thread_idle_since_[idx(unit.next)] = thread ? engine_.now() : thread_idle_since_[idx(u)];
      // The interpreter wakes for a completion unless it is awake: another completion at this
      // instant, or a fill it runs (its sleep starts when the fill ends).
      SimTime& woke = interpreter_woke_[idx(r)];
      if (!zero_bytes_.empty() && zero_bytes_[g] > 0) {  // an alloc's fill (start_zeroing)
        --interpreter_filling_[idx(r)];
        woke = engine_.now();
      } else if (thread && woke != engine_.now() && interpreter_filling_[idx(r)] == 0) {
        charge_handoff_wakeup(r, engine_.now() - woke);
        woke = engine_.now();
      }
    }
    if (unit.next != kNoUnit) release(unit.next);
    for (std::uint32_t i = comm_next_offset_[idx(u)]; i < comm_next_offset_[idx(u) + 1]; ++i)
      release(comm_next_[i]);
  }
  for (std::uint32_t i = dependents_offset_[g]; i < dependents_offset_[g + 1]; ++i)
    release(dependents_[i]);
}

Expected<ExecutionResult> Executor::run() {
  const std::size_t units = units_.size() - 1;  // without the sentinel
  for (std::size_t u = 0; u < units; ++u) {
    if (units_[u].remaining == 0) post_unit(static_cast<std::int32_t>(u));
  }
  drain();
  engine_.run();
  if (engine_.time_overflowed()) {
    return make_error(
        "simulated time ran past the simulator's range (2^63 ps, about 106 days) "
        "after " +
        std::to_string(static_cast<std::int64_t>(engine_.now().seconds())) +
        " s: the workload is far too large for this topology's devices (choose a "
        "smaller --model, --seq-len or --global-batch)");
  }
  if (!res_.symmetry_broken.empty()) return std::move(res_);  // stopped early: run every rank
  if (completed_ != total_ops_) {
    for (std::size_t g = 0; g < total_ops_; ++g) {
      if (rt_[g].state != 2)
        return op_error(g, rt_[g].state == 1
                               ? "simulation stalled: posted but its peer(s) never arrived"
                               : "simulation stalled: never became ready (deadlock)");
    }
  }
  const std::size_t ranks = active_ranks_;
  res_.first_start = total_ops_ > 0 ? SimTime::max() : SimTime();
  for (std::size_t g = 0; g < total_ops_; ++g) {
    res_.first_start = std::min(res_.first_start, res_.op_start[g]);
    res_.last_end = std::max(res_.last_end, res_.op_end[g]);
  }
  res_.peak_memory_bytes.resize(program_.ranks.size());
  res_.peak_memory.resize(program_.ranks.size());
  if (options_.record_memory) res_.memory_samples.resize(program_.ranks.size());
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto rank = static_cast<std::int32_t>(r);
    res_.peak_memory_bytes[r] = memory_->peak_bytes(rank);
    res_.peak_memory[r] = memory_->peak_breakdown(rank);
    if (options_.record_memory) res_.memory_samples[r] = memory_->samples(rank);
  }
  res_.link_bytes = network_.link_bytes();
  res_.link_busy = network_.link_busy(engine_.now());
  res_.link_usage = network_.usage_samples();
  res_.events = engine_.events_processed();
  if (sym_) {
    check_symmetry();
    if (res_.symmetry_broken.empty()) expand_replicas();
  }
  return std::move(res_);
}

}  // namespace tawpipe::sim::detail
