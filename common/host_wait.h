/// \file
/// How a host-backend communication thread waits for MPI (exec/host/mpi_ops.h wait_all), shared
/// with the simulator, which charges the wait's wake-ups to the rank's core
/// (sim/run/host_cpu.cpp): one definition, so the prediction counts the wake-ups the backend
/// makes.
///
/// A wait tests its requests kSpinPolls times at once, then sleeps between tests: the first sleep
/// is kFirstSleepNs, each next one doubles, capped at kMaxSleepNs while the wait is short, and at
/// 1/kLongWaitSleepDivisor of the time waited so far (at most kLongWaitMaxSleepNs) once it is
/// long. A completion restarts the schedule.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tawpipe::host_wait {

/// The slice a host-backend compute thread asks of the scheduler (exec/host/mpi_ops.h
/// request_compute_slice); the simulator takes it as the length of a compute thread's EEVDF request
/// (sim/run/core_sharing.h). Two
/// ranks' compute threads time-sharing a core under the default slice (EEVDF, ~1-3 ms) each refill
/// the caches after every switch: a 4-layer forward (cpu-h256, seq 256) took 59-62 ms beside
/// another rank's on one core instead of 2 x 26.4 ms (+14 %); with 20 ms slices 50.6-51 ms, the
/// processor-sharing figure the simulator assumes (sim/run/core_sharing.h). 100 ms slices made the
/// sharing too coarse (one rank's forward ran alone, its peer's backward waited). Quiet machine,
/// two processes pinned to one core.
inline constexpr std::uint64_t kComputeSliceNs = 20'000'000;

/// First sleep between tests once the immediate re-tests are spent (nanoseconds).
inline constexpr std::int64_t kFirstSleepNs = 4'000;
/// Longest sleep between tests of a short wait: bounds the latency a waiting thread adds to
/// each round of a collective (libnbc advances one round per test).
inline constexpr std::int64_t kMaxSleepNs = 100'000;
/// A wait that has lasted w since the last completion sleeps up to w / kLongWaitSleepDivisor
/// (at most kLongWaitMaxSleepNs) between tests, so it adds at most 1/8 of its own length.
inline constexpr std::int64_t kLongWaitSleepDivisor = 8;
inline constexpr std::int64_t kLongWaitMaxSleepNs = 2'000'000;
/// Immediate re-tests before the first sleep (each a few hundred nanoseconds of MPI_Testsome).
inline constexpr int kSpinPolls = 8;

/// Timeout of a sleep on a doorbell (exec/host/doorbell.h: point-to-point waits whose peer
/// rings this thread's slot when the op can complete): only a safety net, since every event that
/// can complete a point-to-point op rings the slot of the thread that waits for it. It was 1 ms
/// (2 ms in long waits) while one bell per rank served every thread; those timeouts were almost
/// all of the doorbell wake-ups (CPU accounting, 2x2-cpu, quiet: 1809 of 1862 sleeps per step on
/// 1F1B's rank 0, 3694 of 5185 on FSDP's rank 1), each costing the compute thread beside it
/// host.wakeup_cost (~50 us) while the rank waited for a peer. Then 20 ms, until session 22
/// counted what the timeouts cost a run with many waiting threads: TawPipe on 2x2-cpu waits on
/// 12 point-to-point streams per rank, and at 20 ms its threads woke ~820 times a step for
/// nothing (wait logs, TAWPIPE_WAIT_LOG: every timeout's next test completed nothing, the peer
/// had not posted yet), each taking its thread 110-160 us of CPU time on a core shared with two
/// compute threads; interleaved with TawPipe[grouping=off] (3 streams, ~150 timeouts a step),
/// its steps were 2.2 and 4.2 % longer at 20 ms and 0.9 and 0.5 % longer at 200 ms (two
/// launches each, 8 paired steps; docs/validate-host.md "Session 22"). At 200 ms a waiting
/// thread wakes at most 5 times a second, and a missed bell (none in the wait logs of quiet
/// runs, sessions 14 and 22) costs 200 ms, not a hang.
inline constexpr std::int64_t kDoorbellTimeoutNs = 200'000'000;

/// The timeout of a sleep on a doorbell when the wait has lasted `waited_ns` (kDoorbellTimeoutNs
/// at any length: the long waits' backoff of the timer schedule is shorter).
constexpr std::int64_t doorbell_timeout_ns(std::int64_t /*waited_ns*/) {
  return kDoorbellTimeoutNs;
}

/// The sleep after one of `sleep_ns` when the wait has lasted `waited_ns`.
constexpr std::int64_t next_sleep_ns(std::int64_t sleep_ns, std::int64_t waited_ns) {
  const std::int64_t cap =
      std::clamp(waited_ns / kLongWaitSleepDivisor, kMaxSleepNs, kLongWaitMaxSleepNs);
  return std::min(2 * sleep_ns, cap);
}

/// The sleeps of a wait that lasts `wait_ns`, when each sleep overshoots its request by
/// `overshoot_ns` (the time a woken thread takes to get its core back): the schedule above,
/// walked until the wait is over; `each(sleep_ns, count)` is called for every run of `count`
/// sleeps of `sleep_ns` (each one a wake-up). A wait that ends during the spins has none.
template <class Each>
void for_each_sleep(std::int64_t wait_ns, std::int64_t overshoot_ns, Each&& each) {
  if (wait_ns <= 0) return;
  std::int64_t t = 0, sleep = kFirstSleepNs;
  overshoot_ns = std::max<std::int64_t>(overshoot_ns, 0);
  // Past 16 ms every sleep is the longest one: count the rest at once.
  while (t < wait_ns) {
    if (sleep == kLongWaitMaxSleepNs) {
      const std::int64_t step = sleep + overshoot_ns;
      each(sleep, static_cast<double>((wait_ns - t + step - 1) / step));
      return;
    }
    t += sleep + overshoot_ns;
    each(sleep, 1.0);
    sleep = next_sleep_ns(sleep, t);
  }
}

/// The sleeps of a wait on a doorbell that lasts `wait_ns` and ends with its bell: the timeouts
/// (doorbell_timeout_ns) that fit in the wait, then the sleep the bell ends; `each` as in
/// for_each_sleep. A wait that ends during the spins has none.
template <class Each>
void for_each_doorbell_sleep(std::int64_t wait_ns, Each&& each) {
  if (wait_ns <= 0) return;
  const std::int64_t n = (wait_ns - 1) / kDoorbellTimeoutNs;  // timeouts that end inside
  if (n > 0) each(kDoorbellTimeoutNs, static_cast<double>(n));
  each(wait_ns - n * kDoorbellTimeoutNs, 1.0);
}

/// Wake-ups of a wait on a doorbell that lasts `wait_ns` (for_each_doorbell_sleep).
inline double doorbell_wakeups(std::int64_t wait_ns) {
  double n = 0.0;
  for_each_doorbell_sleep(wait_ns, [&](std::int64_t, double count) { n += count; });
  return n;
}

/// Wake-ups (sleeps that end) of a wait that lasts `wait_ns` (for_each_sleep).
inline double wakeups(std::int64_t wait_ns, std::int64_t overshoot_ns) {
  double n = 0.0;
  for_each_sleep(wait_ns, overshoot_ns, [&](std::int64_t, double count) { n += count; });
  return n;
}

}  // namespace tawpipe::host_wait
