// The reference trainer learns: on the tiny preset with the bigram data of math/init.h, the
// loss after some steps is clearly below the first step's (which is near ln(vocab)).
#include <cmath>

#include <gtest/gtest.h>

#include "common/model/presets.h"
#include "exec/reference.h"

namespace tawpipe::exec {
namespace {

TEST(Reference, LossDecreases) {
  auto tiny = model::preset("tiny");
  ASSERT_TRUE(tiny.ok());
  ReferenceConfig cfg;
  cfg.model = *tiny;
  cfg.seq_len = 32;
  cfg.micro_batch_size = 1;
  cfg.samples = {0, 1, 2, 3};
  cfg.optimizer.lr = 1e-2;
  cfg.seed = 5;
  auto t = ReferenceTrainer::create(cfg);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const double first = t->step();
  EXPECT_NEAR(first, std::log(256.0), 0.2);
  double last = first;
  for (int i = 0; i < 20; ++i)
    last = t->step();
  EXPECT_LT(last, first - 0.5) << "first " << first << " last " << last;
}

TEST(Reference, RejectsModelsTheHostCannotRun) {
  auto gpt = model::preset("gpt3-175b");
  ASSERT_TRUE(gpt.ok());
  ReferenceConfig cfg;
  cfg.model = *gpt;
  cfg.seq_len = 8;
  cfg.samples = {0};
  EXPECT_FALSE(ReferenceTrainer::create(cfg).ok());
}

}  // namespace
}  // namespace tawpipe::exec
