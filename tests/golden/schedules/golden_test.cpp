// Golden canonical dumps (common/ir/text.h) of every method on 2 nodes x 2 GPUs x 4 layers of the
// tiny model. A change in a generator shows up as a reviewable diff of these files; re-bless all
// goldens with scripts/bless-golden (runs this test with TAWPIPE_BLESS=1, which writes instead of
// comparing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/ir/text.h"
#include "common/ir/verifier.h"
#include "common/model/presets.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {
namespace {

struct Golden {
  const char* file;
  const char* method;
  std::int32_t micro_batches;
  std::map<std::string, std::string> options;
  std::int32_t dp = 1;
};

std::string golden_dir() {
  const char* env = std::getenv("TAWPIPE_SOURCE_DIR");
  return std::string(env ? env : TAWPIPE_SOURCE_DIR) + "/tests/golden/schedules/";
}

class GoldenDump : public ::testing::TestWithParam<Golden> {};

TEST_P(GoldenDump, MatchesFile) {
  const Golden& g = GetParam();
  ScheduleInput in;
  in.node_of_rank = uniform_nodes(2, 2);
  auto m = model::preset("tiny");
  ASSERT_TRUE(m.ok());
  in.model = *m;
  in.model.layers = 4;
  in.train.seq_len = 256;
  in.train.micro_batch_size = 1;
  in.train.micro_batches = g.micro_batches;
  in.train.global_batch = 0;
  in.options = g.options;
  in.dp = g.dp;
  in.topology_name = "2x2-golden";
  in.topology_hash = "none";
  auto p = generate(g.method, in);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const ir::VerifyResult v = ir::verify(*p);
  ASSERT_TRUE(v.ok) << v.message;
  const std::string text = ir::dump_text(*p);
  const std::string path = golden_dir() + g.file;
  const char* bless = std::getenv("TAWPIPE_BLESS");
  if (bless && std::string(bless) == "1") {
    std::ofstream out(path, std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    return;
  }
  std::ifstream in_file(path, std::ios::binary);
  ASSERT_TRUE(in_file.good()) << path << " missing; run scripts/bless-golden";
  std::stringstream want;
  want << in_file.rdbuf();
  if (want.str() != text) {
    // Point at the first differing line rather than printing two large dumps.
    std::istringstream a(want.str()), b(text);
    std::string la, lb;
    int line = 1;
    while (std::getline(a, la) && std::getline(b, lb) && la == lb)
      ++line;
    FAIL() << path << " differs at line " << line << ":\n  golden: " << la << "\n  now:    " << lb
           << "\n(review the change, then run scripts/bless-golden)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    TwoByTwo, GoldenDump,
    ::testing::Values(Golden{"tawpipe.ir.txt", "tawpipe", 1, {}},
                      Golden{"tawpipe-n2.ir.txt", "tawpipe", 2, {}},
                      Golden{"weipipe.ir.txt", "weipipe", 2, {}},
                      Golden{"weipipe-naive.ir.txt", "weipipe", 2, {{"variant", "naive"}}},
                      Golden{"fsdp.ir.txt", "fsdp", 2, {}}, Golden{"1f1b.ir.txt", "1f1b", 4, {}},
                      Golden{"zb1.ir.txt", "zb1", 4, {}}, Golden{"zb2.ir.txt", "zb2", 4, {}},
                      Golden{"1f1b-v2.ir.txt", "1f1b", 4, {{"virtual", "2"}}, 2}),
    [](const ::testing::TestParamInfo<Golden>& param) {
      std::string n = param.param.file;
      n = n.substr(0, n.find('.'));
      for (char& c : n)
        if (c == '-') c = '_';
      if (n.rfind("1f1b", 0) == 0) n = "onefoneb" + n.substr(4);
      return n;
    });

}  // namespace
}  // namespace tawpipe::schedules
