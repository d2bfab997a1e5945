// Malformed topologies: every file in tests/data/bad_topologies fails with a located error that
// contains the substring its manifest line names; inline cases check exact locations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/topology/loader.h"

namespace tawpipe::topo {
namespace {

struct Case {
  std::string file;
  std::string substring;
};

std::vector<Case> read_manifest() {
  std::ifstream in(std::string(TAWPIPE_BAD_TOPOLOGIES_DIR) + "/EXPECTED.txt");
  EXPECT_TRUE(in.good());
  std::vector<Case> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << line;
    if (tab == std::string::npos) continue;
    out.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return out;
}

TEST(BadTopologies, EveryManifestFileFailsWithLocatedError) {
  const std::vector<Case> cases = read_manifest();
  EXPECT_GE(cases.size(), 30u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::filesystem::path path = std::filesystem::path(TAWPIPE_BAD_TOPOLOGIES_DIR) / c.file;
    ASSERT_TRUE(std::filesystem::exists(path));
    auto t = load_topology_file(path);
    ASSERT_FALSE(t.ok());
    const Error& e = t.error();
    EXPECT_EQ(e.file, path.string());
    EXPECT_GT(e.line, 0);
    EXPECT_GT(e.column, 0);
    EXPECT_NE(e.to_string().find(c.substring), std::string::npos) << e.to_string();
    EXPECT_EQ(e.to_string().find('\n'), std::string::npos) << "one line: " << e.to_string();
  }
}

TEST(BadTopologies, ManifestListsEveryFile) {
  std::set<std::string> listed;
  for (const Case& c : read_manifest())
    EXPECT_TRUE(listed.insert(c.file).second) << "listed twice: " << c.file;
  for (const auto& entry : std::filesystem::directory_iterator(TAWPIPE_BAD_TOPOLOGIES_DIR)) {
    const std::string name = entry.path().filename().string();
    if (name == "EXPECTED.txt") continue;
    EXPECT_TRUE(listed.count(name)) << "not in EXPECTED.txt: " << name;
  }
}

constexpr const char* kSmall = R"(name: small
description: "one node"
device_kinds:
  g:
    peak_flops: {bf16: 1TFLOP/s, fp16: 1TFLOP/s, fp32: 1TFLOP/s, tf32: 1TFLOP/s}
    memory: 1GiB
    memory_bandwidth: 1GB/s
    efficiency: {gemm: 0.5, attention_fwd: 0.5, attention_bwd: 0.5, elementwise: 0.5, memory: 0.5}
    launch_overhead: 1us
links:
  nvswitch: {latency: 1us, efficiency: 0.9}
  pcie: {latency: 1us, efficiency: 0.8}
node_templates:
  n:
    device: g
    gpus: 2
    fabric: nvswitch
    nvswitch: {bandwidth: 100GB/s}
    pcie: {bandwidth: 32GB/s}
nodes: 1
template: n
)";

TEST(LoaderErrors, SmallTopologyLoads) {
  auto t = load_topology_string(kSmall, "small.yaml");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->num_gpus(), 2);
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(LoaderErrors, MissingUnitPointsAtTheValue) {
  auto t = load_topology_string(replace(kSmall, "{bandwidth: 100GB/s}", "{bandwidth: 100}"),
                                "small.yaml");
  ASSERT_FALSE(t.ok());
  const Error& e = t.error();
  EXPECT_EQ(e.line, 18);
  EXPECT_EQ(e.column, 27);
  EXPECT_EQ(e.key_path, "node_templates.n.nvswitch.bandwidth");
  EXPECT_EQ(e.to_string().rfind("small.yaml:18:27: node_templates.n.nvswitch.bandwidth: ", 0), 0u)
      << e.to_string();
}

TEST(LoaderErrors, UnknownKeyPointsAtTheKeyWithSuggestion) {
  auto t = load_topology_string(replace(kSmall, "    gpus: 2", "    gpu: 2"), "small.yaml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().line, 16);
  EXPECT_EQ(t.error().column, 5);
  EXPECT_EQ(t.error().key_path, "node_templates.n.gpu");
  EXPECT_NE(t.error().message.find("did you mean 'gpus'"), std::string::npos);
}

TEST(LoaderErrors, MissingKeyPointsAtTheMapping) {
  auto t = load_topology_string(replace(kSmall, "    memory: 1GiB\n", ""), "small.yaml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().key_path, "device_kinds.g");
  EXPECT_EQ(t.error().line, 5);
  EXPECT_NE(t.error().message.find("missing required key 'memory'"), std::string::npos);
}

TEST(LoaderErrors, NeverThrowsOnOddInputs) {
  for (const char* text :
       {"", "\n", "---", "...", "~", "null", "[]", "{}", "a: b: c", "name: &a *a", "? [a]\n: b",
        "&x [*x]", "!!binary AAAA", "%YAML 9.9\n---\na", "\xef\xbb\xbf", "{name: [}"}) {
    auto t = load_topology_string(text, "odd.yaml");
    EXPECT_FALSE(t.ok()) << text;
    if (!t.ok()) {
      EXPECT_GT(t.error().line, 0) << text;
      EXPECT_GT(t.error().column, 0) << text;
    }
  }
}

}  // namespace
}  // namespace tawpipe::topo
