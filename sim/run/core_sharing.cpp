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
      slice_(slice),
      slices_(static_cast<std::size_t>(std::max(cores, 1))) {
  handler_ = engine_.add_handler([this](const Event& e) { handle(e); });
}

void CoreSharing::start(std::span<const int> cores, SimTime delay, SimTime work,
                        std::uint64_t token) {
  start_job(cores, delay, work, token);
}

void CoreSharing::start_sliced(int core, SimTime work, std::uint64_t owner, std::uint64_t token) {
  start_job(std::span<const int>(&core, 1), SimTime(), work, token, false,
            slice_ > SimTime() ? owner : 0);
}

bool CoreSharing::has_op(int core, std::uint64_t owner) const {
  const auto& on = on_core_[static_cast<std::size_t>(core)];
  return std::any_of(on.begin(), on.end(),
                     [&](std::uint32_t id) { return jobs_[id].owner == owner; });
}

void CoreSharing::pass_on(int core) {
  Slices& s = slices_[static_cast<std::size_t>(core)];
  if (engine_.is_pending(s.slice_end)) engine_.cancel(s.slice_end);
  s.holder = 0;
  if (!s.waiting.empty()) {
    s.holder = s.waiting.front();
    s.waiting.erase(s.waiting.begin());
    s.slice_end = engine_.schedule_after(
        slice_, Event{handler_, kSliceEnd, static_cast<std::uint64_t>(core)});
  }
}

void CoreSharing::on_slice_end(int core) {
  Slices& s = slices_[static_cast<std::size_t>(core)];
  if (s.waiting.empty()) {  // nobody else wants the core: a new slice for the holder
    s.slice_end = engine_.schedule_after(
        slice_, Event{handler_, kSliceEnd, static_cast<std::uint64_t>(core)});
    return;
  }
  s.waiting.push_back(s.holder);
  pass_on(core);
  rerate(core);
}

void CoreSharing::on_handover(int core) {
  Slices& s = slices_[static_cast<std::size_t>(core)];
  s.handover_pending = false;
  if (s.holder != 0 && has_op(core, s.holder)) return;  // its next op came at once
  pass_on(core);
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

SimTime CoreSharing::busy_until(int core, SimTime t) const {
  const auto& log = busy_log_[static_cast<std::size_t>(core)];
  auto it = std::upper_bound(log.begin(), log.end(), t,
                             [](SimTime x, const BusyMark& m) { return x < m.at; });
  if (it == log.begin()) return SimTime();
  --it;
  return it->busy ? it->busy_before + (t - it->at) : it->busy_before;
}

SimTime CoreSharing::busy_between(int core, SimTime from) const {
  const SimTime now = engine_.now();
  if (from >= now) return SimTime();
  return busy_until(core, now) - busy_until(core, from);
}

std::uint32_t CoreSharing::start_job(std::span<const int> cores, SimTime delay, SimTime work,
                                     std::uint64_t token, bool background, std::uint64_t owner) {
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
    const std::uint64_t holder = slices_[u].holder;
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
  j.on_cores = true;
  for (int c : j.cores)
    on_core_[static_cast<std::size_t>(c)].push_back(id);
  if (j.owner != 0) {
    Slices& s = slices_[static_cast<std::size_t>(j.cores[0])];
    if (s.holder == 0) {
      s.waiting.push_back(j.owner);
      pass_on(j.cores[0]);
    } else if (s.holder != j.owner &&
               std::find(s.waiting.begin(), s.waiting.end(), j.owner) == s.waiting.end()) {
      s.waiting.push_back(j.owner);
    }
  }
  for (int c : j.cores)
    rerate(c);
}

void CoreSharing::leave(std::uint32_t id) {
  Job& j = jobs_[id];
  for (int c : j.cores) {
    auto& v = on_core_[static_cast<std::size_t>(c)];
    v.erase(std::find(v.begin(), v.end(), id));
  }
  j.live = false;
  j.on_cores = false;
  if (j.owner != 0 && !has_op(j.cores[0], j.owner)) {
    Slices& s = slices_[static_cast<std::size_t>(j.cores[0])];
    if (s.holder == j.owner) {
      // The thread may start its next op at this instant (same slice): decide after the
      // completion's callbacks have run.
      if (!s.handover_pending) {
        s.handover_pending = true;
        engine_.schedule_after(SimTime(),
                               Event{handler_, kHandover, static_cast<std::uint64_t>(j.cores[0])});
      }
    } else {
      s.waiting.erase(std::remove(s.waiting.begin(), s.waiting.end(), j.owner), s.waiting.end());
    }
  }
  for (int c : j.cores)
    rerate(c);
}

void CoreSharing::rerate(int core) {
  const SimTime now = engine_.now();
  const auto& on = on_core_[static_cast<std::size_t>(core)];
  const bool busy =
      std::any_of(on.begin(), on.end(), [&](std::uint32_t id) { return !jobs_[id].background; });
  auto& log = busy_log_[static_cast<std::size_t>(core)];
  if (log.empty() ? busy : log.back().busy != busy)
    log.push_back({now, busy_until(core, now), busy});
  for (std::uint32_t id : on_core_[static_cast<std::size_t>(core)]) {
    Job& j = jobs_[id];
    const double rate = share(j);
    if (j.rate > 0.0) j.remaining_ps -= static_cast<double>((now - j.last).picoseconds()) * j.rate;
    j.last = now;
    if (rate == j.rate && (rate == 0.0 || engine_.is_pending(j.done))) continue;
    j.rate = rate;
    if (engine_.is_pending(j.done)) engine_.cancel(j.done);
    if (rate == 0.0) continue;  // waits for its slice
    if (!j.ran && j.owner != 0 && on_first_run_) on_first_run_(j.token);
    j.ran = true;
    const double left = std::max(j.remaining_ps, 0.0) / rate;
    j.done = engine_.schedule_after(SimTime::ps(static_cast<std::int64_t>(std::ceil(left))),
                                    Event{handler_, kWorkDone, id});
  }
}

void CoreSharing::handle(const Event& e) {
  if (e.kind == kSliceEnd || e.kind == kHandover) {
    const auto core = static_cast<int>(e.data);
    if (e.kind == kSliceEnd) {
      on_slice_end(core);
    } else {
      on_handover(core);
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
