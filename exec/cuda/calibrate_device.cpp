// The device half of `tawexec calibrate --backend cuda` (calibrate_bench.h): kernel-class
// points at the block's shapes. FLOPs are counted like common/model/cost.h (causal attention:
// 2 B S^2 H forward, 2.5x that backward); bytes are what each kernel reads and writes.
#include <algorithm>
#include <array>
#include <functional>

#include "exec/cuda/calibrate_bench.h"
#include "exec/math/init.h"

namespace tawpipe::exec::cuda {

using device::DevicePtr;
using device::DType;
using device::Kernel;
using model::KernelClass;

namespace {

std::int64_t i64(std::size_t v) {
  return static_cast<std::int64_t>(v);
}

}  // namespace

Expected<profile::DeviceProfile> measure_device(device::DeviceApi& api, const math::Dims& d) {
  auto stream = api.stream_create();
  auto e0 = api.event_create();
  auto e1 = api.event_create();
  if (!stream.ok()) return stream.error();
  if (!e0.ok()) return e0.error();
  if (!e1.ok()) return e1.error();
  EventTimer b{api, *stream, *e0, *e1};
  const std::size_t T = d.tokens(), H = d.hidden, F = d.ffn, V = d.vocab;
  // Three bf16 operands large enough for every tensor of the block (and 256 MiB for streaming).
  const std::uint64_t big = std::max<std::uint64_t>(
      std::uint64_t{256} << 20, 2 * std::max({T * F, H * F, T * V, V * H, T * H}));
  auto mem = api.mem_alloc(3 * big, *stream);
  if (!mem.ok()) return mem.error();
  TAWPIPE_TRY(api.mem_zero(*mem, 3 * big, *stream));
  const DevicePtr a = *mem, bb = *mem + big, c = *mem + 2 * big;
  // Side tensors: lse + delta (f32), the norm's rows (f32), token ids (i32, zero: a valid row of
  // the table and of the logits; never written), the loss (f64).
  const std::uint64_t stats = 2 * d.batch * d.heads * d.seq_len * 4 + T * 4 + T * 4 + 64;
  auto side = api.mem_alloc(stats, *stream);
  if (!side.ok()) return side.error();
  TAWPIPE_TRY(api.mem_zero(*side, stats, *stream));
  const DevicePtr lse = *side, delta = lse + d.batch * d.heads * d.seq_len * 4,
                  rows = delta + d.batch * d.heads * d.seq_len * 4, ids = rows + T * 4,
                  loss = ids + T * 4;

  profile::DeviceProfile dev;
  dev.dtype = "bf16";
  auto flop_point = [&](KernelClass cls, profile::KernelPoint p, double flops,
                        double seconds) -> Status {
    p.rate = FlopRate::flops_per_second(flops / seconds);
    dev.kernels[cls].push_back(p);
    return Status::success();
  };
  auto mem_point = [&](KernelClass cls, double bytes, int reps,
                       const std::function<Status()>& fn) -> Status {
    auto s = b.time(reps, fn);
    if (!s.ok()) return s.error();
    profile::KernelPoint p;
    p.bytes = Bytes(static_cast<std::uint64_t>(bytes));
    p.bandwidth = Bandwidth::bytes_per_second(bytes / *s);
    dev.kernels[cls].push_back(p);
    return Status::success();
  };

  for (auto [m, n, k] : {std::array{T, H, H}, std::array{T, F, H}, std::array{T, H, F}}) {
    device::Gemm g;
    g.m = i64(m);
    g.n = i64(n);
    g.k = i64(k);
    g.a = a;
    g.b = bb;
    g.c = c;
    g.lda = i64(k);
    g.ldb = i64(n);
    g.ldc = i64(n);
    g.ab_type = g.c_type = DType::bf16;
    auto s = b.time(20, [&] { return api.gemm(g, *stream); });
    if (!s.ok()) return s.error();
    profile::KernelPoint p;
    p.m = g.m;
    p.n = g.n;
    p.k = g.k;
    TAWPIPE_TRY(flop_point(KernelClass::gemm, p, 2.0 * static_cast<double>(m * n * k), *s));
  }

  device::KernelLaunch at;
  at.dtype = DType::bf16;
  // Causal, lending the delta piece as workspace exactly as the block does (device_compute.cpp),
  // so the path timed here is the path a run takes.
  at.s = {i64(d.batch),
          i64(d.heads),
          i64(d.head_dim),
          i64(d.seq_len),
          0,
          i64(d.batch * d.heads * d.seq_len * 4)};
  profile::KernelPoint shape;
  shape.batch = i64(d.batch);
  shape.heads = i64(d.heads);
  shape.seq = i64(d.seq_len);
  shape.head_dim = i64(d.head_dim);
  shape.causal = true;
  const double attn = 2.0 * static_cast<double>(d.batch * d.seq_len * d.seq_len * d.hidden);
  at.kernel = Kernel::attention_forward;
  at.p = {a, a, a, lse, bb, delta};
  auto fwd = b.time(5, [&] { return api.launch(at, *stream); });
  if (!fwd.ok()) return fwd.error();
  TAWPIPE_TRY(flop_point(KernelClass::attention_fwd, shape, attn, *fwd));
  at.kernel = Kernel::attention_backward;
  at.p = {a, a, a, bb, lse, a, c, c, c, delta};
  auto bwd = b.time(5, [&] { return api.launch(at, *stream); });
  if (!bwd.ok()) return bwd.error();
  TAWPIPE_TRY(flop_point(KernelClass::attention_bwd, shape, 2.5 * attn, *bwd));

  auto launch = [&](Kernel k, std::array<DevicePtr, 4> p, std::array<std::int64_t, 4> s,
                    std::array<float, 6> f = {}) {
    device::KernelLaunch l;
    l.kernel = k;
    l.dtype = l.dtype2 = DType::bf16;
    std::copy(p.begin(), p.end(), l.p.begin());
    std::copy(s.begin(), s.end(), l.s.begin());
    l.f = f;
    return api.launch(l, *stream);
  };
  const double TH = static_cast<double>(T * H) * 2.0;
  TAWPIPE_TRY(mem_point(KernelClass::norm, 2.0 * TH + 4.0 * static_cast<double>(T), 20, [&] {
    return launch(Kernel::rmsnorm_forward, {a, bb, c, rows}, {i64(T), i64(H)}, {1e-5f});
  }));
  TAWPIPE_TRY(mem_point(KernelClass::rope, 2.0 * TH, 20, [&] {
    return launch(Kernel::rope, {a}, {i64(T), i64(d.heads), i64(d.head_dim), i64(d.seq_len)},
                  {d.rope_base, 0.0f});
  }));
  TAWPIPE_TRY(mem_point(KernelClass::activation, 3.0 * static_cast<double>(T * F) * 2.0, 20, [&] {
    return launch(Kernel::swiglu_forward, {a, bb, c}, {i64(T * F)});
  }));
  TAWPIPE_TRY(mem_point(KernelClass::residual, 3.0 * TH, 20, [&] {
    return launch(Kernel::add, {a, bb}, {i64(T * H)});
  }));
  TAWPIPE_TRY(mem_point(KernelClass::softmax_xent, 2.0 * static_cast<double>(T * V) * 2.0, 10, [&] {
    return launch(Kernel::cross_entropy, {a, ids, loss}, {i64(T), i64(V)}, {1.0f});
  }));
  TAWPIPE_TRY(mem_point(KernelClass::embedding, 2.0 * TH, 20, [&] {
    return launch(Kernel::embedding_forward, {bb, ids, c}, {i64(T), i64(H)});
  }));
  // AdamW over one layer's parameters (or as many as fit the buffers): bf16 gradient, f32
  // master and moments, read and written.
  const std::uint64_t n_opt = std::min<std::uint64_t>(math::layer_layout(d).size, big / 4);
  TAWPIPE_TRY(
      mem_point(KernelClass::optimizer, static_cast<double>(n_opt) * (2.0 + 3 * 8.0), 10, [&] {
        device::KernelLaunch l;
        l.kernel = Kernel::adamw;
        l.dtype2 = DType::bf16;
        l.p = {a, bb, c, c};
        l.s[0] = static_cast<std::int64_t>(n_opt);
        l.f = {1e-4f, 0.9f, 0.95f, 1e-8f, 0.0f, 1.0f};
        return api.launch(l, *stream);
      }));
  TAWPIPE_TRY(mem_point(KernelClass::copy, 2.0 * static_cast<double>(big), 10,
                        [&] { return api.copy_device(bb, a, big, *stream); }));
  dev.memory_bandwidth = dev.kernels[KernelClass::copy].back().bandwidth;
  auto tiny = b.time(200, [&] { return launch(Kernel::swiglu_forward, {a, bb, c}, {1}); });
  if (!tiny.ok()) return tiny.error();
  dev.launch_overhead = SimTime::from_seconds(*tiny);
  TAWPIPE_TRY(api.mem_free(*side, *stream));
  TAWPIPE_TRY(api.mem_free(*mem, *stream));
  TAWPIPE_TRY(api.stream_synchronize(*stream));
  return dev;
}

}  // namespace tawpipe::exec::cuda
