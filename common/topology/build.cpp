// TopologySpec -> graph: expands node groups into nodes, creates vertices and link pairs, wires
// the network, applies link overrides, checks connectivity and selects each GPU's NIC.
#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/strings.h"
#include "common/topology/graph_impl.h"

namespace tawpipe::topo::detail {
namespace {

class Builder {
 public:
  Builder(TopologySpec spec, std::string source) : d_(std::make_shared<TopologyData>()) {
    d_->spec = std::move(spec);
    d_->source = std::move(source);
    d_->devices = d_->spec.devices;
  }

  Expected<Topology> build() {
    reserve();
    for (std::size_t g = 0; g < d_->spec.groups.size(); ++g) {
      const GroupSpec& group = d_->spec.groups[g];
      const int t = template_index(group.template_id);
      for (int k = 0; k < group.count; ++k)
        add_node(t, static_cast<int>(g));
    }
    if (d_->spec.network) TAWPIPE_TRY(add_network(*d_->spec.network));
    TAWPIPE_TRY(apply_link_overrides());
    build_graph();
    TAWPIPE_TRY(check_connected());
    select_nics();
    d_->hash = fnv1a_hex(dump_spec(d_->spec));
    d_->cache =
        std::make_unique<RouteCache>(d_->vertices.size(), d_->gpus.size(), d_->nodes.size());
    return Topology(std::move(d_));
  }

 private:
  // Sizes the vertex and link arrays up front (large clusters: no reallocation copies).
  void reserve() {
    std::size_t vertices = 0;
    std::size_t links = 0;
    std::size_t nics = 0;
    std::size_t nodes = 0;
    std::size_t gpus_total = 0;
    for (const GroupSpec& g : d_->spec.groups) {
      const TemplateSpec& t =
          d_->spec.templates[static_cast<std::size_t>(template_index(g.template_id))];
      const auto count = static_cast<std::size_t>(g.count);
      const auto gpus = static_cast<std::size_t>(t.gpus);
      const auto sockets = static_cast<std::size_t>(t.sockets);
      vertices += count * (gpus + 1 + sockets + t.pcie_switches.size() + t.nics.size());
      links += 2 * count *
               (2 * gpus + t.nvlinks.size() + sockets * sockets + t.pcie_switches.size() +
                2 * t.nics.size());
      nics += count * t.nics.size();
      nodes += count;
      gpus_total += count * gpus;
    }
    d_->vertices.reserve(vertices + nics + 64);
    d_->links.reserve(links + 2 * nics);
    d_->gpus.reserve(gpus_total);
    d_->nodes.reserve(nodes);
  }

  int template_index(const std::string& id) const {
    for (std::size_t i = 0; i < d_->spec.templates.size(); ++i) {
      if (d_->spec.templates[i].id == id) return static_cast<int>(i);
    }
    assert(false && "the parser checked template references");
    return 0;
  }

  VertexId add_vertex(VertexKind kind, std::string name, NodeId node, int local) {
    const auto id = static_cast<VertexId>(d_->vertices.size());
    d_->vertices.push_back(Vertex{id, kind, std::move(name), node, local});
    return id;
  }

  static std::string arrow(const Vertex& from, const Vertex& to) {
    std::string name;
    name.reserve(from.name.size() + 2 + to.name.size());
    name.append(from.name).append("->").append(to.name);
    return name;
  }

  // Adds a -> b and b -> a with the class defaults; returns the id of a -> b.
  LinkId add_link_pair(VertexId a, VertexId b, Bandwidth capacity, LinkClass cls,
                       std::optional<SimTime> latency = std::nullopt) {
    const LinkClassSpec& c = d_->spec.link_classes[static_cast<std::size_t>(cls)];
    assert(c.present && "the parser checked that used link classes are configured");
    const auto& va = d_->vertices[static_cast<std::size_t>(a)];
    const auto& vb = d_->vertices[static_cast<std::size_t>(b)];
    const bool inter = va.node < 0 || vb.node < 0 || va.node != vb.node;
    const auto id = static_cast<LinkId>(d_->links.size());
    const SimTime lat = latency.value_or(c.latency);
    d_->links.push_back(Link{id, a, b, capacity, c.efficiency, lat, cls, inter, arrow(va, vb)});
    d_->links.push_back(Link{id + 1, b, a, capacity, c.efficiency, lat, cls, inter, arrow(vb, va)});
    return id;
  }

  void add_node(int t_index, int group_index) {
    const TemplateSpec& t = d_->spec.templates[static_cast<std::size_t>(t_index)];
    const auto n = static_cast<NodeId>(d_->nodes.size());
    NodeInfo node;
    node.template_index = t_index;
    node.group_index = group_index;
    node.first_vertex = static_cast<VertexId>(d_->vertices.size());
    node.first_link = static_cast<LinkId>(d_->links.size());
    const std::string prefix = "node" + std::to_string(n) + "/";
    const int device = device_index(t.device);
    for (int i = 0; i < t.gpus; ++i) {
      const auto gpu = static_cast<GpuId>(d_->gpus.size());
      const VertexId v = add_vertex(VertexKind::gpu, prefix + "gpu" + std::to_string(i), n, i);
      d_->gpus.push_back(GpuInfo{n, i, device, v, kNoVertex, 0});
      node.gpus.push_back(gpu);
    }
    const VertexId gpu0 = node.first_vertex;
    if (t.fabric == IntraFabric::nvswitch) {
      const VertexId sw = add_vertex(VertexKind::nvswitch, prefix + "nvswitch", n, 0);
      for (int i = 0; i < t.gpus; ++i)
        add_link_pair(gpu0 + i, sw, t.nvswitch_bandwidth, LinkClass::nvswitch);
    }
    for (const NvlinkSpec& l : t.nvlinks)
      add_link_pair(gpu0 + l.gpu_a, gpu0 + l.gpu_b, l.bandwidth, LinkClass::nvlink);
    std::vector<VertexId> cpus;
    for (int s = 0; s < t.sockets; ++s)
      cpus.push_back(add_vertex(VertexKind::cpu, prefix + "cpu" + std::to_string(s), n, s));
    for (int a = 0; a < t.sockets; ++a) {
      for (int b = a + 1; b < t.sockets; ++b) {
        add_link_pair(cpus[static_cast<std::size_t>(a)], cpus[static_cast<std::size_t>(b)],
                      *t.socket_link_bandwidth, LinkClass::cpu_link);
      }
    }
    if (t.fabric == IntraFabric::shared_memory) {
      for (int i = 0; i < t.gpus; ++i) {
        const auto socket = static_cast<std::size_t>(i * t.sockets / t.gpus);
        add_link_pair(gpu0 + i, cpus[socket], t.shared_memory_bandwidth, LinkClass::shared_memory);
      }
    }
    std::map<std::string, VertexId> switches;
    for (std::size_t i = 0; i < t.pcie_switches.size(); ++i) {
      const PcieSwitchSpec& s = t.pcie_switches[i];
      switches[s.id] = add_vertex(VertexKind::pcie_switch, prefix + s.id, n, static_cast<int>(i));
    }
    for (const PcieSwitchSpec& s : t.pcie_switches) {
      const VertexId sw = switches.at(s.id);
      const VertexId up =
          s.parent.empty() ? cpus[static_cast<std::size_t>(s.socket)] : switches.at(s.parent);
      add_link_pair(sw, up, s.uplink_bandwidth.value_or(t.pcie_bandwidth), LinkClass::pcie);
      for (const int g : s.gpus)
        add_link_pair(gpu0 + g, sw, t.pcie_bandwidth, LinkClass::pcie);
    }
    for (std::size_t i = 0; i < t.nics.size(); ++i) {
      const NicSpec& s = t.nics[i];
      const VertexId nic = add_vertex(VertexKind::nic, prefix + s.id, n, static_cast<int>(i));
      add_link_pair(nic, switches.at(s.pcie_switch), t.pcie_bandwidth, LinkClass::pcie);
      node.nics.push_back(nic);
      nic_specs_.push_back(&s);
    }
    node.end_vertex = static_cast<VertexId>(d_->vertices.size());
    node.end_link = static_cast<LinkId>(d_->links.size());
    d_->nodes.push_back(std::move(node));
  }

  int device_index(const std::string& name) const {
    for (std::size_t i = 0; i < d_->devices.size(); ++i) {
      if (d_->devices[i].name == name) return static_cast<int>(i);
    }
    assert(false && "the parser checked device references");
    return 0;
  }

  Bandwidth nic_bandwidth(const NicSpec& s) const {
    return s.bandwidth ? *s.bandwidth : *d_->spec.nic_bandwidth;
  }

  Error error(const Where& w, std::string message) const {
    return error_at(d_->spec.file, w, std::move(message));
  }

  Status add_network(const NetworkSpec& net) {
    NetInfo& ni = d_->net;
    std::vector<VertexId> nics;
    std::vector<std::pair<NodeId, int>> owner;  // node, local NIC index
    for (const NodeInfo& node : d_->nodes) {
      for (std::size_t i = 0; i < node.nics.size(); ++i) {
        nics.push_back(node.nics[i]);
        owner.emplace_back(d_->vertices[static_cast<std::size_t>(node.nics[i])].node,
                           static_cast<int>(i));
      }
    }
    ni.nic_ordinal_of_vertex.assign(d_->vertices.size(), -1);  // grown below for switches
    const auto num_nics = nics.size();
    ni.leaf_of_nic.assign(num_nics, -1);
    Bandwidth port = d_->spec.nic_bandwidth.value_or(Bandwidth());
    for (const NicSpec* s : nic_specs_)
      port = std::max(port, nic_bandwidth(*s));
    int ports_per_leaf = 0;
    std::vector<std::string> leaf_names;
    if (net.kind == NetworkKind::single_switch) {
      leaf_names.push_back("net/switch");
      for (std::size_t k = 0; k < num_nics; ++k)
        ni.leaf_of_nic[k] = 0;
    } else if (net.kind == NetworkKind::fat_tree) {
      ports_per_leaf = net.nics_per_leaf;
      const auto per = static_cast<std::size_t>(net.nics_per_leaf);
      const std::size_t leaves = std::max<std::size_t>(1, (num_nics + per - 1) / per);
      for (std::size_t l = 0; l < leaves; ++l)
        leaf_names.push_back("net/leaf" + std::to_string(l));
      for (std::size_t k = 0; k < num_nics; ++k)
        ni.leaf_of_nic[k] = static_cast<int>(k / per);
    } else {
      const int nodes = static_cast<int>(d_->nodes.size());
      const int per = net.nodes_per_leaf > 0 ? std::min(net.nodes_per_leaf, nodes) : nodes;
      ports_per_leaf = per;
      const int blocks = (nodes + per - 1) / per;
      int rails = 0;
      for (const NodeInfo& node : d_->nodes)
        rails = std::max(rails, static_cast<int>(node.nics.size()));
      for (int r = 0; r < rails; ++r) {
        for (int b = 0; b < blocks; ++b) {
          leaf_names.push_back("net/rail" + std::to_string(r) +
                               (blocks > 1 ? ".leaf" + std::to_string(b) : std::string()));
        }
      }
      for (std::size_t k = 0; k < num_nics; ++k)
        ni.leaf_of_nic[k] = owner[k].second * blocks + owner[k].first / per;
    }
    if (net.kind != NetworkKind::single_switch && leaf_names.size() > 1 && net.spines == 0 &&
        net.kind == NetworkKind::fat_tree) {
      return error(net.where, "a fat_tree with " + std::to_string(leaf_names.size()) +
                                  " leaves needs spines >= 1");
    }
    for (std::size_t l = 0; l < leaf_names.size(); ++l) {
      ni.leaves.push_back(
          add_vertex(VertexKind::network_switch, leaf_names[l], -1, static_cast<int>(l)));
    }
    ni.nic_up.assign(num_nics, -1);
    for (std::size_t k = 0; k < num_nics; ++k) {
      const NicSpec& s = *nic_specs_[k];
      ni.nic_ordinal_of_vertex[static_cast<std::size_t>(nics[k])] = static_cast<int>(k);
      ni.nic_up[k] = add_link_pair(nics[k], ni.leaves[static_cast<std::size_t>(ni.leaf_of_nic[k])],
                                   nic_bandwidth(s), LinkClass::nic, s.latency);
    }
    if (leaf_names.size() > 1 && net.spines > 0) {
      const Bandwidth up = port * (static_cast<double>(ports_per_leaf) / net.oversubscription /
                                   static_cast<double>(net.spines));
      const auto base = static_cast<int>(leaf_names.size());
      for (int s = 0; s < net.spines; ++s) {
        ni.spines.push_back(
            add_vertex(VertexKind::network_switch, "net/spine" + std::to_string(s), -1, base + s));
      }
      ni.leaf_up.assign(ni.leaves.size(), {});
      for (std::size_t l = 0; l < ni.leaves.size(); ++l) {
        for (const VertexId sp : ni.spines)
          ni.leaf_up[l].push_back(add_link_pair(ni.leaves[l], sp, up, LinkClass::network));
      }
    }
    ni.nic_ordinal_of_vertex.resize(d_->vertices.size(), -1);
    return Status::success();
  }

  Status apply_link_overrides() {
    if (d_->spec.link_overrides.empty()) return Status::success();
    std::unordered_map<std::string, VertexId> by_name;
    for (const Vertex& v : d_->vertices)
      by_name.emplace(v.name, v.id);
    const auto lookup = [&](const LinkOverrideSpec& o,
                            const std::string& name) -> Expected<VertexId> {
      if (const auto it = by_name.find(name); it != by_name.end()) return it->second;
      std::vector<std::string> names;
      for (const Vertex& v : d_->vertices)
        names.push_back(v.name);
      return error(o.where, "undefined vertex '" + name + "'" + did_you_mean(name, names) +
                                " (names look like node0/gpu3, node1/<nic id>, net/switch)");
    };
    for (const LinkOverrideSpec& o : d_->spec.link_overrides) {
      auto from = lookup(o, o.from);
      if (!from.ok()) return from.error();
      LinkId forward = -1;
      if (o.to.empty()) {
        const int k = d_->net.nic_ordinal_of_vertex.empty()
                          ? -1
                          : d_->net.nic_ordinal_of_vertex[static_cast<std::size_t>(*from)];
        if (d_->vertices[static_cast<std::size_t>(*from)].kind != VertexKind::nic) {
          return error(o.where, "'" + o.from + "' is not a NIC");
        }
        if (k < 0) return error(o.where, "NIC '" + o.from + "' has no network port");
        forward = d_->net.nic_up[static_cast<std::size_t>(k)];
      } else {
        auto to = lookup(o, o.to);
        if (!to.ok()) return to.error();
        for (const Link& l : d_->links) {
          if (l.src == *from && l.dst == *to) forward = l.id;
        }
        if (forward < 0)
          return error(o.where, "no link between '" + o.from + "' and '" + o.to + "'");
      }
      for (const LinkId id : {forward, forward ^ 1}) {
        if (id != forward && !o.both_directions) continue;
        Link& l = d_->links[static_cast<std::size_t>(id)];
        if (o.bandwidth) l.capacity = *o.bandwidth;
        if (o.efficiency) l.efficiency = *o.efficiency;
        if (o.latency) l.latency = *o.latency;
      }
    }
    return Status::success();
  }

  void build_graph() {
    d_->graph = make_graph(d_->links, 0, d_->links.size(), 0, d_->vertices.size());
  }

  Status check_connected() {
    const std::size_t n = d_->vertices.size();
    std::vector<boost::default_color_type> color(n, boost::white_color);
    const auto root = static_cast<std::size_t>(d_->gpus.front().vertex);
    boost::breadth_first_search(d_->graph, root,
                                boost::color_map(boost::make_iterator_property_map(
                                    color.begin(), boost::get(boost::vertex_index, d_->graph))));
    for (const GpuInfo& g : d_->gpus) {
      if (color[static_cast<std::size_t>(g.vertex)] == boost::white_color) {
        const NodeInfo& node = d_->nodes[static_cast<std::size_t>(g.node)];
        const TemplateSpec& t = d_->spec.templates[static_cast<std::size_t>(node.template_index)];
        return error(t.where,
                     "disconnected GPU: " + d_->vertices[static_cast<std::size_t>(g.vertex)].name +
                         " cannot reach " + d_->vertices[root].name +
                         " (check the PCIe tree, socket_link, NICs and the network)");
      }
    }
    return Status::success();
  }

  // NCCL-style NIC choice; see Topology::nic_of.
  void select_nics() {
    for (NodeInfo& node : d_->nodes) {
      if (node.nics.empty()) continue;
      std::map<std::vector<VertexId>, int> turns;
      for (const GpuId g : node.gpus) {
        GpuInfo& gi = d_->gpus[static_cast<std::size_t>(g)];
        const std::vector<int> hops = pcie_hops(node, gi.vertex);
        int best = -1;
        std::vector<VertexId> nearest;
        for (const VertexId nic : node.nics) {
          const int h = hops[static_cast<std::size_t>(nic - node.first_vertex)];
          if (h < 0) continue;
          if (best < 0 || h < best) {
            best = h;
            nearest.clear();
          }
          if (h == best) nearest.push_back(nic);
        }
        if (nearest.empty()) nearest = node.nics;  // unreachable by PCIe: any, lowest first
        int& turn = turns[nearest];
        gi.nic = nearest[static_cast<std::size_t>(turn) % nearest.size()];
        ++turn;
        gi.rail = static_cast<int>(std::find(node.nics.begin(), node.nics.end(), gi.nic) -
                                   node.nics.begin());
      }
    }
  }

  // Hop counts from `root` over the node's PCIe, CPU and shared-memory links (-1: unreachable).
  std::vector<int> pcie_hops(const NodeInfo& node, VertexId root) const {
    const auto lo = node.first_vertex;
    std::vector<int> hops(static_cast<std::size_t>(node.end_vertex - lo), -1);
    std::vector<VertexId> queue{root};
    hops[static_cast<std::size_t>(root - lo)] = 0;
    for (std::size_t i = 0; i < queue.size(); ++i) {
      const VertexId v = queue[i];
      for (auto [it, end] = boost::out_edges(static_cast<std::size_t>(v), d_->graph); it != end;
           ++it) {
        const Link& l = d_->links[static_cast<std::size_t>(d_->graph[*it].link)];
        if (l.cls != LinkClass::pcie && l.cls != LinkClass::cpu_link &&
            l.cls != LinkClass::shared_memory) {
          continue;
        }
        if (l.dst < lo || l.dst >= node.end_vertex) continue;
        int& h = hops[static_cast<std::size_t>(l.dst - lo)];
        if (h >= 0) continue;
        h = hops[static_cast<std::size_t>(v - lo)] + 1;
        queue.push_back(l.dst);
      }
    }
    return hops;
  }

  static std::string fnv1a_hex(const std::string& text) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    static const char* kDigits = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 15; i >= 0; --i) {
      out[static_cast<std::size_t>(i)] = kDigits[h & 0xF];
      h >>= 4;
    }
    return out;
  }

  std::shared_ptr<TopologyData> d_;
  std::vector<const NicSpec*> nic_specs_;  // per NIC ordinal (node-major)
};

}  // namespace

Expected<Topology> build_topology(TopologySpec spec, std::string source) {
  return Builder(std::move(spec), std::move(source)).build();
}

}  // namespace tawpipe::topo::detail
