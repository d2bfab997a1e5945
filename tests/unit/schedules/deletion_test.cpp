// Acceptance 3: deleting any single send, recv, collective or compute op from a valid generated
// program makes verification fail (every op of those kinds is load-bearing).
#include <gtest/gtest.h>

#include <ostream>

#include "common/ir/text.h"
#include "schedule_test_util.h"

namespace tawpipe::schedules {
namespace {

struct Case {
  const char* method;
  std::int32_t nodes, gpus, layers, micro_batches, dp;
  std::map<std::string, std::string> options;
};

// Readable parameter in test listings ("tawpipe 2x2 L4 N1 dp1 overlap=off").
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.method << ' ' << c.nodes << 'x' << c.gpus << " L" << c.layers << " N" << c.micro_batches
      << " dp" << c.dp;
  for (const auto& [k, v] : c.options)
    *os << ' ' << k << '=' << v;
}

class Deletion : public ::testing::TestWithParam<Case> {};

TEST_P(Deletion, EveryCommAndComputeOpIsNeeded) {
  const Case& c = GetParam();
  const ScheduleInput in =
      testing::small_input(c.nodes, c.gpus, c.layers, c.micro_batches, c.dp, c.options);
  const ir::Program p = testing::must_generate(c.method, in);
  ASSERT_TRUE(ir::verify(p).ok) << ir::verify(p).message;
  std::int64_t tried = 0;
  for (ir::Rank r = 0; r < p.num_ranks(); ++r) {
    const auto& ops = p.ranks[static_cast<std::size_t>(r)].ops;
    for (ir::OpIndex i = 0; i < static_cast<ir::OpIndex>(ops.size()); ++i) {
      const ir::OpKind k = ops[static_cast<std::size_t>(i)].kind;
      if (k != ir::OpKind::send && k != ir::OpKind::recv && k != ir::OpKind::collective &&
          k != ir::OpKind::compute) {
        continue;
      }
      ++tried;
      const ir::VerifyResult v = ir::verify(testing::without_op(p, r, i));
      EXPECT_FALSE(v.ok) << c.method << ": deleting " << ir::describe_op(p, r, i)
                         << " still verifies";
    }
  }
  EXPECT_GT(tried, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Small, Deletion,
    ::testing::Values(Case{"1f1b", 2, 2, 4, 3, 1, {}}, Case{"1f1b", 2, 2, 4, 2, 2, {}},
                      Case{"fsdp", 2, 2, 4, 2, 1, {}}, Case{"fsdp", 2, 2, 2, 1, 2, {}},
                      Case{"tawpipe", 2, 2, 4, 1, 1, {}}, Case{"tawpipe", 2, 2, 4, 2, 1, {}},
                      Case{"tawpipe", 3, 2, 6, 1, 1, {}}, Case{"tawpipe", 2, 2, 4, 1, 2, {}},
                      Case{"tawpipe", 2, 2, 4, 1, 1, {{"overlap", "off"}}},
                      Case{"tawpipe", 2, 2, 4, 1, 1, {{"grouping", "off"}}},
                      Case{"weipipe", 2, 2, 4, 2, 1, {}},
                      Case{"weipipe", 2, 2, 4, 2, 1, {{"variant", "naive"}}},
                      Case{"weipipe", 1, 3, 3, 1, 1, {}}, Case{"weipipe", 2, 2, 4, 1, 2, {}},
                      Case{"zb1", 2, 2, 4, 3, 1, {}}, Case{"zb1", 2, 2, 4, 2, 2, {}},
                      Case{"zb2", 2, 2, 4, 3, 1, {}}, Case{"zb2", 2, 2, 4, 2, 2, {}},
                      Case{"1f1b", 2, 2, 8, 4, 1, {{"virtual", "2"}}},
                      Case{"1f1b", 2, 2, 4, 2, 2, {{"virtual", "2"}}}),
    [](const ::testing::TestParamInfo<Case>& param) {
      const std::string n = param.param.method;
      return (n == "1f1b" ? std::string("onefoneb") : n) + std::to_string(param.index);
    });

}  // namespace
}  // namespace tawpipe::schedules
