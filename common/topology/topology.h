/// \file
/// The cluster topology: a directed graph of GPUs, NVSwitches, PCIe switches, CPU sockets, NICs
/// and network switches, with per-direction links (capacity, achievable efficiency, latency,
/// link class), plus the node/rail grouping and the device kind of every GPU.
///
/// A `Topology` is built only by the loader (`common/topology/loader.h`) from a validated YAML
/// description; it is immutable afterwards, cheap to copy (copies share the data) and safe to
/// query from several threads at once (the route cache is internally synchronised).
///
/// Identifiers are plain integers:
///  - `GpuId`: 0 .. num_gpus()-1, node-major (node 0's GPUs first, in local order);
///  - `VertexId`: index into `vertices()`; each node's vertices are contiguous (its GPUs first,
///    then NVSwitch, CPU sockets, PCIe switches, NICs), network switches come last;
///  - `LinkId`: index into `links()`; links are created in pairs, so `id ^ 1` is the opposite
///    direction of `id`.
///
/// Routing rule (deterministic; see `route()` and topologies/README.md):
///  - same node: the fastest path inside the node for a 1 MiB message (cost of a link =
///    latency + 1 MiB / (capacity * efficiency)), found by Dijkstra over the node's links. In an
///    NVSwitch node this is GPU -> NVSwitch -> GPU; in a PCIe server GPU -> PCIe switch -> (CPU
///    -> inter-socket link -> CPU ->) PCIe switch -> GPU.
///  - different nodes: source GPU -> its NIC (`nic_of`) by the fastest in-node path, then the
///    network path NIC -> leaf (-> spine -> leaf) -> NIC of the destination GPU, then that NIC
///    -> destination GPU. The spine of a two-level fabric is chosen D-mod-k (destination NIC
///    index modulo the number of spines), as InfiniBand fat-tree routing does. Cross-rail pairs
///    on a rail-optimised fabric go up through the source's rail leaf and the spine and down
///    the destination's rail leaf (NCCL without PXN). When the network has no path between the
///    two NICs (a rail-optimised fabric without spines), the route is the fastest path in the
///    whole graph, which hops over the intra-node fabric to a GPU on the destination's rail.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/kernel_class.h"
#include "common/units.h"

namespace tawpipe::topo {

using GpuId = int;     ///< global GPU index, 0 .. num_gpus()-1, node-major
using NodeId = int;    ///< node index, 0 .. num_nodes()-1
using VertexId = int;  ///< index into Topology::vertices()
using LinkId = int;    ///< index into Topology::links(); `id ^ 1` is the reverse direction

/// "No such vertex" (for example `nic_of` in a node without NICs).
inline constexpr VertexId kNoVertex = -1;

/// What a graph vertex is.
enum class VertexKind : std::uint8_t { gpu, nvswitch, pcie_switch, cpu, nic, network_switch };

/// The class of a link; efficiencies and latencies are configured per class.
///  - nvlink: a direct GPU-GPU NVLink (mesh or bridge);
///  - nvswitch: GPU <-> NVSwitch (the switch fabric of DGX/HGX nodes);
///  - pcie: GPU/NIC <-> PCIe switch, PCIe switch <-> parent switch or CPU root port;
///  - cpu_link: CPU socket <-> CPU socket (UPI, xGMI);
///  - shared_memory: a CPU "device" (rank) <-> its socket's memory (host backend machines);
///  - nic: NIC port <-> first network switch;
///  - network: switch <-> switch (leaf <-> spine).
enum class LinkClass : std::uint8_t {
  nvlink,
  nvswitch,
  pcie,
  cpu_link,
  shared_memory,
  nic,
  network
};
inline constexpr int kNumLinkClasses = 7;

/// Lower-case names as used in YAML: "gpu", "nvswitch", "pcie_switch", "cpu", "nic",
/// "network_switch".
std::string_view to_string(VertexKind kind);
/// Lower-case names as used in YAML: "nvlink", "nvswitch", "pcie", "cpu_link",
/// "shared_memory", "nic", "network".
std::string_view to_string(LinkClass cls);

/// Achievable fraction of peak per op class, each in (0, 1]. The simulator's compute model
/// divides FLOPs by peak * efficiency (and bytes by memory bandwidth * `memory`).
struct OpClassEfficiency {
  double gemm = 1.0;           ///< dense matrix multiply (cuBLAS)
  double attention_fwd = 1.0;  ///< fused attention forward (FlashAttention-2)
  double attention_bwd = 1.0;  ///< fused attention backward
  double elementwise = 1.0;    ///< element-wise kernels, of peak memory bandwidth
  double memory = 1.0;         ///< achievable fraction of HBM bandwidth for streaming kernels
  friend bool operator==(const OpClassEfficiency&, const OpClassEfficiency&) = default;
};

/// Measured attention rates of one pass (forward or backward), head dimension and mask, at
/// increasing sequence lengths (`seq` and `rate` have the same length, >= 1).
struct AttentionRateTable {
  bool backward = false;
  std::int64_t head_dim = 0;
  bool causal = false;
  std::vector<std::int64_t> seq;
  std::vector<FlopRate> rate;
  friend bool operator==(const AttentionRateTable&, const AttentionRateTable&) = default;
};

/// Achieved fraction of peak memory bandwidth at a reduction width (0 = any width).
struct WidthFraction {
  std::int64_t width = 0;
  double fraction = 1.0;
  friend bool operator==(const WidthFraction&, const WidthFraction&) = default;
};

/// The per-kernel rate tables of a device kind (YAML `kernels:`; sim/compute/kernel_rates.h
/// states how they are used). Every shipped value cites a kernel-level micro-benchmark.
struct KernelTables {
  FlopRate gemm_best;                ///< best achievable 16-bit GEMM rate (MAMF)
  std::int64_t gemm_k_overhead = 0;  ///< extra K-steps per output tile (pipeline fill)
  SimTime gemm_overhead;             ///< fixed time per GEMM kernel beyond the launch
  std::vector<AttentionRateTable> attention;
  /// Memory-bound classes: achieved fraction of `memory_bandwidth` by reduction width, sorted
  /// by width; empty = efficiency.elementwise (copy: efficiency.memory).
  std::array<std::vector<WidthFraction>, model::kNumKernelClasses> bandwidth;
  friend bool operator==(const KernelTables&, const KernelTables&) = default;
};

/// A device model (a GPU, or a CPU core group standing in for one in host-backend runs).
struct DeviceKind {
  std::string name;            ///< id from `device_kinds`, e.g. "a100-sxm4-80gb"
  FlopRate peak_bf16;          ///< dense tensor-core peak, BF16 inputs
  FlopRate peak_fp16;          ///< dense tensor-core peak, FP16 inputs
  FlopRate peak_fp32;          ///< non-tensor FP32 peak
  FlopRate peak_tf32;          ///< dense tensor-core peak, TF32
  Bytes memory_capacity;       ///< device memory (HBM) capacity
  Bandwidth memory_bandwidth;  ///< peak HBM bandwidth
  OpClassEfficiency efficiency;
  SimTime launch_overhead;  ///< fixed cost of every kernel launch (host: every kernel call)
  int sm_count = 0;         ///< streaming multiprocessors; 0 = unknown (CPU kinds)
  std::optional<KernelTables> kernels;  ///< per-kernel rate tables; absent: roofline by class
  friend bool operator==(const DeviceKind&, const DeviceKind&) = default;
};

/// The physical machine under a CPU topology (host backend): its ranks ("GPUs") are MPI
/// processes pinned to cores, `ranks_per_core` consecutive ranks per core (rank r -> core
/// r / ranks_per_core), and ranks on one core share it (the simulator divides the core among the
/// compute and copy work running on it at the same time).
struct HostCpu {
  int cores_per_host = 0;  ///< cores the ranks are spread over (> 0)
  int ranks_per_core = 0;  ///< ranks pinned to each core (> 0)
  friend bool operator==(const HostCpu&, const HostCpu&) = default;
};

/// A graph vertex.
struct Vertex {
  VertexId id = kNoVertex;
  VertexKind kind = VertexKind::gpu;
  std::string name;     ///< unique, e.g. "node2/gpu5", "node0/mlx5_3", "net/leaf1"
  NodeId node = -1;     ///< owning node, -1 for network switches
  int local_index = 0;  ///< index among the vertices of the same kind in the node (or network)
  friend bool operator==(const Vertex&, const Vertex&) = default;
};

/// One direction of a physical link.
struct Link {
  LinkId id = -1;
  VertexId src = kNoVertex;
  VertexId dst = kNoVertex;
  Bandwidth capacity;       ///< nominal rate per direction
  double efficiency = 1.0;  ///< achievable fraction of `capacity`, in (0, 1]
  SimTime latency;          ///< one-way latency of this hop
  LinkClass cls = LinkClass::pcie;
  bool inter_node = false;  ///< true for NIC ports and switch-switch links
  std::string name;         ///< "src_name->dst_name"

  /// capacity * efficiency: the rate a single flow achieves on this link alone.
  Bandwidth effective_bandwidth() const { return capacity * efficiency; }
  friend bool operator==(const Link&, const Link&) = default;
};

/// The intra-node fabric of a node template.
enum class IntraFabric : std::uint8_t { nvswitch, nvlink_mesh, pcie, shared_memory };
/// The inter-node network.
enum class NetworkKind : std::uint8_t { single_switch, fat_tree, rail_optimized };
std::string_view to_string(IntraFabric fabric);
std::string_view to_string(NetworkKind kind);

namespace detail {
struct TopologyData;  // defined privately in the implementation (holds the Boost graph)
}  // namespace detail

/// The loaded cluster. All GPU/node/vertex/link arguments must be in range (asserted: passing
/// an out-of-range id is a bug in the caller, not a user error).
class Topology {
 public:
  /// Used by the loader; users get a Topology from `load_topology_file`/`load_topology_string`.
  explicit Topology(std::shared_ptr<const detail::TopologyData> data);

  /// `name:` from the file.
  const std::string& name() const;
  /// `description:` from the file (one line).
  const std::string& description() const;
  /// Where it was loaded from (path or display name given to `load_topology_string`).
  const std::string& source() const;
  /// Stable identity: FNV-1a 64 of the canonical YAML dump (`to_yaml`), as 16 hex digits.
  /// Equal for two files that describe the same cluster the same way.
  const std::string& content_hash() const;

  int num_gpus() const;
  int num_nodes() const;
  /// `inter_node.transport: socket`: NCCL runs over TCP sockets between nodes (no RDMA).
  bool nccl_socket_transport() const;
  NodeId node_of(GpuId gpu) const;
  /// GPUs of `node` in local order.
  std::span<const GpuId> gpus_of_node(NodeId node) const;
  /// Index of the GPU inside its node (0 .. gpus per node - 1).
  int local_index(GpuId gpu) const;
  /// The rail of a GPU: the local index of `nic_of(gpu)` among its node's NICs (0 when the
  /// node has no NIC). GPUs with the same rail in different nodes talk through the same leaf
  /// on a rail-optimised fabric.
  int rail_of(GpuId gpu) const;
  /// The GPU with local index `local` in `node`.
  GpuId gpu_at(NodeId node, int local) const;
  /// Name of the node template and node group of `node`.
  const std::string& template_of(NodeId node) const;
  const std::string& group_of(NodeId node) const;
  IntraFabric fabric_of(NodeId node) const;
  NetworkKind network_kind() const;

  /// The device model of a GPU.
  const DeviceKind& device(GpuId gpu) const;
  /// The `host:` section of a CPU topology; empty for GPU clusters.
  const std::optional<HostCpu>& host_cpu() const;
  /// Core of `gpu` under `host_cpu()` (gpu / ranks_per_core); -1 without a `host:` section.
  int core_of(GpuId gpu) const;
  /// All device kinds declared in the file, sorted by name.
  const std::vector<DeviceKind>& device_kinds() const;

  /// Vertex of a GPU (GPUs are vertices too).
  VertexId gpu_vertex(GpuId gpu) const;
  /// The NIC a GPU uses for inter-node traffic, chosen the way NCCL does: the NIC closest to
  /// the GPU through the PCIe tree (fewest PCIe/CPU hops: same switch, then parent switches,
  /// then the CPU, then the other socket); among equally close NICs the lowest id, except that
  /// GPUs sharing the same set of closest NICs take them in turn (the k-th such GPU gets the
  /// (k mod n)-th NIC, NCCL's `localGpuIndex % count`), so two GPUs and two NICs on one switch
  /// get a NIC each. `kNoVertex` when the node has no NIC.
  VertexId nic_of(GpuId gpu) const;
  /// NICs of a node, in declaration order (the rail order).
  std::span<const VertexId> nics_of_node(NodeId node) const;

  const std::vector<Vertex>& vertices() const;
  const std::vector<Link>& links() const;
  const Vertex& vertex(VertexId id) const;
  const Link& link(LinkId id) const;

  /// The path from GPU `src` to GPU `dst` as link ids, in order (see the file comment for the
  /// rule). Empty when src == dst. Computed once per source GPU and cached; the span stays
  /// valid as long as any copy of this Topology lives. Thread-safe.
  std::span<const LinkId> route(GpuId src, GpuId dst) const;
  /// The smallest effective bandwidth (capacity * efficiency) along `route`; the rate one
  /// flow alone gets. Precondition: route non-empty.
  Bandwidth bottleneck(std::span<const LinkId> route) const;
  /// Sum of the link latencies along `route`.
  SimTime route_latency(std::span<const LinkId> route) const;

  /// Access for the describe/dump code of this folder; not part of the stable API.
  const detail::TopologyData& data() const { return *data_; }

 private:
  std::shared_ptr<const detail::TopologyData> data_;
};

}  // namespace tawpipe::topo
