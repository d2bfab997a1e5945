/// \file
/// How the network model runs the IR's collectives: NCCL's ring and chain algorithms mapped to
/// one solver variable per ring (network_model.h).
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
///  - all_reduce (ring = reduce-scatter + all-gather): 2(P-1)/P * S per edge, latency
///    2(P-1) * h. Ring only: NCCL's tree all-reduce (chosen by its tuner for small messages on
///    many nodes) is not modelled, which overestimates small all-reduces across many nodes;
///  - broadcast / reduce: a pipelined chain along the ring starting (broadcast) or ending
///    (reduce) at the root: P-1 edges, each carries S plus the pipeline fill (P-2) * c with
///    c = min(S, 512 KiB) (NCCL's Simple-protocol step: NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8),
///    latency (P-1) * h.
/// A collective of one member moves nothing.
///
/// The R rings of one collective run as ONE solver variable over all their links (the executor
/// concatenates the transfers below; a link used by k rings gets coefficient k): NCCL splits the
/// data equally over its channels and the collective ends with its slowest channel, so the rings
/// share one rate. This also keeps a 1024-GPU collective at ~P solver elements instead of ~R*P.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "common/ir/program.h"
#include "common/topology/topology.h"
#include "common/units.h"
#include "sim/network/network_model.h"

namespace tawpipe::sim {

/// One directed edge of a ring: member `src` sends to member `dst` (positions in the
/// communicator) over `links[link_offset, link_offset + link_count)` of its ring.
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

/// The rings of one communicator.
struct CommPlan {
  std::vector<Ring> rings;
  std::int32_t members = 0;
};

/// One solver transfer of a collective, as `NetworkModel::start` takes it, plus the bytes each
/// used edge sends (for per-rank intra/inter-node byte counts).
struct CollectiveTransfer {
  std::span<const topo::LinkId> links;
  double bytes = 0.0;  ///< bytes carried by every edge of the transfer
  SimTime latency;
  const Ring* ring = nullptr;
  std::int32_t skipped_edge = -1;  ///< chains: the ring edge not used, -1 for rings
};

/// Builds and caches the ring plans of a program's communicators.
class CollectivePlanner {
 public:
  /// The program and topology must outlive the planner; `network` supplies link latencies.
  CollectivePlanner(const ir::Program& program, const topo::Topology& topology,
                    const NetworkModel& network);

  /// The plan of communicator `comm` (built on first use).
  const CommPlan& plan(ir::CommId comm);

  /// The transfers of collective `op` on `comm` with root at member position `root_member`
  /// (broadcast/reduce; ignored otherwise), appended to `out` (cleared first). The spans point
  /// into the plan or into scratch storage valid until the next call.
  void transfers(const ir::Op& op, ir::CommId comm, std::int32_t root_member,
                 std::vector<CollectiveTransfer>& out);

 private:
  CommPlan build(ir::CommId comm) const;

  const ir::Program& program_;
  const topo::Topology& topology_;
  const NetworkModel& network_;
  std::vector<std::optional<CommPlan>> plans_;
  std::vector<std::vector<topo::LinkId>> scratch_;  ///< chain link lists, one per ring
};

/// NCCL's Simple-protocol pipeline step (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8).
inline constexpr double kChainChunkBytes = 512.0 * 1024.0;

}  // namespace tawpipe::sim
