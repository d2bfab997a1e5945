// Per-kernel-class time shares in the report, and the MFU bound they imply.
//
// The bound: every matmul FLOP (GEMM or attention) runs at most at the best GEMM rate e * peak
// (the attention tables are all below it), so a rank's compute time is at least
// F_matmul / (e * peak) and
//     MFU = F_model / (T * peak) <= e * F_model / F_matmul = e * (GEMM-class share of the FLOPs
//                                                          the model counts, recompute excluded)
// With recomputation or the 2.5x attention backward, F_matmul > F_model and the bound is below e.
#include <gtest/gtest.h>

#include "common/model/presets.h"
#include "common/report/report.h"
#include "schedules/schedule.h"
#include "sim/simulator.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

struct Case {
  const char* topology;
  const char* model;
  const char* schedule;
  std::int64_t seq, micro_batch, global_batch;
  model::RecomputePolicy recompute;
  double best_gemm_efficiency;  // MAMF / peak of the topology's device kind
};

report::Report run(const Case& c) {
  const topo::Topology t = testing::shipped(c.topology);
  schedules::ScheduleInput in;
  for (int g = 0; g < t.num_gpus(); ++g)
    in.node_of_rank.push_back(t.node_of(g));
  in.model = model::preset(c.model).value();
  in.train.seq_len = c.seq;
  in.train.micro_batch_size = c.micro_batch;
  in.train.global_batch = c.global_batch;
  in.train.compute_dtype = model::DType::kBf16;
  in.train.recompute = c.recompute;
  in.topology_name = t.name();
  in.topology_hash = t.content_hash();
  auto p = schedules::generate(c.schedule, in);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().to_string());
  SimOptions o;
  o.model = in.model;
  auto r = simulate(*p, t, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return *r;
}

// Acceptance 1 of issue 11: llama3-8b, dgx-h100, s = 8192, micro-batch 2, global batch 16, FSDP,
// bf16, selective recompute (the CLI command of the issue), plus the paper's 24-GPU A100 setup.
TEST(KernelShares, ReportedAndBoundMfu) {
  const Case cases[] = {
      {"dgx-h100", "llama3-8b", "fsdp", 8192, 2, 16, model::RecomputePolicy::kSelective,
       794.5 / 989.0},
      {"3x8-a100", "llama-h1024-l48", "tawpipe", 16384, 1, 48, model::RecomputePolicy::kFull,
       271.2 / 312.0},
      {"3x8-a100", "llama-h4096-l48", "fsdp", 4096, 1, 48, model::RecomputePolicy::kNone,
       271.2 / 312.0},
  };
  for (const Case& c : cases) {
    const report::Report r = run(c);
    SCOPED_TRACE(std::string(c.topology) + " " + c.model + " " + c.schedule);
    ASSERT_FALSE(r.kernel_classes.empty());
    EXPECT_EQ(r.profile, "built-in");
    double share = 0.0, matmul_flops = 0.0;
    bool has_gemm = false, has_norm = false, has_optimizer = false;
    for (const report::KernelClassTotals& k : r.kernel_classes) {
      share += k.share;
      EXPECT_GE(k.share, 0.0);
      EXPECT_GE(k.kernels, 0);
      if (k.name == "gemm" || k.name == "attention_fwd" || k.name == "attention_bwd")
        matmul_flops += k.flops;
      has_gemm = has_gemm || k.name == "gemm";
      has_norm = has_norm || k.name == "norm";
      has_optimizer = has_optimizer || k.name == "optimizer";
    }
    EXPECT_NEAR(share, 1.0, 1e-9);
    EXPECT_TRUE(has_gemm && has_norm && has_optimizer);
    ASSERT_GT(r.mfu, 0.0);
    const double bound = c.best_gemm_efficiency * r.model_flops / matmul_flops;
    EXPECT_LT(r.mfu, bound) << "mfu " << r.mfu << " bound " << bound;
    EXPECT_LT(r.mfu, c.best_gemm_efficiency);
  }
}

}  // namespace
}  // namespace tawpipe::sim
