#include "schedules/workload.h"

#include <charconv>
#include <utility>

#include "common/model/loader.h"
#include "common/model/presets.h"
#include "common/strings.h"
#include "common/topology/loader.h"

namespace tawpipe::schedules {
namespace {

struct Alias {
  std::string_view alias;
  std::string_view key;
};
constexpr Alias kAliases[] = {
    {"seq-len", "train.seq_len"},
    {"seq_len", "train.seq_len"},
    {"micro-batch", "train.micro_batch_size"},
    {"micro-batches", "train.micro_batches"},
    {"global-batch", "train.global_batch"},
    {"dtype", "train.compute_dtype"},
    {"recompute", "train.recompute"},
};

Error set_error(std::string_view item, std::string message) {
  Error e = make_error(std::move(message));
  e.file = "--set";
  e.key_path = std::string(item.substr(0, item.find('=')));
  return e;
}

// Splits "a[x=1,y=2],b" at top-level commas.
std::vector<std::string> split_top_level(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  out.push_back(std::move(current));
  return out;
}

Expected<std::pair<std::string, std::string>> split_key_value(std::string_view item) {
  const auto eq = item.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return make_error("expected KEY=VALUE, got '" + std::string(item) + "'");
  }
  return std::pair<std::string, std::string>(std::string(item.substr(0, eq)),
                                             std::string(item.substr(eq + 1)));
}

}  // namespace

std::string canonical_key(std::string_view key) {
  for (const Alias& a : kAliases) {
    if (a.alias == key) return std::string(a.key);
  }
  return std::string(key);
}

Expected<Workload> resolve_workload(const WorkloadSpec& spec) {
  // Route the overrides first so that every bad item is reported before any file is read.
  std::vector<topo::Override> topology_overrides;
  std::vector<std::pair<std::string, std::string>> model_sets, train_sets;
  std::map<std::string, std::map<std::string, std::string>> schedule_options;
  std::int32_t dp = 1;
  const std::vector<std::string> schedule_names = schedule_registry().names();
  for (const std::string& item : spec.sets) {
    auto kv = split_key_value(item);
    if (!kv.ok()) return set_error(item, kv.error().message);
    const std::string key = canonical_key(kv->first);
    const std::string& value = kv->second;
    const auto dot = key.find('.');
    const std::string head = key.substr(0, dot);
    const std::string rest = dot == std::string::npos ? std::string() : key.substr(dot + 1);
    if (key == "dp") {
      int v = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size() || v <= 0) {
        return set_error(item, "dp must be a positive integer, got '" + value + "'");
      }
      dp = v;
    } else if (head == "model" && !rest.empty()) {
      model_sets.emplace_back(rest, value);
    } else if (head == "train" && !rest.empty()) {
      train_sets.emplace_back(rest, value);
    } else if (schedule_registry().find(head) != nullptr && !rest.empty()) {
      schedule_options[head][rest] = value;
    } else {
      topology_overrides.push_back(topo::Override{key, value});
    }
  }

  auto path = topo::resolve_topology(spec.topology);
  if (!path.ok()) return std::move(path).error();
  auto topology = topo::load_topology_file(*path, topology_overrides);
  if (!topology.ok()) {
    Error e = std::move(topology).error();
    // A typo in the routing prefix lands in the topology; say what it may have meant.
    std::vector<std::string> prefixes = {"model", "train", "dp"};
    prefixes.insert(prefixes.end(), schedule_names.begin(), schedule_names.end());
    for (const auto& o : topology_overrides) {
      const std::string head = o.key_path.substr(0, o.key_path.find('.'));
      const std::string hint = closest_match(head, prefixes);
      if (!hint.empty() && e.message.find(head) != std::string::npos) {
        e.message += " (or did you mean the prefix '" + hint + ".'?)";
        break;
      }
    }
    return e;
  }

  auto model_cfg = model::resolve_model(spec.model);
  if (!model_cfg.ok()) return std::move(model_cfg).error();
  for (const auto& [k, v] : model_sets) {
    Status s = model::apply_override(*model_cfg, k, v);
    if (!s.ok()) return set_error("model." + k, s.error().message);
  }
  model::TrainConfig train;
  for (const auto& [k, v] : train_sets) {
    Status s = model::apply_train_override(train, k, v);
    if (!s.ok()) return set_error("train." + k, s.error().message);
  }
  return Workload{std::move(*topology), std::move(*model_cfg), train, dp,
                  std::move(schedule_options)};
}

Expected<std::vector<ScheduleVariant>> parse_schedule_list(std::string_view text) {
  std::vector<ScheduleVariant> out;
  for (const std::string& raw : split_top_level(text)) {
    std::string item(raw);
    if (item.empty()) return make_error("empty item in schedule list '" + std::string(text) + "'");
    if (item == "all") {
      for (const auto& name : schedule_registry().names())
        out.push_back({name, {}, name});
      continue;
    }
    ScheduleVariant v;
    v.label = item;
    const auto bracket = item.find('[');
    v.schedule = item.substr(0, bracket);
    if (bracket != std::string::npos) {
      if (item.back() != ']') return make_error("missing ']' in schedule '" + item + "'");
      const std::string inner = item.substr(bracket + 1, item.size() - bracket - 2);
      for (const std::string& opt : split(inner, ',')) {
        auto kv = split_key_value(opt);
        if (!kv.ok()) return make_error("in schedule '" + item + "': " + kv.error().message);
        v.options[kv->first] = kv->second;
      }
    }
    auto entry = schedule_registry().lookup(v.schedule);
    if (!entry.ok()) return std::move(entry).error();
    out.push_back(std::move(v));
  }
  return out;
}

ScheduleInput schedule_input(const Workload& workload, const ScheduleVariant& variant) {
  ScheduleInput in;
  const topo::Topology& t = workload.topology;
  in.node_of_rank.reserve(static_cast<std::size_t>(t.num_gpus()));
  for (int g = 0; g < t.num_gpus(); ++g)
    in.node_of_rank.push_back(t.node_of(g));
  in.model = workload.model;
  in.train = workload.train;
  in.dp = workload.dp;
  if (auto it = workload.schedule_options.find(variant.schedule);
      it != workload.schedule_options.end()) {
    in.options = it->second;
  }
  for (const auto& [k, v] : variant.options)
    in.options[k] = v;
  in.topology_name = t.name();
  in.topology_hash = t.content_hash();
  in.threads = workload.threads;
  return in;
}

Expected<ir::Program> build_program(const Workload& workload, const ScheduleVariant& variant) {
  return generate(variant.schedule, schedule_input(workload, variant));
}

Expected<std::shared_ptr<const ir::Program>> shared_program(const Workload& workload,
                                                            const ScheduleVariant& variant,
                                                            bool replica_only) {
  ScheduleInput input = schedule_input(workload, variant);
  input.replica_only = replica_only;
  if (workload.programs) return workload.programs->get(variant.schedule, input);
  auto program = generate(variant.schedule, input);
  if (!program.ok()) return program.error();
  return std::make_shared<const ir::Program>(std::move(*program));
}

}  // namespace tawpipe::schedules
