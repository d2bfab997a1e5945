// Calibration profile schema v2: byte-identical round trip, v1 files upgraded to flat points,
// and errors with file:line:col, key path and "did you mean".
#include "common/profile/profile.h"

#include <gtest/gtest.h>

namespace tawpipe::profile {
namespace {

using model::KernelClass;

// A canonical v2 file: exactly what write_profile_yaml prints, so reading and writing it must
// give the same bytes.
const char* kCanonical = R"yaml(# tawpipe calibration profile (schema: common/profile/profile.h)
format_version: 2
producer: "tawexec calibrate 0.2.0 (host backend, 4 ranks)"
backend: host
devices:
  a100-sxm4-80gb:
    dtype: bf16
    launch_overhead: 4us
    op_overhead: 12us
    kernels:
      gemm:
        - {m: 16384, n: 3072, k: 1024, rate: 180TFLOP/s}
        - {m: 4096, n: 4096, k: 4096, batch: 2, rate: 250TFLOP/s}
      attention_fwd:
        - {batch: 1, heads: 32, seq: 16384, head_dim: 64, causal: true, rate: 150TFLOP/s}
      norm:
        - {bytes: 64MiB, bandwidth: 1200GB/s}
        - {bandwidth: 900GB/s}
    ranks: {count: 24, spread: 0.03, outliers: [17]}
links:
  nvswitch: {bandwidth: 274GB/s, latency: 600ns}
communication:
  - {op: all_reduce, scope: intra_node, ranks: 8,
     points: [{size: 1MiB, time: 31us}, {size: 64MiB, time: 410us}]}
  - {op: sendrecv, scope: inter_node, ranks: 2,
     points: [{size: 4KiB, time: 9us}]}
  - {op: sendrecv, scope: shared_memory, ranks: 2,
     points: [{size: 4KiB, time: 12us, cpu: 7us}, {size: 16MiB, time: 5ms, cpu: 3ms}]}
  - {op: broadcast, scope: shared_core, ranks: 2,
     points: [{size: 4KiB, time: 30us, cpu: 10us, root_cpu: 9us, member_cpu: 10us}, {size: 16MiB, time: 4ms, cpu: 2ms, root_cpu: 1500us, member_cpu: 2ms}]}
  - {op: sendrecv, scope: shared_memory, ranks: 2, cold_pool: 64MiB,
     points: [{size: 1MiB, time: 300us, cpu: 250us}, {size: 16MiB, time: 7ms, cpu: 6ms}]}
  - {op: all_gather, scope: shared_memory, ranks: 2, after_compute: 4ms,
     points: [{size: 1MiB, time: 350us, cpu: 300us}, {size: 16MiB, time: 8ms, cpu: 7ms}]}
host:
  cores_per_host: 2
  ranks_per_core: 2
  wakeup_cost: 50us
  wakeup_latency: 120us
  wakeup_cost_long: 40us
  wakeup_cost_shared: 65us
  wakeup_cost_long_shared: 45us
  zero_bandwidth: 12GB/s
noise:
  work: "sgemm 128x256x256 x8"
  quantum: 1020us
  units:
    - [1, 1.0021, 0.9987, 1.341, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
       1.5, 0.99]
    - [0.998, 2.25]
)yaml";

TEST(ProfileV2, ReadsEveryField) {
  auto p = read_profile_yaml(kCanonical, "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->format_version, 2);
  EXPECT_EQ(p->backend, Backend::host);
  const DeviceProfile& d = p->devices.at("a100-sxm4-80gb");
  EXPECT_EQ(d.launch_overhead, SimTime::us(4));
  EXPECT_EQ(d.op_overhead, SimTime::us(12));
  ASSERT_EQ(d.kernels.at(KernelClass::gemm).size(), 2u);
  const KernelPoint& g = d.kernels.at(KernelClass::gemm)[0];
  EXPECT_EQ(g.m, 16384);
  EXPECT_EQ(g.n, 3072);
  EXPECT_EQ(g.k, 1024);
  EXPECT_DOUBLE_EQ(g.rate->teraflops(), 180.0);
  EXPECT_FALSE(g.flat());
  const KernelPoint& a = d.kernels.at(KernelClass::attention_fwd)[0];
  EXPECT_EQ(a.head_dim, 64);
  EXPECT_EQ(a.causal, true);
  const auto& norm = d.kernels.at(KernelClass::norm);
  EXPECT_EQ(*norm[0].bytes, Bytes::mib(64));
  EXPECT_DOUBLE_EQ(norm[0].bandwidth->bytes_per_second(), 1200e9);
  EXPECT_TRUE(norm[1].flat());
  ASSERT_TRUE(d.ranks.has_value());
  EXPECT_EQ(d.ranks->count, 24);
  EXPECT_DOUBLE_EQ(d.ranks->spread, 0.03);
  EXPECT_EQ(d.ranks->outliers, std::vector<int>{17});
  ASSERT_EQ(p->communication.size(), 6u);
  EXPECT_EQ(p->communication[0].op, CommOp::all_reduce);
  EXPECT_EQ(p->communication[0].scope, CommScope::intra_node);
  EXPECT_EQ(p->communication[0].ranks, 8);
  EXPECT_EQ(p->communication[0].points[1].size, Bytes::mib(64));
  EXPECT_EQ(p->communication[0].points[1].time, SimTime::us(410));
  EXPECT_EQ(p->communication[1].op, CommOp::sendrecv);
  EXPECT_FALSE(p->communication[1].points[0].cpu.has_value());
  EXPECT_EQ(p->communication[2].points[1].cpu, SimTime::ms(3));
  EXPECT_EQ(p->communication[3].scope, CommScope::shared_core);
  EXPECT_EQ(p->communication[3].points[1].root_cpu, SimTime::us(1500));
  EXPECT_EQ(p->communication[3].points[1].member_cpu, SimTime::ms(2));
  EXPECT_FALSE(p->communication[2].points[1].root_cpu.has_value());
  EXPECT_FALSE(p->communication[3].cold_pool.has_value());
  EXPECT_EQ(p->communication[4].cold_pool, Bytes::mib(64));
  EXPECT_EQ(p->communication[4].points[0].time, SimTime::us(300));
  EXPECT_FALSE(p->communication[4].after_compute.has_value());
  EXPECT_EQ(p->communication[5].after_compute, SimTime::ms(4));
  EXPECT_FALSE(p->communication[5].cold_pool.has_value());
  EXPECT_EQ(p->host->cores_per_host, 2);
  EXPECT_EQ(p->host->wakeup_cost, SimTime::us(50));
  EXPECT_EQ(p->host->wakeup_latency, SimTime::us(120));
  EXPECT_EQ(p->host->wakeup_cost_long, SimTime::us(40));
  EXPECT_EQ(p->host->wakeup_cost_shared, SimTime::us(65));
  EXPECT_EQ(p->host->wakeup_cost_long_shared, SimTime::us(45));
  ASSERT_TRUE(p->host->zero_bandwidth.has_value());
  EXPECT_DOUBLE_EQ(p->host->zero_bandwidth->bytes_per_second(), 12e9);
  EXPECT_EQ(p->links.at("nvswitch").latency, SimTime::ns(600));
  ASSERT_TRUE(p->noise.has_value());
  EXPECT_EQ(p->noise->work, "sgemm 128x256x256 x8");
  EXPECT_EQ(p->noise->quantum, SimTime::us(1020));
  ASSERT_EQ(p->noise->units.size(), 2u);
  ASSERT_EQ(p->noise->units[0].size(), 18u);
  EXPECT_DOUBLE_EQ(p->noise->units[0][3], 1.341);
  EXPECT_DOUBLE_EQ(p->noise->units[0][17], 0.99);
  EXPECT_EQ(p->noise->units[1], (std::vector<double>{0.998, 2.25}));
}

TEST(ProfileV2, RoundTripIsByteIdentical) {
  auto p = read_profile_yaml(kCanonical, "p.yaml");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  const std::string text = write_profile_yaml(*p);
  EXPECT_EQ(text, kCanonical);
  auto back = read_profile_yaml(text, "back.yaml");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, *p);
  // A built profile (as calibration fills it) round-trips too.
  Profile built;
  built.producer = "unit test";
  built.backend = Backend::cuda;
  DeviceProfile& d = built.devices["h100-sxm5-80gb"];
  d.dtype = "bf16";
  d.memory_bandwidth = Bandwidth::gigabytes_per_second(3000);
  d.kernels[KernelClass::gemm] = {KernelPoint::flat_rate(FlopRate::teraflops(700))};
  set_flat_memory_bound(d, Bandwidth::gigabytes_per_second(2500));
  built.host = HostProfile{};
  auto again = read_profile_yaml(write_profile_yaml(built), "built.yaml");
  ASSERT_TRUE(again.ok()) << again.error().to_string() << "\n" << write_profile_yaml(built);
  EXPECT_EQ(*again, built);
  EXPECT_EQ(write_profile_yaml(*again), write_profile_yaml(built));
}

// v1: flat device rates become flat points (elementwise -> every memory-bound class).
TEST(ProfileV2, Version1Loads) {
  auto p = read_profile_yaml(R"(format_version: 1
producer: "old"
devices:
  a100-sxm4-80gb:
    gemm: 200TFLOP/s
    elementwise: 1500GB/s
    memory_bandwidth: 1600GB/s
    launch_overhead: 8us
links:
  nvswitch:
    bandwidth: 200GB/s
)",
                             "v1.yaml");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->format_version, 2);
  const DeviceProfile& d = p->devices.at("a100-sxm4-80gb");
  ASSERT_EQ(d.kernels.at(KernelClass::gemm).size(), 1u);
  EXPECT_TRUE(d.kernels.at(KernelClass::gemm)[0].flat());
  EXPECT_DOUBLE_EQ(d.kernels.at(KernelClass::gemm)[0].rate->teraflops(), 200.0);
  EXPECT_EQ(d.kernels.count(KernelClass::attention_fwd), 0u);
  for (KernelClass k : {KernelClass::norm, KernelClass::copy, KernelClass::optimizer})
    EXPECT_DOUBLE_EQ(d.kernels.at(k)[0].bandwidth->bytes_per_second(), 1500e9);
  EXPECT_DOUBLE_EQ(d.memory_bandwidth->bytes_per_second(), 1600e9);
  EXPECT_EQ(d.launch_overhead, SimTime::us(8));
  // The upgraded profile writes as v2 and reads back equal.
  auto v2 = read_profile_yaml(write_profile_yaml(*p), "v2.yaml");
  ASSERT_TRUE(v2.ok()) << v2.error().to_string();
  EXPECT_EQ(*v2, *p);
  // v2-only keys are rejected in a v1 file.
  auto bad = read_profile_yaml("format_version: 1\nbackend: host\n", "v1.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("needs format_version: 2"), std::string::npos);
}

// A pooled profile concatenates its calibrations' noise traces (scripts/profiles.py): 16
// calibrations of ~5300 quanta per core are past the 65536 items other lists may hold, and must
// still read; the general bound still holds for every other list.
TEST(ProfileV2, NoiseTraceMayBeLongerThanOtherLists) {
  std::string units = "[";
  for (int i = 0; i < 100000; ++i)
    units += (i ? ", " : "") + std::string(i % 7 ? "1" : "1.5");
  units += "]";
  auto p = read_profile_yaml("format_version: 2\nnoise: {quantum: 1ms, units: [" + units + "]}\n",
                             "pooled.yaml");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  ASSERT_EQ(p->noise->units.size(), 1u);
  ASSERT_EQ(p->noise->units[0].size(), 100000u);
  EXPECT_DOUBLE_EQ(p->noise->units[0][7], 1.5);

  std::string many = "[";
  for (int i = 0; i <= 65536; ++i)
    many += (i ? ", [1]" : "[1]");
  many += "]";
  auto bad = read_profile_yaml("format_version: 2\nnoise: {quantum: 1ms, units: " + many + "}\n",
                               "p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().key_path, "noise.units");
  EXPECT_NE(bad.error().message.find("too many items"), std::string::npos)
      << bad.error().to_string();
}

Error error_of(const std::string& text) {
  auto p = read_profile_yaml(text, "p.yaml");
  EXPECT_FALSE(p.ok()) << text;
  return p.ok() ? Error{} : p.error();
}

TEST(ProfileV2, ErrorsCarryLocationKeyPathAndSuggestion) {
  const std::string head = "format_version: 2\ndevices:\n  a100:\n    kernels:\n";
  Error e = error_of(head + "      gemmm:\n        - {m: 1, n: 1, k: 1, rate: 1TFLOP/s}\n");
  EXPECT_EQ(e.file, "p.yaml");
  EXPECT_EQ(e.line, 5);
  EXPECT_NE(e.message.find("did you mean 'gemm'"), std::string::npos) << e.to_string();

  e = error_of(head + "      gemm:\n        - {m: 1, n: 1, k: 1, rate: 100}\n");
  EXPECT_EQ(e.key_path, "devices.a100.kernels.gemm[0].rate");
  EXPECT_EQ(e.line, 6);

  e = error_of(head + "      gemm:\n        - {m: 1, n: 1, rate: 1TFLOP/s}\n");
  EXPECT_EQ(e.key_path, "devices.a100.kernels.gemm[0]");
  EXPECT_NE(e.message.find("or none of them"), std::string::npos) << e.to_string();

  e = error_of(head + "      norm:\n        - {bytes: 1MiB, rate: 1TFLOP/s}\n");
  EXPECT_NE(e.message.find("unknown key 'rate'"), std::string::npos) << e.to_string();

  e = error_of(head + "      norm:\n        - {bytes: 1MiB}\n");
  EXPECT_NE(e.message.find("missing required key 'bandwidth'"), std::string::npos) << e.to_string();

  e = error_of(head +
               "      attention_fwd:\n        - {batch: 1, heads: 2, seq: 8, head_dim: 4, "
               "causal: maybe, rate: 1TFLOP/s}\n");
  EXPECT_EQ(e.key_path, "devices.a100.kernels.attention_fwd[0].causal");

  e = error_of(
      "format_version: 2\ncommunication:\n  - {op: all_reduc, scope: intra_node, ranks: "
      "8, points: []}\n");
  EXPECT_EQ(e.key_path, "communication[0].op");
  EXPECT_EQ(e.line, 3);
  EXPECT_NE(e.message.find("did you mean 'all_reduce'"), std::string::npos) << e.to_string();

  e = error_of(
      "format_version: 2\ncommunication:\n  - {op: sendrecv, scope: inter_node, ranks: "
      "2, points: [{size: 2MiB, time: 1us}, {size: 1MiB, time: 1us}]}\n");
  EXPECT_NE(e.message.find("increasing size"), std::string::npos) << e.to_string();

  e = error_of(
      "format_version: 2\ncommunication:\n  - {op: sendrecv, scope: shared_memory, ranks: "
      "2, cold_pool: 0B, points: [{size: 1MiB, time: 1us}]}\n");
  EXPECT_EQ(e.key_path, "communication[0].cold_pool");
  EXPECT_NE(e.message.find("must be positive"), std::string::npos) << e.to_string();

  e = error_of(
      "format_version: 2\ncommunication:\n  - {op: all_gather, scope: shared_memory, ranks: "
      "2, cold_pool: 64MiB, after_compute: 4ms, points: [{size: 1MiB, time: 1us}]}\n");
  EXPECT_EQ(e.key_path, "communication[0].after_compute");
  EXPECT_NE(e.message.find("cold or after compute"), std::string::npos) << e.to_string();

  e = error_of("format_version: 2\nbackend: gpu\n");
  EXPECT_EQ(e.key_path, "backend");
  e = error_of("format_version: 2\nhost: {cores_per_hosts: 2}\n");
  EXPECT_NE(e.message.find("did you mean 'cores_per_host'"), std::string::npos) << e.to_string();
  e = error_of("format_version: 2\nnoise: {quantum: 1ms, units: [[1, 0]]}\n");
  EXPECT_EQ(e.key_path, "noise.units[0][1]");
  e = error_of("format_version: 2\nnoise: {quantum: 0ms, units: [[1]]}\n");
  EXPECT_EQ(e.key_path, "noise.quantum");
  e = error_of("format_version: 2\nnoise: {quantum: 1ms, units: [[]]}\n");
  EXPECT_EQ(e.key_path, "noise.units[0]");
  e = error_of("format_version: 2\nnoise: {units: [[1]]}\n");
  EXPECT_NE(e.message.find("missing required key 'quantum'"), std::string::npos) << e.to_string();
  e = error_of("format_version: 3\n");
  EXPECT_EQ(e.key_path, "format_version");
  error_of("");
  error_of("[1, 2");
}

TEST(ProfileV2, DescribeNamesFileAndProducer) {
  EXPECT_EQ(describe_profile(nullptr, ""), "built-in");
  Profile p;
  p.producer = "tawexec calibrate";
  EXPECT_EQ(describe_profile(&p, "x.yaml"), "x.yaml (tawexec calibrate)");
}

}  // namespace
}  // namespace tawpipe::profile
