/// \file
/// The flow-level network model: transfers over the topology's directed links, sharing link
/// bandwidth by max-min fairness (sim/solver/maxmin.h).
///
/// Mapping onto the solver:
///  - every directed link is one constraint of capacity `capacity * efficiency` (bytes/s), or the
///    calibration profile's achieved bandwidth for its link class;
///  - every transfer is ONE variable with an element of coefficient 1 for each link occurrence
///    in its link list. A point-to-point flow lists its route; a ring collective lists the routes
///    of all its edges, so the slowest or most shared edge paces the ring (O(P) solver work);
///  - a transfer first waits its `latency` (route latency, or steps x hop latency for rings),
///    then joins the solver and moves `bytes` at its max-min rate:
///        duration = latency + bytes / rate   (rate constant while nothing else changes).
///
/// Events: all solver changes at one simulated instant are batched into one `solve()` (a solve
/// event scheduled at the same time, after the events already queued for it); only variables
/// whose rate changed get their completion event rescheduled, after their remaining bytes are
/// advanced at the old rate. Completion times are rounded up to whole picoseconds.
///
/// Per link the model accumulates bytes carried (counted when a transfer joins the solver) and
/// busy time (some transfer active on the link). Optionally it records the link's rate in use
/// after every change, for the trace's counter tracks.
///
/// No allocation per event in steady state: transfers live in a slab whose link vectors keep
/// their capacity when reused.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/units.h"
#include "sim/engine/engine.h"
#include "sim/solver/maxmin.h"

namespace tawpipe::sim {

/// One point of a link's usage time series (bytes/s in use from `time` on).
struct LinkUsageSample {
  topo::LinkId link = -1;
  SimTime time;
  double bytes_per_second = 0.0;
};

/// Flow-level network over one topology, driven by one engine.
class NetworkModel {
 public:
  /// Called when a transfer has moved all its bytes, with the token given to `start`.
  using CompletionFn = std::function<void(std::uint64_t token)>;

  /// Registers a handler with `engine`. `profile` may be null. The topology must outlive this.
  NetworkModel(Engine& engine, const topo::Topology& topology, const profile::Profile* profile,
               CompletionFn on_complete);
  NetworkModel(const NetworkModel&) = delete;
  NetworkModel& operator=(const NetworkModel&) = delete;

  /// Starts a transfer of `bytes` over `links` (repeats allowed: each occurrence is one more unit
  /// of that link per unit of rate) after `latency`. With no links or no bytes it completes after
  /// the latency alone. `bound` caps the transfer's rate (bytes/s; NCCL's channels x protocol
  /// bandwidth, sim/network/nccl_tuning.h). `on_complete(token)` fires at the end. `marked`
  /// marks its solver variable (MaxMinSystem::set_marked; replica symmetry's cross-replica
  /// collectives), which changes no rate.
  void start(std::span<const topo::LinkId> links, double bytes, SimTime latency,
             std::uint64_t token, double bound = kNoBound, std::uint32_t shared = kNoShared,
             bool marked = false);

  /// No shared cap (see `add_shared_cap`).
  static constexpr std::uint32_t kNoShared = 0xffffffffu;
  /// A cap of `bytes_per_second` that every transfer started with its id draws from together,
  /// beside its links: NCCL's channels (and, over sockets, their TCP connections) to one peer on
  /// one communicator, which concurrent operations to that peer share (nccl_tuning.h).
  std::uint32_t add_shared_cap(double bytes_per_second);

  /// Effective per-direction bandwidth of a link (capacity x efficiency, or the profile's).
  double link_bytes_per_second(topo::LinkId link) const {
    return link_rate_[static_cast<std::size_t>(link)];
  }
  /// True if the link was ever a bottleneck of the solver (MaxMinSystem::was_bottleneck).
  bool link_was_bottleneck(topo::LinkId link) const {
    return solver_.was_bottleneck(constraint_[static_cast<std::size_t>(link)]);
  }
  /// True if some solve fixed the rate of an unmarked transfer at the link while a marked one
  /// (`start`) used it (MaxMinSystem::fixed_unmarked_beside_marked).
  bool link_fixed_unmarked_beside_marked(topo::LinkId link) const {
    return solver_.fixed_unmarked_beside_marked(constraint_[static_cast<std::size_t>(link)]);
  }
  /// True if some solve fixed rates at the link while two or more marked transfers used it
  /// (MaxMinSystem::fixed_beside_marked_pair).
  bool link_fixed_beside_marked_pair(topo::LinkId link) const {
    return solver_.fixed_beside_marked_pair(constraint_[static_cast<std::size_t>(link)]);
  }
  /// One-way latency of a link (the topology's, or the profile's for its class).
  SimTime link_latency(topo::LinkId link) const {
    return link_latency_[static_cast<std::size_t>(link)];
  }
  /// Sum of `link_latency` over `links`.
  SimTime path_latency(std::span<const topo::LinkId> links) const;

  /// Bytes carried by each link so far.
  const std::vector<double>& link_bytes() const { return link_bytes_; }
  /// Busy time of each link up to `now` (call after the run for totals).
  std::vector<SimTime> link_busy(SimTime now) const;

  /// Records a usage sample per link whose rate in use changes (for traces). Off by default.
  void record_usage(bool on) { record_usage_ = on; }
  const std::vector<LinkUsageSample>& usage_samples() const { return usage_; }

  /// Transfers in flight (latency phase included).
  std::size_t active_transfers() const { return active_; }

 private:
  enum EventKind : std::uint32_t { kLatencyDone = 0, kTransferDone = 1, kSolve = 2 };
  struct Transfer {
    std::vector<topo::LinkId> links;
    double bytes = 0.0;
    double remaining = 0.0;
    double rate = 0.0;
    double bound = kNoBound;
    std::uint32_t shared = kNoShared;
    bool marked = false;
    SimTime last_update;
    std::uint64_t token = 0;
    VariableId var;
    EventHandle done;
    bool live = false;
  };

  void handle(const Event& event);
  void join_solver(std::uint32_t index);
  void finish(std::uint32_t index);
  void request_solve();
  void apply_solve();
  void link_activity(std::span<const topo::LinkId> links, int delta);
  void touch_usage(std::span<const topo::LinkId> links);

  Engine& engine_;
  const topo::Topology& topology_;
  CompletionFn on_complete_;
  HandlerId handler_ = 0;
  MaxMinSystem solver_;
  std::vector<ConstraintId> constraint_;  ///< per link
  std::vector<ConstraintId> shared_;      ///< per shared cap
  std::vector<double> link_rate_;
  std::vector<SimTime> link_latency_;
  std::vector<double> link_bytes_;
  std::vector<std::int32_t> link_active_;
  std::vector<SimTime> link_busy_since_;
  std::vector<SimTime> link_busy_;
  std::vector<Transfer> transfers_;
  std::vector<std::uint32_t> free_transfers_;
  std::vector<std::uint32_t> transfer_of_var_;  ///< by VariableId::index
  std::size_t active_ = 0;
  bool solve_pending_ = false;
  bool record_usage_ = false;
  std::vector<LinkUsageSample> usage_;
  std::vector<topo::LinkId> touched_links_;
  std::vector<std::uint8_t> link_touched_;
};

}  // namespace tawpipe::sim
