// TrainConfig: defaults, batch resolution and the CLI parsing helpers.
#include "common/model/train_config.h"

#include <gtest/gtest.h>

namespace tawpipe::model {
namespace {

TEST(TrainConfig, DefaultsAreThePapersHeadlineWorkload) {
  const TrainConfig cfg;
  EXPECT_TRUE(validate(cfg).ok());
  EXPECT_EQ(cfg.seq_len, 16384);
  EXPECT_EQ(cfg.micro_batch_size, 1);
  EXPECT_EQ(cfg.global_batch, 1536);
  EXPECT_EQ(cfg.compute_dtype, DType::kFp16);
  EXPECT_EQ(cfg.master_dtype, DType::kFp32);
  EXPECT_EQ(cfg.optimizer.beta2, 0.95);
  EXPECT_EQ(cfg.optimizer.weight_decay, 0.1);
  EXPECT_EQ(cfg.shape().tokens(), 16384);
  EXPECT_EQ(cfg.shape().dtype_bytes, 2);
  EXPECT_EQ(summary(cfg),
            "seq 16384, micro-batch 1, global 1536, fp16/fp32, recompute full, adamw lr 0.0003");
}

// The paper's code: 24 GPUs, micro-batch 1, 64 accumulation steps -> 1536 sequences.
TEST(ResolveBatch, GlobalBatchOverWorkers) {
  const TrainConfig cfg;
  auto r = resolve_batch(cfg, 24);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(*r, (ResolvedBatch{24, 1, 64, 1536}));

  TrainConfig two = cfg;
  two.micro_batch_size = 2;
  EXPECT_EQ(resolve_batch(two, 24)->micro_batches, 32);
  // 1F1B sees a single replica: every sequence is one micro-batch of the pipeline.
  EXPECT_EQ(resolve_batch(cfg, 1)->micro_batches, 1536);
}

TEST(ResolveBatch, NonDivisibleIsRejectedWithSuggestions) {
  const TrainConfig cfg;
  auto r = resolve_batch(cfg, 20);  // 1536 / 20 = 76.8
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().key_path, "global_batch");
  EXPECT_EQ(r.error().message,
            "global batch 1536 sequences is not divisible by 20 workers x micro-batch size 1 = 20; "
            "use global_batch 1520 (76 micro-batches per worker) or 1540 (77 micro-batches per "
            "worker), or a worker count that divides 1536");
  TrainConfig small = cfg;
  small.global_batch = 8;
  auto tiny = resolve_batch(small, 12);  // fewer sequences than workers: only the upper choice
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message.find("use global_batch 12 (1 micro-batches"), std::string::npos);
}

TEST(ResolveBatch, MicroBatchesGivenDirectlyOrBoth) {
  TrainConfig cfg;
  cfg.global_batch = 0;
  cfg.micro_batches = 8;
  EXPECT_EQ(*resolve_batch(cfg, 4), (ResolvedBatch{4, 1, 8, 32}));
  cfg.global_batch = 32;
  EXPECT_TRUE(resolve_batch(cfg, 4).ok());
  cfg.global_batch = 64;
  auto r = resolve_batch(cfg, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().key_path, "micro_batches");
  cfg.micro_batches = 0;
  cfg.global_batch = 0;
  EXPECT_FALSE(resolve_batch(cfg, 4).ok());
}

TEST(Parse, DtypeAndRecompute) {
  EXPECT_EQ(*parse_dtype("bf16"), DType::kBf16);
  EXPECT_EQ(*parse_dtype("fp32"), DType::kFp32);
  EXPECT_EQ(dtype_bytes(DType::kBf16), 2);
  EXPECT_EQ(dtype_bytes(DType::kFp32), 4);
  auto bad = parse_dtype("bf61");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "unknown dtype 'bf61' (did you mean 'bf16'?); known: bf16, fp16, fp32");
  EXPECT_EQ(*parse_recompute("full"), RecomputePolicy::kFull);
  EXPECT_EQ(*parse_recompute(to_string(RecomputePolicy::kSelective)), RecomputePolicy::kSelective);
  auto r = parse_recompute("selctive");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("(did you mean 'selective'?)"), std::string::npos);
}

TEST(Override, TrainKeys) {
  TrainConfig cfg;
  ASSERT_TRUE(apply_train_override(cfg, "seq_len", "8192").ok());
  ASSERT_TRUE(apply_train_override(cfg, "compute_dtype", "bf16").ok());
  ASSERT_TRUE(apply_train_override(cfg, "optimizer.lr", "1e-4").ok());
  ASSERT_TRUE(apply_train_override(cfg, "recompute", "selective").ok());
  EXPECT_EQ(cfg.loss_kernel, LossKernel::kFusedFp32);
  ASSERT_TRUE(apply_train_override(cfg, "loss_kernel", "in-place").ok());
  EXPECT_EQ(cfg.loss_kernel, LossKernel::kInPlace);
  EXPECT_FALSE(apply_train_override(cfg, "loss_kernel", "eager").ok());
  ASSERT_TRUE(apply_train_override(cfg, "recompute", "selective-op").ok());
  EXPECT_EQ(cfg.recompute, RecomputePolicy::kSelectiveOp);
  ASSERT_TRUE(apply_train_override(cfg, "recompute", "selective").ok());
  EXPECT_EQ(cfg.seq_len, 8192);
  EXPECT_EQ(cfg.compute_dtype, DType::kBf16);
  EXPECT_DOUBLE_EQ(cfg.optimizer.lr, 1e-4);
  const TrainConfig before = cfg;
  auto s = apply_train_override(cfg, "seqlen", "4096");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("(did you mean 'seq_len'?)"), std::string::npos);
  EXPECT_FALSE(apply_train_override(cfg, "seq_len", "0").ok());
  EXPECT_FALSE(apply_train_override(cfg, "optimizer.beta2", "1.5").ok());
  EXPECT_FALSE(apply_train_override(cfg, "optimizer.eps", "abc").ok());
  EXPECT_FALSE(apply_train_override(cfg, "master_dtype", "bf16").ok());
  EXPECT_EQ(cfg, before);
  EXPECT_EQ(train_keys().front(), "seq_len");
}

}  // namespace
}  // namespace tawpipe::model
