// Shipped topologies load; sizes, devices, round trip through text, --set overrides, names.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "common/topology/describe.h"
#include "common/topology/loader.h"
#include "common/topology/topology.h"

namespace tawpipe::topo {
namespace {

Topology load(const std::string& name, const std::vector<Override>& overrides = {}) {
  auto path = resolve_topology(name);
  EXPECT_TRUE(path.ok()) << (path.ok() ? "" : path.error().to_string());
  auto t = load_topology_file(*path, overrides);
  if (!t.ok()) ADD_FAILURE() << t.error().to_string();
  return std::move(t).value();
}

TEST(ShippedTopologies, AllLoadAndDescribe) {
  const auto list = list_shipped_topologies();
  ASSERT_GE(list.size(), 12u);
  for (const auto& entry : list) {
    SCOPED_TRACE(entry.name);
    auto path = resolve_topology(entry.name);
    ASSERT_TRUE(path.ok()) << path.error().to_string();
    auto t = load_topology_file(*path);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    EXPECT_EQ(t->name(), entry.name);
    EXPECT_EQ(t->description(), entry.description);
    EXPECT_FALSE(entry.description.empty());
    EXPECT_EQ(t->content_hash().size(), 16u);
    EXPECT_FALSE(describe(*t).empty());
    std::ostringstream dot;
    write_dot(*t, dot);
    EXPECT_NE(dot.str().find("digraph"), std::string::npos);
  }
}

TEST(ShippedTopologies, ListIsSortedWithDescriptions) {
  const auto list = list_shipped_topologies();
  for (std::size_t i = 1; i < list.size(); ++i)
    EXPECT_LT(list[i - 1].name, list[i].name);
  bool found = false;
  for (const auto& e : list)
    found = found || e.name == "3x8-a100";
  EXPECT_TRUE(found);
}

TEST(ShippedTopologies, PaperClusterHas24GpusIn3Nodes) {
  const Topology t = load("3x8-a100");
  EXPECT_EQ(t.num_gpus(), 24);
  EXPECT_EQ(t.num_nodes(), 3);
  for (NodeId n = 0; n < 3; ++n) {
    ASSERT_EQ(t.gpus_of_node(n).size(), 8u);
    EXPECT_EQ(t.fabric_of(n), IntraFabric::nvswitch);
  }
  EXPECT_EQ(t.node_of(17), 2);
  EXPECT_EQ(t.local_index(17), 1);
  EXPECT_EQ(t.gpu_at(2, 1), 17);
  const DeviceKind& d = t.device(0);
  EXPECT_EQ(d.name, "a100-sxm4-80gb");
  EXPECT_DOUBLE_EQ(d.peak_bf16.teraflops(), 312.0);
  EXPECT_EQ(d.memory_capacity, Bytes::gib(80));
  EXPECT_DOUBLE_EQ(d.efficiency.gemm, 0.86);
  // One shared 100 GbE NIC per node: every GPU uses it and sits on rail 0.
  for (GpuId g = 0; g < 24; ++g) {
    EXPECT_EQ(t.vertex(t.nic_of(g)).name, "node" + std::to_string(t.node_of(g)) + "/eth0");
    EXPECT_EQ(t.rail_of(g), 0);
  }
  const std::string text = describe(t);
  EXPECT_NE(text.find("GPUs: 24"), std::string::npos) << text;
  EXPECT_NE(text.find("nvswitch"), std::string::npos);
  EXPECT_NE(text.find("12.50 GB/s"), std::string::npos) << text;
  EXPECT_TRUE(t.nccl_socket_transport());
}

TEST(ShippedTopologies, HeterogeneousGroupsAndDegradedNic) {
  const Topology t = load("hetero-a100-h100");
  EXPECT_EQ(t.num_nodes(), 4);
  EXPECT_EQ(t.device(t.gpu_at(0, 0)).name, "a100-sxm4-80gb");
  EXPECT_EQ(t.device(t.gpu_at(3, 7)).name, "h100-sxm5-80gb");
  EXPECT_EQ(t.group_of(1), "a100");
  EXPECT_EQ(t.group_of(2), "h100");
  // GPU 5 of node 2 goes out through the degraded NIC: 200 Gb/s instead of 400.
  const GpuId g = t.gpu_at(2, 5);
  EXPECT_EQ(t.vertex(t.nic_of(g)).name, "node2/mlx5_5");
  const auto r = t.route(g, t.gpu_at(3, 5));
  bool saw_degraded = false;
  for (const LinkId l : r) {
    if (t.link(l).src == t.nic_of(g) && t.link(l).cls == LinkClass::nic) {
      EXPECT_DOUBLE_EQ(t.link(l).capacity.gigabytes_per_second(), 25.0);
      saw_degraded = true;
    }
  }
  EXPECT_TRUE(saw_degraded);
  const auto healthy = t.route(t.gpu_at(2, 4), t.gpu_at(3, 4));
  EXPECT_DOUBLE_EQ(t.bottleneck(healthy).gigabytes_per_second(), 50.0 * 0.95);
  EXPECT_DOUBLE_EQ(t.bottleneck(r).gigabytes_per_second(), 25.0 * 0.95);
}

TEST(ShippedTopologies, LargeClusterLoadsFastAndRoutesAreCached) {
  const auto start = std::chrono::steady_clock::now();
  const Topology t = load("128x8-h100-ndr");
  const auto loaded = std::chrono::steady_clock::now();
  EXPECT_EQ(t.num_gpus(), 1024);
  EXPECT_EQ(t.num_nodes(), 128);
  // A ring over all GPUs plus a few all-pairs sources.
  for (GpuId g = 0; g < 1024; ++g)
    EXPECT_FALSE(t.route(g, (g + 1) % 1024).empty());
  const auto first = t.route(5, 1000);
  const auto again = t.route(5, 1000);
  EXPECT_EQ(first.data(), again.data());  // cached, same storage
  const double load_s = std::chrono::duration<double>(loaded - start).count();
#if defined(__SANITIZE_ADDRESS__)
  constexpr double kLimitS = 10.0;  // sanitizers slow allocation-heavy code ~5-10x
#else
  constexpr double kLimitS = 1.0;
#endif
  EXPECT_LT(load_s, kLimitS);
  EXPECT_EQ(t.rail_of(t.gpu_at(77, 3)), 3);
}

TEST(ShippedTopologies, CpuTopologies) {
  const Topology one = load("localhost-cpu");
  EXPECT_EQ(one.num_gpus(), 2);
  EXPECT_EQ(one.num_nodes(), 1);
  EXPECT_EQ(one.nic_of(0), kNoVertex);
  const auto r = one.route(0, 1);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(one.link(r[0]).cls, LinkClass::shared_memory);
  const Topology two = load("2x2-cpu");
  EXPECT_EQ(two.num_nodes(), 2);
  EXPECT_EQ(two.num_gpus(), 4);
  const Topology three = load("3x2-cpu");
  EXPECT_EQ(three.num_nodes(), 3);
  EXPECT_EQ(three.num_gpus(), 6);
  EXPECT_EQ(three.node_of(5), 2);
  EXPECT_FALSE(three.route(0, 5).empty());
}

TEST(RoundTrip, DumpLoadGivesEqualGraph) {
  for (const auto& entry : list_shipped_topologies()) {
    SCOPED_TRACE(entry.name);
    const Topology a = load(entry.name);
    const std::string text = to_yaml(a);
    auto b = load_topology_string(text, "dump.yaml");
    ASSERT_TRUE(b.ok()) << b.error().to_string() << "\n" << text;
    EXPECT_EQ(a.content_hash(), b->content_hash());
    EXPECT_EQ(text, to_yaml(*b));
    EXPECT_EQ(a.vertices(), b->vertices());
    EXPECT_EQ(a.links(), b->links());
    EXPECT_EQ(a.device_kinds(), b->device_kinds());
    for (GpuId g = 0; g < a.num_gpus(); ++g)
      EXPECT_EQ(a.nic_of(g), b->nic_of(g));
  }
}

TEST(RoundTrip, HashChangesWithContentNotWithComments) {
  const Topology a = load("dgx-a100");
  auto path = resolve_topology("dgx-a100");
  ASSERT_TRUE(path.ok());
  const Topology b = load("dgx-a100", {{"inter_node.nic.bandwidth", "100Gb/s"}});
  EXPECT_NE(a.content_hash(), b.content_hash());
  auto c = load_topology_string(to_yaml(a) + "# a trailing comment\n", "x.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(a.content_hash(), c->content_hash());
}

TEST(Overrides, SetChangesNicBandwidth) {
  const Topology t = load("3x8-a100", {{"inter_node.nic.bandwidth", "12.5GB/s"}});
  const auto r = t.route(0, 8);
  Bandwidth nic;
  for (const LinkId l : r) {
    if (t.link(l).cls == LinkClass::nic) nic = t.link(l).capacity;
  }
  EXPECT_DOUBLE_EQ(nic.gigabytes_per_second(), 12.5);
}

TEST(Overrides, IndexedPathAndAddedKey) {
  const Topology t =
      load("2x8-pcie-100gbe",
           {{"node_templates.pcie-server.nics[0].bandwidth", "25GB/s"}, {"nodes", "3"}});
  EXPECT_EQ(t.num_nodes(), 3);
  for (const Link& l : t.links()) {
    if (l.cls == LinkClass::nic) {
      EXPECT_DOUBLE_EQ(l.capacity.gigabytes_per_second(), 25.0);
    }
  }
}

TEST(Overrides, UnknownPathSuggestsKey) {
  auto path = resolve_topology("3x8-a100");
  ASSERT_TRUE(path.ok());
  auto t = load_topology_file(*path, {{"inter_node.nic.bandwith", "1GB/s"}});
  ASSERT_FALSE(t.ok());
  const Error& e = t.error();
  EXPECT_NE(e.message.find("did you mean 'bandwidth'"), std::string::npos) << e.to_string();
  EXPECT_GT(e.line, 0);
  EXPECT_GT(e.column, 0);
  EXPECT_EQ(e.file, path->string());
  auto u = load_topology_file(*path, {{"inter_nod.nic.bandwidth", "1GB/s"}});
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message.find("did you mean 'inter_node'"), std::string::npos);
}

TEST(Overrides, BadValueIsLocatedAndBadTextRejected) {
  auto path = resolve_topology("3x8-a100");
  ASSERT_TRUE(path.ok());
  auto t = load_topology_file(*path, {{"inter_node.nic.bandwidth", "12.5"}});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("missing unit"), std::string::npos) << t.error().to_string();
  EXPECT_EQ(t.error().key_path, "inter_node.nic.bandwidth");
  EXPECT_GT(t.error().line, 0);
  EXPECT_FALSE(parse_override("no-equals-sign").ok());
  auto o = parse_override("a.b[2].c=12.5GB/s");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->key_path, "a.b[2].c");
  EXPECT_EQ(o->value, "12.5GB/s");
}

TEST(Resolve, NamesPathsAndEnvironment) {
  auto p = resolve_topology("3x8-a100");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->filename(), "3x8-a100.yaml");
  auto typo = resolve_topology("3x8-a10");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("did you mean '3x8-a100'"), std::string::npos);
  EXPECT_FALSE(resolve_topology("/nonexistent/x.yaml").ok());
  auto direct = resolve_topology(p->string());
  ASSERT_TRUE(direct.ok());
  const auto dir = p->parent_path();
  ::setenv("TAWPIPE_TOPOLOGY_DIR", "/nonexistent-dir", 1);
  EXPECT_FALSE(resolve_topology("3x8-a100").ok());
  ::setenv("TAWPIPE_TOPOLOGY_DIR", dir.c_str(), 1);
  EXPECT_TRUE(resolve_topology("3x8-a100").ok());
  ::unsetenv("TAWPIPE_TOPOLOGY_DIR");
  auto missing = load_topology_file("/nonexistent/x.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().line, 1);
}

}  // namespace
}  // namespace tawpipe::topo
