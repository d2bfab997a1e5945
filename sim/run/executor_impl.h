/// \file
/// Internal to sim/run: the executor's state and tables, shared by its translation units
/// (one per concern, see executor.h for the semantics):
///  - tables.cpp      builds the flat tables once (units, dependents, send/recv pairs,
///                    collective instances, memory model);
///  - event_loop.cpp  posts, starts and completes ops (compute, alloc/free, stream order);
///  - transfers.cpp   starts point-to-point and collective transfers on the network model and
///                    completes them;
///  - executor.cpp    the public entry point `execute`.
/// Nothing outside sim/run includes this header.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "sim/compute/compute_model.h"
#include "sim/engine/engine.h"
#include "sim/network/collectives.h"
#include "sim/network/mpi_shm.h"
#include "sim/run/big_vector.h"
#include "sim/run/core_sharing.h"
#include "sim/run/executor.h"
#include "sim/run/noise.h"

namespace tawpipe::sim::detail {

constexpr std::uint64_t kCollectiveToken = 1ull << 63;
constexpr std::int32_t kNoUnit = -1;

template <class T>
inline std::size_t idx(T v) {
  return static_cast<std::size_t>(v);
}

inline bool is_comm(ir::OpKind k) {
  return k == ir::OpKind::send || k == ir::OpKind::recv || k == ir::OpKind::collective;
}
inline bool is_compute(ir::OpKind k) {
  return k == ir::OpKind::compute || k == ir::OpKind::copy;
}

/// What the communication kernels running on one GPU take from compute (contention.cpp).
struct CommLoad {
  std::int32_t sms = 0;  ///< SMs held: one per NCCL channel (one CTA per channel)
  double hbm = 0.0;      ///< HBM bytes/s their copies and reductions move
};

struct Instance {
  ir::CommId comm = 0;
  std::uint32_t ops_offset = 0;  ///< into inst_ops_, one slot per member position
  std::int32_t arrived = 0;
  std::int32_t outstanding = 0;
  std::int32_t root_member = -1;
  std::int32_t members = 0;
  /// CPU topologies: how the members' copies start (sim/run/host_cpu.cpp member_start_mode).
  std::uint8_t member_start = 0;
  std::int32_t copies_done = 0;     ///< member copies ended (per-member starts)
  std::int32_t copies_running = 0;  ///< member copies started and not ended (linear broadcast)
  CommLoad load;                    ///< per member GPU while the collective runs (contention model)
};

/// Instance::member_start: not decided yet; the whole instance at its last member's post; the
/// root sends to each other member as it posts (libnbc's linear broadcast); each member sends to
/// the root as it posts, which sums at the end (the host backend's direct reduce).
enum : std::uint8_t { kStartUndecided = 0, kStartWhole, kStartBroadcastLinear, kStartReduceDirect };

/// The executor's compact copy of one op: everything the event loop needs, so that it never walks
/// the Program's pools (cache- and TLB-friendly at a million ops).
struct RtOp {
  std::uint64_t bytes = 0;  ///< transfers: message bytes; alloc/free: summed size of the
                            ///< listed buffers; compute: workspace bytes
  /// Compute and copy ops: the compute model's time. Send ops: their communicator (ir::CommId
  /// in picoseconds; start_p2p reads it there instead of from the cold 56-byte ir::Op) until the
  /// transfer starts, then under the contention model its HBM bytes/s.
  SimTime duration;
  std::int32_t rank = 0;
  std::int32_t unit = 0;
  std::int32_t link = -1;  ///< p2p: partner's global index; collective: instance; alloc/free of
                           ///< several memory kinds: index into mixed_memory_
  ir::OpKind kind = ir::OpKind::compute;
  std::uint8_t state = 0;  ///< 0 waiting, 1 posted, 2 done
  /// alloc/free: the MemoryKind of every listed buffer, or kMixedKinds (look them up).
  std::uint8_t mem_kind = static_cast<std::uint8_t>(MemoryKind::workspace);
  /// Compute and copy ops: share of the duration in memory-bound kernels, in 1/255 (contention
  /// model: those slow with HBM traffic, the rest with SMs held by communication kernels).
  /// A send op while its transfer runs (contention model): the SMs its channels hold on both
  /// sides (its HBM bytes/s are then kept in `duration`, unused by transfers).
  std::uint8_t mem_share = 0;
};

inline constexpr std::uint8_t kMixedKinds = 0xff;

/// A unit (one op, or the ops of one NCCL group on one stream), as its dependents see it: the
/// count they decrement and, once it reaches zero, where its ops are. An op's dependents are
/// units anywhere ahead in the program, so these accesses miss the cache; 8 bytes keep the
/// footprint small (a 16-byte unit with pending/next cost paper/weipipe ~45 % of complete_op's
/// time at that decrement) and post_unit finds first_op on the line the decrement just loaded.
struct Unit {
  std::int32_t remaining = 0;  ///< dependencies + stream and communicator predecessors not done
  std::uint32_t first_op = 0;  ///< into unit_ops_; the unit's ops end at the next unit's first_op
};

/// A unit as its own ops' completions see it.
struct UnitLink {
  std::int32_t pending = 0;  ///< ops of the unit not yet completed (its size until it runs)
  std::int32_t next = -1;    ///< the stream's next unit, or kNoUnit
};

/// A compute or copy op in progress under the contention model: its remaining work (time alone
/// on the GPU) and its current slow-down.
struct RunningCompute {
  std::uint32_t g = 0;
  std::uint8_t mem_share = 0;  ///< rt_[g].mem_share, here to spare shift_load a cold load
  double work_ps = 0.0;
  double factor = 1.0;
  SimTime last;
  EventHandle done;
};

struct RankClock {
  SimTime last;
  std::int32_t compute_running = 0;
  std::int32_t comm_running = 0;
  CommLoad load;                        ///< contention model only
  std::vector<RunningCompute> running;  ///< contention model only
};

/// Runs one program: `prepare` builds the tables, `run` drives the event loop to the end.
class Executor {
 public:
  Executor(const ir::Program& program, const topo::Topology& topology, const ExecOptions& options,
           ComputeModel compute)
      : program_(program),
        topology_(topology),
        options_(options),
        compute_(std::move(compute)),
        network_(engine_, topology, options.profile,
                 [this](std::uint64_t token) { on_transfer_done(token); }),
        planner_(program, topology, network_, options.all_reduce_algo, options.nccl),
        sym_(options.symmetry),
        active_ranks_(sym_ ? static_cast<std::size_t>(sym_->replica_ranks) : program.ranks.size()) {
    planner_.set_profile(options.profile);
    handler_ = engine_.add_handler([this](const Event& e) { on_event(e); });
    network_.record_usage(options.record_link_usage);
    if (topology.host_cpu()) init_host_cpu();
  }

  Status prepare();
  Expected<ExecutionResult> run();

 private:
  enum EventKind : std::uint32_t { kOpDone = 0, kCollectiveDone = 1 };

  /// The IR op of global index `g` (preparation and rare paths only).
  const ir::Op& op_at(std::size_t g) const {
    const auto r = idx(rt_[g].rank);
    return program_.ranks[r].ops[g - res_.rank_offset[r]];
  }
  Status build_units();
  Status build_p2p();
  Status build_collectives();
  Error op_error(std::size_t g, const std::string& what) const;

  void on_event(const Event& e);
  void on_transfer_done(std::uint64_t token);
  void post_unit(std::int32_t unit);
  void start_op(std::size_t g);
  /// An alloc or free op moves the memory model by each listed buffer, under its kind.
  void move_memory(std::size_t g, SimTime now) {
    const RtOp& op = rt_[g];
    const bool alloc = op.kind == ir::OpKind::alloc;
    if (op.mem_kind != kMixedKinds) {
      const auto kind = static_cast<MemoryKind>(op.mem_kind);
      alloc ? memory_->add(op.rank, kind, op.bytes, now)
            : memory_->remove(op.rank, kind, op.bytes, now);
      return;
    }
    // Buffers of several kinds: their sums by kind (the memory model ends in the same state and
    // the same peak as with one call per buffer: an alloc only adds, a free only removes).
    const auto& by_kind = mixed_memory_[idx(op.link)];
    for (std::size_t k = 0; k < kMemoryKinds; ++k) {
      if (by_kind[k] == 0) continue;
      alloc ? memory_->add(op.rank, static_cast<MemoryKind>(k), by_kind[k], now)
            : memory_->remove(op.rank, static_cast<MemoryKind>(k), by_kind[k], now);
    }
  }
  void start_p2p(std::size_t send_g);
  void start_collective(std::uint32_t inst);
  void complete_op(std::size_t g);
  void complete_collective(std::uint32_t inst);
  // Replica symmetry (symmetry.cpp in sim/run; sim/symmetry/symmetry.h).
  /// The start of collective instance `inst` on replica-local communicator `comm` for all its
  /// images: one variable over every image's links, bytes counted for every image.
  void start_collective_orbit(std::uint32_t inst);
  /// Records the link lists of a transfer's images (image d in replica d): links used by two
  /// replicas become shared; link i of image d maps to link i of image d + 1 under the replica
  /// shift (the link map p of symmetry.h) on the others. Marks the run not symmetric if p stops
  /// being a rate-preserving function.
  /// Returns the links of the transfer's solver variable (the quotient by p).
  std::vector<topo::LinkId> map_images(std::span<const std::span<const topo::LinkId>> images);
  /// A cross-replica collective's links in the quotient by p (cached; cross_links_ notes).
  const std::vector<topo::LinkId>& cross_quotient(const ir::Op& op, const Instance& in,
                                                  std::span<const topo::LinkId> links,
                                                  double bytes);
  /// End of run: p is a bijection on the links replica-local transfers own; shared links, and
  /// links that cross-replica collectives load asymmetrically, were never bottlenecks.
  void check_symmetry();
  /// Whether a link a cross-replica collective loads unevenly bound other transfers (then the
  /// run is broken and stops; checked as transfers end, so that the full run starts early).
  bool asymmetric_bound();
  /// Copies replica 0's figures to the other replicas (end of run).
  void expand_replicas();
  void broken(const std::string& why) {
    if (res_.symmetry_broken.empty()) res_.symmetry_broken = why;
    engine_.stop();  // the figures will not be used
  }
  // CPU topologies (host_cpu.cpp): compute ops share their rank's core, transfers use MPI's
  // shared-memory transport (sim/network/mpi_shm.h) whose copies share the cores too.
  void init_host_cpu();
  int core_of_rank(ir::Rank r) const;
  void start_compute_on_core(std::size_t g, SimTime work);
  void start_p2p_shm(std::size_t send_g);
  void start_collective_shm(std::uint32_t inst);
  /// Fills zero_bytes_ (prepare(), CPU topologies with host.zero_bandwidth).
  void plan_zeroing();
  /// Starts alloc op `g`'s zeroing on its rank's core (zero_bytes_[g] > 0).
  void start_zeroing(std::size_t g);
  /// CPU topologies whose profile has cold or after-compute curves: sizes the reuse-distance and
  /// compute tables (prepare()).
  void plan_warmth();
  /// Op `g` completed: adds the bytes it moved to its host's count (and a compute op to its
  /// host's compute count) and marks its buffers used.
  void note_touch(std::size_t g);
  /// The cold share (sim/network/mpi_shm.h cold_fraction) of op `g`'s buffers, summed over those
  /// not after compute (warmth) and divided by all; 0 without cold curves.
  double cold_share(std::size_t g) const;
  /// Op `g`'s buffers' cache state (sim/network/mpi_shm.h Warmth): the share after compute (its
  /// rank's core completed a compute op since their last use; a buffer not used yet in the
  /// simulated iteration was last used in the previous one), which counts towards the curves
  /// measured after compute with the compute since (geometric mean), not by reuse distance; the
  /// others' cold share (cold_share). Without after-compute curves, the cold share alone.
  Warmth warmth(std::size_t g) const;
  /// Whether buffer `b` of rank `r` is after compute (see warmth).
  bool after_compute(std::size_t r, ir::BufferId b) const;
  /// The compute so far on rank `r`'s core (core_computed_).
  double computed_on_core_of(std::size_t r) const;
  /// The mean warmth of instance `in`'s members' ops (shares averaged, seconds' geometric mean).
  Warmth instance_warmth(const Instance& in) const;
  /// CPU topologies: whether every member of instance `in` is on one core (the shared-memory
  /// model then prefers curves measured so, sim/network/mpi_shm.h).
  bool on_one_core(const Instance& in) const;
  /// How instance `inst`'s copies start (Instance::member_start), decided at its first post.
  std::uint8_t member_start_mode(std::uint32_t inst, std::size_t g) const;
  /// A member of a per-member instance posted (op `g`): starts the copies it enables.
  void post_member_shm(std::uint32_t inst, std::size_t g);
  /// Starts the copy of member position `pos` of a per-member instance.
  void start_member_copy(std::uint32_t inst, std::size_t pos);
  /// A linear broadcast's root posted: its thread's CPU time (MpiShmModel::broadcast_roles) as
  /// background work on its core.
  void charge_broadcast_root(std::uint32_t inst);
  /// The job of member position `pos` (a copy, or the reduce root's sums) ended.
  void member_job_done(std::uint32_t inst, std::size_t pos);
  void on_core_done(std::uint64_t token);
  // Contention of communication kernels with compute on GPUs (contention.cpp).
  void init_contention();
  double contention_factor(ir::Rank r, std::uint8_t mem_share) const;
  void start_compute_contended(std::size_t g, SimTime work);
  void finish_compute_contended(std::size_t g);
  /// Adds (sign +1) or removes (-1) a communication kernel's load on rank `r` and re-rates the
  /// compute ops running there.
  void shift_load(ir::Rank r, const CommLoad& load, int sign);
  CommLoad collective_load(const CollectiveChoice& choice, ir::CollectiveKind kind) const;
  CommLoad p2p_load(int channels, double bound) const;
  /// Share of compute op `op`'s kernel time in memory-bound kernel classes, in 1/255.
  std::uint8_t memory_bound_share(const ir::Op& op, const RtOp& rt) const;
  /// Completes the zero-time ops (alloc, free) queued while handling the current event, in
  /// order; they may release more. Cheaper than a zero-delay event per op, and not recursive.
  void drain() {
    for (std::size_t i = 0; i < immediate_.size(); ++i)
      complete_op(immediate_[i]);
    immediate_.clear();
  }
  /// Orders the units of each (rank, NCCL communicator) in program order (comm_next_).
  void build_comm_order();
  void release(std::int32_t unit) {
    if (--units_[idx(unit)].remaining == 0) post_unit(unit);
  }
  void account(ir::Rank r) {
    RankClock& c = clock_[idx(r)];
    const SimTime now = engine_.now();
    if (c.compute_running > 0) {
      res_.rank_times[idx(r)].compute += now - c.last;
    } else if (c.comm_running > 0) {
      res_.rank_times[idx(r)].exposed_comm += now - c.last;
    }
    c.last = now;
  }

  const ir::Program& program_;
  const topo::Topology& topology_;
  ExecOptions options_;
  ComputeModel compute_;
  Engine engine_;
  NetworkModel network_;
  CollectivePlanner planner_;
  HandlerId handler_ = 0;
  std::unique_ptr<MemoryModel> memory_;

  ExecutionResult res_;
  std::size_t total_ops_ = 0;
  std::size_t completed_ = 0;
  BigVector<RtOp> rt_;  ///< by global op index
  BigVector<std::uint32_t> immediate_;
  BigVector<Unit> units_;           ///< by unit id, plus a sentinel whose first_op is the op count
  BigVector<UnitLink> unit_links_;  ///< by unit id
  BigVector<std::uint32_t> unit_ops_;
  /// A send, recv or collective op: what the tables of transfers and NCCL connections read,
  /// copied on the one walk over the IR's ops (reading the scattered 64-byte ir::Op again in
  /// each of four later passes missed the cache on every communication op).
  struct CommOp {
    std::uint32_t g = 0;  ///< global op index
    ir::Rank rank = 0;
    std::int32_t unit = 0;
    ir::CommId comm = ir::kNone;
    ir::Rank peer = ir::kNone;
    ir::OpKind kind = ir::OpKind::send;
    ir::CollectiveKind collective = ir::CollectiveKind::broadcast;
  };
  /// The send, recv and collective ops, in program order (built with the units).
  BigVector<CommOp> comm_ops_;
  BigVector<std::uint32_t> dependents_offset_;
  BigVector<std::int32_t> dependents_;
  /// NCCL runs the operations of one communicator one after another on a rank: unit -> the
  /// units that follow it on one of its communicators (CSR; empty on CPU topologies).
  BigVector<std::uint32_t> comm_next_offset_;
  BigVector<std::int32_t> comm_next_;
  /// alloc/free ops over buffers of several kinds: bytes by MemoryKind (RtOp::link indexes it).
  std::vector<std::array<std::uint64_t, kMemoryKinds>> mixed_memory_;
  std::vector<Instance> instances_;
  BigVector<std::int32_t> inst_ops_;
  std::vector<RankClock> clock_;
  std::vector<CollectiveTransfer> scratch_transfers_;
  std::vector<topo::LinkId> scratch_links_;
  /// A point-to-point path as start_p2p needs it: the route (a span into the topology's route
  /// cache, stable for the topology's lifetime), NCCL's choice and the latency, per source rank
  /// and (destination, communicator, bytes). Schedules send to a handful of peers at a handful
  /// of sizes, so a linear search of the source's list beats the topology's locked route lookup.
  struct P2pPath {
    ir::Rank dst = 0;
    ir::CommId comm = 0;
    std::uint64_t bytes = 0;
    std::span<const topo::LinkId> route;
    CollectivePlanner::P2pChoice choice;
    SimTime latency;
    /// NCCL's channels to this peer on this communicator: operations of one NCCL group to the
    /// same peer share them (NetworkModel::add_shared_cap); kNoShared without a bound.
    std::uint32_t shared = NetworkModel::kNoShared;
    /// With replica symmetry: the routes of every image, concatenated (`route` spans it).
    std::vector<topo::LinkId> orbit;
  };
  const P2pPath& p2p_path(ir::Rank src, ir::Rank dst, ir::CommId comm, std::uint64_t bytes);
  std::vector<std::vector<P2pPath>> p2p_paths_;  ///< by source rank
  const ReplicaSymmetry* sym_ = nullptr;
  std::size_t active_ranks_ = 0;  ///< ranks simulated: all, or replica 0's with sym_
  /// With sym_: the replica shift's link map p (-1: not yet seen) and its inverse.
  /// With sym_: the replica whose transfers use a link, kUnseen or kShared (several replicas).
  static constexpr std::int32_t kUnseen = -1;
  static constexpr std::int32_t kShared = -2;
  std::vector<std::int32_t> link_owner_;
  /// With sym_: a link one replica owns -> its counterpart in replica 0 (-1: none yet).
  std::vector<std::int32_t> owned_rep_;
  /// A candidate symmetry group of the replicas (symmetry.h): generated by the shift by one
  /// inside blocks of `block` replicas and, when block < k, the shift by one block; the link
  /// map of each generator, built as transfers start. Dead when a map stopped being a
  /// rate-preserving injection.
  struct LinkGroup {
    std::int32_t block = 0;
    bool alive = true;
    std::array<std::vector<std::int32_t>, 2> image;
    std::array<std::vector<std::int32_t>, 2> preimage;
    std::int32_t generators() const { return image[1].empty() ? 1 : 2; }
    std::int32_t apply(std::int32_t j, std::int32_t d, std::int32_t k) const {
      return j == 0 ? d / block * block + (d % block + 1) % block : (d + block) % k;
    }
  };
  std::vector<LinkGroup> groups_;
  /// With sym_: the links of replica 0 and their copies in every replica, by replica (end of run).
  std::vector<std::vector<std::int32_t>> copies_;
  /// With sym_: a collective's transfer over all images (replica-local communicators), or its
  /// link list (cross-replica ones, for check_cross_replica), by (comm, kind, bytes, root).
  struct Orbit {
    CollectiveChoice choice;
    std::vector<topo::LinkId> links;
    double bytes = 0.0;
    SimTime latency;
    bool empty = true;
    std::vector<std::pair<std::int32_t, double>> sent;  ///< (rank, bytes) for every image;
                                                        ///< rank < 0: ~rank, inter-node
  };
  std::map<std::tuple<ir::CommId, int, std::uint64_t, std::int32_t>, Orbit> orbits_;
  /// With sym_: a cross-replica collective's links in the quotient by p, by (comm, kind, bytes,
  /// root): unseen and shared links as they are; of each p-orbit of replica-local links, replica
  /// 0's with the largest count of the orbit (the binding one of the orbit's constraints).
  struct Cross {
    std::vector<topo::LinkId> links;
    std::vector<std::pair<topo::LinkId, std::int32_t>> quotient;  ///< replica 0's, count
    std::vector<std::pair<topo::LinkId, std::int32_t>> actual;    ///< replica-local, count
  };
  std::map<std::tuple<ir::CommId, int, std::uint64_t, std::int32_t>, Cross> cross_;
  std::vector<topo::LinkId> cross_unseen_;    ///< links cross collectives used before replicas did
  std::vector<topo::LinkId> asymmetric_;      ///< p-orbit representatives loaded unevenly
  std::vector<double> cross_quotient_bytes_;  ///< by link: bytes the quotient lists put there
  std::vector<double> cross_actual_bytes_;    ///< by link: bytes the actual lists put there
  std::unique_ptr<CoreSharing> cores_;        ///< CPU topologies only
  std::unique_ptr<MpiShmModel> shm_;          ///< CPU topologies only
  std::vector<int> scratch_cores_;
  std::vector<SimTime> scratch_times_;  ///< charge_wakeups: the later members' posts
  SimTime op_overhead_;  ///< CPU topologies: the profile's per-IR-op cost of the host backend
  /// CPU topologies with ExecOptions::noise: the trace's replay on the cores.
  std::optional<NoiseReplay> noise_;
  /// Wall time of `work` on `core` starting at `at`: `work` itself without a noise trace.
  SimTime on_core(int core, SimTime at, SimTime work) const {
    return noise_ ? noise_->elapsed(core, at, work) : work;
  }
  /// CPU topologies with the profile's host.zero_bandwidth: by op, the bytes an alloc op zeroes
  /// (common/ir/zeroing.h; empty otherwise), and that rate.
  std::vector<std::uint64_t> zero_bytes_;
  double zero_bytes_per_second_ = 0.0;
  /// CPU topologies with cold curves (plan_warmth): by host, the bytes its ranks' completed ops
  /// moved so far; by (rank, buffer) at buffer_offset_[rank] + buffer, that count at the
  /// buffer's last use (-1: never used).
  std::vector<double> host_touched_;
  std::vector<double> last_touch_;
  /// With after-compute curves: by core (global id), the core time of the compute ops its ranks
  /// completed so far (seconds); by (rank, buffer) as last_touch_, its rank's core's figure at
  /// the buffer's last use (-1: never used); by rank, its core.
  std::vector<double> core_computed_;
  std::vector<double> last_compute_;
  std::vector<int> core_of_rank_global_;
  std::vector<std::size_t> buffer_offset_;
  std::vector<int> host_of_rank_;
  /// CPU topologies: the profile's cost and lateness of a waiting thread's wake-up.
  SimTime wakeup_cost_, wakeup_latency_, wakeup_cost_long_;
  /// The two wake-up costs while the core's other ranks compute too (profile
  /// host.wakeup_cost_shared, host.wakeup_cost_long_shared; the figures above without them).
  SimTime wakeup_cost_shared_, wakeup_cost_long_shared_;
  /// Adds `work` to op `g`'s core work (ExecutionResult::op_cpu; CPU topologies): the transfers'
  /// copies, sums and wake-ups on their threads, as tawexec's records measure them.
  void charge_op_cpu(std::size_t g, SimTime work);
  /// Charges the wake-ups of the wait of transfer op `g` (ended now) to its rank's core.
  void charge_wakeups(std::size_t g);
  /// CPU topologies: whether the host backend waits for unit `unit` on its doorbell
  /// (exec/host/doorbell.h) rather than on timers (sim/run/host_cpu.cpp).
  bool rings_doorbell(std::size_t unit) const;
  /// CPU topologies: by unit, when its last op completed (its wait's schedule restarts there);
  /// sized by prepare().
  std::vector<SimTime> unit_last_done_;
  /// CPU topologies with wake-up figures: the hand-offs' wake-ups (host_cpu.cpp
  /// charge_handoff_wakeup). By unit, since when its stream's thread had nothing to run (the
  /// completion of the stream's last unit a thread ran, alloc and free running on the
  /// interpreter); by rank, when its interpreter last woke for a completion. Sized by prepare().
  std::vector<SimTime> thread_idle_since_;
  std::vector<SimTime> interpreter_woke_;
  /// By rank: allocs whose fill its interpreter is running (it is awake meanwhile).
  std::vector<std::int32_t> interpreter_filling_;
  /// Whether unit `u` runs on its stream's thread (not alloc/free, which the interpreter runs).
  bool runs_on_thread(std::int32_t u) const;
  /// The wake-up figure (lone, shared) after a sleep of `sleep_ns`: wakeup_cost up to the short
  /// waits' longest sleep, wakeup_cost_long from the long waits' longest, log-linear between.
  std::pair<double, double> wakeup_figures_ps(std::int64_t sleep_ns) const;
  /// Charges rank `r`'s core one wake-up of a thread that slept `slept` on a queue or condition
  /// variable: a stream thread handed a unit, or the interpreter woken by a completion.
  void charge_handoff_wakeup(ir::Rank r, SimTime slept);
  bool contention_model_ = false;  ///< GPU topologies, unless --sm-contention overrides it
  std::vector<double> rank_sms_;   ///< SM count of each rank's GPU (0: no contention)
  std::vector<double> rank_hbm_;   ///< HBM bandwidth of each rank's GPU, bytes/s
};

}  // namespace tawpipe::sim::detail
