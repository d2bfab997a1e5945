// The canonical YAML form of a spec: every field explicit, fixed key order, units formatted so
// that they parse back to the same value. Its FNV-1a hash is the topology's content hash.
#include <yaml-cpp/yaml.h>

#include <string>

#include "common/strings.h"
#include "common/topology/describe.h"
#include "common/topology/graph_impl.h"
#include "common/topology/kernel_tables.h"
#include "common/topology/spec.h"

namespace tawpipe::topo::detail {
namespace {

void bandwidth_block(YAML::Emitter& out, const char* k, Bandwidth b) {
  key(out, k);
  out << YAML::Flow << YAML::BeginMap;
  key(out, "bandwidth");
  out << to_string(b) << YAML::EndMap;
}

void emit_device(YAML::Emitter& out, const DeviceKind& d) {
  key(out, d.name.c_str());
  out << YAML::BeginMap;
  key(out, "peak_flops");
  out << YAML::Flow << YAML::BeginMap;
  key(out, "bf16");
  out << to_string(d.peak_bf16);
  key(out, "fp16");
  out << to_string(d.peak_fp16);
  key(out, "fp32");
  out << to_string(d.peak_fp32);
  key(out, "tf32");
  out << to_string(d.peak_tf32) << YAML::EndMap;
  key(out, "memory");
  out << to_string(d.memory_capacity);
  key(out, "memory_bandwidth");
  out << to_string(d.memory_bandwidth);
  key(out, "efficiency");
  out << YAML::Flow << YAML::BeginMap;
  key(out, "gemm");
  out << shortest_number(d.efficiency.gemm);
  key(out, "attention_fwd");
  out << shortest_number(d.efficiency.attention_fwd);
  key(out, "attention_bwd");
  out << shortest_number(d.efficiency.attention_bwd);
  key(out, "elementwise");
  out << shortest_number(d.efficiency.elementwise);
  key(out, "memory");
  out << shortest_number(d.efficiency.memory) << YAML::EndMap;
  key(out, "launch_overhead");
  out << to_string(d.launch_overhead);
  if (d.sm_count > 0) {
    key(out, "sm_count");
    out << d.sm_count;
  }
  if (d.kernels) {
    key(out, "kernels");
    emit_kernel_tables(out, *d.kernels);
  }
  out << YAML::EndMap;
}

void emit_template(YAML::Emitter& out, const TemplateSpec& t) {
  key(out, t.id.c_str());
  out << YAML::BeginMap;
  key(out, "device");
  out << t.device;
  key(out, "gpus");
  out << t.gpus;
  key(out, "sockets");
  out << t.sockets;
  if (t.socket_link_bandwidth) bandwidth_block(out, "socket_link", *t.socket_link_bandwidth);
  key(out, "fabric");
  out << std::string(to_string(t.fabric));
  if (t.fabric == IntraFabric::nvswitch) bandwidth_block(out, "nvswitch", t.nvswitch_bandwidth);
  if (t.fabric == IntraFabric::shared_memory) {
    bandwidth_block(out, "shared_memory", t.shared_memory_bandwidth);
  }
  if (t.fabric == IntraFabric::nvlink_mesh) {
    key(out, "nvlink");
    out << YAML::BeginSeq;
    for (const NvlinkSpec& l : t.nvlinks) {
      out << YAML::Flow << YAML::BeginMap;
      key(out, "gpus");
      out << YAML::Flow << YAML::BeginSeq << l.gpu_a << l.gpu_b << YAML::EndSeq;
      key(out, "bandwidth");
      out << to_string(l.bandwidth) << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (!t.pcie_switches.empty()) {
    key(out, "pcie");
    out << YAML::BeginMap;
    key(out, "bandwidth");
    out << to_string(t.pcie_bandwidth);
    if (!t.implicit_pcie_switch) {
      key(out, "switches");
      out << YAML::BeginSeq;
      for (const PcieSwitchSpec& s : t.pcie_switches) {
        out << YAML::Flow << YAML::BeginMap;
        key(out, "id");
        out << s.id;
        if (s.parent.empty()) {
          key(out, "socket");
          out << s.socket;
        } else {
          key(out, "parent");
          out << s.parent;
        }
        if (!s.gpus.empty()) {
          key(out, "gpus");
          out << YAML::Flow << YAML::BeginSeq;
          for (const int g : s.gpus)
            out << g;
          out << YAML::EndSeq;
        }
        if (s.uplink_bandwidth) {
          key(out, "uplink_bandwidth");
          out << to_string(*s.uplink_bandwidth);
        }
        out << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  if (!t.nics.empty()) {
    key(out, "nics");
    out << YAML::BeginSeq;
    for (const NicSpec& n : t.nics) {
      out << YAML::Flow << YAML::BeginMap;
      key(out, "id");
      out << n.id;
      key(out, "pcie_switch");
      out << n.pcie_switch;
      if (n.bandwidth) {
        key(out, "bandwidth");
        out << to_string(*n.bandwidth);
      }
      if (n.latency) {
        key(out, "latency");
        out << to_string(*n.latency);
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
}

void emit_network(YAML::Emitter& out, const TopologySpec& spec) {
  key(out, "inter_node");
  out << YAML::BeginMap;
  if (spec.nic_bandwidth) bandwidth_block(out, "nic", *spec.nic_bandwidth);
  if (spec.socket_transport) {
    key(out, "transport");
    out << "socket";
  }
  const NetworkSpec& n = *spec.network;
  key(out, "network");
  out << YAML::BeginMap;
  key(out, "topology");
  out << std::string(to_string(n.kind));
  if (n.kind == NetworkKind::fat_tree) {
    key(out, "nics_per_leaf");
    out << n.nics_per_leaf;
  }
  if (n.kind == NetworkKind::rail_optimized && n.nodes_per_leaf > 0) {
    key(out, "nodes_per_leaf");
    out << n.nodes_per_leaf;
  }
  if (n.kind != NetworkKind::single_switch) {
    key(out, "spines");
    out << n.spines;
    key(out, "oversubscription");
    out << shortest_number(n.oversubscription);
  }
  out << YAML::EndMap << YAML::EndMap;
}

void emit_overrides(YAML::Emitter& out, const TopologySpec& spec) {
  key(out, "link_overrides");
  out << YAML::BeginSeq;
  for (const LinkOverrideSpec& o : spec.link_overrides) {
    out << YAML::Flow << YAML::BeginMap;
    if (o.to.empty()) {
      key(out, "nic");
      out << o.from;
    } else {
      key(out, "between");
      out << YAML::Flow << YAML::BeginSeq << o.from << o.to << YAML::EndSeq;
      key(out, "direction");
      out << (o.both_directions ? "both" : "forward");
    }
    if (o.bandwidth) {
      key(out, "bandwidth");
      out << to_string(*o.bandwidth);
    }
    if (o.efficiency) {
      key(out, "efficiency");
      out << shortest_number(*o.efficiency);
    }
    if (o.latency) {
      key(out, "latency");
      out << to_string(*o.latency);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace

std::string dump_spec(const TopologySpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  key(out, "name");
  out << spec.name;
  key(out, "description");
  out << YAML::DoubleQuoted << spec.description;
  key(out, "device_kinds");
  out << YAML::BeginMap;
  for (const DeviceKind& d : spec.devices)
    emit_device(out, d);
  out << YAML::EndMap;
  key(out, "links");
  out << YAML::BeginMap;
  for (int i = 0; i < kNumLinkClasses; ++i) {
    const LinkClassSpec& c = spec.link_classes[static_cast<std::size_t>(i)];
    if (!c.present) continue;
    key(out, std::string(to_string(static_cast<LinkClass>(i))).c_str());
    out << YAML::Flow << YAML::BeginMap;
    key(out, "latency");
    out << to_string(c.latency);
    key(out, "efficiency");
    out << shortest_number(c.efficiency) << YAML::EndMap;
  }
  out << YAML::EndMap;
  key(out, "node_templates");
  out << YAML::BeginMap;
  for (const TemplateSpec& t : spec.templates)
    emit_template(out, t);
  out << YAML::EndMap;
  if (spec.nodes_shorthand) {
    key(out, "nodes");
    out << spec.groups.front().count;
    key(out, "template");
    out << spec.groups.front().template_id;
  } else {
    key(out, "node_groups");
    out << YAML::BeginSeq;
    for (const GroupSpec& g : spec.groups) {
      out << YAML::Flow << YAML::BeginMap;
      key(out, "name");
      out << g.name;
      key(out, "template");
      out << g.template_id;
      key(out, "count");
      out << g.count << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (spec.network) emit_network(out, spec);
  if (!spec.link_overrides.empty()) emit_overrides(out, spec);
  if (spec.host) {
    key(out, "host");
    out << YAML::Flow << YAML::BeginMap;
    key(out, "cores_per_host");
    out << spec.host->cores_per_host;
    key(out, "ranks_per_core");
    out << spec.host->ranks_per_core << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace tawpipe::topo::detail

namespace tawpipe::topo {

std::string to_yaml(const Topology& topology) {
  return detail::dump_spec(topology.data().spec);
}

}  // namespace tawpipe::topo
