/// \file
/// The calibration profile: measured rates that replace the simulator's built-in kernel,
/// link and collective models. `tawexec calibrate` writes one; `tawsim --profile FILE` reads it.
///
/// Schema (YAML, format_version 2; every field optional except `format_version`; units as in
/// topology files):
///
///     format_version: 2
///     producer: "tawexec calibrate 0.2.0 (host backend, 4 ranks)"   # free text
///     backend: host                     # host | cuda | manual
///     devices:                          # keyed by the topology's device-kind name
///       a100-sxm4-80gb:
///         dtype: bf16                   # dtype of the FLOP measurements (informational)
///         launch_overhead: 4us          # per kernel launch (GPU) / per kernel call (host)
///         op_overhead: 12us             # per IR op: interpreter + stream bookkeeping
///         memory_bandwidth: 1630GB/s    # achieved HBM streaming rate (roofline of FLOP kernels)
///         kernels:                      # kernel class (common/model/kernel_class.h) -> points
///           gemm:
///             - {m: 16384, n: 3072, k: 1024, rate: 180TFLOP/s}
///           attention_fwd:
///             - {batch: 1, heads: 32, seq: 16384, head_dim: 64, causal: true, rate: 150TFLOP/s}
///           norm:
///             - {bytes: 64MiB, bandwidth: 1200GB/s}
///         ranks: {count: 24, spread: 0.03, outliers: [17]}   # optional, multi-rank runs
///     links:                            # link class -> achieved {bandwidth, latency}
///       nvswitch: {bandwidth: 274GB/s, latency: 600ns}
///     communication:                    # measured collective / p2p times
///       - {op: all_reduce, scope: intra_node, ranks: 8,
///          points: [{size: 1MiB, time: 31us}, {size: 64MiB, time: 410us}]}
///       - {op: sendrecv, scope: shared_memory, ranks: 2,   # host: optional CPU time per call
///          points: [{size: 8B, time: 9us, cpu: 6us}, {size: 16MiB, time: 5ms, cpu: 3ms}]}
///       - {op: broadcast, scope: shared_core, ranks: 2,    # host: the root's and a member's
///          points: [{size: 16MiB, time: 3ms, cpu: 2ms, root_cpu: 1500us, member_cpu: 2ms}]}
///       - {op: sendrecv, scope: shared_memory, ranks: 2, cold_pool: 64MiB,  # buffers rotated
///          points: [{size: 1MiB, time: 150us, cpu: 140us}, {size: 16MiB, time: 3ms, cpu: 2ms}]}
///       - {op: all_gather, scope: shared_memory, ranks: 2, after_compute: 3ms,  # compute first
///          points: [{size: 1MiB, time: 160us, cpu: 150us}, {size: 16MiB, time: 3ms, cpu: 2ms}]}
///     host:                             # CPU topologies only (host backend)
///       cores_per_host: 2
///       ranks_per_core: 2
///       wakeup_cost: 50us               # compute progress a sleeping thread's wake-up costs
///       wakeup_latency: 100us           # how late a sleep beside compute ends
///       wakeup_cost_long: 40us          # wakeup_cost with a long wait's 2 ms sleeps
///       wakeup_cost_shared: 60us        # wakeup_cost while the core's other ranks compute too
///       wakeup_cost_long_shared: 45us   # wakeup_cost_long while they compute too
///       zero_bandwidth: 12GB/s          # the backend's zeroing of a fresh buffer (fill with 0)
///     noise:                            # fixed-work-quantum trace: every unit at once
///       work: "sgemm 128x256x256 x8"    # free text: the quantum's work
///       quantum: 1.02ms                 # reference: median duration of all units' quanta
///       units:                          # host: per core (0, 1, ...); cuda: per device (rank)
///         - [1.0021, 0.9987, 1.3410, ...]   # each quantum's duration / quantum, in order
///
/// Kernel points. Flop-bound classes (gemm, attention_fwd, attention_bwd) carry `rate`;
/// memory-bound classes carry `bandwidth`. The shape keys are: gemm m, n, k (optional `batch`
/// for batched GEMMs); attention batch, heads, seq, head_dim, causal; memory-bound classes
/// `bytes` (bytes the kernel moves). A point without shape keys is *flat*: it applies to every
/// shape (this is what a v1 file's single rates become). Users of the points (sim/compute)
/// interpolate log-linearly between measured shapes and fall back to the built-in model outside
/// them.
///
/// Version 1 files (flat `gemm`, `attention_fwd`, `attention_bwd`, `elementwise`,
/// `memory_bandwidth`, `launch_overhead` per device) still load: they become flat points
/// (`elementwise` for every memory-bound class) and the Profile says format_version 2. The
/// writer always writes version 2; read(write(p)) == p and write(read(write(p))) == write(p)
/// byte for byte.
///
/// Semantics in the simulator: a device's kernel points replace the built-in rate of that class;
/// a link bandwidth replaces capacity x efficiency of every link of that class, a latency
/// replaces their latency; communication points replace modelled collective times (sim/network).
/// Absent fields keep the topology's values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/model/kernel_class.h"
#include "common/units.h"

namespace tawpipe::profile {

inline constexpr int kProfileFormatVersion = 2;

/// Who measured the profile.
enum class Backend : std::uint8_t { host, cuda, manual };

/// One measured point of a kernel class. Shape fields are 0 / absent when not given; a point
/// with no shape field at all is flat (applies to every shape).
struct KernelPoint {
  // gemm: C[m x n] = A[m x k] B[k x n], `batch` independent products (0 = not given = 1).
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  // attention (batch is shared with gemm): batch x heads sequences of `seq` tokens.
  std::int64_t batch = 0;
  std::int64_t heads = 0;
  std::int64_t seq = 0;
  std::int64_t head_dim = 0;
  std::optional<bool> causal;
  // memory-bound classes: bytes read + written by the kernel.
  std::optional<Bytes> bytes;
  // The measurement: `rate` for flop-bound classes, `bandwidth` for memory-bound ones.
  std::optional<FlopRate> rate;
  std::optional<Bandwidth> bandwidth;

  /// True when no shape field is set.
  bool flat() const;
  static KernelPoint flat_rate(FlopRate r);
  static KernelPoint flat_bandwidth(Bandwidth b);
  friend bool operator==(const KernelPoint&, const KernelPoint&) = default;
};

/// Rank-to-rank variation seen by a multi-rank calibration run.
struct RankSpread {
  int count = 0;              ///< ranks measured
  double spread = 0.0;        ///< (max - min) / median of the per-rank rates, a fraction
  std::vector<int> outliers;  ///< ranks far outside the spread
  friend bool operator==(const RankSpread&, const RankSpread&) = default;
};

/// Measured figures of one device kind.
struct DeviceProfile {
  std::string dtype;                          ///< informational: dtype of the FLOP measurements
  std::optional<SimTime> launch_overhead;     ///< per kernel launch / host kernel call
  std::optional<SimTime> op_overhead;         ///< per IR op (interpreter, stream bookkeeping)
  std::optional<Bandwidth> memory_bandwidth;  ///< achieved streaming HBM / DRAM rate
  /// Measured points per kernel class, in file order.
  std::map<model::KernelClass, std::vector<KernelPoint>> kernels;
  std::optional<RankSpread> ranks;
  friend bool operator==(const DeviceProfile&, const DeviceProfile&) = default;
};

/// Measured figures of one link class.
struct LinkProfile {
  std::optional<Bandwidth> bandwidth;  ///< achieved per-direction rate (replaces cap x eff)
  std::optional<SimTime> latency;      ///< one-way latency per hop
  friend bool operator==(const LinkProfile&, const LinkProfile&) = default;
};

enum class CommOp : std::uint8_t {
  broadcast,
  reduce,
  all_reduce,
  all_gather,
  reduce_scatter,
  sendrecv
};
/// Where the ranks of a measurement sit: one node (NVLink / PCIe), across nodes (NIC), MPI ranks
/// on one host spread over its cores (shared memory), or MPI ranks on one host all on one core
/// (shared_core: each takes turns with the others for the core, and so do their handshakes).
enum class CommScope : std::uint8_t { intra_node, inter_node, shared_memory, shared_core };

/// One measured time: `size` = bytes per rank as nccl-tests counts them (the full buffer of an
/// all-reduce / all-gather output, the message of a sendrecv).
struct CommPoint {
  Bytes size;
  SimTime time;
  /// Host backend (scope shared_memory) only: the CPU time one call costs the busiest member's
  /// thread (CLOCK_THREAD_CPUTIME_ID: copies, reductions, MPI progress), without the wake-ups of
  /// its wait, which host.wakeup_cost charges. `time` less this is time that uses no core
  /// (handshakes, waiting for the peer). Absent: the whole time counts as core work.
  std::optional<SimTime> cpu{};
  /// Host backend, broadcast curves: the root's thread CPU time per call and the mean over the
  /// other members' threads (each without its wait's wake-ups, as `cpu`). The simulator charges
  /// a broadcast whose members copy one by one (sim/run/host_cpu.cpp) a member's copy at
  /// member_cpu on its core and the root's part at root_cpu on the root's: `cpu` is one member's
  /// figure, the busiest, which leaves out the root when a member is busier (2x2-cpu, 12 MiB,
  /// one core: root 1.4-2.0 ms, member 1.5-1.8 ms). Absent: `cpu` per member, the root free.
  std::optional<SimTime> root_cpu{};
  std::optional<SimTime> member_cpu{};
  friend bool operator==(const CommPoint&, const CommPoint&) = default;
};

/// A measured curve of one collective (or sendrecv) on `ranks` ranks of one scope; points are
/// in increasing size.
struct CommMeasurement {
  CommOp op = CommOp::all_reduce;
  CommScope scope = CommScope::intra_node;
  int ranks = 0;
  std::vector<CommPoint> points;
  /// Host backend only: the curve was measured cold, each call's buffers rotated over this many
  /// bytes per rank (past the caches, as Intel MPI Benchmarks' -off_cache does); absent: the same
  /// buffers every call (hot). The simulator blends a transfer between the two by how many bytes
  /// its host touched since its buffers' last use (sim/network/mpi_shm.h).
  std::optional<Bytes> cold_pool{};
  /// Host backend only: the curve was measured after compute, the same buffers every call with
  /// this much of the block's GEMMs (median per call) on every member's core between calls, as a
  /// run's transfers follow the compute of its cores. Not with cold_pool. The simulator takes it
  /// for a transfer whose host computed since its buffers' last use (sim/network/mpi_shm.h).
  std::optional<SimTime> after_compute{};
  friend bool operator==(const CommMeasurement&, const CommMeasurement&) = default;
};

/// CPU topologies (host backend): how ranks share cores.
struct HostProfile {
  std::optional<int> cores_per_host;
  std::optional<int> ranks_per_core;
  /// Progress a compute thread loses each time a sleeping thread on its core wakes (the
  /// communication threads' waits, common/host_wait.h), measured by `tawexec calibrate` with a
  /// sleeper beside GEMMs.
  std::optional<SimTime> wakeup_cost;
  /// How much later than requested such a sleep ends beside a computing thread.
  std::optional<SimTime> wakeup_latency;
  /// wakeup_cost measured with the longest sleeps of a long wait (host_wait.h
  /// kLongWaitMaxSleepNs) instead of the short waits' kMaxSleepNs; the simulator interpolates
  /// between the two by a wake-up's sleep length.
  std::optional<SimTime> wakeup_cost_long;
  /// wakeup_cost and wakeup_cost_long measured while the core's other ranks (ranks_per_core > 1)
  /// run GEMMs too, as a shared core's ranks mostly do in a run: a wake-up on such a core may
  /// hand the core to another process's compute thread, whose working set then replaces the
  /// first one's. The simulator charges them for wake-ups while more than one compute thread of
  /// the core has work (sim/run/host_cpu.cpp). Absent: the single-thread figures serve.
  std::optional<SimTime> wakeup_cost_shared;
  std::optional<SimTime> wakeup_cost_long_shared;
  /// Bytes per second at which the host backend zeroes a buffer when an alloc op hands it out
  /// and its first use reads it (exec/host/host_backend.cpp, common/ir/zeroing.h): a fill with
  /// 0 of a cold block-sized buffer, measured by `tawexec calibrate` on the interpreter's core.
  std::optional<Bandwidth> zero_bandwidth;
  friend bool operator==(const HostProfile&, const HostProfile&) = default;
};

/// Fixed-work-quantum noise trace (FWQ, Sottile and Minnich, "Analysis of microbenchmarks for
/// performance tuning of clusters", Cluster 2004; replayed into a simulation as LogGOPSim does,
/// Hoefler, Schneider and Lumsdaine, "Characterizing the influence of system noise on large-scale
/// applications by simulation", SC10): every unit (host: a core; cuda: a device) runs the same
/// fixed quantum of work back to back, all units at once, and each quantum's duration is
/// recorded. A quantum longer than `quantum` is time the unit lost (interrupts, other threads,
/// the hypervisor, a slower core); the units' traces share one start, so what slows all units
/// at once stays common to them in the replay. The simulator replays it on CPU topologies
/// (sim/run/noise.h); `tawexec calibrate --backend host` measures it (exec/host/calibrate_noise.h).
/// GPU topologies do not replay one yet.
struct NoiseTrace {
  /// At most this many quanta per unit. A pooled profile concatenates its calibrations' traces
  /// (scripts/profiles.py): 16 calibrations of 4 s at ~0.75 ms quanta are ~85k, past the 65536
  /// bound of other lists; 2^20 holds ~200 such calibrations and still bounds what a hostile file
  /// makes the YAML parser allocate.
  static constexpr std::size_t kMaxQuanta = std::size_t{1} << 20;
  std::string work;  ///< informational: what one quantum computes
  SimTime quantum;   ///< the reference duration: the median of every unit's quanta
  /// Per unit, in unit order: each quantum's duration / quantum, in the order they ran (> 0).
  std::vector<std::vector<double>> units;
  friend bool operator==(const NoiseTrace&, const NoiseTrace&) = default;
};

/// A whole profile. Maps are keyed by device kind name and link class name (sorted, so the
/// writer's output is deterministic).
struct Profile {
  int format_version = kProfileFormatVersion;  ///< always 2 once read (v1 files are upgraded)
  std::string producer;
  std::optional<Backend> backend;
  std::map<std::string, DeviceProfile> devices;
  std::map<std::string, LinkProfile> links;
  std::vector<CommMeasurement> communication;
  std::optional<HostProfile> host;
  std::optional<NoiseTrace> noise;
  friend bool operator==(const Profile&, const Profile&) = default;
};

std::string_view to_string(Backend b);
std::string_view to_string(CommOp op);
std::string_view to_string(CommScope s);

/// Parses a profile (version 1 or 2). Errors (unknown keys with a "did you mean", missing
/// units, unknown kernel or link class, a point without its measurement or with shape keys of
/// another class, bad version) carry `file_name`, line, column and the key path.
Expected<Profile> read_profile_yaml(std::string_view text, std::string_view file_name);
/// Reads and parses a file.
Expected<Profile> read_profile_file(const std::string& path);
/// The version-2 YAML form above; read_profile_yaml(write_profile_yaml(p)) == p.
std::string write_profile_yaml(const Profile& profile);

/// Sets one flat point (applies to every shape) for every memory-bound kernel class: what a v1
/// file's `elementwise` figure means, and what a calibration that measures one element-wise
/// rate can write.
void set_flat_memory_bound(DeviceProfile& device, Bandwidth achieved);

/// A short name for reports: "<file name> (<producer>)", or "built-in" when `profile` is null.
std::string describe_profile(const Profile* profile, std::string_view file_name);

}  // namespace tawpipe::profile
