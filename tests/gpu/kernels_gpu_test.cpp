// The CUDA kernels and cuBLAS GEMMs against the host implementation (exec/math), through the
// same DeviceApi the backend uses: each kernel alone in fp32 (tight tolerance), the GEMM in fp32
// (all four transpose cases), the tiled O(S)-memory attention for head dimensions 32-256 in
// fp32 and bf16, and a whole decoder layer range forward and backward
// (exec/device/device_compute.h vs exec/math/block.h). Every test SKIPS with the runtime's
// reason where no CUDA device is visible.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cuda/cuda_api.h"
#include "exec/device/device_compute.h"
#include "exec/math/adamw.h"
#include "exec/math/attention.h"
#include "exec/math/block.h"
#include "exec/math/gemm.h"
#include "exec/math/init.h"
#include "exec/math/loss.h"
#include "exec/math/mlp.h"
#include "exec/math/norm.h"

namespace tawpipe::exec::device {
namespace {

using Vec = std::vector<float>;

Vec random(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  Vec v(n);
  for (float& x : v)
    x = u(rng);
  return v;
}

double max_rel(const Vec& got, const Vec& want) {
  double scale = 0.0, worst = 0.0;
  for (float w : want)
    scale = std::max(scale, static_cast<double>(std::abs(w)));
  for (std::size_t i = 0; i < want.size(); ++i)
    worst =
        std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / std::max(scale, 1e-6));
  return worst;
}

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    Status probe = cuda::probe_device();
    if (!probe.ok()) GTEST_SKIP() << "no CUDA device: " << probe.error().message;
    api_ = cuda::make_cuda_api();
    ASSERT_TRUE(api_->set_device(0).ok());
    auto s = api_->stream_create();
    ASSERT_TRUE(s.ok());
    stream_ = *s;
  }
  DevicePtr upload(const Vec& v) {
    auto p = api_->mem_alloc(std::max<std::size_t>(v.size(), 1) * 4, stream_);
    EXPECT_TRUE(p.ok());
    EXPECT_TRUE(api_->copy_to_device(*p, std::as_bytes(std::span(v)), stream_).ok());
    return *p;
  }
  DevicePtr zeros(std::size_t n) { return upload(Vec(n, 0.0f)); }
  /// bf16 copies (round to nearest even) up and back down as fp32.
  DevicePtr upload_bf16(const Vec& v) {
    std::vector<std::uint16_t> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::uint32_t u = 0;
      std::memcpy(&u, &v[i], 4);
      h[i] = static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    auto p = api_->mem_alloc(std::max<std::size_t>(v.size(), 1) * 2, stream_);
    EXPECT_TRUE(p.ok());
    EXPECT_TRUE(api_->copy_to_device(*p, std::as_bytes(std::span(h)), stream_).ok());
    return *p;
  }
  Vec download_bf16(DevicePtr p, std::size_t n) {
    std::vector<std::uint16_t> h(n);
    EXPECT_TRUE(api_->copy_to_host(std::as_writable_bytes(std::span(h)), p, stream_).ok());
    Vec v(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t u = std::uint32_t{h[i]} << 16;
      std::memcpy(&v[i], &u, 4);
    }
    return v;
  }
  Vec download(DevicePtr p, std::size_t n) {
    Vec v(n);
    EXPECT_TRUE(api_->copy_to_host(std::as_writable_bytes(std::span(v)), p, stream_).ok());
    return v;
  }
  void launch(Kernel k, std::initializer_list<DevicePtr> p, std::initializer_list<std::int64_t> s,
              std::initializer_list<float> f = {}) {
    KernelLaunch l;
    l.kernel = k;
    std::copy(p.begin(), p.end(), l.p.begin());
    std::copy(s.begin(), s.end(), l.s.begin());
    std::copy(f.begin(), f.end(), l.f.begin());
    Status st = api_->launch(l, stream_);
    ASSERT_TRUE(st.ok()) << st.error().message;
  }

  std::unique_ptr<DeviceApi> api_;
  StreamHandle stream_ = 0;
};

math::Dims small_dims() {
  math::Dims d;
  d.hidden = 32;
  d.heads = 4;
  d.head_dim = 8;
  d.ffn = 48;
  d.vocab = 40;
  d.seq_len = 16;
  d.batch = 2;
  return d;
}

TEST_F(Gpu, RmsNormMatchesHost) {
  const std::size_t rows = 7, width = 33;
  const Vec x = random(rows * width, 1), g = random(width, 2), dy = random(rows * width, 3);
  Vec y(rows * width), r(rows), dx(rows * width), dg(width, 0.0f);
  math::rmsnorm_forward(x.data(), g.data(), rows, width, 1e-5f, y.data(), r.data());
  math::rmsnorm_backward(x.data(), g.data(), r.data(), dy.data(), rows, width, dx.data(),
                         dg.data());
  const DevicePtr X = upload(x), G = upload(g), DY = upload(dy), Y = zeros(y.size()),
                  R = zeros(rows), DX = zeros(dx.size()), DG = zeros(width);
  const auto R64 = static_cast<std::int64_t>(rows), W64 = static_cast<std::int64_t>(width);
  launch(Kernel::rmsnorm_forward, {X, G, Y, R}, {R64, W64}, {1e-5f});
  launch(Kernel::rmsnorm_backward, {X, G, R, DY, DX, DG}, {R64, W64});
  EXPECT_LT(max_rel(download(Y, y.size()), y), 1e-5);
  EXPECT_LT(max_rel(download(DX, dx.size()), dx), 1e-5);
  EXPECT_LT(max_rel(download(DG, width), dg), 1e-5);
}

TEST_F(Gpu, RopeAttentionSwigluMatchHost) {
  const math::Dims d = small_dims();
  const std::size_t TH = d.tokens() * d.hidden, P = d.batch * d.heads * d.seq_len * d.seq_len;
  Vec q = random(TH, 4), k = random(TH, 5), v = random(TH, 6), dout = random(TH, 7);
  const DevicePtr Q = upload(q), K = upload(k), V = upload(v), DO = upload(dout);
  math::rope(d, q.data(), false);
  math::rope(d, k.data(), false);
  const std::int64_t rs[4] = {
      static_cast<std::int64_t>(d.tokens()), static_cast<std::int64_t>(d.heads),
      static_cast<std::int64_t>(d.head_dim), static_cast<std::int64_t>(d.seq_len)};
  launch(Kernel::rope, {Q}, {rs[0], rs[1], rs[2], rs[3]}, {d.rope_base, 0.0f});
  launch(Kernel::rope, {K}, {rs[0], rs[1], rs[2], rs[3]}, {d.rope_base, 0.0f});
  EXPECT_LT(max_rel(download(Q, TH), q), 1e-5);
  Vec probs(P), out(TH), dq(TH), dk(TH), dv(TH);
  math::attention_forward(d, q.data(), k.data(), v.data(), probs.data(), out.data());
  math::attention_backward(d, q.data(), k.data(), v.data(), probs.data(), dout.data(), dq.data(),
                           dk.data(), dv.data());
  const std::size_t rows = d.batch * d.heads * d.seq_len;
  const DevicePtr LSE = zeros(rows), O = zeros(TH), DQ = zeros(TH), DK = zeros(TH), DV = zeros(TH),
                  DELTA = zeros(rows);
  const std::int64_t as[4] = {static_cast<std::int64_t>(d.batch), rs[1], rs[2], rs[3]};
  launch(Kernel::attention_forward, {Q, K, V, LSE, O}, {as[0], as[1], as[2], as[3]});
  launch(Kernel::attention_backward, {Q, K, V, O, LSE, DO, DQ, DK, DV, DELTA},
         {as[0], as[1], as[2], as[3]});
  EXPECT_EQ(probs.size(), P);
  EXPECT_LT(max_rel(download(O, TH), out), 1e-5);
  EXPECT_LT(max_rel(download(DQ, TH), dq), 1e-4);
  EXPECT_LT(max_rel(download(DK, TH), dk), 1e-4);
  EXPECT_LT(max_rel(download(DV, TH), dv), 1e-4);

  const std::size_t n = 1000;
  const Vec gate = random(n, 8, 3.0f), up = random(n, 9), dm = random(n, 10);
  Vec m(n), dgate(n), dup(n);
  math::swiglu_forward(gate.data(), up.data(), n, m.data());
  math::swiglu_backward(gate.data(), up.data(), dm.data(), n, dgate.data(), dup.data());
  const DevicePtr GA = upload(gate), UP = upload(up), DM = upload(dm), M = zeros(n), DGA = zeros(n),
                  DUP = zeros(n);
  launch(Kernel::swiglu_forward, {GA, UP, M}, {static_cast<std::int64_t>(n)});
  launch(Kernel::swiglu_backward, {GA, UP, DM, DGA, DUP}, {static_cast<std::int64_t>(n)});
  EXPECT_LT(max_rel(download(M, n), m), 1e-5);
  EXPECT_LT(max_rel(download(DGA, n), dgate), 1e-5);
  EXPECT_LT(max_rel(download(DUP, n), dup), 1e-5);
}

/// The attention launch (O(S) memory: only lse and delta) against exec/math's, which keeps the
/// S x S probabilities, for head dimensions 32 to 256 and sequences that are not multiples of
/// the kernel's tiles; fp32 storage (tight; always the tiled kernel) and bf16 storage (bf16
/// tolerance; the forward may take cuDNN's fused SDPA, attention_gpu_test.cpp checks each path
/// on its own).
TEST_F(Gpu, TiledAttentionMatchesHostForHeadDims32To256) {
  for (std::size_t hd : {32u, 64u, 80u, 128u, 256u}) {
    for (DType t : {DType::f32, DType::bf16}) {
      SCOPED_TRACE("head_dim " + std::to_string(hd) + " " + name(t));
      math::Dims d;
      d.heads = 2;
      d.head_dim = hd;
      d.hidden = 2 * hd;
      d.seq_len = 37;
      d.batch = 2;
      const std::size_t TH = d.tokens() * d.hidden;
      const Vec q = random(TH, 21), k = random(TH, 22), v = random(TH, 23), dout = random(TH, 24);
      Vec probs(d.batch * d.heads * d.seq_len * d.seq_len), out(TH), dq(TH), dk(TH), dv(TH);
      math::attention_forward(d, q.data(), k.data(), v.data(), probs.data(), out.data());
      math::attention_backward(d, q.data(), k.data(), v.data(), probs.data(), dout.data(),
                               dq.data(), dk.data(), dv.data());
      const std::size_t rows = d.batch * d.heads * d.seq_len;
      auto put = [&](const Vec& x) { return t == DType::f32 ? upload(x) : upload_bf16(x); };
      auto get = [&](DevicePtr p) {
        return t == DType::f32 ? download(p, TH) : download_bf16(p, TH);
      };
      const DevicePtr Q = put(q), K = put(k), V = put(v), DO = put(dout), O = put(Vec(TH)),
                      DQ = put(Vec(TH)), DK = put(Vec(TH)), DV = put(Vec(TH)), LSE = zeros(rows),
                      DELTA = zeros(rows);
      const std::int64_t s[4] = {static_cast<std::int64_t>(d.batch),
                                 static_cast<std::int64_t>(d.heads), static_cast<std::int64_t>(hd),
                                 static_cast<std::int64_t>(d.seq_len)};
      KernelLaunch f;
      f.kernel = Kernel::attention_forward;
      f.dtype = t;
      f.p = {Q, K, V, LSE, O};
      std::copy(s, s + 4, f.s.begin());
      ASSERT_TRUE(api_->launch(f, stream_).ok());
      KernelLaunch b = f;
      b.kernel = Kernel::attention_backward;
      b.p = {Q, K, V, O, LSE, DO, DQ, DK, DV, DELTA};
      ASSERT_TRUE(api_->launch(b, stream_).ok());
      const double tol = t == DType::f32 ? 1e-4 : 3e-2;
      EXPECT_LT(max_rel(get(O), out), tol);
      EXPECT_LT(max_rel(get(DQ), dq), tol);
      EXPECT_LT(max_rel(get(DK), dk), tol);
      EXPECT_LT(max_rel(get(DV), dv), tol);
    }
  }
  // Head dimensions past 256 are refused, not miscomputed.
  KernelLaunch wide;
  wide.kernel = Kernel::attention_forward;
  wide.s = {1, 1, 512, 8};
  EXPECT_FALSE(api_->launch(wide, stream_).ok());
}

TEST_F(Gpu, CrossEntropyAndAdamWMatchHost) {
  const std::size_t rows = 5, vocab = 77;
  const Vec logits = random(rows * vocab, 11, 4.0f);
  std::vector<std::int32_t> targets = {0, 5, 76, 12, 40};
  Vec dl(rows * vocab);
  const double loss =
      math::softmax_cross_entropy(logits.data(), targets.data(), rows, vocab, 0.25f, dl.data());
  const DevicePtr L = upload(logits), LOSS = zeros(2);
  auto T = api_->mem_alloc(rows * 4, stream_);
  ASSERT_TRUE(T.ok());
  ASSERT_TRUE(api_->copy_to_device(*T, std::as_bytes(std::span(targets)), stream_).ok());
  launch(Kernel::cross_entropy, {L, *T, LOSS},
         {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(vocab)}, {0.25f});
  EXPECT_LT(max_rel(download(L, dl.size()), dl), 1e-5);
  const Vec raw = download(LOSS, 2);
  double got = 0.0;
  std::memcpy(&got, raw.data(), sizeof got);
  EXPECT_NEAR(got, loss, 1e-4 * std::abs(loss));

  const std::size_t n = 513;
  model::AdamWConfig cfg;
  const Vec g = random(n, 12);
  Vec w = random(n, 13), m = random(n, 14, 0.1f), v(n, 0.01f);
  const DevicePtr G = upload(g), W = upload(w), MM = upload(m), VV = upload(v);
  math::adamw_step(cfg, 3, g.data(), w.data(), m.data(), v.data(), n);
  launch(Kernel::adamw, {G, W, MM, VV}, {static_cast<std::int64_t>(n)},
         {static_cast<float>(cfg.lr), static_cast<float>(cfg.beta1), static_cast<float>(cfg.beta2),
          static_cast<float>(cfg.eps), static_cast<float>(cfg.weight_decay), 3.0f});
  EXPECT_LT(max_rel(download(W, n), w), 1e-6);
  EXPECT_LT(max_rel(download(MM, n), m), 1e-6);
}

TEST_F(Gpu, GemmMatchesHostInFp32) {
  const std::size_t m = 17, n = 23, k = 31;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Vec a = random(m * k, 15), b = random(k * n, 16);
      Vec c = random(m * n, 17);
      const DevicePtr A = upload(a), B = upload(b), C = upload(c);
      const std::size_t lda = ta ? m : k, ldb = tb ? k : n;
      math::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, c.data(), n);
      Gemm g;
      g.trans_a = ta;
      g.trans_b = tb;
      g.m = static_cast<std::int64_t>(m);
      g.n = static_cast<std::int64_t>(n);
      g.k = static_cast<std::int64_t>(k);
      g.beta = 1.0f;
      g.a = A;
      g.b = B;
      g.c = C;
      g.lda = static_cast<std::int64_t>(lda);
      g.ldb = static_cast<std::int64_t>(ldb);
      g.ldc = static_cast<std::int64_t>(n);
      ASSERT_TRUE(api_->gemm(g, stream_).ok());
      EXPECT_LT(max_rel(download(C, m * n), c), 1e-5) << "ta " << ta << " tb " << tb;
    }
  }
}

TEST_F(Gpu, DecoderLayersForwardBackwardMatchHost) {
  const math::Dims d = small_dims();
  const std::size_t layers = 2, TH = d.tokens() * d.hidden;
  const std::size_t wsize = math::block_size(d, 0, static_cast<std::int32_t>(layers));
  Vec w(wsize);
  math::fill_initial_weights(d, 7, 0, static_cast<std::int32_t>(layers), 0, w);
  const Vec x = random(TH, 18), dy = random(TH, 19);
  Vec y(TH), dx(TH), dw(wsize, 0.0f);
  math::layers_forward(d, w.data(), layers, x.data(), y.data());
  math::layers_backward(d, w.data(), layers, x.data(), dy.data(), dx.data(), dw.data());
  auto scratch = allocate_scratch(*api_, stream_, d, DType::f32, layers);
  ASSERT_TRUE(scratch.ok());
  const ComputeEnv env{api_.get(), stream_, d, DType::f32, *scratch};
  const DevicePtr W = upload(w), X = upload(x), DY = upload(dy), Y = zeros(TH), DX = zeros(TH),
                  DW = zeros(wsize);
  ASSERT_TRUE(layers_forward(env, W, layers, X, Y).ok());
  ASSERT_TRUE(layers_backward(env, W, layers, X, DY, DX, DW).ok());
  EXPECT_LT(max_rel(download(Y, TH), y), 1e-4);
  EXPECT_LT(max_rel(download(DX, TH), dx), 1e-4);
  EXPECT_LT(max_rel(download(DW, wsize), dw), 1e-4);
}

}  // namespace
}  // namespace tawpipe::exec::device
