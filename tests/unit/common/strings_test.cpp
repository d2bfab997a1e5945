#include "common/strings.h"

#include <gtest/gtest.h>

namespace tawpipe {
namespace {

TEST(Strings, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(Strings, SuggestsClosePlausibleTypoOnly) {
  const std::vector<std::string> keys = {"bandwidth", "latency", "efficiency"};
  EXPECT_EQ(closest_match("bandwith", keys), "bandwidth");
  EXPECT_EQ(closest_match("latncy", keys), "latency");
  EXPECT_EQ(closest_match("zzzzzzzz", keys), "");
  EXPECT_EQ(did_you_mean("bandwith", keys), " (did you mean 'bandwidth'?)");
  EXPECT_EQ(did_you_mean("qqq", keys), "");
}

TEST(Strings, SplitAndJoinAreInverse) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(join(split("x.y.z", '.'), "."), "x.y.z");
}

}  // namespace
}  // namespace tawpipe
