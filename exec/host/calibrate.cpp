#include "exec/host/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

#include "common/model/presets.h"
#include "exec/host/mpi_util.h"
#include "exec/math/attention.h"
#include "exec/math/gemm.h"
#include "exec/math/mlp.h"
#include "exec/math/norm.h"

namespace tawpipe::exec::host {
namespace {

using Clock = std::chrono::steady_clock;

/// Seconds per call of `f`, repeated for at least `budget` seconds (best of the batches).
double time_per_call(const std::function<void()>& f, double budget) {
  f();  // warm up caches and lazy initialisation
  double best = 1e30;
  const auto stop = Clock::now() + std::chrono::duration<double>(budget);
  do {
    int calls = 0;
    const auto t0 = Clock::now();
    double elapsed = 0.0;
    do {
      f();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < budget / 10);
    best = std::min(best, elapsed / calls);
  } while (Clock::now() < stop);
  return best;
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
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn;
  const double budget = o.seconds_per_figure;

  profile::DeviceProfile dev;
  dev.dtype = "fp32";
  {  // GEMMs of one layer's forward: QKV/O (T x H x H) and the MLP (T x H x F, T x F x H).
    std::vector<float> a(T * F, 0.5f), b(F * std::max(H, F), 0.25f), c(T * std::max(H, F));
    const double s = time_per_call(
        [&] {
          for (int i = 0; i < 4; ++i)
            math::gemm(false, false, T, H, H, 1.0f, a.data(), H, b.data(), H, 0.0f, c.data(), H);
          for (int i = 0; i < 2; ++i)
            math::gemm(false, false, T, F, H, 1.0f, a.data(), H, b.data(), F, 0.0f, c.data(), F);
          math::gemm(false, false, T, H, F, 1.0f, a.data(), F, b.data(), H, 0.0f, c.data(), H);
        },
        budget);
    const double h = static_cast<double>(H), f = static_cast<double>(F);
    const double flops = 2.0 * static_cast<double>(T) * (4.0 * h * h + 3.0 * h * f);
    dev.kernels[model::KernelClass::gemm] = {
        profile::KernelPoint::flat_rate(FlopRate::flops_per_second(flops / s))};
  }
  {  // Attention forward and backward.
    std::vector<float> q(T * H, 0.1f), k(T * H, 0.2f), v(T * H, 0.3f), out(T * H), dq(T * H),
        dk(T * H), dv(T * H), probs(d.heads * d.seq_len * d.seq_len);
    const double seq = static_cast<double>(d.seq_len);
    const double flops = 2.0 * seq * seq * static_cast<double>(H);
    const double fwd = time_per_call(
        [&] { math::attention_forward(d, q.data(), k.data(), v.data(), probs.data(), out.data()); },
        budget);
    const double bwd = time_per_call(
        [&] {
          math::attention_backward(d, q.data(), k.data(), v.data(), probs.data(), out.data(),
                                   dq.data(), dk.data(), dv.data());
        },
        budget);
    dev.kernels[model::KernelClass::attention_fwd] = {
        profile::KernelPoint::flat_rate(FlopRate::flops_per_second(flops / fwd))};
    dev.kernels[model::KernelClass::attention_bwd] = {
        profile::KernelPoint::flat_rate(FlopRate::flops_per_second(2.5 * flops / bwd))};
  }
  {  // Element-wise: RMSNorm (read x, write y) and SwiGLU (read 2, write 1) over 4M scalars.
    const std::size_t n = std::size_t{1} << 22, rows = n / H;
    std::vector<float> x(n, 0.5f), y(n, 0.0f), z(n), g(H, 1.0f), r(rows);
    const double s = time_per_call(
        [&] {
          math::rmsnorm_forward(x.data(), g.data(), rows, H, 1e-5f, y.data(), r.data());
          math::swiglu_forward(x.data(), y.data(), n, z.data());
        },
        budget);
    profile::set_flat_memory_bound(
        dev, Bandwidth::bytes_per_second(5.0 * 4.0 * static_cast<double>(n) / s));
    const double copy = time_per_call([&] { std::memcpy(z.data(), x.data(), 4 * n); }, budget);
    dev.memory_bandwidth = Bandwidth::bytes_per_second(2.0 * 4.0 * static_cast<double>(n) / copy);
    std::vector<float> one(H, 1.0f), out(H);
    float inv = 0.0f;
    const double tiny = time_per_call(
        [&] { math::rmsnorm_forward(one.data(), g.data(), 1, H, 1e-5f, out.data(), &inv); },
        budget / 4);
    dev.launch_overhead = SimTime::from_seconds(tiny);
  }

  profile::LinkProfile link;
  if (world >= 2) {
    // Ping-pong between ranks 0 and 1; other ranks wait at the barrier.
    auto pingpong = [&](std::size_t bytes, int reps) -> Expected<double> {
      std::vector<char> buf(std::max<std::size_t>(bytes, 1));
      TAWPIPE_MPI(MPI_Barrier(MPI_COMM_WORLD));
      const auto t0 = Clock::now();
      for (int i = 0; i < reps && rank < 2; ++i) {
        if (rank == 0) {
          TAWPIPE_MPI(
              MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD));
          TAWPIPE_MPI(MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 1, 1, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        } else {
          TAWPIPE_MPI(MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 1, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
          TAWPIPE_MPI(
              MPI_Send(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, 1, MPI_COMM_WORLD));
        }
      }
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      TAWPIPE_MPI(MPI_Barrier(MPI_COMM_WORLD));
      return s / (2.0 * reps);  // one way
    };
    auto lat = pingpong(8, 2000);
    if (!lat.ok()) return lat.error();
    const std::size_t big = std::size_t{4} << 20;
    auto one_way = pingpong(big, 20);
    if (!one_way.ok()) return one_way.error();
    link.latency = SimTime::from_seconds(*lat);
    link.bandwidth =
        Bandwidth::bytes_per_second(static_cast<double>(big) / std::max(*one_way - *lat, 1e-9));
    // All-reduce bus bandwidth (nccl-tests convention: 2 (P-1)/P * bytes / time).
    std::vector<float> in(big / 4, 1.0f), out(big / 4);
    TAWPIPE_MPI(MPI_Barrier(MPI_COMM_WORLD));
    const auto t0 = Clock::now();
    const int reps = 10;
    for (int i = 0; i < reps; ++i) {
      TAWPIPE_MPI(MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_FLOAT,
                                MPI_SUM, MPI_COMM_WORLD));
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    if (extras) {
      extras->allreduce_bus_bandwidth =
          2.0 * (world - 1) / static_cast<double>(world) * static_cast<double>(big) / s;
    }
  }
  if (extras) extras->ranks = world;
  profile::Profile p;
  if (rank != 0) return p;
  p.producer =
      "tawexec calibrate " TAWPIPE_VERSION " (host backend, " + std::to_string(world) + " ranks)";
  p.devices[o.device_kind] = dev;
  if (world >= 2) {
    // Between local ranks MPI moves bytes through shared memory; the CPU topologies' logical
    // NIC is the same path, so both link classes get the same figures.
    p.links["shared_memory"] = link;
    p.links["nic"] = link;
  }
  return p;
}

}  // namespace tawpipe::exec::host
