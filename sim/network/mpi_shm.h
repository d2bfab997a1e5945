/// \file
/// MPI's shared-memory transport between the ranks of one host (CPU topologies, host backend):
/// Open MPI's `vader` BTL, whose large messages are one copy by the receiving process
/// (Linux CMA, process_vm_readv) after a rendezvous, and whose collectives (libnbc, over the
/// same point-to-point path) are rounds of such copies.
///
/// A transfer costs a latency that uses no core, then copy work that runs on cores and is
/// shared with the compute ops there (sim/run/core_sharing.h). With the CPU time C of a call
/// measured beside its elapsed time T (profile point `cpu`, the thread CPU time of the busiest
/// member, calibration's wait wake-ups excluded):
///
///     send/recv of b bytes:   work    = C_p2p(b)               on the receiver's core
///                             latency = T_p2p(b) - work        (no core: handshakes, the peer)
///     collective on P ranks:  work    = C_op,P(b) x m          on the cores that copy
///                             latency = T_op,P(b) - C_op,P(b) x k
///
/// where C is one member's CPU time, m the most copying members the run places on one core
/// (sim/run/host_cpu.cpp) and k the most the calibration placed on one core: calibration spreads
/// a curve's members evenly over the host's cores (exec/host/calibrate_comm.h), k = ceil(P /
/// min(P, cores)); their turns on a shared core are core work, not latency. A message's C is
/// what it costs sender and receiver together (one rank's CPU time per ping-pong round trip),
/// charged to the receiver, which does the copy.
///
/// so only the time a transfer really keeps a core busy slows the compute beside it, and only
/// that part stretches when the core is shared. Where MPI moves a rooted collective's data between
/// the root and each member as soon as both have posted (libnbc's linear broadcast on <= 4 ranks,
/// the host backend's direct reduce), the executor runs each member's copy as its own job
/// (sim/run/host_cpu.cpp): a broadcast member's latency and work as above, from its post or the
/// root's; a reduce's message as p2p(b) on the root's core, then the root's sums,
/// reduce_sum_work. A broadcast curve with the roles' CPU times (profile root_cpu, member_cpu:
/// the root's thread and the mean other member's) charges a member's copy the mean member's and
/// the root's thread its own on the root's core (broadcast_roles); `cpu` is the busiest member's,
/// which leaves the root out whenever a member is busier: a 2-rank broadcast on one core was
/// charged one member (2x2-cpu, 12 MiB: ~1.6 ms) where its two threads spent 2.5-2.8 ms in runs
/// (docs/validate-host.md, session 23). Curves without CPU times (older profiles) count
/// everything past the smallest size's time as work: latency = T(smallest), work = T(b) - that.
///
/// Cache state: calibration measures every curve hot (the same buffers every call) and at 1-16
/// MiB cold (buffers rotated over a pool past the caches, profile cold_pool). A transfer's
/// latency and work lie between the two by the cold share of its buffers (cold_fraction of the
/// bytes their host touched since their last use, sim/run/host_cpu.cpp): WeiPipe forwards a
/// weight block a backward after it posted it (cold), TawPipe broadcasts a block it has just
/// received (hot). Below the cold curve's smallest size, and without cold curves, the hot curve.
/// Where the profile has curves measured after compute (profile after_compute: the hot buffers,
/// the block's GEMMs on every member's core between calls), a buffer whose rank's core computed
/// since its last use (in a run all but those an op of its core has just produced or read) is
/// not placed by its reuse distance but as after compute: the transfer's cost lies its `after`
/// share of buffers towards the after-compute curves and its `cold` share towards the cold one.
/// Calibration measures after one layer's GEMMs and after the whole block's; between the two
/// the figure follows the compute since the buffers' last use (Warmth::after_seconds), linearly
/// in its logarithm; below the shorter burst it runs from the hot figure (no compute) to that
/// burst's linearly in the seconds, and past the longer it stays there. A core's compute leaves
/// a transfer's buffers as cold as a rotation past the caches or colder, whatever the bytes
/// between, and the more so the longer it computed (session 27, docs/validate-host.md: a 3 MiB
/// all-gather on 2 ranks cost 145-173 us of CPU back to back, 378-417 rotated over a 64 MiB
/// pool, 436-452 with GEMMs between calls on the same buffers; FSDP's took 283-390 us in its
/// runs where the reuse-distance blend charged 250-267).
///
/// T and C come from measured curves (`tawexec calibrate --backend host`, profile `communication`
/// entries with scope shared_memory; members that all share one core prefer a curve of their rank
/// count with scope shared_core, measured so, where k counts the members that copy there), made
/// non-decreasing in size (monotone_envelope), interpolated linearly in size between points (in
/// each interval a latency plus bytes over a bandwidth, the cost of a copy; log-linear
/// interpolation, used until session 25, put a 12.9 MB message between the 4 and 16 MiB points
/// at 1.72 ms where a ping-pong measures 1.35 ms, docs/validate-host.md) and extended past the
/// largest point at the slope of its last two points (a bandwidth). A
/// collective whose rank count was not measured uses the curve of the nearest measured count,
/// scaled by the ratio of the ring step counts. Without any curve for an op, the model falls back
/// to the topology's (or profile's) shared-memory link: latency `alpha` and copy bandwidth `beta`
/// per message, with ring algorithms (all-reduce 2(P-1) steps of b/P bytes, all-gather and
/// reduce-scatter P-1 steps of b/P, broadcast and reduce P-1 pipelined... counted as one message of
/// b per member). The report says which figures were measured.
#pragma once

#include <cstdint>
#include <optional>
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
  /// Measured with every member on one core (profile scope shared_core), not spread over the
  /// host's cores (shared_memory).
  bool one_core = false;
  /// Measured cold (profile cold_pool): each call's buffers rotated over `cold_pool` bytes per
  /// rank; 0: hot (the same buffers every call).
  double cold_pool = 0.0;
  /// Measured after compute (profile after_compute): the hot buffers with this many seconds of
  /// the block's GEMMs on every member's core between calls; 0: not.
  double after_compute = 0.0;
  std::vector<std::pair<double, SimTime>> points;  ///< (bytes, time)
  /// (bytes, CPU time) at the same sizes, or empty when the profile measured none.
  std::vector<std::pair<double, SimTime>> cpu;
  /// Broadcast curves: (bytes, the root's CPU time) and (bytes, the mean other member's) at the
  /// same sizes (profile root_cpu, member_cpu), or empty when the profile measured none.
  std::vector<std::pair<double, SimTime>> root_cpu;
  std::vector<std::pair<double, SimTime>> member_cpu;
};

/// The cache state of a transfer's buffers (sim/run/host_cpu.cpp): shares of them, cold + after
/// <= 1, the rest hot.
struct Warmth {
  double cold = 0.0;   ///< placed by reuse distance (cold_fraction): towards the cold curve
  double after = 0.0;  ///< after compute: towards the after-compute curves
  /// The after-compute buffers' compute since their last use: seconds per core of their host's
  /// compute, their geometric mean (picks between after-compute curves by their bursts).
  double after_seconds = 0.0;
  Warmth() = default;
  /// Only a cold share (no after-compute buffers).
  Warmth(double cold_share) : cold(cold_share) {}  // NOLINT(google-explicit-constructor)
  Warmth(double cold_share, double after_share, double seconds)
      : cold(cold_share), after(after_share), after_seconds(seconds) {}
};

/// A transfer's cost: a core-free latency, then copy work on cores.
struct ShmCost {
  SimTime latency;
  SimTime work;
  /// True when `work` is one member's measured CPU time (a core with m copying members owes
  /// m x work); false for curves without CPU times and for the fallback, whose work already
  /// describes the whole transfer.
  bool per_member = false;
};

/// A broadcast whose members copy one by one (sim/run/host_cpu.cpp): each member's copy is a
/// core-free latency then `member_work` on its core; the root's thread spends `root_work` on its
/// own core (posting, and testing as the members copy).
struct BroadcastRoles {
  SimTime latency;
  SimTime member_work;
  SimTime root_work;
};

/// The shared-memory transport model of one host.
class MpiShmModel {
 public:
  /// `alpha`, `beta_bytes_per_second`: the fallback per-message latency and copy bandwidth;
  /// `cores_per_host`: the cores calibration spread a curve's members over.
  MpiShmModel(std::vector<ShmCurve> curves, SimTime alpha, double beta_bytes_per_second,
              int cores_per_host = 1);

  /// One message; `work` is due on the receiver's core. `one_core`: sender and receiver share a
  /// core (then a curve measured so is preferred). `warmth.cold`: the share of the transfer's
  /// buffers out of the caches by reuse distance, in [0, 1] (cold_fraction): the cost lies that
  /// far from the hot curve's to the cold one's, where the profile has a cold curve at this size.
  /// `warmth.after`: the share of the buffers whose rank's core computed since their last use,
  /// towards the curves measured after compute where the profile has them at this size (else
  /// towards the cold one, as cold).
  ShmCost p2p(double bytes, bool one_core = false, Warmth warmth = {}) const;
  /// One collective; `work` is one member's, due on each copying member's core (a core with m
  /// copying members owes m x work). `one_core`: every member is on one core (then a curve
  /// measured so is preferred). `warmth`: as for p2p.
  ShmCost collective(ir::CollectiveKind kind, double bytes, int ranks, bool one_core = false,
                     Warmth warmth = {}) const;
  /// A broadcast on `ranks` members by roles, from a curve measured at that rank count with the
  /// root's and the other members' CPU times (profile root_cpu, member_cpu): member_work and
  /// root_work are those, and the latency is the call's time less the busiest core's work in the
  /// measurement (one core: every member's copy and the root's; spread: rank r of the call on
  /// core r / ceil(ranks / cores), as calibration places them, so the root shares its core with
  /// the first members). Empty without such a curve (collective() then serves, the root free).
  /// `one_core`, `warmth`: as for collective().
  std::optional<BroadcastRoles> broadcast_roles(double bytes, int ranks, bool one_core = false,
                                                Warmth warmth = {}) const;
  /// One member's copy of a linear broadcast on `ranks` ranks (member_work, latency), started
  /// while `others_copying` other members of the instance copy. Calibration posts every member
  /// at once, so the `ranks` curve's member copies all ran together and shared the memory
  /// system; a copy alone costs the 2-rank curve's member (`pair_one_core`: its root and it on
  /// one core), and each other copy running moves it 1 / (ranks - 2) of the way to the `ranks`
  /// curve's. Measured (2x2-cpu, TawPipe[grouping=off]'s 12 MiB 4-rank broadcasts, tawexec's
  /// per-op CPU time): a member copy no other member's overlapped cost 1.41-1.45 ms, beside one
  /// 1.79-1.80, beside two 1.84-1.87; the 2-rank curve's member 1.30-1.36, the 4-rank curve's
  /// 1.66-1.73, plus the waits' wake-ups (docs/validate-host.md, session 28). Without a 2-rank
  /// curve (or on 2 ranks), broadcast_roles(bytes, ranks, one_core, warmth).
  std::optional<BroadcastRoles> broadcast_member_roles(double bytes, int ranks, bool one_core,
                                                       bool pair_one_core, int others_copying,
                                                       Warmth warmth = {}) const;
  /// A reduce as the host backend runs it alone (exec/host/mpi_ops.h run_direct): the root
  /// receives every other member's buffer, one message of `bytes` each (p2p(bytes), copied on
  /// the root's core as each member posts), then sums them. Returns the root's core work past
  /// those copies: the reduce curve's CPU time less `ranks` - 1 messages' CPU time, at least 0
  /// (the sums, and the root's share of the waits). Empty when the reduce or the message curve
  /// has no CPU times (then only the whole call's cost is known).
  std::optional<SimTime> reduce_sum_work(double bytes, int ranks, bool one_core = false,
                                         Warmth warmth = {}) const;
  /// True when `op` has a measured curve (for reports).
  bool measured(ShmOp op) const;
  /// The bytes the cold curves' buffers rotated over (the largest of them), 0 without cold
  /// curves: a buffer is wholly cold once its host has touched this many bytes since its last
  /// use (cold_fraction).
  double cold_pool() const { return cold_pool_; }
  /// The longest compute any curve was measured after (seconds); 0 without after-compute
  /// curves (then the executor does not track its cores' compute).
  double longest_after_compute() const { return longest_after_compute_; }

 private:
  /// The hot curve for `op` on `ranks` ranks (the nearest measured count, see the file's head).
  const ShmCurve* find(ShmOp op, int ranks, bool one_core) const;
  /// The cold curve measured like `hot` (op, ranks, placement), or null.
  const ShmCurve* find_cold(const ShmCurve& hot) const;
  /// The curves measured after compute like `hot` that reach down to `bytes` (and have CPU
  /// times if `hot` has, root and member CPU times if `roles`) bracketing `seconds` of compute:
  /// (lower, upper, the upper's weight); past the longest burst that curve twice; below the
  /// shortest, `from_hot`: from `hot` itself (no compute) to the shortest, linearly in the
  /// seconds. Null without any.
  struct AfterPair {
    const ShmCurve* lo = nullptr;
    const ShmCurve* hi = nullptr;
    double w = 0.0;
    bool from_hot = false;
  };
  AfterPair find_after_compute(const ShmCurve& hot, double bytes, double seconds, bool roles) const;
  /// `hot`'s cost at `bytes` moved the warmth's cold share towards its cold curve's and its
  /// after share towards its after-compute curves' (find_after_compute), each where that curve
  /// reaches down to `bytes` (without an after-compute curve, `after` counts as cold).
  ShmCost blended(const ShmCurve& hot, double bytes, int per_core, Warmth warmth) const;
  std::vector<ShmCurve> curves_;
  SimTime alpha_;
  double beta_ = 1.0;
  int cores_ = 1;
  double cold_pool_ = 0.0;
  double longest_after_compute_ = 0.0;
};

/// The cold share of a buffer whose host has touched `since` bytes (the reuse distance: bytes
/// its ranks' ops read and wrote since the buffer's last use) with cold curves measured over
/// `cold_pool` bytes: since / cold_pool, at most 1; 1 for a buffer never used (negative
/// `since`). A calibration buffer rotated over the pool comes back after ~cold_pool bytes of
/// the others, so a buffer that far back is as cold as the cold curve's; one used last is as hot
/// as the hot curve's (the same buffers every call); in between the time rises about linearly
/// with the pool (docs/validate-host.md: a 12.9 MB message rotated over 1, 2, 3, 4 buffers took
/// 1.08, 1.37, 1.60, 1.75 ms, then 1.8-1.9 up to 64).
double cold_fraction(double since, double cold_pool);

/// The shared-memory curves of `profile` (may be null): its `communication` entries with scope
/// shared_memory or shared_core. A version-1 profile has none.
std::vector<ShmCurve> shm_curves(const profile::Profile* profile);

/// Makes the curve's times (and CPU times) non-decreasing in size by lowering each point to the
/// smallest time at any larger size: more bytes never take less time, and interference on a
/// shared machine only adds time, so a point above a larger size's time is noise (a descheduled
/// measurement), not a cost. Points must be sorted by size.
void monotone_envelope(ShmCurve& curve);

/// Time of `curve` at `bytes` (interpolation as described above). Precondition: >= 1 point.
SimTime curve_time(const ShmCurve& curve, double bytes);

/// CPU time of `curve` at `bytes` (same interpolation), at most curve_time. Precondition:
/// `curve.cpu` is not empty.
SimTime curve_cpu(const ShmCurve& curve, double bytes);

}  // namespace tawpipe::sim
