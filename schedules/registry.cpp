// The table of schedule generators: one row per method (name, one-line description, paper).
#include <algorithm>

#include "schedules/schedule.h"

namespace tawpipe::schedules {
namespace {

Registry<ScheduleFactory> build_registry() {
  Registry<ScheduleFactory> r("schedule");
  r.add({"1f1b",
         "activation-passing pipeline (PP = ranks/dp), warm-up / 1F1B steady state / cool-down "
         "(option: virtual=V, interleaved 1F1B with V model chunks per rank)",
         "Narayanan et al., Megatron-LM, SC 2021 (arXiv 2104.04473) §2.2.1 (PipeDream-Flush), "
         "§2.2.2 (interleaved)",
         &generate_1f1b});
  r.add({"fsdp",
         "ZeRO-3 / FSDP: per-block all-gather (forward and again for backward), per-micro-batch "
         "reduce-scatter, sharded AdamW; dp > 1 = hybrid sharding",
         "Rajbhandari et al., ZeRO, SC 2020 (arXiv 1910.02054); Zhao et al., PyTorch FSDP, VLDB "
         "2023 (arXiv 2304.11277)",
         &generate_fsdp});
  r.add({"tawpipe",
         "topology-aware weight pipeline: device-bound shards, per-node groups staggered by one "
         "slot, intra-node broadcast/reduce, inter-node P2P only to owners (options: groups=N, "
         "grouping=on|off, overlap=on|off)",
         "Wu & Chen, TawPipe, AAAI 2026 (arXiv 2511.09741)", &generate_tawpipe});
  r.add({"weipipe",
         "weight-passing ring: forward weights, backward weights and gradient partial sums "
         "circulate rank -> rank+1 each turn (option: variant=interleave|naive)",
         "Lin et al., WeiPipe, PPoPP 2025 (DOI 10.1145/3710848.3710869)", &generate_weipipe});
  r.add({"zb1",
         "zero-bubble ZB-H1: 1F1B with backward split into B (input grad) and W (weight grad), "
         "W deferred into bubbles; 1F1B's peak activation memory; synchronous optimizer step",
         "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 (arXiv 2401.10241) §2.1",
         &generate_zb1});
  r.add({"zb2",
         "zero-bubble ZB-H2: split B/W, up to 2P-1 micro-batches in flight, no bubble between a "
         "stage's first and last pass; synchronous optimizer step",
         "Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024 (arXiv 2401.10241) §2.2",
         &generate_zb2});
  return r;
}

}  // namespace

const Registry<ScheduleFactory>& schedule_registry() {
  static const Registry<ScheduleFactory> registry = build_registry();
  return registry;
}

Expected<ir::Program> generate(std::string_view schedule, const ScheduleInput& input) {
  auto entry = schedule_registry().lookup(schedule);
  if (!entry.ok()) return entry.error();
  return (*entry)->factory(input);
}

std::string list_schedules() {
  const auto& rows = schedule_registry().entries();
  std::size_t width = 0;
  for (const auto& row : rows)
    width = std::max(width, row.name.size());
  std::string out;
  for (const auto& row : rows) {
    out += row.name + std::string(width - row.name.size() + 2, ' ') + row.description + "  [" +
           row.reference + "]\n";
  }
  return out;
}

std::vector<std::int32_t> uniform_nodes(std::int32_t nodes, std::int32_t gpus_per_node) {
  std::vector<std::int32_t> out;
  out.reserve(static_cast<std::size_t>(nodes) * static_cast<std::size_t>(gpus_per_node));
  for (std::int32_t n = 0; n < nodes; ++n) {
    for (std::int32_t g = 0; g < gpus_per_node; ++g)
      out.push_back(n);
  }
  return out;
}

}  // namespace tawpipe::schedules
