#include "exec/host/calibrate_noise.h"

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <span>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "common/aligned.h"
#include "exec/host/calibrate_comm.h"
#include "exec/host/mpi_ops.h"
#include "exec/host/mpi_util.h"
#include "exec/math/gemm.h"

namespace tawpipe::exec::host {
namespace {

/// CLOCK_MONOTONIC in nanoseconds: the clock every rank of one host shares, so that one instant
/// read on rank 0 means the same instant on every core.
std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until_ns(std::int64_t when) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(when / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(when % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

/// The target length of one quantum: long enough that the clock reads and the loop are
/// negligible beside it, short enough to resolve the VM's short stalls and timer ticks.
constexpr double kQuantumSeconds = 1e-3;
/// The start lies this far after rank 0 reads the clock, so that every rank has the start before
/// it: the measuring ranks end their probes within a GEMM call of each other, and a waiting rank
/// sleeps at most host_wait::kLongWaitMaxSleepNs (2 ms) between tests. A rank that still wakes
/// more than this after the start (a heavily overloaded machine) makes the trace an error: its
/// unit would be shifted against the others in the replay.
constexpr std::int64_t kStartMarginNs = 50'000'000;

}  // namespace

Expected<profile::NoiseTrace> noise_trace(const std::vector<std::vector<double>>& seconds,
                                          std::string work) {
  if (seconds.empty()) return make_error("a noise trace needs at least one unit");
  std::vector<double> all;
  for (std::size_t u = 0; u < seconds.size(); ++u) {
    if (seconds[u].empty())
      return make_error("noise unit " + std::to_string(u) + " has no quantum");
    for (double s : seconds[u]) {
      if (!(std::isfinite(s) && s > 0.0))
        return make_error("noise unit " + std::to_string(u) + " has a quantum of " +
                          std::to_string(s) + " s (must be > 0)");
      all.push_back(s);
    }
  }
  std::sort(all.begin(), all.end());
  const std::size_t n = all.size();
  const double median = n % 2 == 1 ? all[n / 2] : 0.5 * (all[n / 2 - 1] + all[n / 2]);
  profile::NoiseTrace t;
  t.work = std::move(work);
  t.quantum = SimTime::ns(std::max<std::int64_t>(1, std::llround(median * 1e9)));
  const double quantum = t.quantum.seconds();
  for (const std::vector<double>& unit : seconds) {
    std::vector<double> stretches;
    stretches.reserve(unit.size());
    for (double s : unit)
      stretches.push_back(std::max(1e-4, std::round(s / quantum * 1e4) / 1e4));
    t.units.push_back(std::move(stretches));
  }
  return t;
}

Expected<std::optional<profile::NoiseTrace>> measure_noise(const FwqWork& w, double seconds,
                                                           bool measures) {
  int rank = 0, world = 1;
  TAWPIPE_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TAWPIPE_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  // Hot operands (one A, B and C, a few hundred KB at the block's shapes, in the core's caches):
  // the quantum times the core, not the memory system, so a longer quantum is time the core
  // lost. Single-threaded OpenBLAS, as the run's compute (calibrate_host set it).
  AlignedVector a(w.m * w.k, 0.5f), b(w.k * w.n, 0.25f), c(w.m * w.n, 0.0f);
  auto gemm = [&] {
    math::gemm(false, false, w.m, w.n, w.k, 1.0f, a.data(), w.k, b.data(), w.n, 0.0f, c.data(),
               w.n);
  };
  // Rank 0 picks the repeat count (the same fixed work on every unit) and the common start;
  // the others wait for it without spinning. Every measuring rank probes at once, so that rank
  // 0's probe sees the cores all busy as the trace does (the cores share caches, memory and,
  // on a VM, maybe a physical core), and every unit's first quantum finds warm caches and
  // OpenBLAS's buffers set up.
  std::int64_t plan[3] = {1, 0, 0};  // repeats, start (CLOCK_MONOTONIC ns), probed quantum (ns)
  TAWPIPE_TRY(quiet_barrier(MPI_COMM_WORLD));
  if (measures) {
    for (int i = 0; i < 3; ++i)
      gemm();  // warm-up: caches, OpenBLAS's buffers
    // The median call of ~20 ms of calls (at least 5): a stall in the probe must not halve the
    // repeat count.
    std::vector<std::int64_t> calls;
    calls.reserve(4096);
    const std::int64_t t0 = monotonic_ns();
    std::int64_t t = t0;
    do {
      gemm();
      const std::int64_t now = monotonic_ns();
      calls.push_back(now - t);
      t = now;
    } while (calls.size() < 5 || (t - t0 < 20'000'000 && calls.size() < calls.capacity()));
    std::nth_element(calls.begin(), calls.begin() + static_cast<std::ptrdiff_t>(calls.size() / 2),
                     calls.end());
    const double per_call =
        1e-9 * static_cast<double>(std::max<std::int64_t>(1, calls[calls.size() / 2]));
    plan[0] = std::max<std::int64_t>(1, std::llround(kQuantumSeconds / per_call));
    plan[2] =
        std::max<std::int64_t>(1, std::llround(1e9 * per_call * static_cast<double>(plan[0])));
    plan[1] = monotonic_ns() + kStartMarginNs;
  }
  {
    PostedOp op;
    TAWPIPE_MPI(MPI_Ibcast(plan, 3, MPI_INT64_T, 0, MPI_COMM_WORLD, &op.request));
    TAWPIPE_TRY(wait_all(
        std::span<PostedOp>(&op, 1), [](std::size_t) {}, nullptr));
  }
  const std::int64_t repeats = plan[0], start = plan[1];
  const auto span_ns = static_cast<std::int64_t>(std::llround(seconds * 1e9));
  const std::int64_t stop = start + span_ns;
  // Quantum boundaries (CLOCK_MONOTONIC ns), preallocated: room for quanta 10x shorter than the
  // probe's (a probe in a slow phase); a full buffer ends the unit's trace early.
  std::vector<std::int64_t> bounds;
  std::size_t quanta = 0;
  if (measures) {
    bounds.resize(static_cast<std::size_t>(span_ns / std::max<std::int64_t>(1, plan[2] / 10)) + 2);
    sleep_until_ns(start);
    // Back to back: one clock read per boundary, so the quanta tile the span without gaps. No
    // allocation, I/O or MPI inside the loop.
    std::int64_t t = monotonic_ns();
    bounds[0] = t;
    do {
      for (std::int64_t r = 0; r < repeats; ++r)
        gemm();
      t = monotonic_ns();
      bounds[++quanta] = t;
    } while (t < stop && quanta + 1 < bounds.size());
  }
  // The other ranks of a core sleep through the span in one sleep, then wait (without spinning)
  // until every measuring rank is done. Not in the quiet barrier's wait alone: it tests every 2
  // ms at most (host_wait::kLongWaitMaxSleepNs), and each of those wake-ups would take its cost
  // from the measuring rank's quanta on that core, a cost the simulator already charges apart
  // (host.wakeup_cost per wake-up of a waiting rank on a busy core): counted twice in the replay.
  if (!measures) sleep_until_ns(stop);
  TAWPIPE_TRY(quiet_barrier(MPI_COMM_WORLD));
  std::vector<double> mine(quanta);
  for (std::size_t i = 0; i < quanta; ++i)
    mine[i] = 1e-9 * static_cast<double>(bounds[i + 1] - bounds[i]);
  // Per rank: its quanta (-1: not measuring) and how late it began (ns after the start).
  const std::int64_t info[2] = {measures ? static_cast<std::int64_t>(quanta) : -1,
                                measures ? bounds[0] - start : 0};
  std::vector<std::int64_t> infos(rank == 0 ? 2 * static_cast<std::size_t>(world) : 0);
  TAWPIPE_MPI(MPI_Gather(info, 2, MPI_INT64_T, infos.data(), 2, MPI_INT64_T, 0, MPI_COMM_WORLD));
  std::vector<int> counts;
  for (std::size_t r = 0; 2 * r < infos.size(); ++r)
    counts.push_back(static_cast<int>(infos[2 * r]));
  std::vector<int> sizes, displs;
  std::size_t total = 0;
  if (rank == 0) {
    for (int n : counts) {
      sizes.push_back(std::max(n, 0));
      displs.push_back(static_cast<int>(total));
      total += static_cast<std::size_t>(std::max(n, 0));
    }
  }
  std::vector<double> all(std::max<std::size_t>(total, 1));
  TAWPIPE_MPI(MPI_Gatherv(mine.data(), static_cast<int>(quanta), MPI_DOUBLE, all.data(),
                          sizes.data(), displs.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD));
  if (rank != 0) return std::optional<profile::NoiseTrace>();
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] >= 0 && infos[2 * r + 1] > kStartMarginNs)
      return make_error(
          fmt::format("noise trace: rank {} began its quanta {:.1f} ms after the "
                      "common start (machine overloaded?)",
                      r, 1e-6 * static_cast<double>(infos[2 * r + 1])));
  }
  std::vector<std::vector<double>> units;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0) continue;
    const auto first = all.begin() + displs[r];
    units.emplace_back(first, first + sizes[r]);
  }
  auto trace =
      noise_trace(units, fmt::format("sgemm {}x{}x{} x{}, hot operands", w.m, w.n, w.k, repeats));
  if (!trace.ok()) return trace.error();
  return std::optional<profile::NoiseTrace>(std::move(*trace));
}

}  // namespace tawpipe::exec::host
