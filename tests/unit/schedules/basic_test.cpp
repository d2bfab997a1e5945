// Smoke tests: every method generates and verifies on the acceptance shape (2 nodes x 2 GPUs,
// 4 layers), and bad configurations are rejected with a suggestion.
#include <gtest/gtest.h>

#include "common/ir/text.h"
#include "schedule_test_util.h"

namespace tawpipe::schedules {
namespace {

using testing::must_generate;
using testing::small_input;

void expect_verifies(std::string_view method, const ScheduleInput& in) {
  const ir::Program p = must_generate(method, in);
  const ir::VerifyResult v = ir::verify(p);
  EXPECT_TRUE(v.ok) << method << ": " << v.message
                    << (v.details.empty() ? "" : "\n" + v.details.front());
}

TEST(Schedules, OneFOneBVerifies) {
  expect_verifies("1f1b", small_input(2, 2, 4, 4));
  expect_verifies("1f1b", small_input(2, 2, 4, 1));
  expect_verifies("1f1b", small_input(2, 2, 4, 3, 2));
  expect_verifies("1f1b", small_input(2, 2, 4, 2, 4));
}

TEST(Schedules, ZeroBubbleAndInterleavedVerify) {
  for (const char* method : {"zb1", "zb2"}) {
    expect_verifies(method, small_input(2, 2, 4, 4));
    expect_verifies(method, small_input(2, 2, 4, 1));
    expect_verifies(method, small_input(2, 2, 4, 3, 2));
    expect_verifies(method, small_input(2, 2, 4, 2, 4));
    expect_verifies(method, small_input(3, 2, 6, 9));
  }
  expect_verifies("1f1b", small_input(2, 2, 8, 4, 1, {{"virtual", "2"}}));
  expect_verifies("1f1b", small_input(2, 2, 16, 8, 1, {{"virtual", "4"}}));
  expect_verifies("1f1b", small_input(2, 2, 4, 2, 2, {{"virtual", "2"}}));
  expect_verifies("1f1b", small_input(3, 2, 12, 6, 1, {{"virtual", "2"}}));
  expect_verifies("1f1b", small_input(2, 2, 8, 4, 1, {{"virtual", "1"}}));
}

TEST(Schedules, FsdpVerifies) {
  expect_verifies("fsdp", small_input(2, 2, 4, 2));
  expect_verifies("fsdp", small_input(2, 2, 4, 1, 2));
  expect_verifies("fsdp", small_input(1, 3, 5, 2));
}

// Generation and verification may use several threads; the program and the verdict must not
// depend on how many.
TEST(Schedules, ThreadCountDoesNotChangeTheProgram) {
  for (const std::int32_t dp : {1, 2}) {
    ScheduleInput in = small_input(4, 2, 4, 2, dp);
    in.threads = 1;
    const ir::Program serial = must_generate("fsdp", in);
    for (const int threads : {2, 3, 8}) {
      in.threads = threads;
      const ir::Program parallel = must_generate("fsdp", in);
      EXPECT_TRUE(parallel == serial) << "dp=" << dp << " threads=" << threads;
      ir::VerifyOptions options;
      options.threads = threads;
      const ir::VerifyResult a = ir::verify(parallel, options);
      EXPECT_TRUE(a.ok) << a.message;
      options.threads = 1;
      const ir::VerifyResult b = ir::verify(parallel, options);
      EXPECT_EQ(a.stats.total_ops, b.stats.total_ops);
      EXPECT_EQ(a.stats.ops_by_kind, b.stats.ops_by_kind);
      EXPECT_EQ(a.stats.peak_live_bytes, b.stats.peak_live_bytes);
    }
  }
}

TEST(Schedules, OneFOneBRejectsUnevenLayers) {
  auto p = generate("1f1b", small_input(2, 3, 4, 4));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("use dp in"), std::string::npos) << p.error().message;
}

}  // namespace
}  // namespace tawpipe::schedules

namespace tawpipe::schedules {
namespace {

TEST(Schedules, TawpipeVerifies) {
  using testing::small_input;
  for (auto in : {small_input(2, 2, 4, 1), small_input(2, 2, 4, 3), small_input(3, 2, 6, 2),
                  small_input(2, 2, 8, 2, 2), small_input(1, 4, 4, 2)}) {
    const ir::Program p = testing::must_generate("tawpipe", in);
    const ir::VerifyResult v = ir::verify(p);
    EXPECT_TRUE(v.ok) << v.message << (v.details.empty() ? "" : "\n" + v.details.front());
  }
}

}  // namespace
}  // namespace tawpipe::schedules

namespace tawpipe::schedules {
namespace {

TEST(Schedules, WeipipeVerifies) {
  using testing::small_input;
  for (const char* variant : {"interleave", "naive"}) {
    for (auto in : {small_input(2, 2, 4, 2), small_input(2, 2, 4, 1), small_input(3, 2, 6, 3),
                    small_input(2, 2, 8, 2, 2), small_input(1, 3, 3, 2)}) {
      in.options["variant"] = variant;
      const ir::Program p = testing::must_generate("weipipe", in);
      const ir::VerifyResult v = ir::verify(p);
      EXPECT_TRUE(v.ok) << variant << ": " << v.message
                        << (v.details.empty() ? "" : "\n" + v.details.front());
    }
  }
}

}  // namespace
}  // namespace tawpipe::schedules
