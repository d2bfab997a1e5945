#include "exec/host/calibrate.h"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "common/aligned.h"
#include "common/model/presets.h"
#include "exec/host/calibrate_comm.h"
#include "exec/host/calibrate_kernels.h"
#include "exec/host/calibrate_noise.h"
#include "exec/host/mpi_ops.h"
#include "exec/host/mpi_util.h"
#include "exec/math/adamw.h"
#include "exec/math/attention.h"
#include "exec/math/block.h"
#include "exec/math/gemm.h"
#include "exec/math/init.h"
#include "exec/math/loss.h"
#include "exec/math/mlp.h"
#include "exec/math/norm.h"

namespace tawpipe::exec::host {
namespace {

using Clock = std::chrono::steady_clock;

/// Seconds per call of each figure, the figures measured interleaved: one batch of every figure
/// (a tenth of its budget) discarded as warm-up (caches, lazy initialisation, the workspaces of
/// math/), then rounds of one batch of every figure in turn until each has at least 5 batches and
/// the budgets' sum has passed; per figure the median of its batch means. Interleaved (A B C A B
/// C ...) rather than each figure's batches in a row, because this VM has slow phases of 10-40 s
/// (docs/validate-host.md): in a row, one figure can fall wholly inside a phase and its
/// neighbour outside it, which moves the ratios between figures (and so the methods' predicted
/// gaps) by more than the gaps; interleaved, every figure sees the same mix of phases. The
/// median, not the best batch: the run sees the same interference (timer ticks, other threads)
/// that the slower batches saw, and one lucky batch is not the typical rate.
struct Figure {
  std::function<void()> call;
  double budget = 0.0;  ///< seconds of measuring (a tenth per batch)
};
std::vector<double> interleaved_per_call(const std::vector<Figure>& figures) {
  auto batch = [](const Figure& f) {
    int calls = 0;
    const auto t0 = Clock::now();
    double elapsed = 0.0;
    do {
      f.call();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < f.budget / 10);
    return elapsed / calls;
  };
  double total = 0.0;
  for (const Figure& f : figures) {
    batch(f);  // warm-up
    total += f.budget;
  }
  std::vector<std::vector<double>> means(figures.size());
  const auto stop = Clock::now() + std::chrono::duration<double>(total);
  do {
    for (std::size_t i = 0; i < figures.size(); ++i)
      means[i].push_back(batch(figures[i]));
  } while (means.empty() || means.front().size() < 5 || Clock::now() < stop);
  std::vector<double> out;
  for (std::vector<double>& m : means) {
    std::nth_element(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(m.size() / 2), m.end());
    out.push_back(m[m.size() / 2]);
  }
  return out;
}

/// What a sleeping thread's wake-ups cost the compute thread of its core (common/host_wait.h):
/// a GEMM loop runs on a thread set up as the backend's compute threads are, alone and beside a
/// thread that sleeps `sleep_ns` in a loop as a waiting communication thread does (short slice,
/// SCHED_FIFO, 1 us timer slack), in short segments (~50 ms) that alternate A B B A A B ... over
/// `budget` seconds (at least 8 pairs); per pair the difference over the wake-ups, and the median
/// of the pairs. The slowdown is small (with 2 ms sleeps ~1 % of the loop), less than the VM's
/// speed changes between whole loops seconds apart, which is why three pairs of whole loops gave
/// wakeup_cost_long 0 s in 7 of 19 session-12 calibrations and up to 172 us in another
/// (docs/validate-host.md, scripts/sensitivity): its largest source of noise in the predicted
/// gaps. Adjacent short segments see the same phase, so their difference keeps the wake-ups'
/// cost and drops the phase.
struct WakeFigures {
  double cost = 0.0;     ///< seconds of compute progress lost per wake-up
  double latency = 0.0;  ///< seconds a sleep ends later than requested
  double own_cpu = 0.0;  ///< the sleeping thread's own CPU time per wake-up (seconds)
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
/// The wake-up figures' compute: the block's GEMMs in turn, on the operands the compute figures
/// give them (BlockGemms: A hot, B and C rotated over the layers' weights), so that a switch
/// away from the loop and back costs what it costs a run's compute thread: on this VM a wake-up
/// beside a computing core-mate cost 62-76 us with a cpu-h256 block's GEMMs on rotated weights,
/// 60-69 with a hot 256^3 sgemm, which the figures used until session 21 (/tmp/s20/wk3.cpp,
/// docs/validate-host.md "Session 20").
struct WakeLoop {
  const std::vector<GemmShape>& shapes;
  double weight_bytes = 0.0;
};

/// A thread that sleeps `sleep_ns` in a loop as a waiting communication thread of the backend
/// does (short slice, SCHED_FIFO, 1 us timer slack), from construction until stop().
class Sleeper {
 public:
  struct Figures {
    long wakes = 0;
    double slept = 0.0;  ///< seconds from its first sleep to its last wake-up
    double cpu = 0.0;    ///< its thread's CPU time (seconds)
  };
  explicit Sleeper(std::int64_t sleep_ns)
      : thread_([this, sleep_ns] {
          prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
          request_comm_slice(true);
          const FifoWhileWaiting fifo;  // as a waiting thread of the backend (wait_all)
          const auto t0 = Clock::now();
          const double c0 = thread_cpu_seconds();
          long k = 0;
          while (!stop_.load()) {
            std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
            ++k;
          }
          figures_ = {k, std::chrono::duration<double>(Clock::now() - t0).count(),
                      thread_cpu_seconds() - c0};
        }) {}
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;
  ~Sleeper() { stop(); }
  Figures stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return figures_;
  }

 private:
  std::atomic<bool> stop_{false};
  Figures figures_;
  std::thread thread_;  ///< last: starts after the members it uses
};

double median_of(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

WakeFigures measure_wakeups(double budget, std::int64_t sleep_ns, const WakeLoop& loop) {
  constexpr double kSegment = 0.05;  // seconds of one segment
  BlockGemms block(loop.shapes, loop.weight_bytes);
  const auto per_turn = static_cast<int>(loop.shapes.size());
  auto gemms = [&](int calls) {  // whole turns of the shapes, so that every segment does the same
    for (int i = 0; i < calls; ++i)
      block.next();
  };
  auto on_compute_thread = [&](auto&& f) {
    std::thread t([&] {
      request_compute_slice();
      f();
    });
    t.join();
  };
  int calls = per_turn;
  on_compute_thread([&] {
    gemms(2 * per_turn);  // warm-up
    const auto t0 = Clock::now();
    gemms(2 * per_turn);
    const double turn = std::chrono::duration<double>(Clock::now() - t0).count() / 2;
    calls = per_turn * std::max(2, static_cast<int>(kSegment / std::max(turn, 1e-7)));
  });
  auto alone = [&] {
    double s = 0.0;
    on_compute_thread([&] {
      const auto t0 = Clock::now();
      gemms(calls);
      s = std::chrono::duration<double>(Clock::now() - t0).count();
    });
    return s;
  };
  struct Beside {
    double seconds = 0.0, wakes = 1.0, late = 0.0, own = 0.0;
  };
  auto beside = [&] {
    Beside r;
    Sleeper sleeper(sleep_ns);
    on_compute_thread([&] {
      const auto t0 = Clock::now();
      gemms(calls);
      r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    });
    const Sleeper::Figures f = sleeper.stop();
    r.wakes = static_cast<double>(std::max(f.wakes, 1L));
    r.late = std::max(0.0, f.slept / r.wakes - 1e-9 * static_cast<double>(sleep_ns));
    r.own = f.cpu / r.wakes;
    return r;
  };
  const int pairs = std::max(8, static_cast<int>(budget / (2.0 * kSegment)));
  std::vector<double> cost, late, own;
  for (int p = 0; p < pairs; ++p) {
    double base = 0.0;
    Beside with;
    if (p % 2 == 0) {
      base = alone();
      with = beside();
    } else {
      with = beside();
      base = alone();
    }
    cost.push_back((with.seconds - base) / with.wakes);
    late.push_back(with.late);
    own.push_back(with.own);
  }
  return {std::max(0.0, median_of(cost)), median_of(late), median_of(own)};
}

/// measure_wakeups' figure on a core whose other ranks compute too (ranks_per_core > 1), as a
/// shared core's ranks mostly do in a run: a wake-up there may hand the core to another
/// process's compute thread, and each switch between the two processes' GEMMs replaces one
/// working set with the other (caches and, without PCID on this VM's vCPUs, the whole TLB).
/// Measured on this VM (2026-11-29, /tmp/s20/wk3.cpp, a 4-GEMM cpu-h256 block on rotated
/// weights, 100 us sleeps, both cores busy, two runs per core): 62-76 us a wake-up with a
/// core-mate computing against 54-60 alone. Collective over `core_comm` (the core's ranks, rank 0
/// measuring): the other ranks run the GEMM loop (WakeLoop) on a compute thread, as the run's
/// compute threads do, stamping each call's end, until rank 0 tells them to stop. Rank 0
/// alternates segments of kSegment seconds without and with the sleeper (A B B A ...), and
/// counts the flops of the GEMM calls of every thread of the core that end in each (the k-th
/// call of a loop is shape k mod 6): the sleeper's cost is the share of the core's GEMM
/// throughput it takes. Whole segments count both processes' progress, so the
/// EEVDF slices (20 ms) that split a segment between them do not enter. Per pair: the segment's
/// lost throughput over its wake-ups; the median of the pairs (>= 0). Returns it on rank 0
/// (0 elsewhere).
Expected<double> measure_wakeups_shared(double budget, std::int64_t sleep_ns, MPI_Comm core_comm,
                                        const WakeLoop& wake_loop) {
  int me = 0, members = 1;
  TAWPIPE_MPI(MPI_Comm_rank(core_comm, &me));
  TAWPIPE_MPI(MPI_Comm_size(core_comm, &members));
  constexpr double kSegment = 0.2;  // seconds: ~200 block GEMM calls of the core, ten 20 ms slices
  constexpr int kStopTag = 7;
  BlockGemms block(wake_loop.shapes, wake_loop.weight_bytes);
  auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
        .count();
  };
  if (me != 0) {
    // A core-mate: GEMMs until rank 0's stop, each call's end stamped; then the stamps to it.
    std::vector<std::int64_t> ends;
    int stop_word = 0;
    MPI_Request stop = MPI_REQUEST_NULL;
    TAWPIPE_MPI(MPI_Irecv(&stop_word, 1, MPI_INT, 0, kStopTag, core_comm, &stop));
    std::thread loop([&] {
      request_compute_slice();
      int done = 0;
      while (done == 0) {
        block.next();  // the k-th call's flops: block.flops_of_call(k), on rank 0 too
        ends.push_back(now_ns());
        MPI_Test(&stop, &done, MPI_STATUS_IGNORE);
      }
    });
    loop.join();
    const auto count = static_cast<std::int64_t>(ends.size());
    TAWPIPE_MPI(MPI_Send(&count, 1, MPI_INT64_T, 0, kStopTag, core_comm));
    TAWPIPE_MPI(
        MPI_Send(ends.data(), static_cast<int>(ends.size()), MPI_INT64_T, 0, kStopTag, core_comm));
    return 0.0;
  }
  const int pairs = std::max(8, static_cast<int>(budget / (2.0 * kSegment)));
  struct Segment {
    std::int64_t begin = 0, end = 0;
    double own = 0.0;  // flops of rank 0's calls that ended in the segment
    long wakes = 0;
    bool sleeper = false;
  };
  std::vector<Segment> segments;
  std::thread loop([&] {
    request_compute_slice();
    // Warm-up: the mates are computing and the caches hold the loop's operands.
    for (const std::int64_t until = now_ns() + 100'000'000; now_ns() < until;)
      block.next();
    auto segment = [&](bool with_sleeper) {
      Segment seg;
      seg.sleeper = with_sleeper;
      std::optional<Sleeper> sleeper;
      if (with_sleeper) sleeper.emplace(sleep_ns);
      seg.begin = now_ns();
      const std::int64_t until = seg.begin + static_cast<std::int64_t>(kSegment * 1e9);
      while (now_ns() < until)
        seg.own += block.next();
      seg.end = now_ns();
      if (sleeper) seg.wakes = sleeper->stop().wakes;
      segments.push_back(seg);
    };
    for (int p = 0; p < pairs; ++p) {
      segment(p % 2 != 0);
      segment(p % 2 == 0);
    }
  });
  loop.join();
  // Stop the mates and count their calls' flops per segment.
  std::vector<std::pair<std::int64_t, double>> mate_calls;  // (end, flops)
  for (int m = 1; m < members; ++m) {
    const int word = 1;
    TAWPIPE_MPI(MPI_Send(&word, 1, MPI_INT, m, kStopTag, core_comm));
  }
  for (int m = 1; m < members; ++m) {
    std::int64_t count = 0;
    TAWPIPE_MPI(MPI_Recv(&count, 1, MPI_INT64_T, m, kStopTag, core_comm, MPI_STATUS_IGNORE));
    std::vector<std::int64_t> ends(static_cast<std::size_t>(count));
    TAWPIPE_MPI(MPI_Recv(ends.data(), static_cast<int>(count), MPI_INT64_T, m, kStopTag, core_comm,
                         MPI_STATUS_IGNORE));
    for (std::size_t k = 0; k < ends.size(); ++k)
      mate_calls.emplace_back(ends[k], block.flops_of_call(k));
  }
  std::sort(mate_calls.begin(), mate_calls.end());
  std::vector<double> before(mate_calls.size() + 1, 0.0);  // flops of the calls before each
  for (std::size_t k = 0; k < mate_calls.size(); ++k)
    before[k + 1] = before[k] + mate_calls[k].second;
  auto rate = [&](const Segment& s) {  // the core's GEMM flops per second in the segment
    auto at = [&](std::int64_t t) {
      return before[static_cast<std::size_t>(
          std::lower_bound(mate_calls.begin(), mate_calls.end(),
                           std::pair<std::int64_t, double>(t, 0.0)) -
          mate_calls.begin())];
    };
    return (s.own + at(s.end) - at(s.begin)) / (1e-9 * static_cast<double>(s.end - s.begin));
  };
  std::vector<double> cost;
  for (std::size_t i = 0; i + 1 < segments.size(); i += 2) {
    const Segment& with = segments[i].sleeper ? segments[i] : segments[i + 1];
    const Segment& without = segments[i].sleeper ? segments[i + 1] : segments[i];
    const double seconds = 1e-9 * static_cast<double>(with.end - with.begin);
    cost.push_back(seconds * (1.0 - rate(with) / rate(without)) /
                   static_cast<double>(std::max(with.wakes, 1L)));
  }
  return std::max(0.0, median_of(cost));
}

}  // namespace

Expected<profile::Profile> calibrate_host(const CalibrateOptions& o, CalibrateExtras* extras) {
  int rank = 0, world = 1;
  TAWPIPE_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  TAWPIPE_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  math::use_single_blas_thread();
  auto cfg = model::resolve_model(o.model);
  if (!cfg.ok()) return cfg.error();
  auto dims = math::host_dims(*cfg, o.seq_len, 1);
  if (!dims.ok()) return dims.error();
  const math::Dims& d = *dims;
  const std::size_t T = d.tokens(), H = d.hidden;
  const double budget = o.seconds_per_figure;

  // Compute figures: measured at once on the first rank of every core (every core busy, as in a
  // run, where the cores share the last-level cache and memory bandwidth), while the other ranks
  // of a core wait without spinning, so that a rank sharing its core (ranks_per_core > 1) does
  // not halve them: the simulator shares the core itself (sim/run/core_sharing.h). Every
  // measuring rank times every figure (each the median of its batches, interleaved_per_call);
  // the profile takes the median over those ranks, one per core the run uses, and reports their
  // largest spread (devices.*.ranks). Without a host section, rank 0 measures alone.
  const int per_core = o.host ? std::max(o.host->ranks_per_core, 1) : world;
  const bool measures = rank % per_core == 0;
  profile::DeviceProfile dev;
  std::optional<Bandwidth> zero_bandwidth;  ///< the profile's host.zero_bandwidth
  dev.dtype = "fp32";
  WakeFigures wake, wake_long;
  const std::vector<GemmShape> shapes = block_gemm_shapes(d);
  const int ranks_for_layers = std::max(world, 1);
  const std::int64_t layers = o.layers_per_rank > 0
                                  ? o.layers_per_rank
                                  : std::max<std::int64_t>(cfg->layers / ranks_for_layers, 1);
  const double weight_bytes =
      4.0 * static_cast<double>(model::param_counts(*cfg).per_layer) * static_cast<double>(layers);
  // Memory-bound figures at the run's sizes and cache state (calibrate_kernels.h).
  const std::vector<MemoryFigure> memory = memory_figures(*cfg, d, layers, world);
  const WakeLoop wake_loop{shapes, weight_bytes};  // the wake-up figures' GEMMs
  // Every figure, measured interleaved (interleaved_per_call): the six GEMMs, attention forward
  // and backward, the memory-bound figures, a near-empty kernel call.
  const std::size_t kGemm0 = 0, kAttnFwd = shapes.size(), kAttnBwd = kAttnFwd + 1,
                    kMemory0 = kAttnBwd + 1, kTiny = kMemory0 + memory.size(), kCount = kTiny + 1;
  std::vector<double> secs;  // seconds per call, in the order above
  TAWPIPE_TRY(quiet_barrier(MPI_COMM_WORLD));
  if (measures) {
    std::vector<Figure> figures;
    // The GEMMs (BlockGemms: A hot, B and C rotated over the layers' weights). A run's GEMM
    // finds its weight-sized operands beyond the caches: between two uses of one layer's matrix
    // the rank's ops go through the weights of all its layers (a 4-layer cpu-h256 block is
    // ~10 MB, past the 1 MB L2 of this VM's cores). Measured on this VM (OpenBLAS sgemm at the
    // six shapes, both cores busy, quiet, 2026-11-25, hot and 10 MB rotation interleaved 4 times,
    // mean over the shapes): hot 95-103 GFLOP/s, rotated 88-97 (-5 % on one core, -7 % on the
    // other, in the undisturbed repetitions).
    BlockGemms gemms(shapes, weight_bytes);
    std::vector<std::size_t> next(kCount, 0);  // the memory figures' next operand set
    for (std::size_t i = 0; i < shapes.size(); ++i)
      figures.push_back({[&gemms, i] { gemms.run(i); }, budget / 3});
    // Attention forward and backward at the block's shape.
    AlignedVector q(T * H, 0.1f), k(T * H, 0.2f), v(T * H, 0.3f), att(T * H), dq(T * H), dk(T * H),
        dv(T * H), probs(d.heads * d.seq_len * d.seq_len);
    figures.push_back({[&] {
                         math::attention_forward(d, q.data(), k.data(), v.data(), probs.data(),
                                                 att.data());
                       },
                       budget});
    figures.push_back({[&] {
                         math::attention_backward(d, q.data(), k.data(), v.data(), probs.data(),
                                                  att.data(), dq.data(), dk.data(), dv.data());
                       },
                       budget});
    // Memory-bound figures: each over a pool of operand sets, one set when hot, rotated over
    // kColdPoolBytes when cold.
    const auto tokens = math::micro_batch_tokens(d, 1, 0, 0);
    const math::EmbeddingLayout emb = math::embedding_layout(d);
    AlignedVector table(emb.size, 0.01f), gains(H, 1.0f), inv(T);
    const model::AdamWConfig adamw;
    std::vector<AlignedVector> pools(memory.size());
    for (std::size_t i = 0; i < memory.size(); ++i) {
      const MemoryFigure& f = memory[i];
      const std::size_t n = f.elements;
      using K = MemoryFigure::Kernel;
      // Floats per operand set: the kernel's operands (AdamW: grad, w, m, v, master).
      const std::size_t set =
          f.kernel == K::adamw                                                         ? 5 * n
          : f.kernel == K::residual_add                                                ? 3 * n
          : f.kernel == K::swiglu                                                      ? 3 * n
          : f.kernel == K::softmax_xent                                                ? 2 * n
          : f.kernel == K::rmsnorm || f.kernel == K::accumulate || f.kernel == K::copy ? 2 * n
                                                                                       : n;
      const std::size_t sets = rotation_sets(4.0 * static_cast<double>(set), f.cold,
                                             f.kernel == K::zero ? kZeroPoolBytes : kColdPoolBytes);
      pools[i].assign(sets * set, 0.5f);
      const std::size_t slot = kMemory0 + i;
      auto operands = [&, i, set, sets, slot] {
        float* p = pools[i].data() + next[slot] * set;
        next[slot] = (next[slot] + 1) % sets;
        return p;
      };
      std::function<void()> call;
      switch (f.kernel) {
        case K::rmsnorm:
          call = [&, operands, n] {
            float* p = operands();
            math::rmsnorm_forward(p, gains.data(), n / H, H, 1e-5f, p + n, inv.data());
          };
          break;
        case K::swiglu:
          call = [operands, n] {
            float* p = operands();
            math::swiglu_forward(p, p + n, n, p + 2 * n);
          };
          break;
        case K::residual_add:
          call = [operands, n] {
            float* p = operands();
            for (std::size_t j = 0; j < n; ++j)
              p[2 * n + j] = p[j] + p[n + j];
          };
          break;
        case K::accumulate:  // as compute_ops.cpp runs the IR's accumulate
          call = [operands, n] {
            float* p = operands();
            for (std::size_t j = 0; j < n; ++j)
              p[n + j] += p[j];
          };
          break;
        case K::adamw:  // as compute_ops.cpp runs the IR's optimizer: the step, then the master
          call = [&, operands, n] {
            float* p = operands();
            math::adamw_step(adamw, 1, p, p + n, p + 2 * n, p + 3 * n, n);
            std::copy(p + n, p + 2 * n, p + 4 * n);
          };
          break;
        case K::copy:
          call = [operands, n] {
            float* p = operands();
            std::memcpy(p + n, p, 4 * n);
          };
          break;
        case K::embedding_fwd:
          call = [&, operands] {
            math::embedding_forward(d, table.data(), tokens.inputs.data(), operands());
          };
          break;
        case K::embedding_bwd:
          call = [&, operands] {
            math::embedding_backward(d, tokens.inputs.data(), operands(), table.data());
          };
          break;
        case K::rope:  // as the block's forward rotates q and k (exec/math/block.cpp)
          call = [&, operands, n] {
            float* p = operands();
            math::rope(d, p, false);
            math::rope(d, p + n / 2, false);
          };
          break;
        case K::softmax_xent:  // as the head computes its loss and the logits' gradient
          call = [&, operands, n] {
            float* p = operands();  // logits, then their gradient (the call's output)
            math::softmax_cross_entropy(p, tokens.targets.data(), T, d.vocab,
                                        1.0f / static_cast<float>(T), p + n);
          };
          break;
        case K::zero:  // as host_backend.cpp zeroes a buffer an alloc hands out
          call = [operands, n] { std::fill_n(operands(), n, 0.0f); };
          break;
      }
      figures.push_back({std::move(call), budget / 2});
    }
    AlignedVector one(H, 1.0f), out(H);
    float inv_one = 0.0f;
    figures.push_back({[&] {
                         math::rmsnorm_forward(one.data(), gains.data(), 1, H, 1e-5f, out.data(),
                                               &inv_one);
                       },
                       budget / 4});
    secs = interleaved_per_call(figures);
  }
  TAWPIPE_TRY(quiet_barrier(MPI_COMM_WORLD));
  if (measures) {
    auto overhead = measure_op_overhead(budget);
    if (!overhead.ok()) return overhead.error();
    dev.op_overhead = *overhead;
    wake = measure_wakeups(budget, host_wait::kMaxSleepNs, wake_loop);
    // The long waits' sleeps wake ~20x less often, so their slow-down is ~20x smaller: a longer
    // loop keeps it above the loop's noise.
    wake_long = measure_wakeups(4.0 * budget, host_wait::kLongWaitMaxSleepNs, wake_loop);
  }
  TAWPIPE_TRY(quiet_barrier(MPI_COMM_WORLD));
  // The same wake-ups while the core's other ranks compute (ranks_per_core > 1): every rank of
  // a core takes part, every core at once.
  std::optional<double> wake_shared, wake_long_shared;
  if (per_core > 1 && world > 1) {
    MPI_Comm core_comm = MPI_COMM_NULL;
    TAWPIPE_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank / per_core, rank, &core_comm));
    auto s = measure_wakeups_shared(budget, host_wait::kMaxSleepNs, core_comm, wake_loop);
    Expected<double> l = s.ok()
                             ? measure_wakeups_shared(4.0 * budget, host_wait::kLongWaitMaxSleepNs,
                                                      core_comm, wake_loop)
                             : Expected<double>(s.error());
    MPI_Comm_free(&core_comm);
    if (!s.ok()) return s.error();
    if (!l.ok()) return l.error();
    wake_shared = *s;
    wake_long_shared = *l;
    TAWPIPE_TRY(quiet_barrier(MPI_COMM_WORLD));
  }

  // The noise trace (calibrate_noise.h: FWQ on every core at once, for the simulator's replay),
  // by the same measuring ranks, the others waiting without spinning. Its quantum is the forward
  // T x H x H GEMM, the block's most frequent shape. After the compute figures and the wake-ups
  // rather than between them: those figures are then measured exactly as before (same order,
  // same neighbours), so their calibrations stay comparable with the earlier sessions'.
  std::optional<profile::NoiseTrace> noise;
  if (o.noise_seconds > 0.0) {
    auto trace = measure_noise({T, H, H}, o.noise_seconds, measures);
    if (!trace.ok()) return trace.error();
    noise = std::move(*trace);
  }

  // Median over the measuring ranks (ranks that did not measure send -1), and the spread of each
  // figure over them: (max - min) / median, the largest one reported.
  secs.resize(kCount, -1.0);
  std::vector<double> all(rank == 0 ? kCount * static_cast<std::size_t>(world) : 0);
  TAWPIPE_MPI(MPI_Gather(secs.data(), static_cast<int>(kCount), MPI_DOUBLE, all.data(),
                         static_cast<int>(kCount), MPI_DOUBLE, 0, MPI_COMM_WORLD));
  if (rank == 0) {
    profile::RankSpread spread;
    for (std::size_t f = 0; f < kCount; ++f) {
      std::vector<double> v;
      for (std::size_t r = 0; r < static_cast<std::size_t>(world); ++r)
        if (all[r * kCount + f] > 0.0) v.push_back(all[r * kCount + f]);
      std::sort(v.begin(), v.end());
      const std::size_t m = v.size();
      secs[f] = m % 2 == 1 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
      spread.count = static_cast<int>(m);
      spread.spread = std::max(spread.spread, (v.back() - v.front()) / secs[f]);
    }
    if (spread.count > 1) dev.ranks = spread;
    auto& points = dev.kernels[model::KernelClass::gemm];
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const GemmShape& sh = shapes[i];
      profile::KernelPoint pt;
      pt.m = static_cast<std::int64_t>(sh.m);
      pt.n = static_cast<std::int64_t>(sh.n);
      pt.k = static_cast<std::int64_t>(sh.k);
      pt.rate = FlopRate::flops_per_second(sh.flops() / secs[kGemm0 + i]);
      points.push_back(pt);
    }
    const double seq = static_cast<double>(d.seq_len);
    const double flops = 2.0 * seq * seq * static_cast<double>(H);
    auto point = [&](double rate) {
      profile::KernelPoint pt;
      pt.batch = 1;
      pt.heads = static_cast<std::int64_t>(d.heads);
      pt.seq = static_cast<std::int64_t>(d.seq_len);
      pt.head_dim = static_cast<std::int64_t>(H / d.heads);
      pt.causal = true;
      pt.rate = FlopRate::flops_per_second(rate);
      return pt;
    };
    dev.kernels[model::KernelClass::attention_fwd] = {point(flops / secs[kAttnFwd])};
    dev.kernels[model::KernelClass::attention_bwd] = {point(2.5 * flops / secs[kAttnBwd])};
    // A class without a figure of its own (one whose kernel this model lacks, or whose figure was
    // left out) gets the norm figure, flat; the measured classes get one point per figure at the
    // kernel model's bytes.
    const std::vector<double> memory_secs(secs.begin() + static_cast<std::ptrdiff_t>(kMemory0),
                                          secs.begin() + static_cast<std::ptrdiff_t>(kTiny));
    for (std::size_t i = 0; i < memory.size(); ++i) {
      if (memory[i].cls == model::KernelClass::norm)
        profile::set_flat_memory_bound(
            dev, Bandwidth::bytes_per_second(memory[i].model_bytes / memory_secs[i]));
    }
    for (auto& [cls, pts] : memory_points(memory, memory_secs))
      dev.kernels[cls] = std::move(pts);
    // The achieved streaming rate from memory (the roofline of the FLOP classes): the cold copy.
    for (std::size_t i = 0; i < memory.size(); ++i) {
      if (memory[i].kernel == MemoryFigure::Kernel::copy && memory[i].cold)
        dev.memory_bandwidth = Bandwidth::bytes_per_second(memory[i].model_bytes / memory_secs[i]);
      if (memory[i].kernel == MemoryFigure::Kernel::zero && memory_secs[i] > 0.0)
        zero_bandwidth = Bandwidth::bytes_per_second(memory[i].model_bytes / memory_secs[i]);
    }
    dev.launch_overhead = SimTime::from_seconds(secs[kTiny]);
  }

  // Rank 0 always measures; every rank takes its wake-up CPU time out of transfer CPU times.
  TAWPIPE_MPI(MPI_Bcast(&wake.own_cpu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  // The compute a run's transfers follow (profile after_compute), at its two ends: one call of
  // each of the block's GEMM shapes on rotated weights (BlockGemms), about one layer's GEMMs
  // (FSDP gathers a layer's weights a layer or two after the buffer's last use), and that for
  // every layer of the rank's block (between two uses of a block's weights or gradients a rank
  // computes through its layers). Measured on this VM (session 27, docs/validate-host.md): a
  // 3 MiB all-gather on 2 ranks costs each 145-173 us of CPU back to back on the same buffers,
  // 378-417 us rotated over a 64 MiB pool, ~306 us after 4 ms of the block's GEMMs and ~395
  // after 30 ms; FSDP's all-gathers of that size took 370-400 us in its runs.
  BlockGemms between(shapes, weight_bytes);
  auto burst_of = [&](std::int64_t rounds) -> ComputeBurst {
    return [&between, &shapes, rounds] {
      const auto t0 = Clock::now();
      for (std::size_t i = 0; i < shapes.size() * static_cast<std::size_t>(rounds); ++i)
        between.next();
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
  };
  std::vector<ComputeBurst> bursts = {burst_of(1)};
  if (layers > 1) bursts.push_back(burst_of(layers));
  auto comm = measure_communication(budget / 4, per_core, wake.own_cpu, bursts);
  if (!comm.ok()) return comm.error();
  profile::LinkProfile link;
  for (const profile::CommMeasurement& m : *comm) {
    if (m.op != profile::CommOp::sendrecv || m.points.size() < 2) continue;
    // Latency: the smallest message; bandwidth: the largest message's bytes over its time less
    // the latency (the shared-memory link figures of v1 readers and of the network model).
    const auto& lo = m.points.front();
    const auto& hi = m.points.back();
    link.latency = lo.time;
    link.bandwidth = Bandwidth::bytes_per_second(static_cast<double>(hi.size.count()) /
                                                 std::max((hi.time - lo.time).seconds(), 1e-9));
  }
  for (const profile::CommMeasurement& m : *comm) {
    if (m.op != profile::CommOp::all_reduce || m.ranks != world || !extras) continue;
    for (const profile::CommPoint& pt : m.points) {
      if (pt.size.count() != (std::uint64_t{4} << 20)) continue;
      extras->allreduce_bus_bandwidth = 2.0 * (world - 1) / static_cast<double>(world) *
                                        static_cast<double>(pt.size.count()) / pt.time.seconds();
    }
  }
  if (extras) extras->ranks = world;
  profile::Profile p;
  if (rank != 0) return p;
  p.producer =
      "tawexec calibrate " TAWPIPE_VERSION " (host backend, " + std::to_string(world) + " ranks)";
  p.backend = profile::Backend::host;
  p.devices[o.device_kind] = dev;
  p.communication = std::move(*comm);
  if (o.host) {
    profile::HostProfile hp;
    hp.cores_per_host = o.host->cores_per_host;
    hp.ranks_per_core = o.host->ranks_per_core;
    hp.wakeup_cost = SimTime::from_seconds(wake.cost);
    hp.wakeup_latency = SimTime::from_seconds(wake.latency);
    hp.wakeup_cost_long = SimTime::from_seconds(wake_long.cost);
    if (wake_shared) hp.wakeup_cost_shared = SimTime::from_seconds(*wake_shared);
    if (wake_long_shared) hp.wakeup_cost_long_shared = SimTime::from_seconds(*wake_long_shared);
    hp.zero_bandwidth = zero_bandwidth;
    p.host = hp;
  }
  p.noise = std::move(noise);
  if (world >= 2) {
    // Between local ranks MPI moves bytes through shared memory; the CPU topologies' logical
    // NIC is the same path, so both link classes get the same figures.
    p.links["shared_memory"] = link;
    p.links["nic"] = link;
  }
  return p;
}

}  // namespace tawpipe::exec::host
