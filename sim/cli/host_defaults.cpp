#include "sim/cli/host_defaults.h"

#include <fmt/format.h>

#include <set>
#include <utility>

namespace tawpipe::cli {

Expected<schedules::Workload> resolve_with_host_defaults(schedules::WorkloadSpec& spec,
                                                         bool model_given,
                                                         const std::vector<std::string>& swept,
                                                         std::string* applied) {
  if (applied != nullptr) applied->clear();
  auto w = schedules::resolve_workload(spec);
  if (!w.ok() || !w->topology.host_cpu()) return w;
  // The keys the user gave (flags are --set items by now, main_command's add_flag_sets).
  std::set<std::string> given;
  for (const std::vector<std::string>* items : {&std::as_const(spec.sets), &swept})
    for (const std::string& item : *items)
      given.insert(schedules::canonical_key(item.substr(0, item.find('='))));
  const auto has = [&](const char* key) { return given.count(key) > 0; };
  const int ranks = w->topology.num_gpus();
  std::vector<std::string> sets;
  std::vector<std::string> said;
  if (!model_given) {
    spec.model = kHostDefaultModel;
    if (!has("model.layers")) {
      sets.push_back(fmt::format("model.layers={}", 4 * ranks));
      said.push_back(
          fmt::format("model {} with {} layers (4 per rank)", kHostDefaultModel, 4 * ranks));
    } else {
      said.push_back(fmt::format("model {}", kHostDefaultModel));
    }
  }
  if (!has("train.seq_len")) {
    sets.push_back("train.seq_len=256");
    said.push_back("seq 256");
  }
  if (!has("train.global_batch") && !has("train.micro_batches")) {
    sets.push_back(fmt::format("train.global_batch={}", 4 * ranks));
    said.push_back(fmt::format("global batch {} (4 per rank)", 4 * ranks));
  }
  if (!has("train.compute_dtype")) {
    sets.push_back("train.compute_dtype=fp32");
    said.push_back("fp32");
  }
  if (sets.empty() && model_given) return w;
  spec.sets.insert(spec.sets.begin(), sets.begin(), sets.end());
  if (applied != nullptr) {
    for (std::size_t i = 0; i < said.size(); ++i)
      *applied += (i == 0 ? "" : ", ") + said[i];
  }
  return schedules::resolve_workload(spec);
}

}  // namespace tawpipe::cli
