// `tawexec calibrate --backend cuda`: micro-benchmarks through the same DeviceApi the backend
// uses (so the figures are what the backend's calls achieve), timed with CUDA events, written as
// a calibration profile (common/profile/profile.h).
//
// Measured on every rank's device (rank 0's figures are written): BF16 GEMM FLOP/s at the
// block's shapes (T x H x H, T x F x H, T x H x F), attention forward and backward FLOP/s
// (counted like common/model/cost.h: causal 2*B*S^2*H forward, 2.5x backward), element-wise
// bytes/s (SwiGLU: three tensors), streaming device copy, and the cost of a one-element kernel
// (launch overhead). With two or more ranks: NCCL send/recv latency (8 bytes) and bandwidth
// (64 MiB) between world ranks 0 and 1, which share a node when ranks are placed by node
// (link classes nvlink and nvswitch), and between rank 0 and the first rank of the second node
// (link class nic), when there is one.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include <mpi.h>

#include "common/model/presets.h"
#include "common/profile/profile.h"
#include "exec/calibrate_flags.h"
#include "exec/cli_support.h"
#include "exec/cuda/cuda_api.h"
#include "exec/cuda/cuda_run.h"
#include "exec/math/dims.h"

namespace tawpipe::exec::cuda {
namespace {

using device::DevicePtr;
using device::DType;

struct Bench {
  device::DeviceApi& api;
  device::StreamHandle stream;
  device::EventHandle e0, e1;

  /// Seconds per call of `fn` (mean over `reps` after one warm-up call).
  Expected<double> time(int reps, const std::function<Status()>& fn) {
    TAWPIPE_TRY(fn());
    TAWPIPE_TRY(api.event_record(e0, stream));
    for (int i = 0; i < reps; ++i)
      TAWPIPE_TRY(fn());
    TAWPIPE_TRY(api.event_record(e1, stream));
    TAWPIPE_TRY(api.stream_synchronize(stream));
    auto ms = api.event_elapsed_ms(e0, e1);
    if (!ms.ok()) return ms.error();
    return static_cast<double>(*ms) * 1e-3 / reps;
  }
};

Expected<profile::DeviceProfile> measure_device(device::DeviceApi& api, const math::Dims& d) {
  auto stream = api.stream_create();
  auto e0 = api.event_create();
  auto e1 = api.event_create();
  if (!stream.ok()) return stream.error();
  if (!e0.ok()) return e0.error();
  if (!e1.ok()) return e1.error();
  Bench b{api, *stream, *e0, *e1};
  const auto T = static_cast<std::int64_t>(d.tokens()), H = static_cast<std::int64_t>(d.hidden),
             F = static_cast<std::int64_t>(d.ffn);
  const std::uint64_t big = std::uint64_t{256} << 20;
  auto mem = api.mem_alloc(3 * big, *stream);
  if (!mem.ok()) return mem.error();
  TAWPIPE_TRY(api.mem_zero(*mem, 3 * big, *stream));
  const DevicePtr a = *mem, bb = *mem + big, c = *mem + 2 * big;
  profile::DeviceProfile dev;
  dev.dtype = "bf16";

  double flops = 0.0, seconds = 0.0;
  for (auto [m, n, k] : {std::array{T, H, H}, std::array{T, F, H}, std::array{T, H, F}}) {
    device::Gemm g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = a;
    g.b = bb;
    g.c = c;
    g.lda = k;
    g.ldb = n;
    g.ldc = n;
    g.ab_type = g.c_type = DType::bf16;
    auto s = b.time(20, [&] { return api.gemm(g, *stream); });
    if (!s.ok()) return s.error();
    flops += 2.0 * static_cast<double>(m * n * k);
    seconds += *s;
  }
  dev.kernels[model::KernelClass::gemm] = {
      profile::KernelPoint::flat_rate(FlopRate::flops_per_second(flops / seconds))};

  device::KernelLaunch at;
  at.dtype = DType::bf16;
  at.s = {static_cast<std::int64_t>(d.batch), static_cast<std::int64_t>(d.heads),
          static_cast<std::int64_t>(d.head_dim), static_cast<std::int64_t>(d.seq_len)};
  const double attn = 2.0 * static_cast<double>(d.batch * d.seq_len * d.seq_len * d.hidden);
  // Stored probabilities and their gradient: batch * heads * S^2 fp32 each.
  const std::uint64_t plane = d.batch * d.heads * d.seq_len * d.seq_len * 4;
  auto probs = api.mem_alloc(2 * plane, *stream);
  if (!probs.ok()) return probs.error();
  at.kernel = device::Kernel::attention_forward;
  at.p = {a, a, a, *probs, bb};
  auto fwd = b.time(5, [&] { return api.launch(at, *stream); });
  if (!fwd.ok()) return fwd.error();
  dev.kernels[model::KernelClass::attention_fwd] = {
      profile::KernelPoint::flat_rate(FlopRate::flops_per_second(attn / *fwd))};
  at.kernel = device::Kernel::attention_backward;
  at.p = {a, a, a, *probs, a, bb, bb, bb, *probs + plane};
  auto bwd = b.time(5, [&] { return api.launch(at, *stream); });
  if (!bwd.ok()) return bwd.error();
  TAWPIPE_TRY(api.mem_free(*probs, *stream));
  dev.kernels[model::KernelClass::attention_bwd] = {
      profile::KernelPoint::flat_rate(FlopRate::flops_per_second(2.5 * attn / *bwd))};

  device::KernelLaunch sw;
  sw.kernel = device::Kernel::swiglu_forward;
  sw.dtype = DType::bf16;
  sw.p = {a, bb, c};
  sw.s[0] = static_cast<std::int64_t>(big / 2);
  auto ew = b.time(10, [&] { return api.launch(sw, *stream); });
  if (!ew.ok()) return ew.error();
  profile::set_flat_memory_bound(dev,
                                 Bandwidth::bytes_per_second(3.0 * static_cast<double>(big) / *ew));
  auto cp = b.time(10, [&] { return api.copy_device(bb, a, big, *stream); });
  if (!cp.ok()) return cp.error();
  dev.memory_bandwidth = Bandwidth::bytes_per_second(2.0 * static_cast<double>(big) / *cp);
  sw.s[0] = 1;
  auto tiny = b.time(200, [&] { return api.launch(sw, *stream); });
  if (!tiny.ok()) return tiny.error();
  dev.launch_overhead = SimTime::from_seconds(*tiny);
  TAWPIPE_TRY(api.mem_free(*mem, *stream));
  return dev;
}

/// One-way NCCL send/recv time between world ranks `x` and `y` (others only join the split).
Expected<std::optional<profile::LinkProfile>> measure_pair(device::DeviceApi& api,
                                                           device::CommHandle world, int rank,
                                                           int x, int y) {
  const bool member = rank == x || rank == y;
  auto pair = api.comm_split(world, member ? 0 : -1, rank == x ? 0 : 1);
  if (!pair.ok()) return pair.error();
  if (!member) return std::optional<profile::LinkProfile>{};
  auto stream = api.stream_create();
  auto e0 = api.event_create();
  auto e1 = api.event_create();
  if (!stream.ok() || !e0.ok() || !e1.ok()) return make_error("cannot create stream or events");
  Bench b{api, *stream, *e0, *e1};
  const std::uint64_t big = std::uint64_t{64} << 20;
  auto buf = api.mem_alloc(2 * big, *stream);
  if (!buf.ok()) return buf.error();
  const int peer = rank == x ? 1 : 0;
  auto exchange = [&](std::uint64_t bytes) {
    return b.time(bytes > 1024 ? 10 : 200, [&]() -> Status {
      TAWPIPE_TRY(api.group_start());
      TAWPIPE_TRY(api.send(*buf, bytes, DType::u8, peer, *pair, *stream));
      TAWPIPE_TRY(api.recv(*buf + big, bytes, DType::u8, peer, *pair, *stream));
      return api.group_end();
    });
  };
  auto lat = exchange(8);
  auto bw = exchange(big);
  if (!lat.ok()) return lat.error();
  if (!bw.ok()) return bw.error();
  profile::LinkProfile link;
  link.latency = SimTime::from_seconds(*lat);
  link.bandwidth =
      Bandwidth::bytes_per_second(static_cast<double>(big) / std::max(*bw - *lat, 1e-9));
  TAWPIPE_TRY(api.mem_free(*buf, *stream));
  return std::optional<profile::LinkProfile>(link);
}

}  // namespace

using cli::kCalibrate;

int calibrate_main(int argc, char** argv) {
  const int rank = cli::world_rank(), world = cli::world_size();
  cli::CalibrateFlags flags{"cuda", "3x8-a100", "llama-h4096-l48", 4096, "-", std::nullopt};
  if (auto status = cli::parse_calibrate_flags(argc, argv, flags)) return *status;
  if (auto missing = missing_device()) return kCalibrate.usage_error(*missing);
  auto kind = cli::calibrate_device_kind(flags.topology);
  if (!kind.ok()) return kCalibrate.usage_error(kind.error().to_string());
  auto model = model::resolve_model(flags.model);
  if (!model.ok()) return kCalibrate.usage_error(model.error().to_string());
  auto dims = math::host_dims(*model, flags.seq_len, 1);
  if (!dims.ok()) return kCalibrate.usage_error(dims.error().to_string());

  auto api = make_cuda_api();
  auto boot = make_mpi_bootstrap();
  auto run = [&]() -> Expected<profile::Profile> {
    auto count = api->device_count();
    if (!count.ok()) return count.error();
    auto local = boot->local_rank();
    if (!local.ok()) return local.error();
    TAWPIPE_TRY(api->set_device(*local % *count));
    auto dev = measure_device(*api, *dims);
    if (!dev.ok()) return dev.error();
    profile::Profile p;
    p.producer =
        "tawexec calibrate " TAWPIPE_VERSION " (cuda backend, " + std::to_string(world) + " ranks)";
    p.devices[*kind] = *dev;
    if (world < 2) return p;
    device::UniqueId id;
    if (rank == 0) {
      auto made = api->unique_id();
      if (!made.ok()) return made.error();
      id = *made;
    }
    TAWPIPE_TRY(boot->broadcast(std::as_writable_bytes(std::span(id.bytes)), 0));
    auto comm = api->comm_init_rank(world, id, rank);
    if (!comm.ok()) return comm.error();
    auto per_node = node_size();
    if (!per_node.ok()) return per_node.error();
    if (*per_node >= 2) {
      auto intra = measure_pair(*api, *comm, rank, 0, 1);
      if (!intra.ok()) return intra.error();
      if (*intra) p.links["nvlink"] = p.links["nvswitch"] = **intra;
    }
    if (world > *per_node) {
      auto inter = measure_pair(*api, *comm, rank, 0, *per_node);
      if (!inter.ok()) return inter.error();
      if (*inter) p.links["nic"] = **inter;
    }
    return p;
  };
  auto profile = run();
  if (!profile.ok()) {
    kCalibrate.abort_rank(profile.error().to_string());
  }
  int status = cli::kExitOk;
  if (rank == 0) status = cli::write_calibrated_profile(flags.output, *profile);
  MPI_Finalize();
  return status;
}

}  // namespace tawpipe::exec::cuda
