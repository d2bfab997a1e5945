// Activation memory of the zero-bubble schedules against 1F1B, through the memory model (issue 16).
//
// Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024, arXiv 2401.10241) §2.1-2.2: ZB-H1
// keeps 1F1B's peak activation memory (its first stage, which holds the most, holds what 1F1B's
// first stage holds), ZB-H2 holds up to 2P-1 micro-batches, about twice as many.
//
// Expected values from the schedules' in-flight counts and the per-micro-batch bytes of
// common/model/memory.h, not from a simulation. On P = 4 stages of n layers with N = 8 >= 2P-1
// micro-batches, the most micro-batches a stage i holds (forward done, weight gradient not yet):
//   1F1B  P - i        ZB-H1  P        ZB-H2  2P - 1          (pipeline_test checks these counts)
// A micro-batch holds M_B = n*S before its B (S = stored bytes per layer) and M_W = n*(x + dy)
// between B and W (the weight GEMMs' inputs and output gradients, memory.h); M_W = M_B - n*lse
// with recompute none or selective, so with k micro-batches in flight the activation bytes lie in
// [k*M_W, k*M_B] (plus the zero-bubble programs' 4-byte gradient-norm buffer). Besides them up to
// four boundary tensors of a = T*H*p bytes are alive (the activation gradient received and the
// one sent by the micro-batch in its backward, a forward output being sent, a receive posted
// ahead of its pass): the tolerance is 4a on each side. The report's breakdown gives the activation
// bytes at each rank's peak, which falls while a backward (B) runs and every micro-batch of the
// peak is held.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "common/model/memory.h"
#include "common/model/presets.h"
#include "schedules/schedule.h"
#include "sim/simulator.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

constexpr std::int32_t kStages = 4, kMicroBatches = 8;
// The synchronous optimizer step's fp32 gradient-norm buffer of the zero-bubble programs: a
// persistent `workspace`-role buffer, so the report counts it with the activations.
constexpr double kNormBytes = 4;

struct Workload {
  schedules::ScheduleInput input;
  topo::Topology topology;
};

Workload workload(model::RecomputePolicy recompute) {
  Workload s{{}, testing::shipped("dgx-a100")};
  for (std::int32_t r = 0; r < kStages; ++r)
    s.input.node_of_rank.push_back(s.topology.node_of(r));
  s.input.model = model::preset("llama-h1024-l48").value();
  s.input.train.seq_len = 1024;
  s.input.train.micro_batch_size = 1;
  s.input.train.micro_batches = kMicroBatches;
  s.input.train.global_batch = 0;
  s.input.train.compute_dtype = model::DType::kBf16;
  s.input.train.recompute = recompute;
  s.input.topology_name = s.topology.name();
  s.input.topology_hash = s.topology.content_hash();
  return s;
}

/// Activation bytes at each rank's peak.
std::vector<double> activations(const char* method, const Workload& s) {
  auto p = schedules::generate(method, s.input);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().to_string());
  SimOptions o;
  o.model = s.input.model;
  auto r = simulate(*p, s.topology, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  std::vector<double> out;
  for (const report::RankStats& rs : r->rank_stats)
    out.push_back(static_cast<double>(rs.peak_memory.activations));
  return out;
}

TEST(ZeroBubbleMemory, ZbH1KeepsOneFOneBsPeakAndZbH2DoublesIt) {
  for (const auto policy : {model::RecomputePolicy::kSelective, model::RecomputePolicy::kNone}) {
    SCOPED_TRACE(model::to_string(policy));
    const Workload s = workload(policy);
    const model::ModelConfig& cfg = s.input.model;
    const model::MicroBatchShape shape{1, s.input.train.seq_len, 2};
    const double n = static_cast<double>(cfg.layers / kStages);
    const double m_b =
        n * static_cast<double>(model::layer_stored_activation_bytes(cfg, shape, policy));
    const double m_w =
        n * static_cast<double>(model::layer_weight_gradient_bytes(cfg, shape).total());
    const double a = static_cast<double>(shape.tokens() * cfg.hidden * shape.dtype_bytes);
    ASSERT_LE(m_w, m_b);
    const double tol = 4 * a;
    const auto f1b = activations("1f1b", s);
    const auto zb1 = activations("zb1", s);
    const auto zb2 = activations("zb2", s);
    ASSERT_EQ(zb1.size(), static_cast<std::size_t>(kStages));
    for (std::int32_t i = 0; i < kStages; ++i) {
      SCOPED_TRACE("stage " + std::to_string(i));
      const auto at = static_cast<std::size_t>(i);
      // 1F1B: P - i micro-batches, all before their (fused) backward.
      EXPECT_NEAR(f1b[at], (kStages - i) * m_b, tol) << (f1b[at] - (kStages - i) * m_b) / a;
      const std::tuple<const char*, double, std::int32_t> zb[] = {
          {"zb1", zb1[at], kStages}, {"zb2", zb2[at], 2 * kStages - 1}};
      for (const auto& [what, got, k] : zb) {
        SCOPED_TRACE(what);
        EXPECT_GE(got, k * m_w + kNormBytes - tol);
        EXPECT_LE(got, k * m_b + kNormBytes + tol) << (got - k * m_b) / a;
      }
    }
    // The peak per rank (the most loaded rank, stage 0 for 1F1B): ZB-H1 equals 1F1B's within the
    // M_B - M_W difference of the P micro-batches and the boundary tolerance; ZB-H2 holds
    // (2P-1)/P = 1.75 times as much.
    const double f1b_peak = *std::max_element(f1b.begin(), f1b.end());
    const double zb1_peak = *std::max_element(zb1.begin(), zb1.end());
    const double zb2_peak = *std::max_element(zb2.begin(), zb2.end());
    EXPECT_NEAR(zb1_peak, f1b_peak, kStages * (m_b - m_w) + 2 * tol);
    EXPECT_NEAR(zb2_peak / f1b_peak, (2.0 * kStages - 1) / kStages,
                ((2 * kStages - 1) * (m_b - m_w) + 2 * tol) / f1b_peak);
  }
}

}  // namespace
}  // namespace tawpipe::sim
