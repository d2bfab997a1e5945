#include "sim/network/mpi_shm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tawpipe::sim {
namespace {

SimTime seconds_up(double s) {
  return SimTime::ps(static_cast<std::int64_t>(std::ceil(std::max(s, 0.0) * 1e12)));
}

ShmOp shm_op(ir::CollectiveKind k) {
  switch (k) {
    case ir::CollectiveKind::broadcast:
      return ShmOp::broadcast;
    case ir::CollectiveKind::reduce:
      return ShmOp::reduce;
    case ir::CollectiveKind::all_reduce:
      return ShmOp::all_reduce;
    case ir::CollectiveKind::all_gather:
      return ShmOp::all_gather;
    case ir::CollectiveKind::reduce_scatter:
      return ShmOp::reduce_scatter;
  }
  return ShmOp::all_reduce;
}

/// Messages in sequence and bytes per message of `op` on `p` ranks for a buffer of `bytes`
/// (ring all-reduce / all-gather / reduce-scatter, binomial broadcast / reduce).
struct Steps {
  double count = 1.0;
  double chunk_bytes = 0.0;
};
Steps ring_steps(ShmOp op, double bytes, int p) {
  const double n = std::max(p, 2);
  switch (op) {
    case ShmOp::all_reduce:
      return {2.0 * (n - 1.0), bytes / n};
    case ShmOp::all_gather:
    case ShmOp::reduce_scatter:
      return {n - 1.0, bytes / n};
    case ShmOp::broadcast:
    case ShmOp::reduce:
      return {std::ceil(std::log2(n)), bytes};
    case ShmOp::sendrecv:
      break;
  }
  return {1.0, bytes};
}

using Points = std::vector<std::pair<double, SimTime>>;

void envelope(Points& p) {
  for (std::size_t i = p.size(); i-- > 1;)
    p[i - 1].second = std::min(p[i - 1].second, p[i].second);
}

SimTime interpolate(const Points& p, double bytes) {
  if (p.size() == 1 || bytes <= p.front().first) return p.front().second;
  for (std::size_t i = 1; i < p.size(); ++i) {
    if (bytes <= p[i].first) {
      const double x0 = p[i - 1].first, x1 = p[i].first;
      const double t0 = p[i - 1].second.seconds(), t1 = p[i].second.seconds();
      const double f = x1 > x0 ? (bytes - x0) / (x1 - x0) : 1.0;
      return seconds_up(t0 + f * (t1 - t0));
    }
  }
  // Past the largest point: its last two points' slope (seconds per byte).
  const auto& a = p[p.size() - 2];
  const auto& b = p.back();
  const double slope =
      std::max(0.0, (b.second.seconds() - a.second.seconds()) / std::max(b.first - a.first, 1.0));
  return seconds_up(b.second.seconds() + slope * (bytes - b.first));
}

/// The copying members a calibration spread over `cores` cores put on the fullest one.
int spread_per_core(int ranks, int cores) {
  return (ranks + std::min(ranks, cores) - 1) / std::min(ranks, cores);
}

/// `hot` moved a `cold` share (clamped to [0, 1]) towards `cold_figure`, and an `after` share
/// (clamped to [0, 1 - cold]) towards `after_figure`.
SimTime toward(SimTime hot, SimTime cold_figure, double cold, SimTime after_figure = SimTime(),
               double after = 0.0) {
  const double f = std::clamp(cold, 0.0, 1.0);
  const double g = std::clamp(after, 0.0, 1.0 - f);
  return seconds_up(hot.seconds() + f * (cold_figure.seconds() - hot.seconds()) +
                    g * (after_figure.seconds() - hot.seconds()));
}

/// A measured cost of one call: core-free latency and one member's core work (see the header);
/// `per_core` members of the measurement took turns on one core.
ShmCost split(const ShmCurve& c, double bytes, int per_core) {
  const SimTime total = curve_time(c, bytes);
  if (!c.cpu.empty()) {
    const SimTime work = curve_cpu(c, bytes);
    const SimTime busy = work * per_core;
    return {total > busy ? total - busy : SimTime(), work, true};
  }
  const SimTime lat = c.points.front().second;
  return {lat, total > lat ? total - lat : SimTime()};
}

}  // namespace

void monotone_envelope(ShmCurve& c) {
  envelope(c.points);
  envelope(c.cpu);
  envelope(c.root_cpu);
  envelope(c.member_cpu);
}

SimTime curve_time(const ShmCurve& c, double bytes) {
  return interpolate(c.points, bytes);
}

SimTime curve_cpu(const ShmCurve& c, double bytes) {
  return std::min(interpolate(c.cpu, bytes), curve_time(c, bytes));
}

std::vector<ShmCurve> shm_curves(const profile::Profile* profile) {
  std::vector<ShmCurve> curves;
  if (profile == nullptr) return curves;
  for (const profile::CommMeasurement& m : profile->communication) {
    const bool one_core = m.scope == profile::CommScope::shared_core;
    if ((m.scope != profile::CommScope::shared_memory && !one_core) || m.points.empty()) continue;
    ShmCurve c;
    c.one_core = one_core;
    switch (m.op) {
      case profile::CommOp::broadcast:
        c.op = ShmOp::broadcast;
        break;
      case profile::CommOp::reduce:
        c.op = ShmOp::reduce;
        break;
      case profile::CommOp::all_reduce:
        c.op = ShmOp::all_reduce;
        break;
      case profile::CommOp::all_gather:
        c.op = ShmOp::all_gather;
        break;
      case profile::CommOp::reduce_scatter:
        c.op = ShmOp::reduce_scatter;
        break;
      case profile::CommOp::sendrecv:
        c.op = ShmOp::sendrecv;
        break;
    }
    c.ranks = m.ranks;
    if (m.cold_pool) c.cold_pool = static_cast<double>(m.cold_pool->count());
    if (m.after_compute && !m.cold_pool)
      c.after_compute = std::max(m.after_compute->seconds(), 1e-9);
    const bool with_cpu = std::all_of(m.points.begin(), m.points.end(),
                                      [](const profile::CommPoint& pt) { return pt.cpu; });
    const bool with_roles =
        with_cpu && std::all_of(m.points.begin(), m.points.end(), [](const profile::CommPoint& pt) {
          return pt.root_cpu && pt.member_cpu;
        });
    for (const profile::CommPoint& pt : m.points) {
      const auto size = static_cast<double>(pt.size.count());
      c.points.emplace_back(size, pt.time);
      if (with_cpu) c.cpu.emplace_back(size, *pt.cpu);
      if (with_roles) {
        c.root_cpu.emplace_back(size, *pt.root_cpu);
        c.member_cpu.emplace_back(size, *pt.member_cpu);
      }
    }
    auto by_size = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::sort(c.points.begin(), c.points.end(), by_size);
    std::sort(c.cpu.begin(), c.cpu.end(), by_size);
    std::sort(c.root_cpu.begin(), c.root_cpu.end(), by_size);
    std::sort(c.member_cpu.begin(), c.member_cpu.end(), by_size);
    monotone_envelope(c);
    curves.push_back(std::move(c));
  }
  return curves;
}

MpiShmModel::MpiShmModel(std::vector<ShmCurve> curves, SimTime alpha, double beta, int cores)
    : curves_(std::move(curves)),
      alpha_(alpha),
      beta_(beta > 0.0 ? beta : 1.0),
      cores_(std::max(cores, 1)) {
  curves_.erase(std::remove_if(curves_.begin(), curves_.end(),
                               [](const ShmCurve& c) { return c.points.empty(); }),
                curves_.end());
  for (const ShmCurve& c : curves_) {
    cold_pool_ = std::max(cold_pool_, c.cold_pool);
    longest_after_compute_ = std::max(longest_after_compute_, c.after_compute);
  }
}

double cold_fraction(double since, double cold_pool) {
  if (!(cold_pool > 0.0)) return 0.0;
  if (since < 0.0) return 1.0;
  return std::min(since / cold_pool, 1.0);
}

const ShmCurve* MpiShmModel::find(ShmOp op, int ranks, bool one_core) const {
  // The nearest rank count, and at it the members' placement if measured (a one-core curve only
  // for members on one core, at its own rank count).
  const ShmCurve* best = nullptr;
  for (const ShmCurve& c : curves_) {
    if (c.op != op || c.cold_pool > 0.0 || c.after_compute > 0.0) continue;
    if (c.one_core && (!one_core || c.ranks != ranks)) continue;
    if (best == nullptr || std::abs(c.ranks - ranks) < std::abs(best->ranks - ranks) ||
        (c.ranks == best->ranks && c.one_core))
      best = &c;
  }
  return best;
}

const ShmCurve* MpiShmModel::find_cold(const ShmCurve& hot) const {
  for (const ShmCurve& c : curves_) {
    if (c.cold_pool > 0.0 && c.op == hot.op && c.ranks == hot.ranks && c.one_core == hot.one_core)
      return &c;
  }
  return nullptr;
}

MpiShmModel::AfterPair MpiShmModel::find_after_compute(const ShmCurve& hot, double bytes,
                                                       double seconds, bool roles) const {
  AfterPair p;
  for (const ShmCurve& c : curves_) {
    if (!(c.after_compute > 0.0) || c.op != hot.op || c.ranks != hot.ranks ||
        c.one_core != hot.one_core || bytes < c.points.front().first ||
        c.cpu.empty() != hot.cpu.empty() || (roles && c.root_cpu.empty()))
      continue;
    if (c.after_compute <= seconds && (p.lo == nullptr || c.after_compute > p.lo->after_compute))
      p.lo = &c;
    if (c.after_compute >= seconds && (p.hi == nullptr || c.after_compute < p.hi->after_compute))
      p.hi = &c;
  }
  if (p.hi == nullptr) p.hi = p.lo;  // more compute than any burst: the longest
  if (p.hi == nullptr) return p;
  if (p.lo == nullptr) {
    // Less compute than any burst: from the hot curve (no compute) to the shortest burst's,
    // linearly in the seconds.
    p.from_hot = true;
    p.lo = p.hi;
    p.w = std::clamp(seconds / p.hi->after_compute, 0.0, 1.0);
  } else if (p.hi != p.lo) {
    p.w = std::log(seconds / p.lo->after_compute) /
          std::log(p.hi->after_compute / p.lo->after_compute);
  }
  return p;
}

ShmCost MpiShmModel::blended(const ShmCurve& hot, double bytes, int per_core, Warmth warmth) const {
  const ShmCost h = split(hot, bytes, per_core);
  double cold = warmth.cold, after = warmth.after;
  const AfterPair a =
      after > 0.0 ? find_after_compute(hot, bytes, warmth.after_seconds, false) : AfterPair{};
  if (a.lo == nullptr) {
    cold += after;  // no after-compute figure here: such buffers count as cold
    after = 0.0;
  }
  const ShmCurve* c = cold > 0.0 ? find_cold(hot) : nullptr;
  if (c == nullptr || bytes < c->points.front().first || c->cpu.empty() != hot.cpu.empty())
    cold = 0.0;
  if (cold <= 0.0 && after <= 0.0) return h;
  const ShmCost k = cold > 0.0 ? split(*c, bytes, per_core) : h;
  ShmCost f = h;
  if (after > 0.0) {
    const ShmCost lo = a.from_hot ? h : split(*a.lo, bytes, per_core);
    const ShmCost hi = split(*a.hi, bytes, per_core);
    f.latency = toward(lo.latency, hi.latency, a.w);
    f.work = toward(lo.work, hi.work, a.w);
  }
  return {toward(h.latency, k.latency, cold, f.latency, after),
          toward(h.work, k.work, cold, f.work, after), h.per_member};
}

bool MpiShmModel::measured(ShmOp op) const {
  return std::any_of(curves_.begin(), curves_.end(), [&](const ShmCurve& c) { return c.op == op; });
}

ShmCost MpiShmModel::p2p(double bytes, bool one_core, Warmth warmth) const {
  // A one-core curve's CPU time is one rank's per round trip, as on two cores (what the message
  // costs sender and receiver together): its turns on the core are that work, no second share.
  if (const ShmCurve* c = find(ShmOp::sendrecv, 2, one_core)) return blended(*c, bytes, 1, warmth);
  return {alpha_, seconds_up(bytes / beta_)};
}

ShmCost MpiShmModel::collective(ir::CollectiveKind kind, double bytes, int ranks, bool one_core,
                                Warmth warmth) const {
  const ShmOp op = shm_op(kind);
  const Steps want = ring_steps(op, bytes, ranks);
  if (const ShmCurve* c = find(op, ranks, one_core)) {
    // Copying members per core in the measurement: spread evenly (every member counted, as
    // before), or on one core those that copy there: a broadcast's receivers, a reduce's root,
    // every member of the others.
    int per_core = spread_per_core(c->ranks, cores_);
    if (c->one_core) {
      per_core = op == ShmOp::broadcast ? c->ranks - 1 : op == ShmOp::reduce ? 1 : c->ranks;
    }
    const ShmCost measured = blended(*c, bytes, per_core, warmth);
    if (c->ranks == ranks) return measured;
    // Another rank count: scale its latency by the step counts and its copy work by the bytes
    // each member moves in sequence.
    const Steps have = ring_steps(op, bytes, c->ranks);
    const double lat = measured.latency.seconds();
    const double work = measured.work.seconds();
    const double moved_have = std::max(have.count * have.chunk_bytes, 1.0);
    return {seconds_up(lat * want.count / have.count),
            seconds_up(work * want.count * want.chunk_bytes / moved_have), measured.per_member};
  }
  return {seconds_up(alpha_.seconds() * want.count),
          seconds_up(want.count * want.chunk_bytes / beta_)};
}

std::optional<BroadcastRoles> MpiShmModel::broadcast_roles(double bytes, int ranks, bool one_core,
                                                           Warmth warmth) const {
  const ShmCurve* hot = find(ShmOp::broadcast, ranks, one_core);
  if (hot == nullptr || hot->ranks != ranks || hot->root_cpu.empty() || ranks < 2)
    return std::nullopt;
  auto at = [&](const ShmCurve& c) {
    const SimTime total = curve_time(c, bytes);
    const SimTime root = std::min(interpolate(c.root_cpu, bytes), total);
    const SimTime member = std::min(interpolate(c.member_cpu, bytes), total);
    SimTime busy;
    if (c.one_core) {
      busy = root + member * (c.ranks - 1);
    } else {
      const int per_core = spread_per_core(c.ranks, cores_);
      busy = std::max(root + member * (per_core - 1), member * per_core);
    }
    return BroadcastRoles{total > busy ? total - busy : SimTime(), member, root};
  };
  double cold = warmth.cold, after = warmth.after;
  const AfterPair a =
      after > 0.0 ? find_after_compute(*hot, bytes, warmth.after_seconds, true) : AfterPair{};
  if (a.lo == nullptr) {
    cold += after;  // as in blended()
    after = 0.0;
  }
  const ShmCurve* c = cold > 0.0 ? find_cold(*hot) : nullptr;
  if (c == nullptr || bytes < c->points.front().first || c->root_cpu.empty()) cold = 0.0;
  const BroadcastRoles h = at(*hot);
  if (cold <= 0.0 && after <= 0.0) return h;
  const BroadcastRoles k = cold > 0.0 ? at(*c) : h;
  BroadcastRoles f = h;
  if (after > 0.0) {
    const BroadcastRoles lo = a.from_hot ? h : at(*a.lo), hi = at(*a.hi);
    f = {toward(lo.latency, hi.latency, a.w), toward(lo.member_work, hi.member_work, a.w),
         toward(lo.root_work, hi.root_work, a.w)};
  }
  return BroadcastRoles{toward(h.latency, k.latency, cold, f.latency, after),
                        toward(h.member_work, k.member_work, cold, f.member_work, after),
                        toward(h.root_work, k.root_work, cold, f.root_work, after)};
}

std::optional<BroadcastRoles> MpiShmModel::broadcast_member_roles(double bytes, int ranks,
                                                                  bool one_core, bool pair_one_core,
                                                                  int others_copying,
                                                                  Warmth warmth) const {
  const auto all = broadcast_roles(bytes, ranks, one_core, warmth);
  if (!all || ranks <= 2) return all;
  const auto lone = broadcast_roles(bytes, 2, pair_one_core, warmth);
  if (!lone) return all;
  const double share = static_cast<double>(others_copying) / static_cast<double>(ranks - 2);
  return BroadcastRoles{toward(lone->latency, all->latency, share),
                        toward(lone->member_work, all->member_work, share), all->root_work};
}

std::optional<SimTime> MpiShmModel::reduce_sum_work(double bytes, int ranks, bool one_core,
                                                    Warmth warmth) const {
  const ShmCost whole = collective(ir::CollectiveKind::reduce, bytes, ranks, one_core, warmth);
  const ShmCost message = p2p(bytes, one_core, warmth);
  if (!whole.per_member || !message.per_member || ranks < 2) return std::nullopt;
  const SimTime copies = message.work * (ranks - 1);
  return whole.work > copies ? whole.work - copies : SimTime();
}

}  // namespace tawpipe::sim
