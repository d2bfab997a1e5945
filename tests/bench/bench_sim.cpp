// Benchmarks of the simulator's cores: event-engine throughput, full max-min solves of a
// cluster-sized system of ring variables, and incremental add/remove of one flow.
//
// Targets (issue 4): engine >= 5 M events/s; full solve of 8192 ring variables <= 5 ms.
// Run in Release: bench_sim --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/units.h"
#include "sim/engine/engine.h"
#include "sim/solver/maxmin.h"

namespace {

using tawpipe::SimTime;
using namespace tawpipe::sim;  // NOLINT: benchmark file, not a header

/// SplitMix64: deterministic inputs without std:: distributions.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }
};

// --- Engine ------------------------------------------------------------------------------------

// `pending` independent "processes", each re-scheduling itself after a pseudo-random delay
// (0..1023 ps, so ties occur), until 1 Mi events have been handled. The heap holds `pending`
// events throughout: the steady state of a simulation with that many outstanding timers.
void BM_EngineThroughput(benchmark::State& state) {
  const auto pending = static_cast<std::uint64_t>(state.range(0));
  constexpr std::uint64_t kEvents = 1u << 20;
  std::uint64_t total = 0;
  for (auto _ : state) {
    Engine engine;
    std::uint64_t lcg = 12345;
    std::uint64_t budget = kEvents;
    HandlerId h = 0;
    h = engine.add_handler([&](const Event& e) {
      if (budget == 0) return;
      --budget;
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      const auto delay = static_cast<std::int64_t>(lcg >> 54);
      engine.schedule_after(SimTime::ps(delay), Event{h, 0, e.data});
    });
    for (std::uint64_t i = 0; i < pending; ++i)
      engine.schedule_at(SimTime(), Event{h, 0, i});
    engine.run();
    total += engine.events_processed();
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(total) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_EngineThroughput)->Arg(64)->Arg(4096)->Arg(65536)->Unit(benchmark::kMillisecond);

// As above, but every event also cancels and re-schedules another process's pending event, as
// the network model does when a rate change moves a flow's completion.
void BM_EngineWithCancellation(benchmark::State& state) {
  const auto pending = static_cast<std::uint32_t>(state.range(0));
  constexpr std::uint64_t kEvents = 1u << 20;
  std::uint64_t total = 0;
  for (auto _ : state) {
    Engine engine;
    std::vector<EventHandle> handles(pending);
    std::uint64_t lcg = 12345;
    std::uint64_t budget = kEvents;
    HandlerId h = 0;
    auto delay = [&] {
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      return SimTime::ps(static_cast<std::int64_t>(lcg >> 54));
    };
    h = engine.add_handler([&](const Event& e) {
      if (budget == 0) return;
      --budget;
      handles[e.data] = engine.schedule_after(delay(), Event{h, 0, e.data});
      const std::uint64_t other = (lcg >> 20) % pending;
      if (engine.cancel(handles[other])) {
        handles[other] = engine.schedule_after(delay(), Event{h, 0, other});
      }
    });
    for (std::uint32_t i = 0; i < pending; ++i) {
      handles[i] = engine.schedule_at(SimTime(), Event{h, 0, i});
    }
    engine.run();
    total += engine.events_processed();
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineWithCancellation)->Arg(4096)->Unit(benchmark::kMillisecond);

// --- Solver ------------------------------------------------------------------------------------

// A rail-optimised cluster of 128 nodes x 8 GPUs (the shape of 128x8-h100-ndr), as constraints:
// per GPU an NVLink port to the NVSwitch (tx, rx) and a NIC (tx, rx) on its rail; per rail,
// 4 leaf switches of 32 nodes each with an up and a down trunk to the spine, 2:1 oversubscribed.
// Capacities are link bandwidth x efficiency in bytes/s.
struct Cluster {
  static constexpr std::uint32_t kNodes = 128, kGpus = 8, kLeaves = 4;
  std::vector<ConstraintId> nvl_tx, nvl_rx, nic_tx, nic_rx, leaf_up, leaf_down;

  explicit Cluster(MaxMinSystem& s) {
    for (std::uint32_t g = 0; g < kNodes * kGpus; ++g) {
      nvl_tx.push_back(s.add_constraint(450e9 * 0.8));
      nvl_rx.push_back(s.add_constraint(450e9 * 0.8));
      nic_tx.push_back(s.add_constraint(50e9 * 0.9));
      nic_rx.push_back(s.add_constraint(50e9 * 0.9));
    }
    for (std::uint32_t r = 0; r < kGpus * kLeaves; ++r) {
      leaf_up.push_back(s.add_constraint(16 * 50e9 * 0.9));
      leaf_down.push_back(s.add_constraint(16 * 50e9 * 0.9));
    }
  }
  static std::uint32_t leaf(std::uint32_t node) { return node / (kNodes / kLeaves); }

  /// A ring over the 8 GPUs of `node`: each hop g -> g+1 crosses g's NVLink tx and g+1's rx.
  void intra_node_ring(MaxMinSystem& s, VariableId v, std::uint32_t node) const {
    for (std::uint32_t g = 0; g < kGpus; ++g) {
      s.expand(v, nvl_tx[node * kGpus + g]);
      s.expand(v, nvl_rx[node * kGpus + (g + 1) % kGpus]);
    }
  }
  /// A ring on `rail` over `nodes` (in order): each hop a -> b crosses a's NIC tx and b's NIC
  /// rx, plus the leaf trunks when a and b hang off different leaves.
  void rail_ring(MaxMinSystem& s, VariableId v, std::uint32_t rail,
                 const std::vector<std::uint32_t>& nodes) const {
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const std::uint32_t a = nodes[k], b = nodes[(k + 1) % nodes.size()];
      s.expand(v, nic_tx[a * kGpus + rail]);
      s.expand(v, nic_rx[b * kGpus + rail]);
      if (leaf(a) != leaf(b)) {
        s.expand(v, leaf_up[rail * kLeaves + leaf(a)]);
        s.expand(v, leaf_down[rail * kLeaves + leaf(b)]);
      }
    }
  }
};

/// 8192 ring variables: half intra-node rings (32 per node: tensor-parallel collectives over
/// several channels), half rail rings over 8 consecutive-or-strided nodes (data-parallel
/// collectives). Intra-node rings form one component per node, rail rings one per rail (joined
/// by the leaf trunks). Returns the number of elements.
std::size_t build_rings(MaxMinSystem& s, const Cluster& cluster) {
  Rng rng{42};
  for (std::uint32_t r = 0; r < 8192; ++r) {
    const VariableId v = s.add_variable();
    if (r < 4096) {
      cluster.intra_node_ring(s, v, r % Cluster::kNodes);
    } else {
      const std::uint32_t rail = rng.below(Cluster::kGpus);
      const std::uint32_t start = rng.below(Cluster::kNodes);
      const std::uint32_t stride = 1 + rng.below(16);
      std::vector<std::uint32_t> nodes;
      for (std::uint32_t k = 0; k < 8; ++k)
        nodes.push_back((start + k * stride) % Cluster::kNodes);
      cluster.rail_ring(s, v, rail, nodes);
    }
  }
  s.solve();
  return s.last_solve_stats().elements;
}

void BM_SolveFull8192Rings(benchmark::State& state) {
  MaxMinSystem s;
  const Cluster cluster(s);
  const std::size_t elements = build_rings(s, cluster);
  for (auto _ : state) {
    s.invalidate_all();
    benchmark::DoNotOptimize(s.solve().size());
  }
  state.counters["variables"] = static_cast<double>(s.last_solve_stats().variables);
  state.counters["constraints"] = static_cast<double>(s.last_solve_stats().constraints);
  state.counters["elements"] = static_cast<double>(elements);
  state.counters["components"] = static_cast<double>(s.last_solve_stats().components);
}
BENCHMARK(BM_SolveFull8192Rings)->Unit(benchmark::kMillisecond);

// One p2p flow is added and solved, then removed and solved: the cost of one flow start plus
// one finish in the full 8192-ring system. Arg 0: an intra-node flow (node 17, GPU 3 -> GPU 5
// over NVLink), whose component is that node's 32 intra-node rings. Arg 1: an inter-node flow
// on rail 3 (node 17 -> node 90, crossing two leaves), whose component is every rail ring of
// rail 3, joined through the leaf trunks.
void BM_IncrementalAddRemoveFlow(benchmark::State& state) {
  MaxMinSystem s;
  const Cluster cluster(s);
  build_rings(s, cluster);
  const bool inter_node = state.range(0) == 1;
  constexpr std::uint32_t kRail = 3, kSrc = 17, kDst = 90;
  std::size_t resolved = 0;
  for (auto _ : state) {
    const VariableId f = s.add_variable();
    if (inter_node) {
      s.expand(f, cluster.nic_tx[kSrc * Cluster::kGpus + kRail]);
      s.expand(f, cluster.leaf_up[kRail * Cluster::kLeaves + Cluster::leaf(kSrc)]);
      s.expand(f, cluster.leaf_down[kRail * Cluster::kLeaves + Cluster::leaf(kDst)]);
      s.expand(f, cluster.nic_rx[kDst * Cluster::kGpus + kRail]);
    } else {
      s.expand(f, cluster.nvl_tx[kSrc * Cluster::kGpus + 3]);
      s.expand(f, cluster.nvl_rx[kSrc * Cluster::kGpus + 5]);
    }
    benchmark::DoNotOptimize(s.solve().size());
    resolved = s.last_solve_stats().variables;
    s.remove_variable(f);
    benchmark::DoNotOptimize(s.solve().size());
  }
  state.counters["vars_resolved"] = static_cast<double>(resolved);
  state.counters["total_vars"] = static_cast<double>(s.variable_count());
}
BENCHMARK(BM_IncrementalAddRemoveFlow)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
