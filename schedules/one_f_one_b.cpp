// 1F1B pipeline parallelism, as Megatron-LM runs it: "PipeDream-Flush" / non-interleaved 1F1B of
// Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC 2021 (arXiv 2104.04473), §2.2.1; schedule of Megatron-LM
// `forward_backward_pipelining_without_interleaving` (algorithms.md §4).
//
// The schedule in prose. Each data-parallel replica is a pipeline of P = ranks/dp stages; stage
// i holds decoder layers [i*L/P, (i+1)*L/P). Stage 0 also holds the embedding block, stage P-1
// the final norm + LM head; the IR's single non-decoder block (kEmbeddingLayer) therefore lives
// on both, and its gradient is all-reduced between them at the end of the step exactly as
// Megatron all-reduces tied word-embedding gradients. With N micro-batches stage i runs
// min(P-1-i, N) warm-up forwards, then alternates one forward and one backward (steady state),
// then drains the remaining backwards (cool-down). Every forward receives the boundary
// activation from stage i-1 and sends its output to stage i+1; every backward receives the
// activation gradient from stage i+1 and sends its input gradient to stage i-1 (b*s*H elements
// each way per micro-batch and stage boundary). The P2P runs on two comm streams (activations,
// activation gradients) so a stage can overlap them with compute. Recomputation follows
// train.recompute (Megatron's --recompute-activations is `selective`, --recompute-granularity
// full is `full`): what a stage keeps between a micro-batch's forward and backward is its input
// activation plus a stash of the stored per-layer tensors. Gradients accumulate in fp32 main
// grads (Megatron's DDP buffer); with dp > 1 each stage's gradient, and the embedding gradient on
// the first and last stage, is all-reduced across replicas before AdamW.
//
// Interleaved 1F1B (option virtual=V, V >= 2): Narayanan et al. 2021 §2.2.2, Megatron-LM
// `forward_backward_pipelining_with_interleaving`. The model is cut into P*V chunks of L/(P*V)
// layers; rank i runs chunks i, i+P, ..., i+(V-1)P, so a micro-batch crosses every rank V times
// (rank P-1 hands chunk v's output to rank 0's chunk v+1). Micro-batches go in groups of P:
// rank i's k-th forward is chunk (k/P) mod V of micro-batch (k/(P*V))*P + k mod P, its k-th
// backward the same with the chunk order reversed; it runs (P-1-i)*2 + (V-1)*P warm-up forwards
// (capped at N*V), then alternates one forward and one backward, then drains the backwards. N
// must be a multiple of P (as in Megatron). The bubble shrinks to (P-1)/(V*N) of the ideal time
// (each pipeline fill/drain step is one chunk, 1/V of a stage), at the price of more
// point-to-point traffic: P*V-1 activation messages per micro-batch and direction instead of
// P-1 (V-1 of them on the wrap from rank P-1 to rank 0).
#include <algorithm>
#include <string>

#include "schedules/detail.h"
#include "schedules/pipeline.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {
namespace {

using detail::Pass;
using detail::Step;

std::int64_t pipelines(std::int32_t /*world*/, std::int32_t dp) {
  return dp;
}

/// Megatron's non-interleaved order: warm-up forwards, steady 1F1B, cool-down backwards.
std::vector<Step> plain_order(std::int32_t P, std::int32_t i, std::int32_t N) {
  std::vector<Step> out;
  const std::int32_t warmup = std::min(P - 1 - i, N);
  for (std::int32_t m = 0; m < warmup; ++m)
    out.push_back({Pass::forward, 0, m});
  for (std::int32_t m = 0; m < N - warmup; ++m) {
    out.push_back({Pass::forward, 0, warmup + m});
    out.push_back({Pass::backward, 0, m});
  }
  for (std::int32_t m = N - warmup; m < N; ++m)
    out.push_back({Pass::backward, 0, m});
  return out;
}

/// Megatron's interleaved order (file comment).
std::vector<Step> interleaved_order(std::int32_t P, std::int32_t V, std::int32_t i,
                                    std::int32_t N) {
  const std::int32_t total = N * V;
  const auto step = [&](std::int32_t k, bool forward) {
    const std::int32_t v = (k / P) % V;
    const std::int32_t m = (k / (P * V)) * P + k % P;
    return Step{forward ? Pass::forward : Pass::backward, forward ? v : V - 1 - v, m};
  };
  const std::int32_t warmup = std::min((P - 1 - i) * 2 + (V - 1) * P, total);
  std::vector<Step> out;
  for (std::int32_t k = 0; k < warmup; ++k)
    out.push_back(step(k, true));
  for (std::int32_t k = 0; k < total - warmup; ++k) {
    out.push_back(step(warmup + k, true));
    out.push_back(step(k, false));
  }
  for (std::int32_t k = total - warmup; k < total; ++k)
    out.push_back(step(k, false));
  return out;
}

}  // namespace

Expected<ir::Program> generate_1f1b(const ScheduleInput& input) {
  auto ctx_or = detail::make_context("1f1b", input, &pipelines);
  if (!ctx_or.ok()) return ctx_or.error();
  const detail::Context& ctx = *ctx_or;
  TAWPIPE_TRY(detail::check_options(ctx, {"virtual"}));
  const std::string vs = detail::option(ctx, "virtual", "1");
  std::int32_t V = 0;
  for (char ch : vs) {
    if (ch < '0' || ch > '9' || V > 1000) {
      V = 0;
      break;
    }
    V = V * 10 + (ch - '0');
  }
  if (V < 1) {
    return make_error("1f1b: option virtual=" + vs +
                      " must be a positive integer (model chunks per rank)");
  }
  TAWPIPE_TRY(detail::check_pipeline_split(ctx, V));
  const std::int32_t P = ctx.replica_ranks;
  const std::int32_t N = static_cast<std::int32_t>(ctx.batch.micro_batches);
  if (V > 1 && N % P != 0) {
    return make_error("1f1b: virtual=" + vs + " needs the micro-batches per pipeline (" +
                      std::to_string(N) + ") to be a multiple of the " + std::to_string(P) +
                      " pipeline stages, as Megatron's interleaved schedule does");
  }
  detail::StageOrders orders(static_cast<std::size_t>(P));
  for (std::int32_t i = 0; i < P; ++i) {
    orders[static_cast<std::size_t>(i)] =
        V == 1 ? plain_order(P, i, N) : interleaved_order(P, V, i, N);
  }
  return detail::emit_pipeline(ctx, detail::PipelineSpec{V, false}, orders);
}

}  // namespace tawpipe::schedules
