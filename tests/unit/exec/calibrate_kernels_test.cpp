// The memory-bound figures of `tawexec calibrate --backend host` (exec/host/calibrate_kernels.h):
// they must sit at the byte counts of the run's kernels, so that the simulator's by-bytes
// interpolation meets each measured point exactly where a run's kernel is.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include <gtest/gtest.h>

#include "common/model/presets.h"
#include "exec/host/calibrate_comm.h"
#include "exec/host/calibrate_kernels.h"
#include "exec/math/dims.h"

namespace tawpipe::exec::host {
namespace {

using model::KernelClass;

struct Workload {
  model::ModelConfig cfg;
  math::Dims dims;
};

Workload cpu_h256(std::int64_t seq) {
  auto cfg = model::preset("cpu-h256");
  EXPECT_TRUE(cfg.ok());
  auto dims = math::host_dims(*cfg, seq, 1);
  EXPECT_TRUE(dims.ok());
  return {*cfg, *dims};
}

const MemoryFigure* find(const std::vector<MemoryFigure>& figures, KernelClass cls, double bytes) {
  for (const MemoryFigure& f : figures)
    if (f.cls == cls && f.model_bytes == bytes) return &f;
  return nullptr;
}

// The byte counts below are the kernels of the IRs validate-host runs on 2x2-cpu (cpu-h256,
// seq 256, 4 layers per rank, 4 ranks; `tawsim --emit-ir`, the "costs" rows): WeiPipe's and
// TawPipe's grad_accumulate of a block, FSDP's of a quarter layer, the in-layer residual add,
// AdamW over a block and over a piece.
TEST(CalibrateKernels, FiguresSitAtTheRunsKernelBytes) {
  const Workload s = cpu_h256(256);
  const auto figures = memory_figures(s.cfg, s.dims, 4, 4);
  const MemoryFigure* block_acc = find(figures, KernelClass::residual, 38559744.0);
  const MemoryFigure* piece_acc = find(figures, KernelClass::residual, 3.0 * 4.0 * 200832.0);
  const MemoryFigure* add = find(figures, KernelClass::residual, 786432.0);
  const MemoryFigure* block_opt = find(figures, KernelClass::optimizer, 28.0 * 3213312.0);
  const MemoryFigure* piece_opt = find(figures, KernelClass::optimizer, 28.0 * 200832.0);
  ASSERT_NE(block_acc, nullptr);
  ASSERT_NE(piece_acc, nullptr);
  ASSERT_NE(add, nullptr);
  ASSERT_NE(block_opt, nullptr);
  ASSERT_NE(piece_opt, nullptr);
  // Weight-sized operands are cold (rotated), activation-sized ones hot.
  EXPECT_TRUE(block_acc->cold);
  EXPECT_TRUE(piece_acc->cold);
  EXPECT_FALSE(add->cold);
  EXPECT_TRUE(block_opt->cold);
  EXPECT_EQ(block_acc->kernel, MemoryFigure::Kernel::accumulate);
  EXPECT_EQ(block_opt->kernel, MemoryFigure::Kernel::adamw);
  EXPECT_EQ(block_acc->elements, 3213312u);
  // The embedding forward gathers T rows: ids (4 B per token) + read and write of T x H floats.
  EXPECT_NE(find(figures, KernelClass::embedding, 4.0 * 256 + 2.0 * 4.0 * 256 * 256), nullptr);
  // A cold copy of a block.
  const MemoryFigure* block_copy = find(figures, KernelClass::copy, 2.0 * 4.0 * 3213312.0);
  ASSERT_NE(block_copy, nullptr);
  EXPECT_TRUE(block_copy->cold);
  // A cold zero fill of a block (host.zero_bandwidth): 4 bytes written per float.
  const auto zero = std::find_if(figures.begin(), figures.end(), [](const MemoryFigure& f) {
    return f.kernel == MemoryFigure::Kernel::zero;
  });
  ASSERT_NE(zero, figures.end());
  EXPECT_EQ(zero->elements, 3213312u);
  EXPECT_DOUBLE_EQ(zero->model_bytes, 4.0 * 3213312.0);
  EXPECT_TRUE(zero->cold);
  // RoPE and the loss have figures of their own (not the norm's): RoPE on q and k at the
  // layer's rope bytes (read and write of T x 2H floats), the loss over T x V (V = 256) at the
  // head's softmax_xent + softmax_xent_bwd bytes (265216 + 526336, common/model/kernels.cpp).
  const MemoryFigure* rope = find(figures, KernelClass::rope, 2.0 * 4.0 * 256 * 512);
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ(rope->kernel, MemoryFigure::Kernel::rope);
  EXPECT_EQ(rope->elements, 256u * 512u);
  const MemoryFigure* loss = find(figures, KernelClass::softmax_xent, 265216.0 + 526336.0);
  ASSERT_NE(loss, nullptr);
  EXPECT_EQ(loss->kernel, MemoryFigure::Kernel::softmax_xent);
  EXPECT_EQ(loss->elements, 256u * 256u);
}

TEST(CalibrateKernels, OneFigurePerClassAndSize) {
  const Workload s = cpu_h256(256);
  // One rank: an FSDP piece is the whole layer; one layer per rank: the block is that layer.
  // The piece and block figures then coincide and must appear once (the simulator's
  // interpolation divides by the log of the ratio of two points' sizes).
  const auto figures = memory_figures(s.cfg, s.dims, 1, 1);
  std::set<std::pair<KernelClass, double>> seen;
  for (const MemoryFigure& f : figures)
    EXPECT_TRUE(seen.insert({f.cls, f.model_bytes}).second)
        << model::to_string(f.cls) << " twice at " << f.model_bytes << " bytes";
  const auto n = std::count_if(figures.begin(), figures.end(), [](const MemoryFigure& f) {
    return f.cls == KernelClass::optimizer;
  });
  EXPECT_EQ(n, 1);
}

TEST(CalibrateKernels, RotationFillsThePool) {
  EXPECT_EQ(rotation_sets(1e6, false), 1u);
  EXPECT_EQ(rotation_sets(25.7e6, true), 3u);  // 64 MiB / 25.7 MB, rounded up
  EXPECT_EQ(rotation_sets(1e9, true), 2u);     // never fewer than two sets
  EXPECT_GE(static_cast<double>(rotation_sets(1e6, true)) * 1e6, kColdPoolBytes);
}

TEST(CalibrateKernels, PointsAreSortedAndCarryTheMeasuredBandwidth) {
  std::vector<MemoryFigure> figures(4);
  figures[0] = {MemoryFigure::Kernel::accumulate, KernelClass::residual, "big", 100, 4e6, true};
  figures[1] = {MemoryFigure::Kernel::residual_add, KernelClass::residual, "small", 10, 1e6, false};
  figures[2] = {MemoryFigure::Kernel::copy, KernelClass::copy, "unmeasured", 10, 2e6, false};
  figures[3] = {MemoryFigure::Kernel::zero, KernelClass::copy, "zero fill", 10, 3e6, true};
  const auto points = memory_points(figures, {2e-3, 1e-4, -1.0, 1e-3});
  ASSERT_EQ(points.count(KernelClass::residual), 1u);
  // No positive time: no point; the zero fill is host.zero_bandwidth, not a copy point.
  EXPECT_EQ(points.count(KernelClass::copy), 0u);
  const auto& r = points.at(KernelClass::residual);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].bytes->count(), 1000000u);
  EXPECT_DOUBLE_EQ(r[0].bandwidth->bytes_per_second(), 1e10);
  EXPECT_EQ(r[1].bytes->count(), 4000000u);
  EXPECT_DOUBLE_EQ(r[1].bandwidth->bytes_per_second(), 2e9);
  EXPECT_FALSE(r[0].flat());
}

// The cold communication curves' buffer rotation (exec/host/calibrate_comm.h): consecutive calls
// use different page-aligned sets, a set comes back only after the pool's others, and every
// set lies inside the pools calibration allocates.
TEST(CalibrateComm, ColdRotationCyclesThroughThePool) {
  constexpr std::uint64_t kPool = 64ull << 20;
  EXPECT_EQ(cold_stride(1), 4096u);
  EXPECT_EQ(cold_stride(4096), 4096u);
  EXPECT_EQ(cold_stride(1 << 20), 1u << 20);
  EXPECT_EQ(cold_stride((1 << 20) + 1), (1u << 20) + 4096u);
  for (const std::uint64_t bytes : {1ull << 20, 4ull << 20, 12853248ull, 16ull << 20}) {
    const std::uint64_t sets = cold_sets(bytes, kPool);
    EXPECT_EQ(sets, (kPool + cold_stride(bytes) - 1) / cold_stride(bytes)) << bytes;
    std::set<std::uint64_t> seen;
    for (std::uint64_t call = 0; call < sets; ++call) {
      const std::uint64_t at = cold_offset(bytes, call, kPool);
      EXPECT_EQ(at % 4096, 0u);
      EXPECT_LE(at + bytes, cold_pool_capacity(kPool, 16ull << 20)) << bytes << " " << call;
      seen.insert(at);
    }
    EXPECT_EQ(seen.size(), sets) << bytes;  // every set once per cycle
    EXPECT_EQ(cold_offset(bytes, sets, kPool), cold_offset(bytes, 0, kPool));
    EXPECT_GE(static_cast<double>(sets * bytes), 0.75 * static_cast<double>(kPool)) << bytes;
  }
  // A message larger than half the pool still alternates between two sets.
  EXPECT_NE(cold_offset(48ull << 20, 0, kPool), cold_offset(48ull << 20, 1, kPool));
  EXPECT_LE(cold_offset(48ull << 20, 1, kPool) + (48ull << 20),
            cold_pool_capacity(kPool, 48ull << 20));
}

// The GEMM loop of the compute figures and of the wake-up figures beside them: the block's six
// shapes in turn, B and C rotated over as many sets as the rank's layers' weights fill, so that
// a set comes back only after the others (as a layer's weight after the rank's other layers).
TEST(CalibrateKernels, BlockGemmsRotateTheWeightOperandsOverTheLayersWeights) {
  const Workload w = cpu_h256(256);
  const std::vector<GemmShape> shapes = block_gemm_shapes(w.dims);
  ASSERT_EQ(shapes.size(), 6u);
  const std::size_t T = w.dims.tokens(), H = w.dims.hidden, F = w.dims.ffn;
  EXPECT_DOUBLE_EQ(shapes[1].flops(), 2.0 * static_cast<double>(T * F * H));
  EXPECT_TRUE(shapes[4].trans_a);
  const double weight_bytes = 4.0 * 12.0 * static_cast<double>(H * H);  // ~a layer's weights
  BlockGemms gemms(shapes, weight_bytes);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const double set_bytes =
        4.0 * static_cast<double>(shapes[i].k * shapes[i].n + shapes[i].m * shapes[i].n);
    EXPECT_EQ(gemms.sets(i), static_cast<std::size_t>(std::ceil(weight_bytes / set_bytes))) << i;
    EXPECT_GE(static_cast<double>(gemms.sets(i)) * set_bytes, weight_bytes) << i;
  }
  // Every operand set starts on a page, as the run's buffers do (common/aligned.h).
  for (std::size_t i = 0; i < shapes.size(); ++i)
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(gemms.next_b(i)) % kBufferAlignment, 0u) << i;
  // next(): the shapes in turn, each call's flops; flops_of_call says the same for any call.
  std::vector<const float*> first_b;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    first_b.push_back(gemms.next_b(i));
  for (std::uint64_t call = 0; call < 2 * shapes.size(); ++call) {
    const std::size_t i = call % shapes.size();
    const float* b = gemms.next_b(i);
    EXPECT_DOUBLE_EQ(gemms.next(), shapes[i].flops()) << call;
    EXPECT_DOUBLE_EQ(gemms.flops_of_call(call), shapes[i].flops()) << call;
    // It ran the GEMM: C = A B with A = 0.5 and B = 0.25 everywhere, k products a sum.
    const float* c = gemms.last_c(i);
    EXPECT_EQ(c, b + shapes[i].k * shapes[i].n);
    EXPECT_FLOAT_EQ(c[0], 0.125f * static_cast<float>(shapes[i].k)) << call;
    EXPECT_FLOAT_EQ(c[shapes[i].m * shapes[i].n - 1], 0.125f * static_cast<float>(shapes[i].k));
  }
  // run(i) moves shape i's operands to its next set, and back to the first after all of them.
  const std::size_t i = 1;
  ASSERT_GE(gemms.sets(i), 2u);
  std::set<const float*> seen;
  const float* start = gemms.next_b(i);
  for (std::size_t s = 0; s < gemms.sets(i); ++s) {
    seen.insert(gemms.next_b(i));
    gemms.run(i);
  }
  EXPECT_EQ(seen.size(), gemms.sets(i));
  EXPECT_EQ(seen.count(first_b[i]), 1u);  // a whole cycle: the first set among them
  EXPECT_EQ(gemms.next_b(i), start);      // and back where it began
  const float* other = gemms.next_b(0);
  gemms.run(i);
  EXPECT_EQ(gemms.next_b(0), other);  // shape 0's operands stay where they were
}

}  // namespace
}  // namespace tawpipe::exec::host
