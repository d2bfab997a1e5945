/// \file
/// MPI's shared-memory transport between the ranks of one host (CPU topologies, host backend):
/// Open MPI's `vader` BTL, whose large messages are one copy by the receiving process
/// (Linux CMA, process_vm_readv) after a rendezvous, and whose collectives (libnbc, over the
/// same point-to-point path) are rounds of such copies.
///
/// A transfer costs a latency that uses no core, then copy work that runs on cores and is
/// shared with the compute ops there (sim/run/core_sharing.h):
///
///     send/recv of b bytes:   latency = T_p2p(smallest measured size)
///                             work    = T_p2p(b) - latency     on the receiver's core
///     collective on P ranks:  latency = T_op,P(smallest size)
///                             work    = T_op,P(b) - latency    on the cores of all members
///
/// T comes from measured curves (`tawexec calibrate --backend host`, profile `communication`
/// entries with scope shared_memory), made non-decreasing in size (monotone_envelope), interpolated
/// linearly in log(size) between points and extended past the largest point at the slope of its
/// last two points (a bandwidth). A collective whose rank count was not measured uses the curve of
/// the nearest measured count, scaled by the ratio of the ring step counts. Without any curve for
/// an op, the model falls back to the topology's (or profile's) shared-memory link: latency `alpha`
/// and copy bandwidth `beta` per message, with ring algorithms (all-reduce 2(P-1) steps of b/P
/// bytes, all-gather and reduce-scatter P-1 steps of b/P, broadcast and reduce P-1 pipelined...
/// counted as one message of b per member). The report says which figures were measured.
#pragma once

#include <cstdint>
#include <vector>

#include "common/ir/program.h"
#include "common/profile/profile.h"
#include "common/units.h"

namespace tawpipe::sim {

/// The operations a curve can describe (sendrecv = one-way time of one message).
enum class ShmOp : std::uint8_t {
  broadcast,
  reduce,
  all_reduce,
  all_gather,
  reduce_scatter,
  sendrecv
};

/// One measured curve: time of `op` over `ranks` ranks by size (bytes per rank as the IR states
/// it: the whole buffer of an all-reduce / all-gather / reduce-scatter input, the message of a
/// send). Points in increasing size.
struct ShmCurve {
  ShmOp op = ShmOp::sendrecv;
  int ranks = 2;
  std::vector<std::pair<double, SimTime>> points;  ///< (bytes, time)
};

/// A transfer's cost: a core-free latency, then copy work on cores.
struct ShmCost {
  SimTime latency;
  SimTime work;
};

/// The shared-memory transport model of one host.
class MpiShmModel {
 public:
  /// `alpha`, `beta_bytes_per_second`: the fallback per-message latency and copy bandwidth.
  MpiShmModel(std::vector<ShmCurve> curves, SimTime alpha, double beta_bytes_per_second);

  ShmCost p2p(double bytes) const;
  ShmCost collective(ir::CollectiveKind kind, double bytes, int ranks) const;
  /// True when `op` has a measured curve (for reports).
  bool measured(ShmOp op) const;

 private:
  const ShmCurve* find(ShmOp op, int ranks) const;
  std::vector<ShmCurve> curves_;
  SimTime alpha_;
  double beta_ = 1.0;
};

/// The shared-memory curves of `profile` (may be null): its `communication` entries with scope
/// shared_memory. A version-1 profile has none.
std::vector<ShmCurve> shm_curves(const profile::Profile* profile);

/// Makes the curve's times non-decreasing in size by lowering each point to the smallest time at
/// any larger size: more bytes never take less time, and interference on a shared machine only
/// adds time, so a point above a larger size's time is noise (a descheduled measurement), not a
/// cost. Points must be sorted by size.
void monotone_envelope(ShmCurve& curve);

/// Time of `curve` at `bytes` (interpolation as described above). Precondition: >= 1 point.
SimTime curve_time(const ShmCurve& curve, double bytes);

}  // namespace tawpipe::sim
