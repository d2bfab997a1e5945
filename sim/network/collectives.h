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
///    (reduce) at the root: P-1 edges, each carries S plus the pipeline fill (P-2) * c with
///    c = min(S, 512 KiB) (NCCL's Simple-protocol step: NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8),
///    latency (P-1) * h.
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
/// carries D up and D down, in each of the two trees (one variable, bytes D). Latency, with
/// m = the largest number of members of a node, d = the depth of the deeper tree, h_i / h_n
/// the largest intra-node / inter-node edge latency and b_i / b_n the smallest intra-node /
/// inter-node edge bandwidth (alone on the network): 2 ((m-1) h_i + d h_n), the form of NCCL's
/// tuning model (src/graph/tuning.cc), plus the pipeline fill: one chunk c = min(D, 512 KiB)
/// crossing the longest path up and down, 2 c ((m-1) / b_i + d / b_n) (NCCL's tuning.cc
/// likewise counts the Simple tree's latency as "the latency of a 256kB chunk").
/// On 2 or 3 nodes a NIC carries D per tree edge and direction, at most 3 D in all, less than
/// the ring's ~2 size/R: NCCL's tree then beats the network-bound ring for large messages too
/// (NVIDIA/nccl issue 946: "on two nodes ... Tree performance can go up to ~2x the network
/// speed"); from 4 nodes on, interior nodes with two children carry 4 D = 2 size/R, as a ring.
///
/// Ring or tree for an all-reduce (`AllReduceAlgo`, NCCL_ALGO): `automatic` does what NCCL's
/// tuner does (src/graph/tuning.cc: per algorithm, time = latency + size / bandwidth; the
/// fastest wins), with both terms taken from this model rather than from NCCL's fitted
/// per-protocol constants: each algorithm's time alone on the network (its latency plus its
/// bytes at the rate of its bottleneck link). The ring wins ties; the tree is considered only
/// when the communicator spans more than one node (on one node NCCL's tree is a plain chain).
/// `ring` and `tree` force one algorithm, as NCCL_ALGO=Ring / Tree do (tree on one node: the
/// chain). All other collectives are rings or chains, as in NCCL.
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
#include "common/topology/topology.h"
#include "common/units.h"
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
  SimTime latency;                      ///< 2 ((m-1) h_i + d h_n), see the file comment
  double chunk_seconds_per_byte = 0.0;  ///< 2 ((m-1) / b_i + d / b_n)
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
};

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
                    AllReduceAlgo all_reduce = AllReduceAlgo::automatic);

  /// The plan of communicator `comm` (built on first use).
  const CommPlan& plan(ir::CommId comm);

  /// The transfers of collective `op` on `comm` with root at member position `root_member`
  /// (broadcast/reduce; ignored otherwise), appended to `out` (cleared first). The spans point
  /// into the plan or into scratch storage valid until the next call. Returns the algorithm
  /// used for an all-reduce (ring or tree; ring for every other collective).
  AllReduceAlgo transfers(const ir::Op& op, ir::CommId comm, std::int32_t root_member,
                          std::vector<CollectiveTransfer>& out);

  /// The algorithm an all-reduce of `bytes` on `comm` runs with (the tuner, or the forced one).
  AllReduceAlgo all_reduce_algo(ir::CommId comm, std::uint64_t bytes);

 private:
  CommPlan build(ir::CommId comm) const;
  void build_trees(ir::CommId comm, CommPlan& plan) const;
  double alone_rate(std::span<const topo::LinkId> links) const;

  const ir::Program& program_;
  const topo::Topology& topology_;
  const NetworkModel& network_;
  AllReduceAlgo all_reduce_;
  std::vector<std::optional<CommPlan>> plans_;
  std::vector<std::vector<topo::LinkId>> scratch_;  ///< chain link lists, one per ring
};

/// NCCL's Simple-protocol pipeline step (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8).
inline constexpr double kChainChunkBytes = 512.0 * 1024.0;

/// Latency of a tree channel for `data_bytes` per tree: the channel's hop latencies plus one
/// chunk c = min(data, 512 KiB) crossing the longest path (see the file comment).
SimTime tree_latency_of(const TreeChannel& channel, double data_bytes);

}  // namespace tawpipe::sim
