#include "common/registry.h"

#include <gtest/gtest.h>

#include <functional>

namespace tawpipe {
namespace {

TEST(Registry, ListsSortedAndSuggestsOnUnknownName) {
  Registry<std::function<int()>> r("schedule");
  r.add({"weipipe", "ring weight passing", "PPoPP'25", [] { return 2; }});
  r.add({"tawpipe", "topology-aware weight passing", "AAAI'26", [] { return 1; }});
  EXPECT_EQ(r.names(), (std::vector<std::string>{"tawpipe", "weipipe"}));
  EXPECT_EQ((*r.lookup("weipipe"))->factory(), 2);
  auto bad = r.lookup("tawpip");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "unknown schedule 'tawpip' (did you mean 'tawpipe'?); known: tawpipe, weipipe");
}

}  // namespace
}  // namespace tawpipe
