#include "sim/run/core_sharing.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace tawpipe::sim {

CoreSharing::CoreSharing(Engine& engine, int cores, DoneFn on_done, SimTime slice)
    : engine_(engine),
      on_done_(std::move(on_done)),
      on_core_(static_cast<std::size_t>(std::max(cores, 1))),
      background_(static_cast<std::size_t>(std::max(cores, 1)), kNoJob),
      busy_log_(static_cast<std::size_t>(std::max(cores, 1))),
      contended_log_(static_cast<std::size_t>(std::max(cores, 1))),
      slice_(slice),
      queues_(static_cast<std::size_t>(std::max(cores, 1))) {
  handler_ = engine_.add_handler([this](const Event& e) { handle(e); });
}

void CoreSharing::start(std::span<const int> cores, SimTime delay, SimTime work,
                        std::uint64_t token) {
  start_job(cores, delay, work, token);
}

void CoreSharing::start_sliced(int core, SimTime work, std::uint64_t owner, std::uint64_t token,
                               bool short_wake) {
  start_job(std::span<const int>(&core, 1), SimTime(), work, token, false,
            slice_ > SimTime() ? owner : 0, short_wake, owner);
}

bool CoreSharing::has_op(int core, std::uint64_t owner) const {
  const auto& on = on_core_[static_cast<std::size_t>(core)];
  return std::any_of(on.begin(), on.end(),
                     [&](std::uint32_t id) { return jobs_[id].owner == owner; });
}

CoreSharing::Thread& CoreSharing::thread(int core, std::uint64_t owner) {
  auto& ts = queues_[static_cast<std::size_t>(core)].threads;
  for (Thread& t : ts)
    if (t.owner == owner) return t;
  ts.push_back(Thread{});
  ts.back().owner = owner;
  return ts.back();
}

double CoreSharing::mean_v(const Queue& q) const {
  double sum = 0.0;
  int n = 0;
  for (const Thread& t : q.threads) {
    if (t.state == Thread::off) continue;
    sum += t.v;
    ++n;
  }
  return n == 0 ? q.base : sum / n;
}

void CoreSharing::settle(int core) {
  Queue& q = queues_[static_cast<std::size_t>(core)];
  const double slice = static_cast<double>(slice_.picoseconds());
  // A request end at the current instant is left to the caller's event, which came first: the
  // running op's own completion was scheduled before the request began (rerate schedules a job's
  // completion before the request end).
  while (q.lazy && q.lazy_end < engine_.now()) {
    const SimTime at = q.lazy_end;
    // on_request_end at `at`: advance, a new request, a pick (the same thread: it is alone).
    Thread& t = thread(core, q.running);
    t.v += static_cast<double>((at - q.last).picoseconds());
    q.last = at;
    t.d = t.v + slice;
    // rerate at `at`: the jobs advance at their unchanged rates; the next request end.
    for (std::uint32_t id : on_core_[static_cast<std::size_t>(core)]) {
      Job& j = jobs_[id];
      if (j.rate > 0.0) j.remaining_ps -= static_cast<double>((at - j.last).picoseconds()) * j.rate;
      j.last = at;
    }
    q.lazy_end = at + SimTime::ps(static_cast<std::int64_t>(std::ceil(std::max(t.d - t.v, 0.0))));
  }
}

void CoreSharing::advance(int core) {
  settle(core);
  Queue& q = queues_[static_cast<std::size_t>(core)];
  const SimTime now = engine_.now();
  if (q.running != 0 && q.runs)
    thread(core, q.running).v += static_cast<double>((now - q.last).picoseconds());
  q.last = now;
}

void CoreSharing::pick(int core) {
  Queue& q = queues_[static_cast<std::size_t>(core)];
  q.running = 0;
  for (;;) {
    const double vbar = mean_v(q);
    Thread* best = nullptr;
    Thread* lowest = nullptr;  // guards rounding: the least v is always eligible
    for (Thread& t : q.threads) {
      if (t.state == Thread::off) continue;
      if (lowest == nullptr || t.v < lowest->v) lowest = &t;
      if (t.v <= vbar + 0.5 && (best == nullptr || t.d < best->d)) best = &t;
    }
    if (best == nullptr) best = lowest;
    if (best == nullptr) return;  // nobody queued
    if (best->state == Thread::delayed) {
      // A sleeping thread whose lag has decayed to 0 leaves the queue (with lag 0).
      best->state = Thread::off;
      best->lag = 0.0;
      q.base = vbar;
      continue;
    }
    q.running = best->owner;
    return;
  }
}

void CoreSharing::wake(int core, std::uint64_t owner, bool short_wake) {
  Queue& q = queues_[static_cast<std::size_t>(core)];
  const double vbar = mean_v(q);
  const double slice = static_cast<double>(slice_.picoseconds());
  Thread& t = thread(core, owner);
  if (t.state == Thread::delayed) {
    // Still queued with negative lag: it keeps its place (and its request) unless its lag has
    // turned positive meanwhile (then lag 0, a new request).
    t.state = Thread::queued;
    if (t.v < vbar) {
      t.v = vbar;
      t.d = t.v + slice;
    }
  } else if (t.state == Thread::off) {
    int n = 0;
    for (const Thread& o : q.threads)
      n += o.state != Thread::off;
    const double lag = n > 0 ? t.lag * (n + 1) / n : 0.0;
    t.v = vbar - lag;
    t.d = t.v + slice;
    t.state = Thread::queued;
  }
  if (q.running == 0) {
    if (!q.handover_pending) pick(core);  // else the handover picks, after this instant
    return;
  }
  if (!short_wake || q.running == owner) return;
  // PREEMPT_SHORT: a thread waking in a shorter slice preempts the running one if it is
  // eligible (its deadline, v + the short slice, is then the earliest); it sets its compute slice
  // as it starts the op, which places it anew: the same v, d = v + the compute slice.
  if (t.v <= mean_v(q) + 0.5) q.running = owner;
}

void CoreSharing::block(int core, std::uint64_t owner) {
  Queue& q = queues_[static_cast<std::size_t>(core)];
  Thread& t = thread(core, owner);
  const double vbar = mean_v(q);
  const double limit = 2.0 * static_cast<double>(slice_.picoseconds());
  t.lag = std::clamp(vbar - t.v, -limit, limit);
  if (t.lag < 0.0) {
    t.state = Thread::delayed;  // competes for V until its lag is 0
  } else {
    t.state = Thread::off;
    if (std::none_of(q.threads.begin(), q.threads.end(),
                     [](const Thread& o) { return o.state != Thread::off; }))
      q.base = vbar;
  }
  if (q.running != owner) return;
  // Its next op may be issued at this instant (an op boundary): pick after it.
  q.running = 0;
  if (!q.handover_pending) {
    q.handover_pending = true;
    engine_.schedule_after(SimTime(), Event{handler_, kHandover, static_cast<std::uint64_t>(core)});
  }
}

void CoreSharing::on_handover(int core) {
  Queue& q = queues_[static_cast<std::size_t>(core)];
  q.handover_pending = false;
  advance(core);
  if (q.running == 0) pick(core);
  rerate(core);
}

void CoreSharing::on_request_end(int core) {
  Queue& q = queues_[static_cast<std::size_t>(core)];
  advance(core);
  if (q.running == 0) return;
  Thread& t = thread(core, q.running);
  t.d = t.v + static_cast<double>(slice_.picoseconds());  // a new request
  pick(core);
  rerate(core);
}

void CoreSharing::add_background(int core, SimTime work, std::uint64_t token) {
  const std::uint32_t b = background_[static_cast<std::size_t>(core)];
  if (b != kNoJob && jobs_[b].on_cores && engine_.is_pending(jobs_[b].done)) {
    Job& j = jobs_[b];
    const SimTime now = engine_.now();
    j.remaining_ps -= static_cast<double>((now - j.last).picoseconds()) * j.rate;
    j.last = now;
    j.remaining_ps += static_cast<double>(work.picoseconds());
    engine_.cancel(j.done);
    const double left = std::max(j.remaining_ps, 0.0) / j.rate;
    j.done = engine_.schedule_after(SimTime::ps(static_cast<std::int64_t>(std::ceil(left))),
                                    Event{handler_, kWorkDone, b});
    return;
  }
  background_[static_cast<std::size_t>(core)] =
      start_job(std::span<const int>(&core, 1), SimTime(), work, token, true);
}

SimTime CoreSharing::StateLog::until(SimTime t) const {
  auto it = std::upper_bound(marks.begin(), marks.end(), t,
                             [](SimTime x, const Mark& m) { return x < m.at; });
  if (it == marks.begin()) return SimTime();
  --it;
  return it->on ? it->before + (t - it->at) : it->before;
}

SimTime CoreSharing::busy_between(int core, SimTime from) const {
  const SimTime now = engine_.now();
  if (from >= now) return SimTime();
  const StateLog& log = busy_log_[static_cast<std::size_t>(core)];
  return log.until(now) - log.until(from);
}

SimTime CoreSharing::contended_between(int core, SimTime from) const {
  const SimTime now = engine_.now();
  if (from >= now) return SimTime();
  const StateLog& log = contended_log_[static_cast<std::size_t>(core)];
  return log.until(now) - log.until(from);
}

std::uint32_t CoreSharing::start_job(std::span<const int> cores, SimTime delay, SimTime work,
                                     std::uint64_t token, bool background, std::uint64_t owner,
                                     bool short_wake, std::uint64_t compute_thread) {
  assert(!cores.empty());
  std::uint32_t id = 0;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(jobs_.size());
    jobs_.emplace_back();
  }
  Job& j = jobs_[id];
  std::vector<int> keep = std::move(j.cores);  // reuse the capacity
  j = Job{};
  j.cores = std::move(keep);
  j.cores.assign(cores.begin(), cores.end());
  std::sort(j.cores.begin(), j.cores.end());
  j.cores.erase(std::unique(j.cores.begin(), j.cores.end()), j.cores.end());
  j.remaining_ps = static_cast<double>(work.picoseconds());
  j.token = token;
  j.live = true;
  j.background = background;
  j.owner = owner;
  j.compute_thread = compute_thread;
  j.short_wake = short_wake;
  if (delay > SimTime()) {
    engine_.schedule_after(delay, Event{handler_, kDelayDone, id});
  } else {
    join(id);
  }
  return id;
}

double CoreSharing::share(const Job& j) const {
  // Per core: the shared (communication) jobs split the core among themselves and stop the
  // holder's compute ops (real-time threads, see the header); without them the holder's compute
  // ops split it.
  std::size_t most = 1;
  for (int c : j.cores) {
    const auto u = static_cast<std::size_t>(c);
    const std::uint64_t holder = queues_[u].running;
    std::size_t shared = 0, held = 0;
    for (std::uint32_t id : on_core_[u]) {
      const std::uint64_t o = jobs_[id].owner;
      shared += o == 0;
      held += o != 0 && o == holder;
    }
    if (j.owner == 0) {
      most = std::max(most, shared);
      continue;
    }
    if (j.owner != holder || shared > 0) return 0.0;  // waits for its turn, or is preempted
    most = std::max(most, held);
  }
  return 1.0 / static_cast<double>(most);
}

void CoreSharing::join(std::uint32_t id) {
  Job& j = jobs_[id];
  j.last = engine_.now();
  if (j.remaining_ps <= 0.0) {
    // Nothing to compute: done now (through an event, so callbacks never nest).
    j.done = engine_.schedule_after(SimTime(), Event{handler_, kWorkDone, id});
    return;
  }
  for (int c : j.cores)
    advance(c);
  j.on_cores = true;
  for (int c : j.cores)
    on_core_[static_cast<std::size_t>(c)].push_back(id);
  if (j.owner != 0) wake(j.cores[0], j.owner, j.short_wake);
  for (int c : j.cores)
    rerate(c);
}

void CoreSharing::leave(std::uint32_t id) {
  Job& j = jobs_[id];
  for (int c : j.cores)
    advance(c);
  for (int c : j.cores) {
    auto& v = on_core_[static_cast<std::size_t>(c)];
    v.erase(std::find(v.begin(), v.end(), id));
  }
  j.live = false;
  j.on_cores = false;
  // Its thread sleeps until its next op is issued (an op boundary is a block, see the header).
  if (j.owner != 0 && !has_op(j.cores[0], j.owner)) block(j.cores[0], j.owner);
  for (int c : j.cores)
    rerate(c);
}

void CoreSharing::rerate(int core) {
  const SimTime now = engine_.now();
  const auto& on = on_core_[static_cast<std::size_t>(core)];
  const bool busy =
      std::any_of(on.begin(), on.end(), [&](std::uint32_t id) { return !jobs_[id].background; });
  busy_log_[static_cast<std::size_t>(core)].set(now, busy);
  // Contended: compute work of two processes at least (a handful of jobs per core).
  bool contended = false;
  std::uint64_t first = 0;
  bool any = false;
  for (std::uint32_t id : on) {
    const Job& j = jobs_[id];
    if (j.background || j.compute_thread == 0) continue;
    const std::uint64_t p = process_of_ ? process_of_(j.compute_thread) : j.compute_thread;
    if (!any) {
      first = p;
      any = true;
    } else if (p != first) {
      contended = true;
      break;
    }
  }
  contended_log_[static_cast<std::size_t>(core)].set(now, contended);
  for (std::uint32_t id : on_core_[static_cast<std::size_t>(core)]) {
    Job& j = jobs_[id];
    const double rate = share(j);
    if (j.rate > 0.0) j.remaining_ps -= static_cast<double>((now - j.last).picoseconds()) * j.rate;
    j.last = now;
    if (rate == j.rate && (rate == 0.0 || engine_.is_pending(j.done))) continue;
    j.rate = rate;
    if (engine_.is_pending(j.done)) engine_.cancel(j.done);
    if (rate == 0.0) {  // waits for its turn, or a copy preempts it
      // Stopped at the instant it got the core (a copy or a short-slice thread came at once):
      // it has not started; its thread starts it when it next runs.
      if (j.ran && j.first_run == now) j.ran = false;
      continue;
    }
    if (!j.ran && j.owner != 0 && on_first_run_) on_first_run_(j.token);
    if (!j.ran) j.first_run = now;
    j.ran = true;
    const double left = std::max(j.remaining_ps, 0.0) / rate;
    j.done = engine_.schedule_after(SimTime::ps(static_cast<std::int64_t>(std::ceil(left))),
                                    Event{handler_, kWorkDone, id});
  }
  if (slice_ <= SimTime()) return;
  // The running thread's request: its v grows while it has the core (copies stop it).
  Queue& q = queues_[static_cast<std::size_t>(core)];
  q.runs = false;
  for (std::uint32_t id : on)
    q.runs =
        q.runs || (jobs_[id].owner != 0 && jobs_[id].owner == q.running && jobs_[id].rate > 0.0);
  if (engine_.is_pending(q.request_end)) engine_.cancel(q.request_end);
  q.lazy = false;
  if (!q.runs) return;
  const Thread& t = thread(core, q.running);
  const double left = std::max(t.d - t.v, 0.0);
  const SimTime end = SimTime::ps(static_cast<std::int64_t>(std::ceil(left)));
  if (std::all_of(q.threads.begin(), q.threads.end(), [&](const Thread& o) {
        return o.owner == q.running || o.state == Thread::off;
      })) {
    q.lazy = true;  // alone: its request ends pick it again (settle)
    q.lazy_end = now + end;
    return;
  }
  q.request_end =
      engine_.schedule_after(end, Event{handler_, kRequestEnd, static_cast<std::uint64_t>(core)});
}

void CoreSharing::handle(const Event& e) {
  if (e.kind == kRequestEnd || e.kind == kHandover) {
    if (e.kind == kRequestEnd) {
      on_request_end(static_cast<int>(e.data));
    } else {
      on_handover(static_cast<int>(e.data));
    }
    return;
  }
  const auto id = static_cast<std::uint32_t>(e.data);
  if (e.kind == kDelayDone) {
    join(id);
    return;
  }
  Job& j = jobs_[id];
  const std::uint64_t token = j.token;
  if (j.on_cores) {
    leave(id);
  } else {
    j.live = false;
  }
  free_.push_back(id);
  for (std::uint32_t& b : background_)
    if (b == id) b = kNoJob;
  on_done_(token);
}

}  // namespace tawpipe::sim
