#include "sim/network/network_model.h"

#include <cmath>
#include <string>
#include <utility>

namespace tawpipe::sim {
namespace {

std::size_t idx(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

}  // namespace

NetworkModel::NetworkModel(Engine& engine, const topo::Topology& topology,
                           const profile::Profile* profile, CompletionFn on_complete)
    : engine_(engine), topology_(topology), on_complete_(std::move(on_complete)) {
  handler_ = engine_.add_handler([this](const Event& e) { handle(e); });
  const auto& links = topology_.links();
  const std::size_t n = links.size();
  constraint_.resize(n);
  link_rate_.resize(n);
  link_latency_.resize(n);
  link_bytes_.assign(n, 0.0);
  link_active_.assign(n, 0);
  link_busy_since_.resize(n);
  link_busy_.resize(n);
  link_touched_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const topo::Link& l = links[i];
    double rate = l.effective_bandwidth().bytes_per_second();
    SimTime latency = l.latency;
    if (profile != nullptr) {
      const auto it = profile->links.find(std::string(topo::to_string(l.cls)));
      if (it != profile->links.end()) {
        if (it->second.bandwidth) rate = it->second.bandwidth->bytes_per_second();
        if (it->second.latency) latency = *it->second.latency;
      }
    }
    link_rate_[i] = rate;
    link_latency_[i] = latency;
    constraint_[i] = solver_.add_constraint(rate);
  }
}

SimTime NetworkModel::path_latency(std::span<const topo::LinkId> links) const {
  SimTime t;
  for (topo::LinkId l : links)
    t += link_latency_[idx(l)];
  return t;
}

std::uint32_t NetworkModel::add_shared_cap(double bytes_per_second) {
  shared_.push_back(solver_.add_constraint(bytes_per_second));
  return static_cast<std::uint32_t>(shared_.size() - 1);
}

void NetworkModel::start(std::span<const topo::LinkId> links, double bytes, SimTime latency,
                         std::uint64_t token, double bound, std::uint32_t shared, bool marked) {
  std::uint32_t index = 0;
  if (!free_transfers_.empty()) {
    index = free_transfers_.back();
    free_transfers_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(transfers_.size());
    transfers_.emplace_back();
  }
  Transfer& t = transfers_[index];
  t.links.assign(links.begin(), links.end());
  t.bytes = bytes;
  t.remaining = bytes;
  t.rate = 0.0;
  t.bound = bound;
  t.shared = shared;
  t.marked = marked;
  t.token = token;
  t.var = VariableId{};
  t.done = EventHandle{};
  t.live = true;
  ++active_;
  engine_.schedule_after(latency, Event{handler_, kLatencyDone, index});
}

void NetworkModel::handle(const Event& event) {
  switch (event.kind) {
    case kLatencyDone:
      join_solver(static_cast<std::uint32_t>(event.data));
      break;
    case kTransferDone:
      finish(static_cast<std::uint32_t>(event.data));
      break;
    case kSolve:
      apply_solve();
      break;
    default:
      break;
  }
}

void NetworkModel::join_solver(std::uint32_t index) {
  Transfer& t = transfers_[index];
  if (t.links.empty() || !(t.bytes > 0.0)) {
    finish(index);
    return;
  }
  t.var = solver_.add_variable(1.0, t.bound);
  if (t.marked) solver_.set_marked(t.var, true);
  for (topo::LinkId l : t.links) {
    solver_.expand(t.var, constraint_[idx(l)], 1.0);
    link_bytes_[idx(l)] += t.bytes;
  }
  if (t.shared != kNoShared) solver_.expand(t.var, shared_[t.shared], 1.0);
  if (transfer_of_var_.size() <= t.var.index) transfer_of_var_.resize(t.var.index + 1u);
  transfer_of_var_[t.var.index] = index;
  t.last_update = engine_.now();
  link_activity(t.links, +1);
  if (record_usage_) touch_usage(t.links);
  request_solve();
}

void NetworkModel::finish(std::uint32_t index) {
  Transfer& t = transfers_[index];
  if (t.var.valid()) {
    solver_.remove_variable(t.var);
    link_activity(t.links, -1);
    if (record_usage_) touch_usage(t.links);
    request_solve();
  }
  t.live = false;
  t.var = VariableId{};
  --active_;
  const std::uint64_t token = t.token;
  free_transfers_.push_back(index);
  on_complete_(token);
}

void NetworkModel::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  engine_.schedule_now(Event{handler_, kSolve, 0});
}

void NetworkModel::apply_solve() {
  solve_pending_ = false;
  const SimTime now = engine_.now();
  for (VariableId v : solver_.solve()) {
    const std::uint32_t index = transfer_of_var_[v.index];
    Transfer& t = transfers_[index];
    const double elapsed = (now - t.last_update).seconds();
    t.remaining -= t.rate * elapsed;
    if (t.remaining < 0.0) t.remaining = 0.0;
    t.last_update = now;
    t.rate = solver_.rate(v);
    if (t.rate > 0.0) {
      const double ps = std::ceil(t.remaining / t.rate * 1e12);
      t.done = engine_.reschedule_after(t.done, SimTime::ps(static_cast<std::int64_t>(ps)),
                                        Event{handler_, kTransferDone, index});
    } else {
      engine_.cancel(t.done);
      t.done = EventHandle{};
    }
    if (record_usage_) touch_usage(t.links);
  }
  if (record_usage_) {
    for (topo::LinkId l : touched_links_) {
      link_touched_[idx(l)] = 0;
      usage_.push_back(LinkUsageSample{l, now, solver_.usage(constraint_[idx(l)])});
    }
    touched_links_.clear();
  }
}

void NetworkModel::link_activity(std::span<const topo::LinkId> links, int delta) {
  const SimTime now = engine_.now();
  for (topo::LinkId l : links) {
    std::int32_t& a = link_active_[idx(l)];
    if (delta > 0 && a == 0) link_busy_since_[idx(l)] = now;
    a += delta;
    if (delta < 0 && a == 0) link_busy_[idx(l)] += now - link_busy_since_[idx(l)];
  }
}

void NetworkModel::touch_usage(std::span<const topo::LinkId> links) {
  for (topo::LinkId l : links) {
    if (link_touched_[idx(l)] != 0) continue;
    link_touched_[idx(l)] = 1;
    touched_links_.push_back(l);
  }
}

std::vector<SimTime> NetworkModel::link_busy(SimTime now) const {
  std::vector<SimTime> out = link_busy_;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (link_active_[i] > 0) out[i] += now - link_busy_since_[i];
  }
  return out;
}

}  // namespace tawpipe::sim
