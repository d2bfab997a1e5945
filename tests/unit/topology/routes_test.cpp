// Routes, NIC selection, bottleneck bandwidth and bisection on the shipped topologies. Expected
// values are derived in comments from the files' figures.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "common/topology/describe.h"
#include "common/topology/loader.h"
#include "common/topology/topology.h"

namespace tawpipe::topo {
namespace {

Topology load(const std::string& name) {
  auto path = resolve_topology(name);
  EXPECT_TRUE(path.ok());
  auto t = load_topology_file(*path);
  if (!t.ok()) ADD_FAILURE() << t.error().to_string();
  return std::move(t).value();
}

// "name1 > name2 > ..." of the vertices a route visits.
std::string path_names(const Topology& t, std::span<const LinkId> r) {
  std::string out = t.vertex(t.link(r.front()).src).name;
  for (const LinkId l : r)
    out += " > " + t.vertex(t.link(l).dst).name;
  return out;
}

// A route is a chain from src's vertex to dst's vertex that never revisits a vertex.
void expect_valid_route(const Topology& t, GpuId a, GpuId b) {
  const auto r = t.route(a, b);
  if (a == b) {
    EXPECT_TRUE(r.empty());
    return;
  }
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(t.link(r.front()).src, t.gpu_vertex(a));
  EXPECT_EQ(t.link(r.back()).dst, t.gpu_vertex(b));
  std::set<VertexId> seen{t.gpu_vertex(a)};
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(t.link(r[i - 1]).dst, t.link(r[i]).src);
    }
    EXPECT_TRUE(seen.insert(t.link(r[i]).dst).second) << path_names(t, r);
  }
}

TEST(Routes, InsideNvswitchNodeGoesThroughTheSwitch) {
  const Topology t = load("dgx-a100");
  const auto r = t.route(0, 5);
  EXPECT_EQ(path_names(t, r), "node0/gpu0 > node0/nvswitch > node0/gpu5");
  EXPECT_EQ(t.link(r[0]).cls, LinkClass::nvswitch);
  EXPECT_FALSE(t.link(r[0]).inter_node);
  // 300 GB/s x 0.91 (NVLink3 efficiency) = 273 GB/s; 2 hops x 500 ns.
  EXPECT_DOUBLE_EQ(t.bottleneck(r).gigabytes_per_second(), 273.0);
  EXPECT_EQ(t.route_latency(r), SimTime::ns(1000));
}

TEST(Routes, AcrossNodesThroughTheRailNic) {
  const Topology t = load("4x8-a100-hdr");
  // GPU 3 of node 0 -> GPU 3 of node 1: same rail, one leaf, no spine.
  const auto r = t.route(3, 8 + 3);
  EXPECT_EQ(path_names(t, r),
            "node0/gpu3 > node0/sw1 > node0/mlx5_3 > net/rail3 > node1/mlx5_3 > node1/sw1 > "
            "node1/gpu3");
  // min(PCIe 32 x 0.80 = 25.6, HDR 25 x 0.96 = 24) = 24 GB/s.
  EXPECT_DOUBLE_EQ(t.bottleneck(r).gigabytes_per_second(), 24.0);
  EXPECT_TRUE(t.link(r[2]).inter_node);
  EXPECT_EQ(t.link(r[2]).cls, LinkClass::nic);
  // 2 PCIe hops (1 us) + 2 NIC hops (1 us) + 2 PCIe hops (1 us) = 6 us.
  EXPECT_EQ(t.route_latency(r), SimTime::us(6));
}

TEST(Routes, CrossRailGoesThroughSpineChosenDModK) {
  const Topology t = load("4x8-a100-hdr");
  // GPU 0 of node 0 (rail 0) -> GPU 1 of node 1 (rail 1). Destination NIC ordinal 9, 4 spines
  // -> spine 1.
  const auto r = t.route(0, 9);
  EXPECT_EQ(path_names(t, r),
            "node0/gpu0 > node0/sw0 > node0/mlx5_0 > net/rail0 > net/spine1 > net/rail1 > "
            "node1/mlx5_1 > node1/sw0 > node1/gpu1");
  EXPECT_EQ(t.link(r[3]).cls, LinkClass::network);
}

TEST(Routes, PcieServerThroughSwitchesAndCpuLink) {
  const Topology t = load("2x8-pcie-100gbe");
  EXPECT_EQ(path_names(t, t.route(0, 1)), "node0/gpu0 > node0/sw0 > node0/gpu1");
  const auto r = t.route(0, 5);
  EXPECT_EQ(path_names(t, r),
            "node0/gpu0 > node0/sw0 > node0/cpu0 > node0/cpu1 > node0/sw2 > node0/gpu5");
  EXPECT_EQ(t.link(r[2]).cls, LinkClass::cpu_link);
  // min(PCIe 32 x 0.8 = 25.6, socket link 64 x 0.7 = 44.8) = 25.6 GB/s.
  EXPECT_DOUBLE_EQ(t.bottleneck(r).gigabytes_per_second(), 25.6);
  // Inter-node from a GPU on socket 1: up to the NIC on socket 0, across, and back down.
  const auto x = t.route(5, 8 + 5);
  EXPECT_EQ(path_names(t, x),
            "node0/gpu5 > node0/sw2 > node0/cpu1 > node0/cpu0 > node0/sw0 > node0/eth0 > "
            "net/switch > node1/eth0 > node1/sw0 > node1/cpu0 > node1/cpu1 > node1/sw2 > "
            "node1/gpu5");
  // 100 GbE x 0.96 = 12 GB/s.
  EXPECT_DOUBLE_EQ(t.bottleneck(x).gigabytes_per_second(), 12.0);
}

TEST(Routes, RailFabricWithoutSpinesFallsBackToIntraNodeHop) {
  const char* yaml = R"(
name: rails-no-spine
description: "two NVSwitch nodes, two rails, no spine"
device_kinds:
  g: {peak_flops: {bf16: 1TFLOP/s, fp16: 1TFLOP/s, fp32: 1TFLOP/s, tf32: 1TFLOP/s},
      memory: 1GiB, memory_bandwidth: 1GB/s, launch_overhead: 1us,
      efficiency: {gemm: 1, attention_fwd: 1, attention_bwd: 1, elementwise: 1, memory: 1}}
links:
  nvswitch: {latency: 1us, efficiency: 1}
  pcie: {latency: 1us, efficiency: 1}
  nic: {latency: 1us, efficiency: 1}
node_templates:
  n:
    device: g
    gpus: 2
    fabric: nvswitch
    nvswitch: {bandwidth: 100GB/s}
    pcie:
      bandwidth: 10GB/s
      switches: [{id: s0, socket: 0, gpus: [0]}, {id: s1, socket: 0, gpus: [1]}]
    nics: [{id: a, pcie_switch: s0}, {id: b, pcie_switch: s1}]
nodes: 2
template: n
inter_node: {nic: {bandwidth: 10GB/s}, network: {topology: rail_optimized}}
)";
  auto t = load_topology_string(yaml, "rails.yaml");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->rail_of(0), 0);
  EXPECT_EQ(t->rail_of(1), 1);
  expect_valid_route(*t, 0, 3);
  bool uses_nvswitch = false;
  for (const LinkId l : t->route(0, 3))
    uses_nvswitch = uses_nvswitch || t->link(l).cls == LinkClass::nvswitch;
  EXPECT_TRUE(uses_nvswitch) << path_names(*t, t->route(0, 3));
}

TEST(NicSelection, NearestNicWithTiesSharedInTurn) {
  const Topology t = load("dgx-a100");
  // Two GPUs and two NICs per PCIe switch: GPU i takes mlx5_i, rail i.
  for (GpuId g = 0; g < 8; ++g) {
    EXPECT_EQ(t.vertex(t.nic_of(g)).name, "node0/mlx5_" + std::to_string(g));
    EXPECT_EQ(t.rail_of(g), g);
  }
  const Topology p = load("2x4-pcie-ib");
  // One NIC under sw0: GPUs 2 and 3 (under sw1) reach it through the CPU and still use it.
  for (GpuId g = 0; g < 8; ++g)
    EXPECT_EQ(p.vertex(p.nic_of(g)).kind, VertexKind::nic);
  EXPECT_EQ(p.vertex(p.nic_of(3)).name, "node0/mlx5_0");
  EXPECT_EQ(p.vertex(p.nic_of(7)).name, "node1/mlx5_0");
}

TEST(NicSelection, ClosestNicWinsOverLowerId) {
  const char* yaml = R"(
name: nic-pick
description: "GPU 1's NIC is on its own switch; NIC x has the lower id but is farther"
device_kinds:
  g: {peak_flops: {bf16: 1TFLOP/s, fp16: 1TFLOP/s, fp32: 1TFLOP/s, tf32: 1TFLOP/s},
      memory: 1GiB, memory_bandwidth: 1GB/s, launch_overhead: 1us,
      efficiency: {gemm: 1, attention_fwd: 1, attention_bwd: 1, elementwise: 1, memory: 1}}
links:
  pcie: {latency: 1us, efficiency: 1}
  cpu_link: {latency: 1us, efficiency: 1}
node_templates:
  n:
    device: g
    gpus: 2
    sockets: 2
    socket_link: {bandwidth: 20GB/s}
    fabric: pcie
    pcie:
      bandwidth: 10GB/s
      switches: [{id: s0, socket: 0, gpus: [0]}, {id: s1, socket: 1, gpus: [1]}]
    nics: [{id: x, pcie_switch: s0, bandwidth: 1GB/s}, {id: y, pcie_switch: s1, bandwidth: 1GB/s}]
nodes: 1
template: n
)";
  auto t = load_topology_string(yaml, "pick.yaml");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->vertex(t->nic_of(0)).name, "node0/x");
  EXPECT_EQ(t->vertex(t->nic_of(1)).name, "node0/y");
  EXPECT_EQ(t->rail_of(1), 1);
}

TEST(Routes, AllPairsValidAndDeterministic) {
  for (const char* name : {"3x8-a100", "4x8-a100-hdr", "2x8-pcie-100gbe", "hetero-a100-h100",
                           "3x2-cpu", "2x4-pcie-ib"}) {
    SCOPED_TRACE(name);
    const Topology a = load(name);
    const Topology b = load(name);
    for (GpuId s = 0; s < a.num_gpus(); ++s) {
      for (GpuId d = 0; d < a.num_gpus(); ++d) {
        expect_valid_route(a, s, d);
        const auto ra = a.route(s, d);
        const auto rb = b.route(s, d);
        EXPECT_TRUE(std::equal(ra.begin(), ra.end(), rb.begin(), rb.end()));
      }
    }
  }
}

TEST(Routes, ConcurrentQueriesAgree) {
  const Topology t = load("4x8-h100-ndr");
  std::vector<std::thread> threads;
  std::vector<std::size_t> total(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&t, &total, k] {
      for (GpuId s = 0; s < t.num_gpus(); ++s) {
        for (GpuId d = 0; d < t.num_gpus(); ++d)
          total[static_cast<std::size_t>(k)] += t.route(s, d).size();
      }
    });
  }
  for (auto& th : threads)
    th.join();
  for (int k = 1; k < 4; ++k)
    EXPECT_EQ(total[0], total[static_cast<std::size_t>(k)]);
}

TEST(Bisection, MaxFlowBetweenHalves) {
  // Node 0 vs nodes 1-2: one 100 GbE port = 12.5 GB/s.
  EXPECT_DOUBLE_EQ(bisection_bandwidth(load("3x8-a100")).gigabytes_per_second(), 12.5);
  // Nodes 0-1 vs 2-3: each of the 8 rail leaves carries 2 x 25 GB/s across = 400 GB/s.
  EXPECT_DOUBLE_EQ(bisection_bandwidth(load("4x8-a100-hdr")).gigabytes_per_second(), 400.0);
  // One DGX A100, GPUs 0-3 vs 4-7: NVSwitch 4 x 300 GB/s plus the PCIe side, limited by the
  // four GPUs' PCIe links 4 x 32 GB/s = 1328 GB/s.
  EXPECT_DOUBLE_EQ(bisection_bandwidth(load("dgx-a100")).gigabytes_per_second(), 1328.0);
  EXPECT_DOUBLE_EQ(bisection_bandwidth(load("localhost-cpu")).gigabytes_per_second(), 5.0);
}

}  // namespace
}  // namespace tawpipe::topo
