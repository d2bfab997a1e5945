/// \file
/// CPU accounting of a host-backend run (issue 13): where the cores' time went over the timed
/// steps, per thread class of each rank, and the machine's idle time.
///
/// Two cores for the wall time of a step is the budget. What a method pays beyond the
/// simulator's prediction is either more CPU work (copies, tests and wake-ups, context switches
/// and the cache refills after them, visible as the threads' CPU time) or idle cores (every
/// rank of a core blocked: synchronisation, skew; visible as /proc/stat idle). A snapshot reads,
/// for every thread of this process, /proc/self/task/<tid>/schedstat (CPU time and run-queue
/// wait in nanoseconds, CONFIG_SCHED_INFO) and .../status (voluntary and involuntary context
/// switches), and /proc/stat's per-CPU idle, iowait and steal ticks (USER_HZ).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tawpipe::exec::host {

/// One thread class: the threads of one name (a stream thread is named after its IR stream,
/// host_backend.cpp; the interpreter is the process's main thread; MPI's own threads keep
/// theirs).
struct ThreadUse {
  std::uint64_t cpu_ns = 0;    ///< on a CPU
  std::uint64_t queue_ns = 0;  ///< runnable, waiting for a CPU
  std::uint64_t voluntary = 0;
  std::uint64_t involuntary = 0;
  ThreadUse& operator+=(const ThreadUse& o) {
    cpu_ns += o.cpu_ns;
    queue_ns += o.queue_ns;
    voluntary += o.voluntary;
    involuntary += o.involuntary;
    return *this;
  }
};

/// One CPU's (or all CPUs') time by state, in USER_HZ ticks (/proc/stat).
struct CpuTicks {
  std::uint64_t user = 0;    ///< user + nice
  std::uint64_t system = 0;  ///< system + irq + softirq
  std::uint64_t idle = 0;    ///< idle + iowait
  std::uint64_t steal = 0;   ///< a hypervisor's other guests
  std::uint64_t total() const { return user + system + idle + steal; }
  CpuTicks& operator+=(const CpuTicks& o) {
    user += o.user;
    system += o.system;
    idle += o.idle;
    steal += o.steal;
    return *this;
  }
};

struct CpuSnapshot {
  std::map<std::string, ThreadUse> threads;  ///< by class name, summed over its threads
  CpuTicks all;                              ///< every CPU
  std::vector<CpuTicks> cpus;                ///< by CPU id
  std::uint64_t doorbell_timeouts = 0;       ///< exec/host/doorbell.h, this process
};

/// Reads the current counters (threads that ended since an earlier snapshot drop out: the
/// backend's stream threads live for the whole run). Unreadable files leave zeros.
CpuSnapshot take_cpu_snapshot();

/// `after` - `before`, per class (classes only in `after` count from zero).
CpuSnapshot cpu_difference(const CpuSnapshot& before, const CpuSnapshot& after);

/// Adds `diff` (a cpu_difference) to `sum`: every counter, per class and per CPU.
void cpu_accumulate(CpuSnapshot& sum, const CpuSnapshot& diff);

/// One line per rank for the log: each class's CPU ms, run-queue ms and context switches
/// (voluntary/involuntary), divided by `steps`: "compute 1790.2 cpu 210.4 queue 12/340 cs".
std::string describe_threads(const CpuSnapshot& diff, double steps);

/// The machine's core-milliseconds per step by state, all CPUs then each one:
/// "user 7100.0 sys 80.0 idle 512.0 steal 0.0 of 7692.0 (cpu0 user ... ; cpu1 ...)". With the
/// ranks' thread CPU times, user + sys - their sum is what other processes (mpirun, the
/// kernel's threads) took.
std::string describe_machine(const CpuSnapshot& diff, double steps);

}  // namespace tawpipe::exec::host
