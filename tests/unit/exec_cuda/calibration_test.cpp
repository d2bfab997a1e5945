// The CUDA calibration's combination of per-rank figures (exec/device/calibration.h) and the
// profile it writes: a recorded 8-rank CUDA profile (kernel points at a block's shapes, launch
// overhead, NCCL collectives by size inside and across nodes, P2P send/recv) round-trips
// through the profile YAML byte for byte, and one slow GPU is flagged without moving the
// medians.
#include <gtest/gtest.h>

#include "common/model/presets.h"
#include "common/profile/profile.h"
#include "exec/device/calibration.h"
#include "exec/device/device_backend.h"
#include "exec/host/calibrate_comm.h"
#include "exec/recording/recording_api.h"

namespace tawpipe::exec::device {
namespace {

using model::KernelClass;
using profile::CommMeasurement;
using profile::CommOp;
using profile::CommPoint;
using profile::CommScope;
using profile::KernelPoint;

/// What rank 0 of a calibration on the llama-h4096 block (T = 4096 tokens) measured.
profile::DeviceProfile rank0_shape() {
  profile::DeviceProfile d;
  d.dtype = "bf16";
  auto gemm = [](std::int64_t m, std::int64_t n, std::int64_t k, double tflops) {
    KernelPoint p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.rate = FlopRate::flops_per_second(tflops * 1e12);
    return p;
  };
  d.kernels[KernelClass::gemm] = {gemm(4096, 4096, 4096, 250), gemm(4096, 11008, 4096, 262),
                                  gemm(4096, 4096, 11008, 255)};
  KernelPoint attn;
  attn.batch = 1;
  attn.heads = 32;
  attn.seq = 4096;
  attn.head_dim = 128;
  attn.causal = true;
  attn.rate = FlopRate::flops_per_second(120e12);
  d.kernels[KernelClass::attention_fwd] = {attn};
  attn.rate = FlopRate::flops_per_second(95e12);
  d.kernels[KernelClass::attention_bwd] = {attn};
  KernelPoint norm;
  norm.bytes = Bytes::mib(64);
  norm.bandwidth = Bandwidth::gigabytes_per_second(1500);
  d.kernels[KernelClass::norm] = {norm};
  d.launch_overhead = SimTime::from_seconds(4.5e-6);
  d.memory_bandwidth = Bandwidth::gigabytes_per_second(1700);
  return d;
}

std::vector<double> scaled(const std::vector<double>& f, double factor) {
  std::vector<double> out = f;
  for (std::size_t i = 0; i + 2 < out.size(); ++i)
    out[i] *= factor;
  return out;
}

TEST(CudaCalibration, MedianFiguresAndTheSlowGpuIsFlagged) {
  const profile::DeviceProfile shape = rank0_shape();
  const std::vector<double> base = device_figures(shape);
  ASSERT_EQ(base.size(), 8u);  // 3 gemm + 2 attention + 1 norm + launch + memory
  // Eight ranks: within 2% of each other, except rank 5 at 70% (a throttled GPU).
  std::vector<std::vector<double>> figures;
  const double jitter[8] = {1.0, 1.01, 0.99, 1.02, 0.98, 0.7, 1.0, 1.01};
  for (double j : jitter)
    figures.push_back(scaled(base, j));
  const profile::DeviceProfile d = combine_ranks(shape, figures);
  // The median of {0.7, 0.98, 0.99, 1.0, 1.0, 1.01, 1.01, 1.02} is 1.0: rank 0's figures.
  EXPECT_NEAR(d.kernels.at(KernelClass::gemm)[1].rate->flops_per_second(), 262e12, 1e6);
  ASSERT_TRUE(d.ranks.has_value());
  EXPECT_EQ(d.ranks->count, 8);
  EXPECT_EQ(d.ranks->outliers, std::vector<int>{5});
  // Scores: the geometric mean over 8 figures of which 6 scale (launch and memory do not):
  // rank 5 scores 0.7^(6/8), rank 3 1.02^(6/8); spread = (1.02^0.75 - 0.7^0.75) / median.
  EXPECT_GT(d.ranks->spread, 0.2);
  EXPECT_LT(d.ranks->spread, 0.26);
}

TEST(CudaCalibration, OpOverheadIsAFigureCombinedLikeTheLaunchOverhead) {
  profile::DeviceProfile shape = rank0_shape();
  shape.op_overhead = SimTime::from_seconds(20e-6);
  const std::vector<double> base = device_figures(shape);
  ASSERT_EQ(base.size(), 9u);  // ... launch, op, memory
  EXPECT_DOUBLE_EQ(base[7], 20e-6);
  std::vector<std::vector<double>> figures(3, base);
  figures[0][7] = 10e-6;
  figures[2][7] = 90e-6;
  const profile::DeviceProfile d = combine_ranks(shape, figures);
  ASSERT_TRUE(d.op_overhead.has_value());
  EXPECT_NEAR(d.op_overhead->seconds(), 20e-6, 1e-12);  // median of 10, 20, 90 us
}

/// `tawexec calibrate --backend cuda` times the host calibration's chain of copies through
/// DeviceBackend: here over the recording DeviceApi, each op one stream-ordered device copy.
TEST(CudaCalibration, OpOverheadChainRunsThroughTheDeviceBackend) {
  auto tiny = model::preset("tiny");
  ASSERT_TRUE(tiny.ok());
  RecordingApi api;
  RecordingBootstrap boot(0, 1, 1);
  DeviceOptions o;
  o.model = *tiny;
  DeviceBackend backend(api, boot, o);
  const ir::Program p = host::op_overhead_program(50);
  auto per_op = host::time_per_op(p, backend, 0.0);
  // (The recorder's events carry no real time, so the figure itself means nothing here; a GPU
  // gives the span from the iteration's begin event to the last copy's end event per op.)
  ASSERT_TRUE(per_op.ok()) << per_op.error().message;
  EXPECT_TRUE(api.errors().empty()) << api.errors().front();
  std::size_t copies = 0;
  for (const Call& c : api.calls())
    copies += c.kind == Call::Kind::copy_device ? 1 : 0;
  EXPECT_EQ(copies, 3u * 50u);  // three iterations (one warm-up), 50 copies each
}

TEST(CudaCalibration, NicOutliersFromInterNodeBandwidth) {
  const std::vector<double> bw = {12.0, 12.1, 11.9, 6.0, 12.2, 12.0};
  EXPECT_EQ(slow_ranks(bw), std::vector<int>{3});
  EXPECT_TRUE(slow_ranks(std::vector<double>{5.0, 5.0}).empty());
}

TEST(CudaCalibration, RecordedCudaProfileRoundTripsByteForByte) {
  profile::Profile p;
  p.producer = "tawexec calibrate 0.1.0 (cuda backend, 16 ranks)";
  p.backend = profile::Backend::cuda;
  std::vector<std::vector<double>> figures(16, device_figures(rank0_shape()));
  figures[11] = scaled(figures[11], 0.5);
  p.devices["a100-sxm4-80gb"] = combine_ranks(rank0_shape(), figures);
  p.links["nvswitch"].bandwidth = Bandwidth::gigabytes_per_second(231.5);
  p.links["nvswitch"].latency = SimTime::from_seconds(9.5e-6);
  p.links["nic"].bandwidth = Bandwidth::gigabytes_per_second(11.25);
  p.links["nic"].latency = SimTime::from_seconds(21e-6);
  auto curve = [](CommOp op, CommScope scope, int ranks, double us_per_mib) {
    CommMeasurement m;
    m.op = op;
    m.scope = scope;
    m.ranks = ranks;
    for (std::uint64_t mib : {1u, 16u, 128u})
      m.points.push_back(
          CommPoint{Bytes::mib(mib),
                    SimTime::from_seconds(12e-6 + us_per_mib * 1e-6 * static_cast<double>(mib))});
    return m;
  };
  p.communication = {curve(CommOp::all_reduce, CommScope::intra_node, 8, 9.1),
                     curve(CommOp::all_gather, CommScope::intra_node, 8, 4.7),
                     curve(CommOp::reduce_scatter, CommScope::intra_node, 8, 4.9),
                     curve(CommOp::all_reduce, CommScope::inter_node, 2, 180.0),
                     curve(CommOp::sendrecv, CommScope::intra_node, 2, 4.4),
                     curve(CommOp::sendrecv, CommScope::inter_node, 2, 88.0)};
  const std::string first = profile::write_profile_yaml(p);
  auto read = profile::read_profile_yaml(first, "recorded.yaml");
  ASSERT_TRUE(read.ok()) << read.error().to_string();
  EXPECT_EQ(profile::write_profile_yaml(*read), first);
  EXPECT_EQ(read->communication.size(), 6u);
  EXPECT_EQ(read->backend, profile::Backend::cuda);
  EXPECT_EQ(read->devices.at("a100-sxm4-80gb").ranks->outliers, std::vector<int>{11});
  EXPECT_NE(first.find("inter_node"), std::string::npos);
}

}  // namespace
}  // namespace tawpipe::exec::device
