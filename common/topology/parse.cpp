// YAML -> TopologySpec: the schema of topologies/README.md, checked key by key. Reference,
// range and consistency checks that need the whole file are at the end (`cross_check`).
#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "common/topology/kernel_tables.h"
#include "common/topology/loader.h"
#include "common/topology/overrides.h"
#include "common/topology/spec.h"
#include "common/yaml_read.h"

namespace tawpipe::topo::detail {

Error error_at(const std::string& file, const Where& where, std::string message) {
  return Error{std::move(message), file, std::max(where.line, 1), std::max(where.column, 1),
               where.path};
}

namespace {

using yaml::Ctx;
using yaml::dict_items;
using yaml::fail;
using yaml::MapReader;
using yaml::read_bandwidth;
using yaml::read_bytes;
using yaml::read_efficiency;
using yaml::read_flop_rate;
using yaml::read_id;
using yaml::read_int;
using yaml::read_number;
using yaml::read_string;
using yaml::read_time;
using yaml::seq_items;

/// The location of `c` as a spec `Where`.
Where where_of(const Ctx& c) {
  return Where{c.line, c.column, c.path};
}

const std::vector<std::string> kRootKeys = {
    "name",        "description", "device_kinds",   "links", "node_templates", "nodes", "template",
    "node_groups", "inter_node",  "link_overrides", "host"};
const std::vector<std::string> kDeviceKeys = {"peak_flops", "memory",          "memory_bandwidth",
                                              "efficiency", "launch_overhead", "sm_count",
                                              "kernels"};
const std::vector<std::string> kPeakKeys = {"bf16", "fp16", "fp32", "tf32"};
const std::vector<std::string> kEfficiencyKeys = {"gemm", "attention_fwd", "attention_bwd",
                                                  "elementwise", "memory"};
const std::vector<std::string> kLinkClassKeys = {"latency", "efficiency"};
const std::vector<std::string> kTemplateKeys = {"device", "gpus",     "sockets", "socket_link",
                                                "fabric", "nvswitch", "nvlink",  "shared_memory",
                                                "pcie",   "nics"};
const std::vector<std::string> kBandwidthOnly = {"bandwidth"};
const std::vector<std::string> kNvlinkKeys = {"gpus", "bandwidth"};
const std::vector<std::string> kPcieKeys = {"bandwidth", "switches"};
const std::vector<std::string> kSwitchKeys = {"id", "socket", "parent", "gpus", "uplink_bandwidth"};
const std::vector<std::string> kNicKeys = {"id", "pcie_switch", "bandwidth", "latency"};
const std::vector<std::string> kGroupKeys = {"name", "template", "count"};
const std::vector<std::string> kInterNodeKeys = {"nic", "network", "transport"};
const std::vector<std::string> kHostKeys = {"cores_per_host", "ranks_per_core"};
const std::vector<std::string> kNetworkKeys = {"topology", "nics_per_leaf", "nodes_per_leaf",
                                               "spines", "oversubscription"};
const std::vector<std::string> kLinkOverrideKeys = {"between",   "nic",        "direction",
                                                    "bandwidth", "efficiency", "latency"};
const std::vector<std::string> kFabrics = {"nvswitch", "nvlink_mesh", "pcie", "shared_memory"};
const std::vector<std::string> kNetworkKinds = {"single_switch", "fat_tree", "rail_optimized"};

std::vector<std::string> link_class_names() {
  std::vector<std::string> out;
  for (int i = 0; i < kNumLinkClasses; ++i)
    out.emplace_back(to_string(static_cast<LinkClass>(i)));
  return out;
}

// One of `choices`, with a did-you-mean.
std::size_t read_choice(const Ctx& c, const std::vector<std::string>& choices,
                        std::string_view what) {
  const std::string s = read_string(c, what);
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == s) return i;
  }
  fail(c, "unknown " + std::string(what) + " '" + s + "'" + did_you_mean(s, choices) +
              "; one of: " + join(choices, ", "));
}

DeviceKind parse_device(const std::string& id, const Ctx& c) {
  const MapReader m(c, kDeviceKeys, "device kind");
  DeviceKind d;
  d.name = id;
  const MapReader peak(m.at("peak_flops"), kPeakKeys, "peak_flops");
  d.peak_bf16 = read_flop_rate(peak.at("bf16"));
  d.peak_fp16 = read_flop_rate(peak.at("fp16"));
  d.peak_fp32 = read_flop_rate(peak.at("fp32"));
  d.peak_tf32 = read_flop_rate(peak.at("tf32"));
  d.memory_capacity = read_bytes(m.at("memory"));
  d.memory_bandwidth = read_bandwidth(m.at("memory_bandwidth"));
  const MapReader eff(m.at("efficiency"), kEfficiencyKeys, "efficiency");
  d.efficiency.gemm = read_efficiency(eff.at("gemm"));
  d.efficiency.attention_fwd = read_efficiency(eff.at("attention_fwd"));
  d.efficiency.attention_bwd = read_efficiency(eff.at("attention_bwd"));
  d.efficiency.elementwise = read_efficiency(eff.at("elementwise"));
  d.efficiency.memory = read_efficiency(eff.at("memory"));
  d.launch_overhead = read_time(m.at("launch_overhead"));
  if (auto v = m.opt("sm_count")) d.sm_count = read_int(*v, 1, 4096, "an SM count");
  if (auto v = m.opt("kernels")) d.kernels = parse_kernel_tables(*v);
  return d;
}

int read_gpu_index(const Ctx& c, int gpus) {
  const int g = read_int(c, 0, kMaxGpusPerNode, "GPU index");
  if (g >= gpus) {
    fail(c, "undefined GPU " + std::to_string(g) + " (the template has " + std::to_string(gpus) +
                " GPUs, 0.." + std::to_string(gpus - 1) + ")");
  }
  return g;
}

Bandwidth read_bandwidth_block(const Ctx& c, std::string_view what) {
  const MapReader m(c, kBandwidthOnly, what);
  return read_bandwidth(m.at("bandwidth"));
}

void parse_nvlinks(const Ctx& c, TemplateSpec& t) {
  for (const Ctx& item : seq_items(c, "NVLink pairs")) {
    const MapReader m(item, kNvlinkKeys, "NVLink pair");
    const std::vector<Ctx> ends = seq_items(m.at("gpus"), "the two GPUs of the link");
    if (ends.size() != 2) fail(m.at("gpus"), "an NVLink joins exactly two GPUs, e.g. [0, 1]");
    NvlinkSpec l;
    l.gpu_a = read_gpu_index(ends[0], t.gpus);
    l.gpu_b = read_gpu_index(ends[1], t.gpus);
    if (l.gpu_a == l.gpu_b) fail(m.at("gpus"), "self-loop: NVLink from GPU to itself");
    l.bandwidth = read_bandwidth(m.at("bandwidth"));
    l.where = where_of(item);
    for (const auto& o : t.nvlinks) {
      if (std::minmax(o.gpu_a, o.gpu_b) == std::minmax(l.gpu_a, l.gpu_b)) {
        fail(item, "duplicate NVLink between GPUs " + std::to_string(l.gpu_a) + " and " +
                       std::to_string(l.gpu_b) + " (give the total bandwidth once)");
      }
    }
    t.nvlinks.push_back(std::move(l));
  }
}

void check_new_name(const Ctx& c, const std::vector<std::string>& taken, const std::string& id) {
  if (std::find(taken.begin(), taken.end(), id) != taken.end()) {
    fail(c, "duplicate id '" + id + "' in the node template");
  }
}

void parse_pcie(const MapReader& tm, TemplateSpec& t, std::vector<std::string>& names) {
  const bool shm = t.fabric == IntraFabric::shared_memory;
  const auto pc = tm.opt("pcie");
  if (!pc) {
    if (!shm) fail(tm.self(), "missing required key 'pcie' (PCIe bandwidth and switches)");
    if (tm.has("nics")) fail(tm.at("nics"), "NICs need a 'pcie' section to attach to");
    return;
  }
  const MapReader m(*pc, kPcieKeys, "pcie");
  t.pcie_bandwidth = read_bandwidth(m.at("bandwidth"));
  const auto sw = m.opt("switches");
  if (!sw) {
    t.implicit_pcie_switch = true;
    PcieSwitchSpec s;
    s.id = "pcie0";
    s.socket = 0;
    if (!shm) {
      for (int g = 0; g < t.gpus; ++g)
        s.gpus.push_back(g);
    }
    s.where = where_of(*pc);
    names.push_back(s.id);
    t.pcie_switches.push_back(std::move(s));
    return;
  }
  const std::vector<Ctx> items = seq_items(*sw, "PCIe switches");
  if (items.empty()) fail(*sw, "at least one PCIe switch is needed (or leave 'switches' out)");
  if (items.size() > static_cast<std::size_t>(kMaxPcieSwitchesPerNode)) {
    fail(*sw, "too many PCIe switches (at most " + std::to_string(kMaxPcieSwitchesPerNode) + ")");
  }
  std::vector<int> owner(static_cast<std::size_t>(t.gpus), -1);
  for (const Ctx& item : items) {
    const MapReader s(item, kSwitchKeys, "PCIe switch");
    PcieSwitchSpec p;
    p.id = read_id(s.at("id"), "PCIe switch id");
    check_new_name(s.at("id"), names, p.id);
    names.push_back(p.id);
    if (s.has("socket") == s.has("parent")) {
      fail(item, "a PCIe switch needs exactly one of 'socket' (CPU root port) or 'parent'");
    }
    if (const auto sock = s.opt("socket")) {
      p.socket = read_int(*sock, 0, kMaxSockets, "socket");
      if (p.socket >= t.sockets) {
        fail(*sock, "undefined socket " + std::to_string(p.socket) + " (the template has " +
                        std::to_string(t.sockets) + ")");
      }
    } else {
      p.parent = read_id(s.at("parent"), "parent PCIe switch");
      if (p.parent == p.id) fail(s.at("parent"), "self-loop: PCIe switch is its own parent");
    }
    if (const auto g = s.opt("gpus")) {
      if (shm) fail(*g, "ranks of a shared_memory node sit on the CPU, not on a PCIe switch");
      for (const Ctx& gi : seq_items(*g, "GPUs under the switch")) {
        const int gpu = read_gpu_index(gi, t.gpus);
        auto& o = owner[static_cast<std::size_t>(gpu)];
        if (o >= 0) {
          // `o` may be the switch being read (not yet in t.pcie_switches).
          const auto other = static_cast<std::size_t>(o);
          const std::string& where =
              other < t.pcie_switches.size() ? t.pcie_switches[other].id : p.id;
          fail(gi, "duplicate: GPU " + std::to_string(gpu) + " is already under switch '" + where +
                       "'");
        }
        o = static_cast<int>(t.pcie_switches.size());
        p.gpus.push_back(gpu);
      }
    }
    if (const auto u = s.opt("uplink_bandwidth")) p.uplink_bandwidth = read_bandwidth(*u);
    p.where = where_of(item);
    t.pcie_switches.push_back(std::move(p));
  }
  // Parents must exist and form a forest (no cycles).
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::size_t cur = i;
    for (std::size_t steps = 0; !t.pcie_switches[cur].parent.empty(); ++steps) {
      const std::string& parent = t.pcie_switches[cur].parent;
      auto it = std::find_if(t.pcie_switches.begin(), t.pcie_switches.end(),
                             [&](const PcieSwitchSpec& s) { return s.id == parent; });
      if (it == t.pcie_switches.end()) {
        std::vector<std::string> ids;
        for (const auto& s : t.pcie_switches)
          ids.push_back(s.id);
        fail(MapReader(items[cur], kSwitchKeys, "PCIe switch").at("parent"),
             "undefined PCIe switch '" + parent + "'" + did_you_mean(parent, ids));
      }
      cur = static_cast<std::size_t>(it - t.pcie_switches.begin());
      if (steps > items.size()) fail(items[i], "cycle in the PCIe switch parents");
    }
  }
  if (!shm) {
    for (int g = 0; g < t.gpus; ++g) {
      if (owner[static_cast<std::size_t>(g)] < 0) {
        fail(*sw, "disconnected GPU: GPU " + std::to_string(g) + " is under no PCIe switch");
      }
    }
  }
}

void parse_nics(const MapReader& tm, TemplateSpec& t, std::vector<std::string>& names) {
  const auto nc = tm.opt("nics");
  if (!nc) return;
  const std::vector<Ctx> items = seq_items(*nc, "NICs");
  if (items.size() > static_cast<std::size_t>(kMaxNicsPerNode)) {
    fail(*nc, "too many NICs (at most " + std::to_string(kMaxNicsPerNode) + " per node)");
  }
  for (const Ctx& item : items) {
    const MapReader m(item, kNicKeys, "NIC");
    NicSpec n;
    n.id = read_id(m.at("id"), "NIC id");
    check_new_name(m.at("id"), names, n.id);
    names.push_back(n.id);
    if (const auto s = m.opt("pcie_switch")) {
      n.pcie_switch = read_id(*s, "PCIe switch");
      std::vector<std::string> ids;
      for (const auto& p : t.pcie_switches)
        ids.push_back(p.id);
      if (std::find(ids.begin(), ids.end(), n.pcie_switch) == ids.end()) {
        fail(*s,
             "undefined PCIe switch '" + n.pcie_switch + "'" + did_you_mean(n.pcie_switch, ids));
      }
    } else if (!t.implicit_pcie_switch) {
      fail(item, "missing required key 'pcie_switch' (the switch the NIC sits under)");
    } else {
      n.pcie_switch = t.pcie_switches.front().id;
    }
    if (const auto b = m.opt("bandwidth")) n.bandwidth = read_bandwidth(*b);
    if (const auto l = m.opt("latency")) n.latency = read_time(*l);
    n.where = where_of(item);
    t.nics.push_back(std::move(n));
  }
}

TemplateSpec parse_template(const std::string& id, const Ctx& c, const TopologySpec& spec) {
  const MapReader m(c, kTemplateKeys, "node template");
  TemplateSpec t;
  t.id = id;
  t.where = where_of(c);
  t.device = read_id(m.at("device"), "device kind");
  std::vector<std::string> devices;
  for (const auto& d : spec.devices)
    devices.push_back(d.name);
  if (std::find(devices.begin(), devices.end(), t.device) == devices.end()) {
    fail(m.at("device"),
         "undefined device kind '" + t.device + "'" + did_you_mean(t.device, devices));
  }
  t.gpus = read_int(m.at("gpus"), 1, kMaxGpusPerNode, "GPUs per node");
  if (const auto s = m.opt("sockets")) t.sockets = read_int(*s, 1, kMaxSockets, "sockets");
  if (const auto sl = m.opt("socket_link")) {
    if (t.sockets < 2) fail(*sl, "socket_link needs 'sockets' of 2 or more");
    t.socket_link_bandwidth = read_bandwidth_block(*sl, "socket_link");
  } else if (t.sockets > 1) {
    fail(c, "missing required key 'socket_link' (the inter-socket link, e.g. UPI or xGMI)");
  }
  t.fabric = static_cast<IntraFabric>(read_choice(m.at("fabric"), kFabrics, "fabric"));
  const auto want = [&](const char* key, bool needed) {
    if (needed && !m.has(key)) {
      fail(c, std::string("missing required key '") + key + "' (fabric " +
                  std::string(to_string(t.fabric)) + ")");
    }
    if (!needed && m.has(key)) {
      fail(m.at(key), std::string("'") + key + "' does not apply to fabric " +
                          std::string(to_string(t.fabric)));
    }
  };
  want("nvswitch", t.fabric == IntraFabric::nvswitch);
  want("nvlink", t.fabric == IntraFabric::nvlink_mesh);
  want("shared_memory", t.fabric == IntraFabric::shared_memory);
  if (t.fabric == IntraFabric::nvswitch) {
    t.nvswitch_bandwidth = read_bandwidth_block(m.at("nvswitch"), "nvswitch");
  } else if (t.fabric == IntraFabric::nvlink_mesh) {
    parse_nvlinks(m.at("nvlink"), t);
  } else if (t.fabric == IntraFabric::shared_memory) {
    t.shared_memory_bandwidth = read_bandwidth_block(m.at("shared_memory"), "shared_memory");
  }
  std::vector<std::string> names;
  parse_pcie(m, t, names);
  parse_nics(m, t, names);
  return t;
}

NetworkSpec parse_network(const Ctx& c) {
  const MapReader m(c, kNetworkKeys, "network");
  NetworkSpec n;
  n.where = where_of(c);
  n.kind = static_cast<NetworkKind>(read_choice(m.at("topology"), kNetworkKinds, "network"));
  const auto only_for = [&](const char* key, bool applies) {
    if (!applies && m.has(key)) {
      fail(m.at(key), std::string("'") + key + "' does not apply to a " +
                          std::string(to_string(n.kind)) + " network");
    }
  };
  only_for("nics_per_leaf", n.kind == NetworkKind::fat_tree);
  only_for("nodes_per_leaf", n.kind == NetworkKind::rail_optimized);
  only_for("spines", n.kind != NetworkKind::single_switch);
  only_for("oversubscription", n.kind != NetworkKind::single_switch);
  if (n.kind == NetworkKind::fat_tree) {
    n.nics_per_leaf = read_int(m.at("nics_per_leaf"), 1, kMaxGpusTotal, "NICs per leaf");
    n.spines = read_int(m.at("spines"), 0, kMaxSpines, "spines");
  }
  if (n.kind == NetworkKind::rail_optimized) {
    if (const auto v = m.opt("nodes_per_leaf")) {
      n.nodes_per_leaf = read_int(*v, 1, kMaxNodes, "nodes per leaf");
    }
    if (const auto v = m.opt("spines")) n.spines = read_int(*v, 0, kMaxSpines, "spines");
  }
  if (const auto v = m.opt("oversubscription")) {
    n.oversubscription = read_number(*v, 1.0, 64.0, true, "oversubscription");
  }
  return n;
}

LinkOverrideSpec parse_link_override(const Ctx& c) {
  const MapReader m(c, kLinkOverrideKeys, "link override");
  LinkOverrideSpec o;
  o.where = where_of(c);
  if (m.has("between") == m.has("nic")) {
    fail(c, "a link override needs exactly one of 'between: [a, b]' or 'nic: name'");
  }
  if (const auto b = m.opt("between")) {
    const std::vector<Ctx> ends = seq_items(*b, "the two vertices of the link");
    if (ends.size() != 2) fail(*b, "'between' names exactly two vertices, e.g. [node0/gpu0, ...]");
    o.from = read_string(ends[0], "vertex name");
    o.to = read_string(ends[1], "vertex name");
    if (o.from == o.to) fail(*b, "self-loop: a link from '" + o.from + "' to itself");
  } else {
    o.from = read_string(m.at("nic"), "NIC name");
  }
  if (const auto d = m.opt("direction")) {
    o.both_directions = read_choice(*d, {"both", "forward"}, "direction") == 0;
  }
  if (const auto v = m.opt("bandwidth")) o.bandwidth = read_bandwidth(*v);
  if (const auto v = m.opt("efficiency")) o.efficiency = read_efficiency(*v);
  if (const auto v = m.opt("latency")) o.latency = read_time(*v);
  if (!o.bandwidth && !o.efficiency && !o.latency) {
    fail(c, "a link override must set at least one of bandwidth, efficiency, latency");
  }
  return o;
}

void parse_groups(const MapReader& root, TopologySpec& spec) {
  std::vector<std::string> templates;
  for (const auto& t : spec.templates)
    templates.push_back(t.id);
  const auto lookup_template = [&](const Ctx& c) {
    const std::string id = read_id(c, "node template");
    if (std::find(templates.begin(), templates.end(), id) == templates.end()) {
      fail(c, "undefined node template '" + id + "'" + did_you_mean(id, templates));
    }
    return id;
  };
  if (root.has("node_groups")) {
    if (root.has("nodes") || root.has("template")) {
      fail(root.at("node_groups"), "give either 'nodes' + 'template' or 'node_groups', not both");
    }
    const std::vector<Ctx> items = seq_items(root.at("node_groups"), "node groups");
    if (items.empty()) fail(root.at("node_groups"), "at least one node group is needed");
    for (const Ctx& item : items) {
      const MapReader m(item, kGroupKeys, "node group");
      GroupSpec g;
      g.name = read_id(m.at("name"), "group name");
      for (const auto& o : spec.groups) {
        if (o.name == g.name) fail(m.at("name"), "duplicate id '" + g.name + "' in node_groups");
      }
      g.template_id = lookup_template(m.at("template"));
      g.count = read_int(m.at("count"), 1, kMaxNodes, "node count");
      g.where = where_of(item);
      spec.groups.push_back(std::move(g));
    }
    return;
  }
  if (!root.has("nodes")) fail(root.self(), "missing required key 'nodes' (or 'node_groups')");
  GroupSpec g;
  g.count = read_int(root.at("nodes"), 1, kMaxNodes, "node count");
  g.template_id = lookup_template(root.at("template"));
  g.name = g.template_id;
  g.where = where_of(root.at("nodes"));
  spec.nodes_shorthand = true;
  spec.groups.push_back(std::move(g));
}

// Checks that need the whole file: sizes, NIC bandwidths, the network, link class defaults.
void cross_check(const MapReader& root, TopologySpec& spec) {
  std::int64_t nodes = 0;
  std::int64_t gpus = 0;
  std::vector<bool> used(spec.templates.size(), false);
  for (const auto& g : spec.groups) {
    const auto it = std::find_if(spec.templates.begin(), spec.templates.end(),
                                 [&](const TemplateSpec& t) { return t.id == g.template_id; });
    used[static_cast<std::size_t>(it - spec.templates.begin())] = true;
    nodes += g.count;
    gpus += static_cast<std::int64_t>(g.count) * it->gpus;
    const Ctx where{YAML::Node(), g.where.path, g.where.line, g.where.column, &spec.file};
    if (nodes > kMaxNodes)
      fail(where, "too many nodes (at most " + std::to_string(kMaxNodes) + ")");
    if (gpus > kMaxGpusTotal) {
      fail(where, "too many GPUs: " + std::to_string(gpus) + " (at most " +
                      std::to_string(kMaxGpusTotal) + " in total)");
    }
  }
  if (nodes > 1 && !spec.network) {
    fail(root.self(), "missing 'inter_node.network': a cluster of " + std::to_string(nodes) +
                          " nodes needs a network");
  }
  std::array<std::string, kNumLinkClasses> needed_by{};
  const auto need = [&](LinkClass cls, const std::string& by) {
    auto& slot = needed_by[static_cast<std::size_t>(cls)];
    if (slot.empty()) slot = by;
  };
  const bool has_network = spec.network.has_value();
  for (std::size_t i = 0; i < spec.templates.size(); ++i) {
    if (!used[i]) continue;
    const TemplateSpec& t = spec.templates[i];
    const std::string by = "node template '" + t.id + "'";
    if (t.fabric == IntraFabric::nvswitch) need(LinkClass::nvswitch, by);
    if (t.fabric == IntraFabric::nvlink_mesh) need(LinkClass::nvlink, by);
    if (t.fabric == IntraFabric::shared_memory) need(LinkClass::shared_memory, by);
    if (!t.pcie_switches.empty()) need(LinkClass::pcie, by);
    if (t.sockets > 1) need(LinkClass::cpu_link, by);
    for (const auto& n : t.nics) {
      if (!n.bandwidth && !spec.nic_bandwidth) {
        const Ctx where{YAML::Node(), n.where.path, n.where.line, n.where.column, &spec.file};
        fail(where,
             "NIC '" + n.id + "' has no bandwidth and 'inter_node.nic.bandwidth' is not set");
      }
      if (has_network) need(LinkClass::nic, by);
    }
  }
  if (has_network && spec.network->spines > 0) need(LinkClass::network, "the network's spines");
  for (int i = 0; i < kNumLinkClasses; ++i) {
    const auto idx = static_cast<std::size_t>(i);
    if (!needed_by[idx].empty() && !spec.link_classes[idx].present) {
      const Ctx where{YAML::Node(), spec.links_where.path, spec.links_where.line,
                      spec.links_where.column, &spec.file};
      fail(where, "missing link class '" + std::string(to_string(static_cast<LinkClass>(i))) +
                      "' (latency and efficiency; used by " + needed_by[idx] + ")");
    }
  }
}

TopologySpec parse_root(const Ctx& c) {
  if (!c.node.IsMap()) {
    fail(c, "the top level of a topology file must be a mapping (name:, description:, ...)");
  }
  const MapReader m(c, kRootKeys, "the topology");
  TopologySpec spec;
  spec.file = *c.file;
  spec.root_where = where_of(c);
  spec.name = read_id(m.at("name"), "topology name");
  spec.description = read_string(m.at("description"), "description");
  const auto devices = dict_items(m.at("device_kinds"), "device kinds");
  if (devices.empty()) fail(m.at("device_kinds"), "at least one device kind is needed");
  for (const auto& [id, dc] : devices) {
    spec.devices.push_back(parse_device(id, dc));
    spec.device_where.push_back(where_of(dc));
  }
  std::sort(spec.devices.begin(), spec.devices.end(),
            [](const DeviceKind& a, const DeviceKind& b) { return a.name < b.name; });
  const Ctx links = m.at("links");
  spec.links_where = where_of(links);
  const std::vector<std::string> classes = link_class_names();
  for (const auto& [id, lc] : dict_items(links, "link classes")) {
    const auto it = std::find(classes.begin(), classes.end(), id);
    if (it == classes.end()) {
      fail(lc, "unknown link class '" + id + "'" + did_you_mean(id, classes) +
                   "; one of: " + join(classes, ", "));
    }
    const MapReader lm(lc, kLinkClassKeys, "link class");
    LinkClassSpec& s = spec.link_classes[static_cast<std::size_t>(it - classes.begin())];
    s.present = true;
    s.latency = read_time(lm.at("latency"));
    s.efficiency = read_efficiency(lm.at("efficiency"));
    s.where = where_of(lc);
  }
  const auto templates = dict_items(m.at("node_templates"), "node templates");
  if (templates.empty()) fail(m.at("node_templates"), "at least one node template is needed");
  for (const auto& [id, tc] : templates)
    spec.templates.push_back(parse_template(id, tc, spec));
  parse_groups(m, spec);
  if (const auto inter = m.opt("inter_node")) {
    const MapReader im(*inter, kInterNodeKeys, "inter_node");
    if (const auto nic = im.opt("nic")) {
      spec.nic_bandwidth = read_bandwidth_block(*nic, "inter_node.nic");
      spec.nic_where = where_of(*nic);
    }
    spec.network = parse_network(im.at("network"));
    if (const auto tr = im.opt("transport"))
      spec.socket_transport = read_choice(*tr, {"ib", "socket"}, "inter-node transport") == 1;
  }
  if (const auto lo = m.opt("link_overrides")) {
    for (const Ctx& item : seq_items(*lo, "link overrides"))
      spec.link_overrides.push_back(parse_link_override(item));
  }
  cross_check(m, spec);
  if (const auto host = m.opt("host")) {
    const MapReader hm(*host, kHostKeys, "host");
    HostCpu h;
    h.cores_per_host = yaml::read_int(hm.at("cores_per_host"), 1, 4096, "a core count");
    h.ranks_per_core = yaml::read_int(hm.at("ranks_per_core"), 1, 1024, "a rank count");
    std::int64_t gpus = 0;
    for (const GroupSpec& g : spec.groups) {
      for (const TemplateSpec& t : spec.templates)
        gpus += t.id == g.template_id ? static_cast<std::int64_t>(g.count) * t.gpus : 0;
    }
    if (gpus > static_cast<std::int64_t>(h.cores_per_host) * h.ranks_per_core) {
      fail(hm.at("ranks_per_core"), std::to_string(gpus) + " ranks do not fit on " +
                                        std::to_string(h.cores_per_host) + " cores with " +
                                        std::to_string(h.ranks_per_core) + " ranks per core");
    }
    spec.host = h;
  }
  return spec;
}

}  // namespace

bool is_schema_key(std::string_view key) {
  if (is_kernel_table_key(key)) return true;
  for (const auto* table :
       {&kRootKeys, &kDeviceKeys, &kPeakKeys, &kEfficiencyKeys, &kLinkClassKeys, &kTemplateKeys,
        &kNvlinkKeys, &kPcieKeys, &kSwitchKeys, &kNicKeys, &kGroupKeys, &kInterNodeKeys,
        &kNetworkKeys, &kLinkOverrideKeys, &kHostKeys}) {
    if (std::find(table->begin(), table->end(), key) != table->end()) return true;
  }
  return false;
}

Expected<TopologySpec> parse_spec(std::string_view text, const std::string& file,
                                  const std::vector<Override>& overrides) {
  const Where top{1, 1, ""};
  try {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      const Where at{e.mark.line >= 0 ? e.mark.line + 1 : 1,
                     e.mark.column >= 0 ? e.mark.column + 1 : 1, ""};
      return error_at(file, at, "not valid YAML: " + e.msg);
    }
    if (!root.IsDefined() || root.IsNull()) {
      return error_at(file, top, "empty topology file (expected a mapping with name:, ...)");
    }
    TAWPIPE_TRY(apply_overrides(root, overrides, file));
    return parse_root(yaml::root_ctx(root, file));
  } catch (const yaml::ReadError& e) {
    return e.error;
  } catch (const YAML::Exception& e) {
    const Where at{e.mark.line >= 0 ? e.mark.line + 1 : 1,
                   e.mark.column >= 0 ? e.mark.column + 1 : 1, ""};
    return error_at(file, at, "malformed topology: " + e.msg);
  } catch (const std::exception& e) {
    return error_at(file, top, std::string("cannot load topology: ") + e.what());
  }
}

}  // namespace tawpipe::topo::detail
