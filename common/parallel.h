/// \file
/// A minimal fork-join loop for work that splits by index (ranks of a program): the schedule
/// generators and the verifier's per-rank stages use it to keep both cores of a small machine
/// busy at 1024 ranks. Results must not depend on the thread count: callers give each index
/// its own output slot, and combine per-worker results in index order afterwards.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace tawpipe {

/// `requested` threads, or, for 0, the machine's hardware threads (at least 1).
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Calls fn(i, worker) for every i in [begin, end), spread over min(threads, end - begin)
/// workers (worker in [0, workers)); worker w takes the contiguous block w of the range. Runs
/// inline for one worker. `fn` must not throw (an exception in a worker terminates).
template <class Fn>
void parallel_for(std::int64_t begin, std::int64_t end, int threads, Fn&& fn) {
  const std::int64_t n = end - begin;
  if (n <= 0) return;
  const auto workers = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), n));
  const auto run = [&](int w) {
    const std::int64_t lo = begin + n * w / workers;
    const std::int64_t hi = begin + n * (w + 1) / workers;
    for (std::int64_t i = lo; i < hi; ++i)
      fn(i, w);
  };
  if (workers == 1) {
    run(0);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers - 1));
  for (int w = 1; w < workers; ++w)
    pool.emplace_back(run, w);
  run(0);
  for (std::thread& t : pool)
    t.join();
}

}  // namespace tawpipe
