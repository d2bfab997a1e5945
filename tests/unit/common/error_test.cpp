#include "common/error.h"

#include <gtest/gtest.h>

namespace tawpipe {
namespace {

Expected<int> half(int v) {
  if (v % 2 != 0) return make_error("odd");
  return v / 2;
}

Status quarter(int v, int* out) {
  auto h = half(v);
  TAWPIPE_TRY(h);
  auto q = half(*h);
  TAWPIPE_TRY(q);
  *out = *q;
  return Status::success();
}

TEST(Error, FormatsLocationAndKeyPathOnOneLine) {
  Error e = make_error("bandwidth must be positive").at("a.yaml", 12, 7, "links[2].bandwidth");
  EXPECT_EQ(e.to_string(), "a.yaml:12:7: links[2].bandwidth: bandwidth must be positive");
  EXPECT_EQ(make_error("plain").to_string(), "plain");
  // at() keeps an existing location.
  EXPECT_EQ(e.at("b.yaml", 1, 1, "x").file, "a.yaml");
}

TEST(Error, TryPropagates) {
  int out = 0;
  EXPECT_TRUE(quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = quarter(6, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "odd");
}

}  // namespace
}  // namespace tawpipe
