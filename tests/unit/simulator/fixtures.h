// Shared helpers of the simulator tests: shipped topologies, small hand-built programs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/ir/builder.h"
#include "common/topology/loader.h"
#include "common/topology/topology.h"
#include "schedules/workload.h"

namespace tawpipe::sim::testing {

/// A shipped topology by name; fails the test if it does not load.
inline topo::Topology shipped(const std::string& name) {
  auto t = topo::load_topology_file(topo::topology_dir() / (name + ".yaml"));
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().to_string());
  return *t;
}

/// The workload of `model` on shipped `topology` with `sets` (as --set), on one thread.
inline schedules::Workload workload_for(const std::string& topology, const std::string& model,
                                        std::vector<std::string> sets) {
  schedules::WorkloadSpec spec;
  spec.topology = topology;
  spec.model = model;
  spec.sets = std::move(sets);
  auto w = schedules::resolve_workload(spec);
  EXPECT_TRUE(w.ok()) << w.error().to_string();
  w->threads = 1;
  return std::move(*w);
}

/// A header for `ranks` ranks placed on GPUs 0..ranks-1.
inline ir::Header header_for(const topo::Topology& t, std::int32_t ranks,
                             const std::string& dtype = "fp16") {
  ir::Header h;
  h.schedule = "test";
  h.dtype = dtype;
  h.topology = t.name();
  h.topology_hash = t.content_hash();
  h.seq_len = 1;
  h.global_batch = 1;
  for (std::int32_t r = 0; r < ranks; ++r)
    h.placement.push_back(r);
  return h;
}

/// A cost of `flops` GEMM FLOPs and nothing else.
inline ir::Cost gemm_cost(double flops) {
  ir::Cost c;
  c.flops[static_cast<std::size_t>(ir::OpClass::gemm)] = flops;
  return c;
}

/// Picoseconds of `seconds`, rounded up as the models do.
inline std::int64_t ceil_ps(double seconds) {
  return static_cast<std::int64_t>(std::ceil(seconds * 1e12));
}

/// One generated configuration of the replica tests: a method with options on a shipped
/// topology with `dp` replicas.
struct ReplicaCase {
  std::string topology;
  std::string method;  ///< registry name
  std::map<std::string, std::string> options;
  int dp;
};

/// The method matrix of the replica tests on one topology and `dp`: every method with its
/// defaults, interleaved 1F1B and TawPipe with three groups.
inline std::vector<ReplicaCase> replica_cases(const std::string& topology, int dp) {
  std::vector<ReplicaCase> cases;
  for (const char* method : {"tawpipe", "weipipe", "fsdp", "1f1b", "zb1", "zb2"})
    cases.push_back({topology, method, {}, dp});
  cases.push_back({topology, "1f1b", {{"virtual", "2"}}, dp});
  cases.push_back({topology, "tawpipe", {{"groups", "3"}}, dp});
  return cases;
}

/// `method[key=value] on topology, dp N`, for messages.
inline std::string name(const ReplicaCase& c) {
  std::string s = c.method;
  for (const auto& [k, v] : c.options)
    s += "[" + k + "=" + v + "]";
  return s + " on " + c.topology + ", dp " + std::to_string(c.dp);
}

}  // namespace tawpipe::sim::testing
