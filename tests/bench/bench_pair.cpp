// Two collectives at once on the host backend (issue 13; a figure, not a CI gate): a broadcast
// from rank 1 and a reduce into rank 0, each on its own thread and communicator as two IR streams
// run them, through the backend's own paths (exec/host/mpi_ops.h): the broadcast posted to libnbc
// and waited for by the sleeping wait, the reduce run alone (run_direct: a message to the root,
// doorbell-driven, then the root's sums). Both copies land on rank 0's core (CMA copies on the
// receiver's side). Rank 1 posts --late-ms after rank 0, as in TawPipe[overlap=off]'s steps.
//
// Run: mpirun -np 2 tests/bench/bench_pair [--trials N] [--bytes B] [--late-ms L]. Printed, for
// the broadcast alone, the reduce alone and both at once: when each rank's op completed, in ms
// after rank 1's post (medians of the trials, the first dropped).
//
// Measured on the 2-vCPU VM (session 25, 12.9 MB, 6 runs of 40 trials; docs/validate-host.md):
// alone, the broadcast's member and root were done at 1.7-2.3 and 1.8-2.5 ms, the reduce's member
// and root at 1.9-2.1 and 2.8-3.0. At once, the broadcast's root was released as when alone
// (2.0-2.5 ms) and the reduce's member only at 3.8-4.3, the broadcast's member (3.8-4.3) and the
// reduce's root (4.6-5.2) after it: rank 0's two copies ran one after the other, the broadcast's
// first, not at half speed each, and the broadcast's member thread saw its end only after the
// reduce's copy. (In TawPipe[overlap=off]'s runs the same pair released the reduce's member
// sooner, at 2.8-2.9 ms, and its root at 3.8-3.9.)
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "exec/host/doorbell.h"
#include "exec/host/mpi_ops.h"

namespace {

namespace host = tawpipe::exec::host;

double now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  if (v.empty()) return -1.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// A collective of `bytes` on 2 ranks in place on `data`, rooted at `root`.
host::CollectiveArgs args(tawpipe::ir::CollectiveKind kind, float* data, std::uint64_t bytes,
                          int me, int root, MPI_Comm comm) {
  host::CollectiveArgs a;
  a.kind = kind;
  a.send = data;
  a.recv = data;
  a.bytes = bytes;
  a.me = me;
  a.size = 2;
  a.root = root;
  a.comm = comm;
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int me = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != 2 || provided < MPI_THREAD_MULTIPLE) {
    if (me == 0) std::fprintf(stderr, "bench_pair: run with mpirun -np 2 (MPI_THREAD_MULTIPLE)\n");
    MPI_Finalize();
    return 2;
  }
  int trials = 40;
  std::uint64_t bytes = 12853248;  // a 4-layer cpu-h256 block's weights, fp32
  double late_ms = 2.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--trials") trials = std::max(2, std::atoi(argv[i + 1]));
    if (flag == "--bytes")
      bytes = std::max<std::uint64_t>(8, std::strtoull(argv[i + 1], nullptr, 10));
    if (flag == "--late-ms") late_ms = std::max(0.0, std::atof(argv[i + 1]));
  }
  bytes = bytes / 8 * 8;  // whole floats, split evenly over the 2 ranks
  // One rank per core, as tawexec pins them on localhost-cpu.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(me), &set);
  sched_setaffinity(0, sizeof set, &set);
  if (!host::install_doorbells().ok() && me == 0)
    std::fprintf(stderr, "bench_pair: no doorbells, waits poll on timers\n");
  MPI_Comm bcast_comm = MPI_COMM_NULL, reduce_comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &bcast_comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &reduce_comm);
  std::vector<float> weights(bytes / 4, 1.0f), grads(bytes / 4, 0.5f);
  const char* modes[] = {"broadcast alone", "reduce alone", "both at once"};
  // Per mode: broadcast done on ranks 0 and 1, reduce done on ranks 0 and 1.
  std::vector<std::vector<double>> done(12);
  for (int t = 0; t < trials; ++t) {
    for (int mode = 0; mode < 3; ++mode) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (me == 1) {
        const double until = now_ms() + late_ms;
        while (now_ms() < until) {
        }
      }
      const double posted = now_ms();
      double bcast_done = -1.0, reduce_done = -1.0;
      std::thread bcast, reduce;
      if (mode != 1) {
        bcast = std::thread([&] {
          host::request_comm_slice(true);
          host::PostedOp op;
          const auto a = args(tawpipe::ir::CollectiveKind::broadcast, weights.data(), bytes, me, 1,
                              bcast_comm);
          if (!host::post_collective(a, op).ok() ||
              !host::wait_all(
                   std::span<host::PostedOp>(&op, 1), [](std::size_t) {}, nullptr)
                   .ok())
            MPI_Abort(MPI_COMM_WORLD, 1);
          bcast_done = now_ms();
        });
      }
      if (mode != 0) {
        reduce = std::thread([&] {
          host::request_comm_slice(true);
          const auto a =
              args(tawpipe::ir::CollectiveKind::reduce, grads.data(), bytes, me, 0, reduce_comm);
          if (!host::run_alone(a).ok()) MPI_Abort(MPI_COMM_WORLD, 1);
          reduce_done = now_ms();
        });
      }
      if (bcast.joinable()) bcast.join();
      if (reduce.joinable()) reduce.join();
      double mine[3] = {posted, bcast_done, reduce_done}, both[6] = {};
      MPI_Gather(mine, 3, MPI_DOUBLE, both, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (me != 0 || t == 0) continue;  // the first trial warms up
      const double ref = both[3];       // rank 1's post
      const auto m = static_cast<std::size_t>(mode) * 4;
      if (mode != 1) {
        done[m].push_back(both[1] - ref);
        done[m + 1].push_back(both[4] - ref);
      }
      if (mode != 0) {
        done[m + 2].push_back(both[2] - ref);
        done[m + 3].push_back(both[5] - ref);
      }
    }
  }
  if (me == 0) {
    std::printf("bench_pair: %d trials, %llu bytes, rank 1 posts %.1f ms late; ms after its post\n",
                trials, static_cast<unsigned long long>(bytes), late_ms);
    const char* what[] = {"broadcast member (rank 0)", "broadcast root (rank 1)",
                          "reduce root (rank 0)", "reduce member (rank 1)"};
    for (std::size_t mode = 0; mode < 3; ++mode) {
      std::printf("%-16s", modes[mode]);
      for (std::size_t k = 0; k < 4; ++k)
        if (!done[mode * 4 + k].empty())
          std::printf("  %s %.2f", what[k], median(done[mode * 4 + k]));
      std::printf("\n");
    }
  }
  MPI_Comm_free(&bcast_comm);
  MPI_Comm_free(&reduce_comm);
  MPI_Finalize();
  return 0;
}
