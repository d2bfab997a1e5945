/// \file
/// Symmetry (issue 15 item 2): identical data-parallel replicas simulated once.
///
/// A program of N ranks has replica symmetry with period R (R divides N, N / R = k >= 2
/// replicas) when the rank shift  s(r) = (r + R) mod N  maps the program onto itself: rank s(r)
/// runs the same ops as rank r (same kinds, streams, costs, sizes, dependencies, buffers and
/// NCCL group structure; micro-batch ids, buffer names and group ids may differ), with peers
/// mapped by s and communicators mapped by the induced map c -> s(c). Every communicator is then
/// either replica-local (all members in one replica; s(c) is the communicator of the next
/// replica, same member order) or cross-replica (its member set is s-invariant, s(c) = c, e.g.
/// one gradient all-reduce group per piece across all replicas). Point-to-point transfers stay
/// inside a replica, rooted collectives are replica-local, and every rank's GPU is of the same
/// device kind as its images'. `find_replica_symmetry` checks all of this exactly (O(ops)).
///
/// Collapse (sim/run/transfers.cpp). Only replica 0 (ranks [0, R)) is simulated. A transfer of
/// replica 0 stands for its k images (one per replica): it becomes ONE solver variable over the
/// links of all k images (a link used by several images gets the summed coefficient, as a
/// collective's rings do). A cross-replica collective is its own image: it runs once, over its
/// full membership, and starts when its members in replica 0 have arrived. The other replicas'
/// figures (per-op times, compute and exposed communication, peak memory) are copied from
/// replica 0; per-rank and per-link bytes are counted for every image.
///
/// Where it holds: max-min fair sharing has a unique solution, so if the whole flow system
/// (flows, links, capacities, bounds) is invariant under a link permutation p that maps every
/// transfer of replica d onto its image in replica d + 1, every image gets the same rate at all
/// times and one variable per orbit gives exactly the full simulation's rates. The executor
/// builds p while it runs: link i of image d's route (or collective link list) maps to link i
/// of image d + 1's, and it checks that p stays a function, that mapped links have equal
/// capacity, that the images' NCCL choices (channels, protocol, bound, latency) are equal, and
/// that every cross-replica collective's link multiset is p-invariant. Any violation marks the
/// run as not symmetric (`ExecutionResult::symmetry_broken`), and the caller simulates the full
/// program instead. So a rail-optimised fat tree with D-mod-k routing, where replicas sit in
/// their own nodes and share leaf and spine links in a translation-invariant way, collapses.
///
/// Where it does not: replicas whose flows meet on a link in an asymmetric way -- a shared
/// switch under contention that some replicas cross and others do not (an oversubscribed spine
/// reached by only part of the replicas, a node holding parts of two replicas, a tree all-reduce
/// across replicas whose root carries more than the leaves): p is then not consistent, and the
/// full program is simulated. Rooted collectives over replicas, point-to-point transfers between
/// replicas, or replicas that differ in any op also fall back to the full simulation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/ir/program.h"
#include "common/topology/topology.h"

namespace tawpipe::sim {

/// A program's replica symmetry (see the file comment).
struct ReplicaSymmetry {
  std::int32_t replica_ranks = 0;  ///< R: ranks [d R, (d + 1) R) form replica d
  std::int32_t replicas = 1;       ///< k = N / R
  /// c -> s(c): the communicator of the next replica (replica-local c) or c (cross-replica).
  std::vector<ir::CommId> comm_image;
  bool cross_replica(ir::CommId c) const { return comm_image[static_cast<std::size_t>(c)] == c; }
  /// The image of communicator `c` in replica d (c in replica 0).
  ir::CommId image(ir::CommId c, std::int32_t d) const {
    for (std::int32_t i = 0; i < d; ++i)
      c = comm_image[static_cast<std::size_t>(c)];
    return c;
  }
};

/// The replica symmetry of `program` with the smallest period, or nothing (then `why` says what
/// broke the largest candidate, or that the program has a single rank).
std::optional<ReplicaSymmetry> find_replica_symmetry(const ir::Program& program,
                                                     const topo::Topology& topology,
                                                     std::string& why);

}  // namespace tawpipe::sim
