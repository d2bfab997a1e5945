#include "common/units.h"

#include <gtest/gtest.h>

#include <random>

namespace tawpipe {
namespace {

TEST(Units, ParsesBytesWithDecimalAndBinaryPrefixes) {
  EXPECT_EQ(parse_bytes("80GiB")->count(), 80ULL << 30);
  EXPECT_EQ(parse_bytes("1.5GB")->count(), 1500000000ULL);
  EXPECT_EQ(parse_bytes("4096 B")->count(), 4096ULL);
  EXPECT_EQ(parse_bytes("1e9B")->count(), 1000000000ULL);
  EXPECT_EQ(parse_bytes("512KiB")->count(), 512ULL * 1024);
}

TEST(Units, ParsesBandwidthBitsAndBytes) {
  // 200 Gb/s (HDR InfiniBand) is 25 GB/s; 10 GbE is 1.25 GB/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth("200Gb/s")->bytes_per_second(), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("10Gbps")->bytes_per_second(), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("300GB/s")->bytes_per_second(), 300e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5 GB/s")->bytes_per_second(), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1.5e9B/s")->bytes_per_second(), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s")->bytes_per_second(), 1073741824.0);
}

TEST(Units, ParsesTimeToWholePicoseconds) {
  EXPECT_EQ(parse_time("2us")->picoseconds(), 2'000'000);
  EXPECT_EQ(parse_time("800ns")->picoseconds(), 800'000);
  EXPECT_EQ(parse_time("1.5ms")->picoseconds(), 1'500'000'000);
  EXPECT_EQ(parse_time("0.5ps").ok(), false);
  EXPECT_EQ(parse_time("3 s")->picoseconds(), 3'000'000'000'000);
}

TEST(Units, ParsesFlopRates) {
  EXPECT_DOUBLE_EQ(parse_flop_rate("312TFLOP/s")->flops_per_second(), 312e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("19.5 TFLOPS")->flops_per_second(), 19.5e12);
}

TEST(Units, RejectsMissingUnitNegativeAndGarbage) {
  for (const char* bad : {"300", "-5GB/s", "GB/s", "", "  ", "12.5 GB/ss", "nanGB/s", "infGB/s",
                          "1e400GB/s", "5 furlongs"}) {
    auto r = parse_bandwidth(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(parse_bandwidth("300").error().message.find("missing unit"), std::string::npos);
  EXPECT_NE(parse_bandwidth("-5GB/s").error().message.find("negative"), std::string::npos);
  EXPECT_NE(parse_bytes("12 GB/s").error().message.find("unknown unit"), std::string::npos);
  EXPECT_FALSE(parse_bytes("0.3B").ok());    // not a whole number of bytes
  EXPECT_FALSE(parse_bytes("1e30TB").ok());  // absurd
  EXPECT_FALSE(parse_time("10").ok());
}

TEST(Units, FormatsAndRoundTripsExactly) {
  EXPECT_EQ(to_string(Bytes::gib(80)), "80GiB");
  EXPECT_EQ(to_string(Bytes(1500000000)), "1500MB");
  EXPECT_EQ(to_string(Bytes(4097)), "4097B");
  EXPECT_EQ(to_string(SimTime::us(2)), "2us");
  EXPECT_EQ(to_string(SimTime::ps(1500)), "1500ps");
  EXPECT_EQ(to_string(Bandwidth::gigabytes_per_second(12.5)), "12.5GB/s");
  EXPECT_EQ(to_string(FlopRate::teraflops(312)), "312TFLOP/s");

  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    const Bytes b(rng() >> 4);
    EXPECT_EQ(*parse_bytes(to_string(b)), b);
    const SimTime t = SimTime::ps(static_cast<std::int64_t>(rng() >> 4));
    EXPECT_EQ(*parse_time(to_string(t)), t);
    const double x = std::ldexp(static_cast<double>(rng() >> 11), -20);
    const Bandwidth bw = Bandwidth::bytes_per_second(x);
    EXPECT_EQ(*parse_bandwidth(to_string(bw)), bw) << to_string(bw);
    const FlopRate f = FlopRate::flops_per_second(x * 1e6);
    EXPECT_EQ(*parse_flop_rate(to_string(f)), f) << to_string(f);
  }
}

TEST(Units, TransferTimeRoundsUpToWholePicoseconds) {
  // 1 GB at 25 GB/s = 40 ms exactly.
  EXPECT_EQ(transfer_time(Bytes(1000000000), Bandwidth::gigabytes_per_second(25)), SimTime::ms(40));
  // 1 byte at 3 B/s = 333333333333.33 ps, rounded up.
  EXPECT_EQ(transfer_time(Bytes(1), Bandwidth::bytes_per_second(3)).picoseconds(), 333333333334);
}

TEST(Units, PrettyPrintsForTables) {
  EXPECT_EQ(pretty(Bytes(806400000)), "806.4 MB");
  EXPECT_EQ(pretty(Bandwidth::gigabytes_per_second(24)), "24.00 GB/s");
  EXPECT_EQ(pretty(SimTime::us(1250)), "1.250 ms");
}

}  // namespace
}  // namespace tawpipe
