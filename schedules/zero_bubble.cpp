// Zero-bubble pipeline parallelism: the handcrafted schedules ZB-H1 (`zb1`) and ZB-H2 (`zb2`) of
// Qi, Wan, Huang & Lin, "Zero Bubble Pipeline Parallelism", ICLR 2024 (arXiv 2401.10241) §2.
//
// The schedule in prose. The pipeline is 1F1B's (one_f_one_b.cpp: P = ranks/dp stages of L/P
// layers, embedding on stage 0, head + loss on stage P-1, activations forward and activation
// gradients backward over P2P, tied-embedding and data-parallel all-reduces at the end), but each
// backward is split into B, the input gradient that the previous stage waits for, and W, the
// weight gradient nobody waits for. A stage runs B as soon as it can and defers W into what would
// otherwise be idle time. What stays alive between B and W is only what W reads, the input and
// output gradient of every weight GEMM (model::layer_weight_gradient_bytes); B frees or reuses
// the rest of the stash, W frees what remains (pipeline.h, "Zero-bubble memory"). A micro-batch
// thus holds about as much between B and W as before B (less the attention log-sum-exps) with
// recompute none or selective, as the paper's M_W <= M_B (§2.1, Table 1); with full
// recomputation W keeps the linear inputs B re-created, which 1F1B never holds at once.
//
//  - ZB-H1 (`zb1`, §2.1): 1F1B's order (min(P-1-i, N) warm-up forwards, then one forward and one
//    B per step) with stage i deferring its W passes by i steps: after its k-th B, stage i runs
//    the W of micro-batch k-i. Every stage then holds at most P micro-batches, 1F1B's peak (on
//    stage 0, where W follows B at once: the paper's "the first worker ... does not exceed the
//    peak memory of 1F1B"), and with T_W <= T_F and N >= P the bubble is (P-1)(T_F + T_B - T_W)
//    instead of 1F1B's (P-1)(T_F + T_B + T_W): a third of it when the three passes cost the same.
//  - ZB-H2 (`zb2`, §2.2): up to 2P-1 micro-batches in flight. The order is the one a unit-time
//    list schedule gives (the paper's equal-cost assumption T_F = T_B = T_W of §2): in every time
//    slot each stage runs B if one is ready, else F if fewer than 2P-1 micro-batches are in
//    flight, else a pending W. Stage i thereby runs 2(P-1-i)+1 forwards before its first B and
//    keeps W passes back for the tail, the paper's parallelogram: with N >= 2P-1 each stage is
//    busy without a gap from its first to its last pass when T_F + T_B <= 2 T_W, and otherwise
//    idles (P-1)(T_F + T_B - 2 T_W) in between.
//    Against the paper: §2.2 describes ZB-H2 in words and one drawing (Figure 3, bottom, p = 4,
//    equal pass times): extra forwards in the warm-up until the first B, then the W passes moved
//    to the tail so the trapezoid becomes a parallelogram, with at most (2p-1) M_B of
//    activations. Our order is a rule that yields such a schedule for any P and N, not a copy of
//    the drawing; it has the paper's warm-up (stage i: 2(P-1-i)+1 forwards, as many as fit before
//    its first B arrives at unit times), its 2P-1 in-flight peak and its zero bubble at equal
//    times (pipeline_test.cpp checks all three). Where it may differ: in the steady state a stage
//    whose B is not ready runs F before a pending W (the drawing's cell-by-cell order of F and W
//    is not stated in the text, so we do not claim to match it); and N < 2P-1 simply caps the
//    warm-up at N. The paper's experiments and code (sail-sg/zero-bubble-pipeline-parallelism)
//    run ZB-1p / ZB-2p, orders found by its automatic scheduler (§3) under memory limits of p and
//    2p micro-batches, not the handcrafted H1/H2 orders built here.
//
// Optimizer step: the synchronous variant, not the paper's post-validation (§4). Before AdamW
// every stage all-reduces its fp32 squared gradient norm over the pipeline (Megatron's gradient
// clipping and inf/NaN check), so no stage steps before the last W of the iteration; the
// iteration time therefore includes the pipeline's skew of (P-1) T_F that post-validation would
// hide by overlapping the next iteration's first forwards with this step.
#include <algorithm>

#include "schedules/pipeline.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {
namespace {

using detail::Pass;
using detail::Step;

std::int64_t pipelines(std::int32_t /*world*/, std::int32_t dp) {
  return dp;
}

/// ZB-H1: 1F1B with W deferred by the stage index.
detail::StageOrders zb1_orders(std::int32_t P, std::int32_t N) {
  detail::StageOrders orders(static_cast<std::size_t>(P));
  for (std::int32_t i = 0; i < P; ++i) {
    auto& o = orders[static_cast<std::size_t>(i)];
    std::int32_t f = 0, b = 0, w = 0;
    const std::int32_t warmup = std::min(P - 1 - i, N);
    while (f < warmup)
      o.push_back({Pass::forward, 0, f++});
    while (b < N) {
      if (f < N) o.push_back({Pass::forward, 0, f++});
      o.push_back({Pass::backward_input, 0, b++});
      if (b - w > i) o.push_back({Pass::backward_weight, 0, w++});
    }
    while (w < N)
      o.push_back({Pass::backward_weight, 0, w++});
  }
  return orders;
}

/// ZB-H2: the unit-time list schedule with at most 2P-1 micro-batches in flight per stage.
detail::StageOrders zb2_orders(std::int32_t P, std::int32_t N) {
  const auto n = static_cast<std::size_t>(P);
  const std::int32_t cap = 2 * P - 1;
  constexpr std::int64_t kNever = INT64_MAX;
  // Slot at whose end stage i has finished F / B of micro-batch m.
  std::vector<std::vector<std::int64_t>> f_done(
      n, std::vector<std::int64_t>(static_cast<std::size_t>(N), kNever));
  auto b_done = f_done;
  std::vector<std::int32_t> f(n, 0), b(n, 0), w(n, 0);
  detail::StageOrders orders(n);
  std::int32_t finished = 0;
  for (std::int64_t t = 0; finished < P; ++t) {
    std::vector<Step> picks(n);
    std::vector<bool> picked(n, false);
    for (std::int32_t i = 0; i < P; ++i) {
      const auto s = static_cast<std::size_t>(i);
      const auto ready = [&](const std::vector<std::int64_t>& done, std::int32_t m) {
        return done[static_cast<std::size_t>(m)] <= t;
      };
      if (b[s] < N && b[s] < f[s] && ready(f_done[s], b[s]) &&
          (i == P - 1 || ready(b_done[s + 1], b[s]))) {
        picks[s] = {Pass::backward_input, 0, b[s]};
      } else if (f[s] < N && f[s] - w[s] < cap && (i == 0 || ready(f_done[s - 1], f[s]))) {
        picks[s] = {Pass::forward, 0, f[s]};
      } else if (w[s] < b[s]) {
        picks[s] = {Pass::backward_weight, 0, w[s]};
      } else {
        continue;
      }
      picked[s] = true;
    }
    for (std::size_t s = 0; s < n; ++s) {
      if (!picked[s]) continue;
      const Step& st = picks[s];
      orders[s].push_back(st);
      const auto m = static_cast<std::size_t>(st.micro);
      if (st.pass == Pass::forward) f_done[s][m] = t + 1, ++f[s];
      if (st.pass == Pass::backward_input) b_done[s][m] = t + 1, ++b[s];
      if (st.pass == Pass::backward_weight && ++w[s] == N) ++finished;
    }
  }
  return orders;
}

Expected<ir::Program> generate(const char* method, const ScheduleInput& input, bool h2) {
  auto ctx_or = detail::make_context(method, input, &pipelines);
  if (!ctx_or.ok()) return ctx_or.error();
  const detail::Context& ctx = *ctx_or;
  TAWPIPE_TRY(detail::check_options(ctx, {}));
  TAWPIPE_TRY(detail::check_pipeline_split(ctx, 1));
  const std::int32_t P = ctx.replica_ranks;
  const auto N = static_cast<std::int32_t>(ctx.batch.micro_batches);
  return detail::emit_pipeline(ctx, detail::PipelineSpec{1, true},
                               h2 ? zb2_orders(P, N) : zb1_orders(P, N));
}

}  // namespace

Expected<ir::Program> generate_zb1(const ScheduleInput& input) {
  return generate("zb1", input, false);
}

Expected<ir::Program> generate_zb2(const ScheduleInput& input) {
  return generate("zb2", input, true);
}

}  // namespace tawpipe::schedules
