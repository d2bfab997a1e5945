/// \file
/// Processor sharing of CPU cores (CPU topologies, host backend): the ranks pinned to one core
/// (topo::HostCpu) run their compute ops and their shared-memory copies on it at the same time,
/// and Linux's scheduler gives each runnable thread an equal share of the core.
///
/// Model: a job has `work` (its duration alone on idle cores) and runs on one or more cores (a
/// compute op on its rank's core; a copy or collective on the cores of the ranks that move its
/// bytes). While n_c jobs use
/// core c, a job progresses at
///
///     rate = min over its cores c of 1 / n_c        (seconds of work per second)
///
/// so two compute ops on one core both take twice their work, and an op alone keeps its work.
/// A job may first wait a `delay` that uses no core (a message's latency). Whenever a core's job
/// count changes, the jobs on that core are advanced at their old rate and their completion is
/// rescheduled at the new one (O(jobs on the touched cores) per change).
///
/// Time slices (start_sliced): a compute thread is not a fluid. The host backend's compute
/// threads ask the scheduler for a slice of host_wait::kComputeSliceNs (20 ms, exec/host
/// mpi_ops.h), and Linux (6.6 and later) shares a core among them by EEVDF
/// (Documentation/scheduler/sched-eevdf.rst): each thread's virtual runtime v counts the core
/// time it got; V is the mean v of the threads queued on the core; a thread is eligible when its
/// lag V - v is >= 0, and the core goes to the eligible thread with the earliest virtual deadline
/// d (v + its slice when its request began). The model, per core, one thread running at a time:
/// - The running thread keeps the core until its request is done (v reaches d: a new request, a
///   new pick, "run to parity") or it blocks. An op boundary is a block: the backend's stream
///   thread reports the op to its interpreter and sleeps until the next op is issued (exec/host
///   host_backend.cpp); the interpreter's thread (default slice, shorter) runs at once, wakes
///   the stream thread and sleeps, so the pick after the boundary is between the woken thread
///   (placed by its lag, a new request) and the waiting ones, none of them protected: a
///   waiting thread with an earlier deadline gets the core (measured on 2x2-cpu: at 158 of 174
///   of FSDP's op boundaries beside a waiting thread the core passed on), a thread owed time
///   keeps it (1F1B's rank 0 runs embedding_backward, embedding_forward and forward back to back
///   beside rank 1's backward).
/// - A thread that blocks with negative lag stays queued ("deferred dequeue") until it is
///   eligible, then leaves with lag 0; one that blocks with lag >= 0 leaves at once and keeps
///   its lag. On waking it is placed at v = V - lag (scaled by (n + 1) / n for the n threads
///   queued, as the kernel's place_entity), a delayed one where it was (lag at most 0).
/// - A waking thread preempts the running one only when it wakes with a shorter slice (the
///   kernel's PREEMPT_SHORT) and is eligible: a stream thread whose last op was communication
///   sleeps in the communication slice (host_wait, exec/host/mpi_ops.h kCommSliceNs), so an
///   accumulate or copy it runs after a transfer starts at once (measured: FSDP's accumulates
///   on its communication stream waited 0.7 ms on average, not a compute slice).
/// Copies and wake-ups (start, add_background) are the work of communication threads, which
/// wait for MPI under SCHED_FIFO (exec/host/mpi_ops.cpp FifoWhileWaiting): they preempt the
/// running compute thread (whose v stops meanwhile), and while n_c >= 1 of them run on a core
/// each progresses at 1 / n_c. Not modelled: the tick (the kernel notices a request's end at the
/// next tick, <= 4 ms at HZ=250, not at once), weights other than equal, and the interpreter
/// threads as threads (their fills are sliced jobs, their and the stream threads' hand-off
/// wake-ups background work, sim/run/host_cpu.cpp). With a zero slice every job is shared as
/// above (pure processor sharing).
/// Cost: a request end is an event only while another thread is queued on the core; the request
/// ends of a thread alone there pick it again and change only its v and d, so they are replayed
/// (the same arithmetic at the same instants, settle()) when the core is next touched: a
/// simulation costs per op boundary, not per 20 ms of simulated compute (localhost-cpu, one rank
/// per core: 3.17 M events for 9 simulated hours of FSDP before, 3.4 k after).
///
/// The shares ignore what a core's other threads do while they sleep (MPI waits yield the core,
/// exec/host/mpi_ops.h) and the memory bandwidth two cores share; calibration on the same layout
/// (`tawexec calibrate` under the run's mpirun) folds the latter into the measured rates.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/units.h"
#include "sim/engine/engine.h"

namespace tawpipe::sim {

/// Shares `cores` cores among jobs; calls back with the job's token when its work is done.
class CoreSharing {
 public:
  using DoneFn = std::function<void(std::uint64_t token)>;

  /// Registers a handler with `engine` (must not be called from inside a handler). `slice`: the
  /// compute threads' time slice (zero: start_sliced shares like start).
  CoreSharing(Engine& engine, int cores, DoneFn on_done, SimTime slice = SimTime());
  CoreSharing(const CoreSharing&) = delete;
  CoreSharing& operator=(const CoreSharing&) = delete;

  /// Starts a job that waits `delay` (no core used), then needs `work` seconds of the cores in
  /// `cores` (ids in [0, cores); at least one; a repeated id counts once). Zero work completes
  /// right after the delay.
  void start(std::span<const int> cores, SimTime delay, SimTime work, std::uint64_t token);

  /// Called with a start_sliced job's token when it first runs (gets a share of its core): the
  /// moment its thread starts the op, which is when the host backend stamps an op's start.
  void set_on_first_run(DoneFn on_first_run) { on_first_run_ = std::move(on_first_run); }

  /// Starts a compute op of thread `owner` (any id but 0, unique per thread) on core `core`: the
  /// thread wakes, and runs it when EEVDF gives it the core (see above). `short_wake`: the thread
  /// slept in a slice shorter than the compute slice (its last op was communication), so it
  /// preempts the running thread if it is eligible.
  void start_sliced(int core, SimTime work, std::uint64_t owner, std::uint64_t token,
                    bool short_wake = false);

  /// Adds `work` to core `core`'s one background job (token `token`), started when there is
  /// none: work that completes nothing and is charged to the core as one job however often it
  /// is added (a wait's wake-ups, sim/run/host_cpu.cpp), so that it takes one share of the core
  /// and does not multiply the jobs the others share it with.
  void add_background(int core, SimTime work, std::uint64_t token);

  /// Jobs currently using core `core` (not counting jobs still in their delay).
  int load(int core) const {
    return static_cast<int>(on_core_[static_cast<std::size_t>(core)].size());
  }

  /// How long core `core` ran at least one job other than its background job between `from`
  /// and now: the time a thread there computed or copied, which a wake-up beside it slows
  /// (an idle core loses nothing to one). O(log transitions).
  SimTime busy_between(int core, SimTime from) const;

  /// How long core `core` had compute work of more than one process between `from` and now:
  /// start_sliced jobs of at least two owners that `process_of` maps to different processes,
  /// running or waiting for their EEVDF turn. A wake-up there may hand the core to the other
  /// process's compute thread (profile host.wakeup_cost_shared). Owners are their own process
  /// until set_process_of. O(log transitions).
  SimTime contended_between(int core, SimTime from) const;
  /// How contended_between groups owners into processes.
  void set_process_of(std::function<std::uint64_t(std::uint64_t owner)> process_of) {
    process_of_ = std::move(process_of);
  }

 private:
  enum EventKind : std::uint32_t { kDelayDone = 0, kWorkDone = 1, kRequestEnd = 2, kHandover = 3 };
  struct Job {
    std::vector<int> cores;     ///< distinct core ids
    double remaining_ps = 0.0;  ///< work left, in picoseconds of a whole core
    double rate = 0.0;          ///< current share
    SimTime last;               ///< when remaining_ps was last advanced
    std::uint64_t token = 0;
    EventHandle done;
    bool live = false;
    bool on_cores = false;    ///< past its delay, with work: counted in on_core_
    bool background = false;  ///< a core's background job (add_background)
    std::uint64_t owner = 0;  ///< start_sliced: the thread; 0 for shared jobs
    /// start_sliced: the thread, also with a zero slice (owner is 0 then); 0 for shared jobs.
    std::uint64_t compute_thread = 0;
    bool ran = false;         ///< has had a share of its core
    SimTime first_run;        ///< when it first had a share
    bool short_wake = false;  ///< start_sliced: its thread wakes in a short slice
  };
  /// A compute thread on a core, as EEVDF sees it (picoseconds of core time).
  struct Thread {
    std::uint64_t owner = 0;
    double v = 0.0;    ///< virtual runtime
    double d = 0.0;    ///< virtual deadline of its current request
    double lag = 0.0;  ///< kept while off the queue
    enum State : std::uint8_t { off, queued, delayed } state = off;
  };
  /// A core's EEVDF queue: its threads, the one running, and when its request ends.
  struct Queue {
    std::vector<Thread> threads;
    std::uint64_t running = 0;  ///< owner, or 0
    bool runs = false;          ///< whether `running` got the core since `last`
    SimTime last;               ///< when the running thread's v was last advanced
    double base = 0.0;          ///< V when no thread is queued
    EventHandle request_end;
    bool handover_pending = false;  ///< the running thread blocked: pick after this instant
    /// The running thread is alone on the core (no other thread queued or delayed), so its
    /// request ends change nothing but its v and d: they are not events; settle() replays them
    /// (the same arithmetic at the same instants) when the core is next touched. `lazy_end`: when
    /// the current request ends.
    bool lazy = false;
    SimTime lazy_end;
  };
  /// A core's time in one state (busy; contended), as the changes of that state: `until(t)` is
  /// the time spent in it from the start up to t (t <= the last change's time or later).
  struct StateLog {
    struct Mark {
      SimTime at;
      SimTime before;  ///< time in the state before `at`
      bool on = false;
    };
    std::vector<Mark> marks;  ///< in time order
    SimTime until(SimTime t) const;
    void set(SimTime now, bool on) {
      if (marks.empty() ? on : marks.back().on != on) marks.push_back({now, until(now), on});
    }
  };

  std::uint32_t start_job(std::span<const int> cores, SimTime delay, SimTime work,
                          std::uint64_t token, bool background = false, std::uint64_t owner = 0,
                          bool short_wake = false, std::uint64_t compute_thread = 0);
  /// Whether `owner` has a compute op on `core`.
  bool has_op(int core, std::uint64_t owner) const;
  Thread& thread(int core, std::uint64_t owner);
  /// Adds the core time the running thread got since the last call to its v (after settle).
  void advance(int core);
  /// Replays the request ends of a lazy queue (Queue::lazy) that fell before now, as
  /// on_request_end and rerate would have handled them as events: the running thread's v and d,
  /// and its jobs' remaining work.
  void settle(int core);
  /// V: the mean v of the threads queued on `core` (delayed ones too).
  double mean_v(const Queue& q) const;
  /// Thread `owner` wakes with an op on `core` (placement, then preemption or a pick).
  void wake(int core, std::uint64_t owner, bool short_wake);
  /// Thread `owner` has no op left on `core`: it sleeps (delayed while its lag is negative).
  void block(int core, std::uint64_t owner);
  /// Gives `core` to the eligible queued thread with the earliest deadline (or none).
  void pick(int core);
  void on_request_end(int core);
  void on_handover(int core);
  void handle(const Event& event);
  void join(std::uint32_t job);
  void leave(std::uint32_t job);
  /// Advances and re-rates every job on `core` (after its job count changed).
  void rerate(int core);
  double share(const Job& job) const;

  Engine& engine_;
  DoneFn on_done_;
  DoneFn on_first_run_;
  HandlerId handler_ = 0;
  std::vector<Job> jobs_;
  std::vector<std::uint32_t> free_;
  std::vector<std::vector<std::uint32_t>> on_core_;  ///< job ids per core
  static constexpr std::uint32_t kNoJob = ~std::uint32_t{0};
  std::vector<std::uint32_t> background_;  ///< per core: its background job, or kNoJob
  std::vector<StateLog> busy_log_;         ///< per core
  std::vector<StateLog> contended_log_;    ///< per core
  std::function<std::uint64_t(std::uint64_t)> process_of_;
  SimTime slice_;
  std::vector<Queue> queues_;  ///< per core
};

}  // namespace tawpipe::sim
