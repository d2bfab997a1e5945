/// \file
/// How the network model runs the IR's collectives: NCCL's ring, chain and tree algorithms, each
/// collective mapped to ONE solver variable (network_model.h).
///
/// Ring order (NCCL's ring search on NVSwitch/rail systems): members ordered node-major, by
/// (node, local GPU index). A communicator inside one node is one ring and stays on the node's
/// fabric (NVSwitch/NVLink routes). A communicator spanning nodes gets one ring per rail, like
/// NCCL's channels: with R = the smallest number of distinct NIC rails the members of any node
/// use, ring r enters every node at the node's first member on its r-th rail (the node's
/// members rotated to start there) and leaves from the member before it; each ring carries
/// 1/R of the data, so every NIC carries one ring in each direction. The inter-node edge of a
/// ring goes from the node's exit member over the node fabric to the node's entry member and
/// out through that member's NIC to the next node's entry member: rail-aligned, like NCCL's
/// PXN (rings never cross rails through the spines).
///
/// Bytes and latency per ring (size = the IR op's `bytes`; S = size / R; h = the largest
/// one-way route latency of the ring's edges; P = members):
///  - all_gather, reduce_scatter: every edge carries (P-1)/P * S, latency (P-1) * h;
///  - all_reduce by ring (reduce-scatter + all-gather): 2(P-1)/P * S per edge, latency
///    2(P-1) * h;
///  - broadcast / reduce: a pipelined chain along the ring starting (broadcast) or ending
///    (reduce) at the root: P-1 edges, each carries S; the pipeline fill is in NCCL's latency
///    (nsteps x the "latency of a chunk", tuning.cc), latency (P-1) * h on host communicators.
/// A collective of one member moves nothing.
///
/// Tree all-reduce (NCCL >= 2.4; "Massively Scale Your Deep Learning Training with NCCL 2.4",
/// NVIDIA developer blog, 2019; NCCL src/graph/trees.cc): per channel (one per rail, as rings),
/// every node's members form a chain that starts at the node's member on the channel's rail
/// (the chain head, the same rotation as the ring), and the heads form a DOUBLE binary tree
/// over the nodes: tree 0 is NCCL's binary tree over node indices 0..N-1 (root 0 with one
/// child; the parent of i > 0 is found from i's lowest set bit b: (i - b) | 2b, or i - b when
/// that is out of range), tree 1 is its mirror (N even: i -> N-1-i) or its shift by one (N
/// odd). Each tree carries half of the channel's data, D = size / (2R), reduced up the chain
/// and the tree and broadcast back down, pipelined: every tree edge and every chain edge
/// carries D up and D down, in each of the two trees (one variable, bytes D).
/// The tree's real per-NIC load: on 2 nodes tree 0 (0 <- 1) and its mirror (1 <- 0) use the one
/// node pair in opposite roles, so each NIC sends D up in one tree and D down in the other: 2 D
/// = size / R per direction, half the ring's 2 (n-1)/n size / R, hence NCCL's tree reaching
/// about twice the ring's bus bandwidth on two nodes (NVIDIA/nccl issue 946). On 3 nodes a NIC
/// carries at most 3 D; from 4 nodes on, interior nodes with two children carry 4 D = 2 size/R,
/// as a ring. These loads come out of the links the variable lists; nothing is assumed.
///
/// GPU communicators (NVLink, NVSwitch or PCIe fabrics) go through NCCL's tuner
/// (sim/network/nccl_tuning.h): per collective it picks the algorithm (ring or tree for an
/// all-reduce across nodes, NCCL_ALGO), the protocol (LL, LL128, Simple; NCCL_PROTO) and the
/// channel count (NCCL_MIN/MAX_NCHANNELS) from the size, with the bandwidth of the collective's
/// links alone on the network as NCCL's graph bandwidth. The chosen protocol's latency becomes
/// the transfer's latency and its bus bandwidth at that channel count the variable's bound
/// (ring: bus / R per ring; tree: bus / (4R), since the tree's algorithm bandwidth is half its
/// bus bandwidth and the variable moves D = size / (2R)). NCCL's latency model replaces the
/// route latencies of the edges (its NVLink and NET step latencies are fits to real hardware);
/// across nodes, an inter-node route slower than an InfiniBand path (~2.5 us: two NIC hops and a
/// switch) adds the difference to each inter-node step. Host communicators (shared memory, CPU
/// links: MPI) keep the plain model: steps x the largest hop latency, no bound.
///
/// The R rings (or tree channels) of one collective run as ONE solver variable over all their
/// links (the executor concatenates the transfers below; a link used k times gets coefficient
/// k): NCCL splits the data equally over its channels and the collective ends with its slowest
/// channel, so the channels share one rate. This also keeps a 1024-GPU collective at ~P solver
/// elements instead of ~R*P.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/ir/program.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/units.h"
#include "sim/network/nccl_tuning.h"
#include "sim/network/network_model.h"

namespace tawpipe::sim {

/// Which algorithm runs an all-reduce (NCCL_ALGO). See the file comment.
enum class AllReduceAlgo : std::uint8_t { automatic, ring, tree };

/// "auto", "ring", "tree".
const char* name(AllReduceAlgo algo);
/// Parses `name` (also NCCL's spellings "Ring", "Tree"); false on anything else.
bool all_reduce_algo_from_name(std::string_view name, AllReduceAlgo* out);

/// One directed edge of a ring or tree channel: member `src` sends to member `dst` (positions in
/// the communicator) over `links[link_offset, link_offset + link_count)` of its ring or channel.
struct RingEdge {
  std::int32_t src = 0;
  std::int32_t dst = 0;
  std::uint32_t link_offset = 0;
  std::uint32_t link_count = 0;
  bool inter_node = false;
};

/// One ring over all members of a communicator.
struct Ring {
  std::vector<std::int32_t> order;  ///< member positions in ring order
  std::vector<RingEdge> edges;      ///< edge i: order[i] -> order[(i + 1) % P]
  std::vector<topo::LinkId> links;  ///< all edges' routes, concatenated
  SimTime hop_latency;              ///< max over edges of the route latency
};

/// One channel of the tree all-reduce: both trees of the double binary tree with the nodes'
/// chains, every directed edge once per tree and direction.
struct TreeChannel {
  std::vector<RingEdge> edges;
  std::vector<topo::LinkId> links;      ///< all edges' routes, concatenated
  SimTime latency;                      ///< host communicators: 2 ((m-1) h_i + d h_n)
  double chunk_seconds_per_byte = 0.0;  ///< host: 2 ((m-1) / b_i + d / b_n), the chunk fill
};

/// The rings (and, once an all-reduce needs them, the tree channels) of one communicator.
struct CommPlan {
  std::vector<Ring> rings;
  std::int32_t members = 0;
  std::int32_t nodes = 0;
  double ring_rate = 0.0;  ///< bytes/s of the rings' variable alone on the network
  bool trees_built = false;
  std::vector<TreeChannel> trees;  ///< one per rail, as rings
  double tree_rate = 0.0;          ///< bytes/s of the tree channels' variable alone
  bool nccl = false;               ///< GPU communicator: NCCL's tuner applies
  nccl::CommShape shape;           ///< NCCL's view (coll and bus rates set per use)
  double sm_bus_cap = 0.0;         ///< channels x per-channel rate (bytes/s), inf if none
  SimTime inter_hop_latency;       ///< largest inter-node edge latency
  int nvlink_links = 0;            ///< NVLink links of one GPU (NVLink/NVSwitch fabrics)
};

/// How a collective was run: algorithm, protocol and channels (NCCL_DEBUG=TUNING's view).
struct CollectiveChoice {
  AllReduceAlgo algo = AllReduceAlgo::ring;
  nccl::Proto proto = nccl::Proto::simple;
  int channels = 0;  ///< 0 on host communicators
  /// Bound of the collective's solver variable, bytes/s (infinite: none).
  double bound = kNoBound;
};

/// The user's NCCL_PROTO / NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS, and the socket transport's
/// NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD.
struct NcclOptions {
  nccl::TunerOverrides tuner;
  nccl::SocketTransport socket;
};

/// A profile's measured time of `op` on `ranks` ranks of `scope` for `bytes` (nccl-tests'
/// size), interpolated linearly in size between the two nearest measured points
/// (t = t0 + (t1 - t0) (s - s0) / (s1 - s0): a latency plus bytes over a bandwidth in each
/// interval, exact where both points lie in one regime; log-linear interpolation overstated a
/// bandwidth-bound transfer halfway between x2 points by ~6 %); nothing outside the measured
/// range (the model applies there) or without a matching curve. `profile` may be null.
std::optional<SimTime> measured_comm_time(const profile::Profile* profile, profile::CommOp op,
                                          profile::CommScope scope, int ranks, double bytes);

/// One solver transfer of a collective, as `NetworkModel::start` takes it, plus the edges it
/// uses and the data each sends (for per-rank intra/inter-node byte counts).
struct CollectiveTransfer {
  std::span<const topo::LinkId> links;
  double bytes = 0.0;  ///< bytes carried by every edge of the transfer (pipeline fill included)
  SimTime latency;
  std::span<const RingEdge> edges;
  std::int32_t skipped_edge = -1;  ///< chains: the ring edge not used, -1 otherwise
  double data_bytes = 0.0;         ///< payload each used edge sends (no pipeline fill)
};

/// Builds and caches the ring plans of a program's communicators.
class CollectivePlanner {
 public:
  /// The program and topology must outlive the planner; `network` supplies link latencies and
  /// rates. `all_reduce` chooses or forces the all-reduce algorithm.
  CollectivePlanner(const ir::Program& program, const topo::Topology& topology,
                    const NetworkModel& network,
                    AllReduceAlgo all_reduce = AllReduceAlgo::automatic, NcclOptions nccl = {});

  /// The plan of communicator `comm` (built on first use).
  const CommPlan& plan(ir::CommId comm);

  /// The transfers of collective `op` on `comm` with root at member position `root_member`
  /// (broadcast/reduce; ignored otherwise), appended to `out` (cleared first). The spans point
  /// into the plan or into scratch storage valid until the next call. Returns the algorithm,
  /// protocol and channels used and the bound of the collective's variable.
  CollectiveChoice transfers(const ir::Op& op, ir::CommId comm, std::int32_t root_member,
                             std::vector<CollectiveTransfer>& out);

  /// The algorithm an all-reduce of `bytes` on `comm` runs with (the tuner, or the forced one).
  AllReduceAlgo all_reduce_algo(ir::CommId comm, std::uint64_t bytes);

  /// A P2P transfer of `bytes` between ranks `src` and `dst` on `comm`: NCCL's channel count,
  /// the variable's bound (channels x per-channel rate; the socket transport's connection rate
  /// across nodes) and the latency beyond the route (one Simple step). Host communicators:
  /// no bound, no extra latency, 0 channels.
  struct P2pChoice {
    int channels = 0;
    double bound = kNoBound;
    SimTime extra_latency;
    bool measured = false;  ///< the profile's time: no route latency, bound = bytes / time
  };

  /// Measured collective and sendrecv times (profile `communication`) replace the model's
  /// where they cover the op, scope, rank count and size: the transfer then has no latency and
  /// its variable is bounded at bytes / measured time (alone on the network it takes exactly
  /// the measured time; sharing links can only slow it). `profile` may be null.
  void set_profile(const profile::Profile* profile) { profile_ = profile; }
  P2pChoice p2p(ir::CommId comm, ir::Rank src, ir::Rank dst, std::uint64_t bytes);

 private:
  CommPlan build(ir::CommId comm) const;
  void build_shape(ir::CommId comm, CommPlan& plan) const;
  void apply_measured(const CommPlan& p, const ir::Op& op, std::vector<CollectiveTransfer>& out,
                      CollectiveChoice& choice) const;
  nccl::Tuned tuned(CommPlan& plan, ir::CommId comm, ir::CollectiveKind kind, double bytes);
  void build_trees(ir::CommId comm, CommPlan& plan) const;
  double alone_rate(std::span<const topo::LinkId> links) const;

  const ir::Program& program_;
  const topo::Topology& topology_;
  const NetworkModel& network_;
  AllReduceAlgo all_reduce_;
  NcclOptions nccl_;
  const profile::Profile* profile_ = nullptr;
  std::vector<std::optional<CommPlan>> plans_;
  std::vector<std::vector<topo::LinkId>> scratch_;  ///< chain link lists, one per ring
};

/// Host communicators: latency of a tree channel for `data_bytes` per tree: its hop latencies
/// plus one chunk c = min(data, 512 KiB) crossing the longest path up and down.
SimTime tree_latency_of(const TreeChannel& channel, double data_bytes);

}  // namespace tawpipe::sim
