// Calibration profile: YAML round trip, errors with file:line:col and key path, and its effect
// on the compute and network models.
#include <gtest/gtest.h>

#include "common/profile/profile.h"
#include "sim/collectives_table.h"
#include "sim/compute/compute_model.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe {
namespace {

const char* kProfile = R"(format_version: 1
producer: "tawexec calibrate test"
devices:
  a100-sxm4-80gb:
    dtype: bf16
    gemm: 200TFLOP/s
    memory_bandwidth: 1500GB/s
    launch_overhead: 8us
links:
  nvswitch:
    bandwidth: 200GB/s
    latency: 2us
)";

TEST(Profile, RoundTrip) {
  auto p = profile::read_profile_yaml(kProfile, "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->producer, "tawexec calibrate test");
  ASSERT_EQ(p->devices.count("a100-sxm4-80gb"), 1u);
  EXPECT_DOUBLE_EQ(
      p->devices["a100-sxm4-80gb"].kernels.at(model::KernelClass::gemm)[0].rate->teraflops(),
      200.0);
  EXPECT_EQ(p->devices["a100-sxm4-80gb"].kernels.count(model::KernelClass::attention_fwd), 0u);
  const std::string text = profile::write_profile_yaml(*p);
  auto back = profile::read_profile_yaml(text, "back.yaml");
  ASSERT_TRUE(back.ok()) << back.error().to_string() << "\n" << text;
  EXPECT_EQ(*back, *p);
  EXPECT_EQ(profile::write_profile_yaml(*back), text);
}

TEST(Profile, ErrorsCarryLocationAndKeyPath) {
  auto e = profile::read_profile_yaml("format_version: 1\nlinks:\n  nvswich: {latency: 1us}\n",
                                      "p.yaml");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().file, "p.yaml");
  EXPECT_EQ(e.error().line, 3);
  EXPECT_NE(e.error().message.find("did you mean 'nvswitch'"), std::string::npos)
      << e.error().to_string();
  auto u =
      profile::read_profile_yaml("format_version: 1\ndevices:\n  a100:\n    gemm: 200\n", "p.yaml");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().key_path, "devices.a100.gemm");
  EXPECT_EQ(u.error().line, 4);
  EXPECT_FALSE(profile::read_profile_yaml("format_version: 3\n", "p.yaml").ok());
  EXPECT_FALSE(profile::read_profile_yaml("", "p.yaml").ok());
  EXPECT_FALSE(profile::read_profile_yaml("[1, 2", "p.yaml").ok());
}

// The profile replaces GEMM rate, HBM bandwidth, launch overhead, and the NVSwitch link rate and
// latency: a ring all-gather on dgx-a100 then moves 7/8 S per edge at 200 GB/s (below the
// channels' 12 x 20 GB/s), with NCCL's Simple latency 8.4 + 7 x 3.4 us (its step latency is a
// fit to NVLink hardware and replaces the hop latency; nccl_tuning.h).
TEST(Profile, OverridesComputeAndLinks) {
  auto p = profile::read_profile_yaml(kProfile, "p.yaml");
  ASSERT_TRUE(p.ok());
  const topo::Topology t = sim::testing::shipped("dgx-a100");
  auto rates = sim::device_rates(t.device(0), "bf16", &*p);
  ASSERT_TRUE(rates.ok());
  EXPECT_DOUBLE_EQ(rates->gemm_flops_per_second, 200e12);
  EXPECT_DOUBLE_EQ(rates->memory_bytes_per_second, 1500e9);
  EXPECT_EQ(rates->launch_overhead, SimTime::us(8));
  EXPECT_DOUBLE_EQ(rates->attention_fwd_flops_per_second, 312e12 * 0.73);
  EXPECT_DOUBLE_EQ(rates->peak_flops_per_second, 312e12);
  sim::CollectiveTableRequest req;
  req.op = "all_gather";
  req.min_bytes = req.max_bytes = 1ull << 30;
  auto rows = sim::collectives_table(t, req, &*p);
  ASSERT_TRUE(rows.ok());
  EXPECT_NEAR(rows->front().time.seconds(),
              (8.4 + 7 * 3.4) * 1e-6 + 7.0 / 8.0 * static_cast<double>(1ull << 30) / 200e9, 2e-12);
}

// Compute model without a profile: sum over classes of max(FLOPs / rate, bytes / bandwidth).
TEST(ComputeModel, RooflinePerOpClass) {
  const topo::Topology t = sim::testing::shipped("dgx-a100");
  auto r = sim::device_rates(t.device(0), "fp16", nullptr);
  ASSERT_TRUE(r.ok());
  ir::Cost c;
  c.flops = {1e12, 1e11, 1e9};
  c.bytes = {1e9, 1e8, 1e10};
  // gemm: max(1e12 / (312e12 * .86), 1e9 / (2039e9 * .8)); attention fwd: max(1e11 / (312e12 *
  // .73), 1e8 / (2039e9 * .8)); elementwise: max(1e9 / 19.5e12, 1e10 / (2039e9 * .7)).
  const double expected = std::max(1e12 / (312e12 * .86), 1e9 / (2039e9 * .8)) +
                          std::max(1e11 / (312e12 * .73), 1e8 / (2039e9 * .8)) +
                          std::max(1e9 / 19.5e12, 1e10 / (2039e9 * .7)) + 2e-6;
  EXPECT_NEAR(sim::compute_time(c, *r, false).seconds(), expected, 2e-12);
  // Backward uses the attention backward efficiency.
  const double bwd = expected - 1e11 / (312e12 * .73) + 1e11 / (312e12 * .63);
  EXPECT_NEAR(sim::compute_time(c, *r, true).seconds(), bwd, 2e-12);
  EXPECT_FALSE(sim::device_rates(t.device(0), "fp8", nullptr).ok());
}

}  // namespace
}  // namespace tawpipe
