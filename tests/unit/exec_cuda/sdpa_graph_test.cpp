// The host-side half of the cuDNN fused attention (exec/device/sdpa_graph.h, attention_path.h),
// on CPU: the operation graph's construction order and shape bookkeeping for our row layout,
// the checker refusing broken graphs, the keys cuDNN is asked about, the path decision with its
// workspace check, the plan cache and the once-per-reason notices, and that the block lends
// cuDNN exactly the IR-sized `delta` piece (and the IR's attention workspace equals the two
// fp32 pieces the device scratch allocates).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/model/memory.h"
#include "common/model/presets.h"
#include "exec/device/attention_path.h"
#include "exec/device/device_compute.h"
#include "exec/device/sdpa_graph.h"
#include "exec/math/dims.h"
#include "exec/recording/recording_api.h"

namespace tawpipe::exec::device {
namespace {

SdpaKey key(SdpaDirection dir, bool causal = true, std::int64_t d = 64, DType t = DType::bf16) {
  SdpaKey k;
  k.batch = 2;
  k.heads = 3;
  k.seq = 40;
  k.head_dim = d;
  k.dtype = t;
  k.causal = causal;
  k.direction = dir;
  return k;
}

std::vector<std::string> op_names(const SdpaGraph& g) {
  std::vector<std::string> out;
  for (const GraphOp& op : g.ops)
    out.emplace_back(op.name);
  return out;
}

const GraphTensor& bound(const SdpaGraph& g, Binding b) {
  for (const GraphTensor& t : g.tensors)
    if (t.binding == b) return t;
  ADD_FAILURE() << "no tensor bound to slot " << static_cast<int>(b);
  return g.tensors.front();
}

TEST(SdpaGraph, ForwardCausalIsTheFlashAttentionPattern) {
  auto g = build_sdpa_graph(key(SdpaDirection::forward));
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_TRUE(check_sdpa_graph(*g).ok()) << check_sdpa_graph(*g).error().message;
  const std::vector<std::string> want = {"matmul_q_kt", "mul_scale",     "row_index", "col_index",
                                         "row_ge_col",  "causal_select", "row_max",   "sub_max",
                                         "exp",         "row_sum",       "log",       "stats",
                                         "div_sum",     "matmul_p_v"};
  EXPECT_EQ(op_names(*g), want);
  // Our [b*s x h*d] rows as [b,h,s,d] (W = 3 * 64 = 192) and K^T as its transposed view.
  EXPECT_EQ(bound(*g, Binding::q).dims, (std::array<std::int64_t, 4>{2, 3, 40, 64}));
  EXPECT_EQ(bound(*g, Binding::q).strides, (std::array<std::int64_t, 4>{40 * 192, 64, 192, 1}));
  EXPECT_EQ(bound(*g, Binding::k).dims, (std::array<std::int64_t, 4>{2, 3, 64, 40}));
  EXPECT_EQ(bound(*g, Binding::k).strides, (std::array<std::int64_t, 4>{40 * 192, 64, 1, 192}));
  // Statistics: fp32 [b,h,s,1] laid out like the tiled kernel's lse, (b*H + h)*S + i.
  const GraphTensor& stats = bound(*g, Binding::stats);
  EXPECT_EQ(stats.type, ElemType::f32);
  EXPECT_EQ(stats.dims, (std::array<std::int64_t, 4>{2, 3, 40, 1}));
  EXPECT_EQ(stats.strides, (std::array<std::int64_t, 4>{120, 40, 1, 1}));
  EXPECT_FALSE(stats.is_virtual);
  // The mask: integer indices, boolean compare, select of the lowest float; P at I/O type.
  for (const GraphOp& op : g->ops) {
    if (op.pointwise == PointwiseMode::gen_index && op.kind == OpKind::pointwise) {
      EXPECT_EQ(op.compute, ElemType::i32);
      EXPECT_TRUE(op.axis == 2 || op.axis == 3);
    }
    if (std::string(op.name) == "matmul_p_v") {
      EXPECT_EQ(g->tensor(op.in[0])->type, ElemType::io);
    }
  }
  EXPECT_TRUE(bound(*g, Binding::lowest).by_value);
  EXPECT_FLOAT_EQ(g->scale, 0.125f);
  EXPECT_EQ(g->dq_accum_bytes, 0u);
  EXPECT_EQ(sdpa_workspace_bytes(*g, 1000), 1000u);
}

TEST(SdpaGraph, FullMaskDropsTheCausalOps) {
  auto g = build_sdpa_graph(key(SdpaDirection::forward, false));
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(check_sdpa_graph(*g).ok());
  const auto names = op_names(*g);
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(std::count(names.begin(), names.end(), "causal_select"), 0);
  for (const GraphTensor& t : g->tensors)
    EXPECT_NE(t.binding, Binding::lowest);
}

TEST(SdpaGraph, BackwardCausalComputesDeltaInsideAndAccumulatesDqInFp32) {
  auto g = build_sdpa_graph(key(SdpaDirection::backward));
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(check_sdpa_graph(*g).ok()) << check_sdpa_graph(*g).error().message;
  const std::vector<std::string> want = {
      "mul_dout_o",  "row_sum_dout_o", "mul_one_d",      "matmul_q_kt",    "mul_scale",
      "row_index",   "col_index",      "row_ge_col",     "causal_select",  "sub_stats",
      "exp",         "transpose_p",    "matmul_pt_dout", "matmul_dout_vt", "mul_one_dp",
      "sub_d",       "mul_p",          "mul_scale_ds",   "transpose_ds",   "matmul_dst_q",
      "transpose_k", "matmul_ds_k",    "identity_dq"};
  EXPECT_EQ(op_names(*g), want);
  // V enters transposed like K; O, dO, stats are inputs; dQ/dK/dV outputs in our layout.
  EXPECT_EQ(bound(*g, Binding::v).dims, (std::array<std::int64_t, 4>{2, 3, 64, 40}));
  for (Binding b : {Binding::o, Binding::dout, Binding::dq, Binding::dk, Binding::dv})
    EXPECT_EQ(bound(*g, b).strides, (std::array<std::int64_t, 4>{40 * 192, 64, 192, 1}));
  // No stored D: it is virtual in the graph (the tiled kernel keeps it in `delta`).
  for (const GraphTensor& t : g->tensors)
    if (std::string(t.name) == "d") {
      EXPECT_TRUE(t.is_virtual);
    }
  const GraphTensor& acc = bound(*g, Binding::dq_accum);
  EXPECT_EQ(acc.type, ElemType::f32);
  EXPECT_TRUE(acc.reorder_f16x16);
  EXPECT_EQ(g->dq_accum_bytes, 2u * 3 * 40 * 64 * 4);
  // The accumulator is 256-aligned, the plan's workspace follows it.
  EXPECT_EQ(sdpa_workspace_bytes(*g, 0), 61440u);
  EXPECT_EQ(sdpa_workspace_bytes(*g, 512), 61440u + 512);
}

TEST(SdpaGraph, AsksCudnnOnlyForHalfPrecisionAndHeadDimsMultipleOf8UpTo256) {
  for (std::int64_t d : {32, 64, 128, 256})
    for (DType t : {DType::bf16, DType::f16})
      for (SdpaDirection dir : {SdpaDirection::forward, SdpaDirection::backward}) {
        auto g = build_sdpa_graph(key(dir, true, d, t));
        ASSERT_TRUE(g.ok()) << to_string(key(dir, true, d, t));
        EXPECT_TRUE(check_sdpa_graph(*g).ok()) << to_string(key(dir, true, d, t));
      }
  EXPECT_NE(sdpa_supported(key(SdpaDirection::forward, true, 64, DType::f32))
                .error()
                .message.find("bf16 or f16"),
            std::string::npos);
  EXPECT_FALSE(sdpa_supported(key(SdpaDirection::forward, true, 264)).ok());
  EXPECT_FALSE(sdpa_supported(key(SdpaDirection::forward, true, 36)).ok());
  EXPECT_EQ(to_string(key(SdpaDirection::backward, false, 128, DType::f16)),
            "bwd b2 h3 s40 d128 f16 full");
}

TEST(SdpaGraph, CheckerRefusesBrokenGraphs) {
  auto good = build_sdpa_graph(key(SdpaDirection::backward));
  ASSERT_TRUE(good.ok());
  {  // A matmul whose operands do not chain: Q x Q.
    SdpaGraph g = *good;
    for (GraphOp& op : g.ops)
      if (std::string(op.name) == "matmul_q_kt") op.in[1] = op.in[0];
    Status s = check_sdpa_graph(g);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("matmul_q_kt"), std::string::npos);
  }
  {  // Operations out of order: dV before P exists.
    SdpaGraph g = *good;
    std::reverse(g.ops.begin(), g.ops.end());
    Status s = check_sdpa_graph(g);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("before it is produced"), std::string::npos);
  }
  {  // A reduction that keeps the reduced axis.
    SdpaGraph g = *good;
    for (GraphTensor& t : g.tensors)
      if (std::string(t.name) == "d_raw") t.dims[3] = 7;
    EXPECT_FALSE(check_sdpa_graph(g).ok());
  }
  {  // A duplicated uid, an unbound non-virtual tensor, an output never written.
    SdpaGraph dup = *good, unbound = *good, unwritten = *good;
    dup.tensors.push_back(dup.tensors.front());
    EXPECT_FALSE(check_sdpa_graph(dup).ok());
    unbound.tensors.back().binding = Binding::none;
    unbound.tensors.back().is_virtual = false;
    EXPECT_FALSE(check_sdpa_graph(unbound).ok());
    unwritten.ops.pop_back();
    EXPECT_FALSE(check_sdpa_graph(unwritten).ok());
  }
}

TEST(AttentionPath, CudnnOnlyWhenBuiltPlannedAndWithinTheLentWorkspace) {
  const SdpaKey k = key(SdpaDirection::backward);
  PlanFacts f;
  f.lent_bytes = 1920;  // 4 * b*h*s: the IR-sized delta piece
  EXPECT_EQ(choose_attention_path(k, f).path, AttentionPath::tiled);
  EXPECT_NE(choose_attention_path(k, f).reason.find("built without cuDNN"), std::string::npos);
  f.cudnn_built = true;
  f.plan = make_error("no engine configuration (3 proposed)");
  auto c = choose_attention_path(k, f);
  EXPECT_EQ(c.path, AttentionPath::tiled);
  EXPECT_NE(c.reason.find("no engine configuration"), std::string::npos);
  f.plan = Status::success();
  f.needed_bytes = 61440;
  c = choose_attention_path(k, f);
  EXPECT_EQ(c.path, AttentionPath::tiled);
  EXPECT_NE(c.reason.find("needs 60 KiB"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("sized 1 KiB"), std::string::npos) << c.reason;
  f.needed_bytes = 1920;
  c = choose_attention_path(k, f);
  EXPECT_EQ(c.path, AttentionPath::cudnn);
  EXPECT_TRUE(c.reason.empty());
}

TEST(AttentionPath, PlanCacheBuildsOncePerKeyAndKeepsFailures) {
  int calls = 0;
  PlanCache<int> cache([&](const SdpaKey& k) -> Expected<int> {
    ++calls;
    if (k.direction == SdpaDirection::backward) return make_error("no engine");
    return static_cast<int>(k.head_dim);
  });
  const SdpaKey f = key(SdpaDirection::forward), b = key(SdpaDirection::backward);
  SdpaKey full = f, half = f;
  full.causal = false;
  half.dtype = DType::f16;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*cache.get(f), 64);
    EXPECT_FALSE(cache.get(b).ok());
  }
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(cache.get(full).ok());
  EXPECT_TRUE(cache.get(half).ok());
  EXPECT_EQ(cache.builds(), 4u);
  EXPECT_EQ(cache.size(), 4u);
}

TEST(AttentionPath, LogSaysEachFallbackOnceAndSummarisesPaths) {
  std::vector<std::string> said;
  AttentionLog log([&](const std::string& s) { said.push_back(s); });
  EXPECT_EQ(log.summary(), "none yet");
  const SdpaKey f = key(SdpaDirection::forward), b = key(SdpaDirection::backward);
  PathChoice cudnn{AttentionPath::cudnn, ""};
  PathChoice tiled{AttentionPath::tiled, to_string(b) + ": cuDNN needs 60 KiB"};
  for (int layer = 0; layer < 4; ++layer) {
    log.record(f, cudnn);
    log.record(b, tiled);
  }
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("falls back to the tiled O(S) kernel: bwd"), std::string::npos);
  EXPECT_EQ(log.summary(),
            "forward: cuDNN fused SDPA; backward: tiled O(S) kernel (" + tiled.reason + ")");
  EXPECT_EQ(log.summary(false), "forward: cuDNN fused SDPA; backward: tiled O(S) kernel");
}

/// A DeviceApi that forwards to the recorder and keeps every kernel launch whole.
class LaunchCapture final : public DeviceApi {
 public:
  RecordingApi rec;
  std::vector<KernelLaunch> launches;
  Expected<int> device_count() override { return rec.device_count(); }
  Status set_device(int d) override { return rec.set_device(d); }
  Expected<StreamHandle> stream_create() override { return rec.stream_create(); }
  Expected<EventHandle> event_create() override { return rec.event_create(); }
  Status event_record(EventHandle e, StreamHandle s) override { return rec.event_record(e, s); }
  Status stream_wait_event(StreamHandle s, EventHandle e) override {
    return rec.stream_wait_event(s, e);
  }
  Expected<bool> event_query(EventHandle e) override { return rec.event_query(e); }
  Expected<float> event_elapsed_ms(EventHandle a, EventHandle b) override {
    return rec.event_elapsed_ms(a, b);
  }
  Status stream_synchronize(StreamHandle s) override { return rec.stream_synchronize(s); }
  Expected<DevicePtr> mem_alloc(std::uint64_t n, StreamHandle s) override {
    return rec.mem_alloc(n, s);
  }
  Status mem_free(DevicePtr p, StreamHandle s) override { return rec.mem_free(p, s); }
  Status mem_zero(DevicePtr p, std::uint64_t n, StreamHandle s) override {
    return rec.mem_zero(p, n, s);
  }
  Status copy_to_device(DevicePtr d, std::span<const std::byte> src, StreamHandle s) override {
    return rec.copy_to_device(d, src, s);
  }
  Status copy_to_device_async(DevicePtr d, std::span<const std::byte> src,
                              StreamHandle s) override {
    return rec.copy_to_device_async(d, src, s);
  }
  Status copy_to_host(std::span<std::byte> d, DevicePtr src, StreamHandle s) override {
    return rec.copy_to_host(d, src, s);
  }
  Status copy_device(DevicePtr d, DevicePtr src, std::uint64_t n, StreamHandle s) override {
    return rec.copy_device(d, src, n, s);
  }
  Expected<std::uint64_t> peak_allocated_bytes() override { return rec.peak_allocated_bytes(); }
  Expected<UniqueId> unique_id() override { return rec.unique_id(); }
  Expected<CommHandle> comm_init_rank(int n, const UniqueId& id, int r) override {
    return rec.comm_init_rank(n, id, r);
  }
  Expected<CommHandle> comm_split(CommHandle p, int c, int k) override {
    return rec.comm_split(p, c, k);
  }
  Status comm_abort(CommHandle c) override { return rec.comm_abort(c); }
  Status comm_destroy(CommHandle c) override { return rec.comm_destroy(c); }
  Status group_start() override { return rec.group_start(); }
  Status group_end() override { return rec.group_end(); }
  Status send(DevicePtr b, std::uint64_t n, DType t, int p, CommHandle c, StreamHandle s) override {
    return rec.send(b, n, t, p, c, s);
  }
  Status recv(DevicePtr b, std::uint64_t n, DType t, int p, CommHandle c, StreamHandle s) override {
    return rec.recv(b, n, t, p, c, s);
  }
  Status collective(Collective k, DevicePtr a, DevicePtr b, std::uint64_t n, DType t, int root,
                    CommHandle c, StreamHandle s) override {
    return rec.collective(k, a, b, n, t, root, c, s);
  }
  Status gemm(const Gemm& g, StreamHandle s) override { return rec.gemm(g, s); }
  Status launch(const KernelLaunch& k, StreamHandle s) override {
    launches.push_back(k);
    return rec.launch(k, s);
  }
};

TEST(AttentionPath, BlockLendsExactlyTheIrSizedDeltaPieceAsWorkspace) {
  auto model = model::resolve_model("tiny");
  ASSERT_TRUE(model.ok());
  auto dims = math::host_dims(*model, 64, 2);
  ASSERT_TRUE(dims.ok());
  // The IR's attention workspace (what schedules and the simulator size) is the two fp32
  // pieces the device scratch allocates: lse and delta.
  model::MicroBatchShape shape;
  shape.batch = 2;
  shape.seq_len = 64;
  EXPECT_EQ(static_cast<std::uint64_t>(model::attention_workspace_bytes(*model, shape)),
            attention_workspace_bytes(*dims));

  LaunchCapture api;
  auto stream = api.stream_create();
  ASSERT_TRUE(stream.ok());
  auto scratch = allocate_scratch(api, *stream, *dims, DType::bf16, 1);
  ASSERT_TRUE(scratch.ok());
  const std::uint64_t phi = math::layer_layout(*dims).size;
  auto w = api.mem_alloc(phi * 2, *stream), dw = api.mem_alloc(phi * 2, *stream);
  const std::uint64_t TH = dims->tokens() * dims->hidden * 2;
  auto x = api.mem_alloc(TH, *stream), y = api.mem_alloc(TH, *stream),
       dx = api.mem_alloc(TH, *stream);
  ASSERT_TRUE(w.ok() && dw.ok() && x.ok() && y.ok() && dx.ok());
  ComputeEnv env{&api, *stream, *dims, DType::bf16, *scratch};
  ASSERT_TRUE(layers_forward(env, *w, 1, *x, *y).ok());
  ASSERT_TRUE(layers_backward(env, *w, 1, *x, *y, *dx, *dw).ok());
  EXPECT_TRUE(api.rec.errors().empty()) << api.rec.errors().front();
  int fwd = 0, bwd = 0;
  const auto lent =
      static_cast<std::int64_t>(attention_workspace_bytes(*dims) - attention_lse_bytes(*dims));
  for (const KernelLaunch& k : api.launches) {
    if (k.kernel == Kernel::attention_forward) {
      ++fwd;
      EXPECT_EQ(k.p[3], scratch->lse);
      EXPECT_EQ(k.p[5], scratch->delta);  // the lent workspace
      EXPECT_EQ(k.s[4], 0);               // causal
      EXPECT_EQ(k.s[5], lent);
    } else if (k.kernel == Kernel::attention_backward) {
      ++bwd;
      EXPECT_EQ(k.p[9], scratch->delta);
      EXPECT_EQ(k.s[5], lent);
    }
  }
  // The backward recomputes the forward (full recomputation), then runs its own.
  EXPECT_GE(fwd, 1);
  EXPECT_EQ(bwd, 1);
}

}  // namespace
}  // namespace tawpipe::exec::device
