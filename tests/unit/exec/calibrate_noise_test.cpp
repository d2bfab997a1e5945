// The noise trace of `tawexec calibrate --backend host` (exec/host/calibrate_noise.h): measured
// quantum durations per unit -> the profile's NoiseTrace (reference quantum, stretches).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/profile/profile.h"
#include "exec/host/calibrate_noise.h"

namespace tawpipe::exec::host {
namespace {

TEST(CalibrateNoise, QuantumIsTheMedianOverAllUnitsNotPerUnit) {
  // Unit 0 alone has median 1 ms, unit 1 alone 2 ms; over all seven quanta the median is 2 ms
  // (1, 1, 1, 2, 2, 2, 4 ms).
  auto t = noise_trace({{1e-3, 1e-3, 1e-3}, {2e-3, 2e-3, 2e-3, 4e-3}}, "w");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->quantum, SimTime::ms(2));
  EXPECT_EQ(t->work, "w");
  ASSERT_EQ(t->units.size(), 2u);
  EXPECT_EQ(t->units[0], (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(t->units[1], (std::vector<double>{1.0, 1.0, 1.0, 2.0}));
}

TEST(CalibrateNoise, EvenCountTakesTheMeanOfTheTwoMiddleQuanta) {
  auto t = noise_trace({{1e-3, 3e-3}, {2e-3, 5e-3}}, "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->quantum, SimTime::us(2500));  // (2 + 3) / 2 ms
  EXPECT_EQ(t->units[0], (std::vector<double>{0.4, 1.2}));
  EXPECT_EQ(t->units[1], (std::vector<double>{0.8, 2.0}));
}

TEST(CalibrateNoise, QuantumRoundedToTheNanosecondAndStretchesToFourDecimals) {
  // Median 1.0000004 ms -> 1000000 ns; 1.00213 ms / 1 ms = 1.00213 -> 1.0021; 0.998766 ->
  // 0.9988; a 1 ns quantum beside a 1 ms median would round to 0 and is kept at 0.0001.
  auto t = noise_trace({{1.0000004e-3, 1.00213e-3, 1e-9}, {0.998766e-3, 1.0000004e-3}}, "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->quantum, SimTime::ns(1'000'000));
  EXPECT_EQ(t->units[0], (std::vector<double>{1.0, 1.0021, 0.0001}));
  EXPECT_EQ(t->units[1], (std::vector<double>{0.9988, 1.0}));
}

TEST(CalibrateNoise, UnitOrderAndQuantumOrderAreKept) {
  auto t = noise_trace({{3e-3}, {1e-3, 2e-3}, {2e-3, 4e-3, 1e-3}}, "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->quantum, SimTime::ms(2));
  ASSERT_EQ(t->units.size(), 3u);
  EXPECT_EQ(t->units[0], (std::vector<double>{1.5}));
  EXPECT_EQ(t->units[1], (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(t->units[2], (std::vector<double>{1.0, 2.0, 0.5}));
}

TEST(CalibrateNoise, TheTraceRoundTripsThroughTheProfileYaml) {
  auto t = noise_trace({{1.00213e-3, 0.97e-3, 1.3e-3}, {1.01e-3, 0.99e-3}}, "sgemm 2x2x2 x1");
  ASSERT_TRUE(t.ok());
  profile::Profile p;
  p.noise = *t;
  auto back = profile::read_profile_yaml(profile::write_profile_yaml(p), "p.yaml");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->noise, p.noise);
}

TEST(CalibrateNoise, EmptyOrNonPositiveInputIsRejected) {
  EXPECT_FALSE(noise_trace({}, "").ok());
  auto empty_unit = noise_trace({{1e-3}, {}}, "");
  ASSERT_FALSE(empty_unit.ok());
  EXPECT_NE(empty_unit.error().message.find("unit 1"), std::string::npos);
  EXPECT_FALSE(noise_trace({{1e-3, 0.0}}, "").ok());
  EXPECT_FALSE(noise_trace({{1e-3, -1e-3}}, "").ok());
  EXPECT_FALSE(noise_trace({{1e-3, std::nan("")}}, "").ok());
}

}  // namespace
}  // namespace tawpipe::exec::host
