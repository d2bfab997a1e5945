/// \file
/// Private to common/topology: the validated, normalised form of a topology YAML file (what the
/// parser produces, what the graph builder consumes and what `to_yaml` prints). Every entity
/// remembers where it came from so that errors found while building the graph (disconnected
/// GPUs, undefined vertex names in overrides) still point at a line, column and key path.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/topology/topology.h"
#include "common/units.h"

namespace tawpipe::topo::detail {

/// A source location: 1-based line and column (always > 0 once parsed) and the key path.
struct Where {
  int line = 1;
  int column = 1;
  std::string path;
};

/// Builds an Error at `where` in `file`.
Error error_at(const std::string& file, const Where& where, std::string message);

struct LinkClassSpec {
  bool present = false;
  SimTime latency;
  double efficiency = 1.0;
  Where where;
};

struct PcieSwitchSpec {
  std::string id;
  int socket = -1;     ///< CPU socket of the root port, or -1 when `parent` is set
  std::string parent;  ///< parent PCIe switch id, or empty
  std::vector<int> gpus;
  std::optional<Bandwidth> uplink_bandwidth;  ///< default: the template's pcie bandwidth
  Where where;
};

struct NvlinkSpec {
  int gpu_a = 0;
  int gpu_b = 0;
  Bandwidth bandwidth;
  Where where;
};

struct NicSpec {
  std::string id;
  std::string pcie_switch;             ///< empty only with the implicit PCIe switch
  std::optional<Bandwidth> bandwidth;  ///< default: inter_node.nic.bandwidth
  std::optional<SimTime> latency;      ///< default: links.nic.latency
  Where where;
};

struct TemplateSpec {
  std::string id;
  std::string device;
  int gpus = 0;
  int sockets = 1;
  std::optional<Bandwidth> socket_link_bandwidth;
  IntraFabric fabric = IntraFabric::pcie;
  Bandwidth nvswitch_bandwidth;       ///< per GPU per direction (fabric nvswitch)
  std::vector<NvlinkSpec> nvlinks;    ///< fabric nvlink_mesh
  Bandwidth shared_memory_bandwidth;  ///< per rank per direction (fabric shared_memory)
  Bandwidth pcie_bandwidth;           ///< per x16 link per direction
  bool implicit_pcie_switch = false;  ///< no `pcie.switches`: one switch under socket 0
  std::vector<PcieSwitchSpec> pcie_switches;
  std::vector<NicSpec> nics;
  Where where;
};

struct GroupSpec {
  std::string name;
  std::string template_id;
  int count = 0;
  Where where;
};

struct NetworkSpec {
  NetworkKind kind = NetworkKind::single_switch;
  int nics_per_leaf = 0;   ///< fat_tree: NIC ports per leaf switch
  int nodes_per_leaf = 0;  ///< rail_optimized: nodes per rail leaf
  int spines = 0;
  double oversubscription = 1.0;  ///< leaf down : up capacity ratio, >= 1
  Where where;
};

struct LinkOverrideSpec {
  std::string from;  ///< vertex name
  std::string to;    ///< vertex name; for `nic:` overrides empty (the NIC's network port)
  bool both_directions = true;
  std::optional<Bandwidth> bandwidth;
  std::optional<double> efficiency;
  std::optional<SimTime> latency;
  Where where;
};

struct TopologySpec {
  std::string file;  ///< for errors
  std::string name;
  std::string description;
  std::vector<DeviceKind> devices;  ///< sorted by name
  std::vector<Where> device_where;
  std::array<LinkClassSpec, kNumLinkClasses> link_classes{};
  Where links_where;
  std::vector<TemplateSpec> templates;     ///< in file order
  std::vector<GroupSpec> groups;           ///< in file order
  bool nodes_shorthand = false;            ///< written as `nodes:` + `template:`
  std::optional<Bandwidth> nic_bandwidth;  ///< inter_node.nic.bandwidth
  /// inter_node.transport: NCCL's transport between nodes, "ib" (RDMA, default) or "socket"
  /// (NCCL over TCP, NCCL_IB_DISABLE=1; sim/network/nccl_tuning.h SocketTransport).
  bool socket_transport = false;
  Where nic_where;
  std::optional<NetworkSpec> network;  ///< required when there is more than one node
  std::vector<LinkOverrideSpec> link_overrides;
  std::optional<HostCpu> host;  ///< `host:` (CPU topologies)
  Where root_where;
};

/// Sane upper bounds (the loader rejects larger values as absurd).
inline constexpr int kMaxGpusTotal = 65536;
inline constexpr int kMaxGpusPerNode = 1024;
inline constexpr int kMaxNodes = 65536;
inline constexpr int kMaxNicsPerNode = 64;
inline constexpr int kMaxPcieSwitchesPerNode = 256;
inline constexpr int kMaxSockets = 16;
inline constexpr int kMaxSpines = 4096;
// Per-value bounds (bandwidths, times, sizes, FLOP rates, list lengths): common/yaml_read.h.

}  // namespace tawpipe::topo::detail

namespace tawpipe::topo {
struct Override;
}

namespace tawpipe::topo::detail {

/// Parses and validates the YAML text into a spec (schema checks, ranges, references).
/// `overrides` are applied to the YAML tree first.
Expected<TopologySpec> parse_spec(std::string_view text, const std::string& file,
                                  const std::vector<Override>& overrides);

/// Builds the graph from a validated spec; errors for what only the graph reveals (a GPU that
/// cannot reach another, an override naming a vertex or link that does not exist).
Expected<Topology> build_topology(TopologySpec spec, std::string source);

/// The canonical YAML text of a spec (used by to_yaml and content_hash).
std::string dump_spec(const TopologySpec& spec);

}  // namespace tawpipe::topo::detail
