// VerifiedPrograms (common/ir/verify_cache.h): a program counts as verified only while the very
// object that was verified is alive.
#include "common/ir/verify_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/unit/ir/fixtures.h"

namespace tawpipe::ir {
namespace {

TEST(VerifiedPrograms, ObjectIdentityNotContent) {
  VerifiedPrograms set;
  auto a = std::make_shared<const Program>(testing::pipeline_program());
  auto b = std::make_shared<const Program>(*a);  // equal content, another object
  EXPECT_FALSE(set.contains(a));
  set.insert(a);
  EXPECT_TRUE(set.contains(a));
  EXPECT_FALSE(set.contains(b));
  EXPECT_FALSE(set.contains(nullptr));
}

TEST(VerifiedPrograms, FreedProgramIsForgotten) {
  VerifiedPrograms set;
  const Program* address = nullptr;
  {
    auto a = std::make_shared<const Program>(testing::pipeline_program());
    address = a.get();
    set.insert(a);
  }
  // Programs allocated after the verified one died may reuse its address: never verified.
  std::vector<std::shared_ptr<const Program>> later;
  for (int i = 0; i < 64; ++i) {
    later.push_back(std::make_shared<const Program>(testing::data_parallel_program()));
    EXPECT_FALSE(set.contains(later.back())) << (later.back().get() == address);
  }
  // Many inserts of short-lived programs keep the set bounded and correct.
  for (int i = 0; i < 1000; ++i) {
    auto p = std::make_shared<const Program>();
    set.insert(p);
    EXPECT_TRUE(set.contains(p));
  }
  for (const auto& p : later)
    EXPECT_FALSE(set.contains(p));
}

}  // namespace
}  // namespace tawpipe::ir
