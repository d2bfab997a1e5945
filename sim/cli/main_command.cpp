// `tawsim [options]`: resolves the workload (topology, model, training configuration, --set
// overrides), then lists, prints, emits IR or simulates.
#include <fmt/format.h>
#include <boost/program_options.hpp>
#include <charconv>
#include <filesystem>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/io.h"
#include "common/ir/json.h"
#include "common/model/memory.h"
#include "common/model/presets.h"
#include "common/strings.h"
#include "common/topology/describe.h"
#include "common/topology/loader.h"
#include "common/units.h"
#include "schedules/schedule.h"
#include "schedules/workload.h"
#include "sim/cli/chakra_command.h"
#include "sim/cli/cli.h"
#include "sim/cli/host_defaults.h"
#include "sim/cli/run.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/profile/profile.h"

namespace po = boost::program_options;

namespace tawpipe::cli {
namespace {

constexpr const char* kExamples = R"(Examples:
  tawsim --topology 3x8-a100                     # all methods, the paper's headline workload
  tawsim --topology 3x8-a100 --schedule tawpipe,tawpipe[overlap=off],fsdp --seq-len 8192
  tawsim --topology 3x8-a100 --sweep seq-len=4096,8192,16384 --format csv > sweep.csv
  tawsim --topology 3x8-a100 --sweep inter_node.nic.bandwidth=1GB/s,10GB/s --format csv \
         --shard 2/2 > part2.csv && tawsim merge part1.csv part2.csv > sweep.csv
  tawsim --topology 3x8-a100 --set inter_node.nic.bandwidth=100Gb/s   # what-if: faster NICs
  tawsim --topology 3x8-a100 --schedule tawpipe --trace run.trace.json --report run.json
  tawsim --topology 3x8-a100 --print-topology    # nodes, fabrics, NICs, bisection bandwidth
  tawsim --topology 3x8-a100 --set inter_node.nic.bandwidth=100Gb/s --print-topology
  tawsim --topology 3x8-a100 --schedule tawpipe --seq-len 8192 --emit-ir tawpipe.ir.json
  tawsim verify tawpipe.ir.json
  tawsim --topology 2x2-cpu --model tiny --schedule tawpipe --emit-chakra out/   # ASTRA-sim
  tawsim --model llama3-70b --print-model
  tawsim --list-topologies | --list-models | --list-schedules
)";

struct Options {
  schedules::WorkloadSpec spec;
  std::string schedule = "all";
  std::optional<std::string> seq_len, micro_batch, micro_batches, global_batch, dtype, recompute;
  std::optional<int> dp;
  std::string emit_ir;
  std::string emit_chakra;
  std::string report_file;
  std::string trace_file;
  std::vector<std::string> trace_ranks;  // "0 1 8" or "0,1,8"
  std::vector<std::string> sweeps;
  std::string format = "table";
  std::string profile_file;
  double sm_contention = -1.0;  // negative: modelled
  std::string nccl_algo = "auto";
  std::string allocator = "caching";
  int jobs = 0;
  std::string dot_file;
  bool no_fold = false;
  bool no_symmetry = false;
  bool no_noise = false;
  int noise_replicates = sim::SimOptions{}.noise_replicates;
  bool comm_overlap = false;
  std::string shard;
  bool print_topology = false;
  bool print_model = false;
  bool list_topologies = false;
  bool list_models = false;
  bool list_schedules = false;
};

int fail(const Error& e) {
  std::fprintf(stderr, "tawsim: %s\n", e.to_string().c_str());
  return kExitUsage;
}

void print_model(const model::ModelConfig& m) {
  const model::ParamCounts p = model::param_counts(m);
  std::cout << fmt::format(
      "model {}: {} layers, hidden {}, FFN {}, heads {} (kv {}), vocab {}{}\n"
      "  parameters: {:.3f} B total, {:.3f} B decoder, {} per layer, {:.1f} M embedding\n"
      "  one layer in 16-bit: {}\n",
      m.name, m.layers, m.hidden, m.effective_ffn(), m.heads, m.effective_kv_heads(), m.vocab,
      m.tied_embeddings ? ", tied embeddings" : "", static_cast<double>(p.total) / 1e9,
      static_cast<double>(p.decoder) / 1e9, p.per_layer, static_cast<double>(p.embedding) / 1e6,
      pretty(Bytes(static_cast<std::uint64_t>(p.per_layer) * 2)));
  if (!m.reference.empty()) std::cout << "  source: " << m.reference << "\n";
}

// Per-layer activation memory and attention workspace at the workload's micro-batch shape
// (common/model/memory.h): shows that fused attention keeps O(s), not the s x s scores.
void print_model_memory(const model::ModelConfig& m, const model::TrainConfig& t) {
  const model::MicroBatchShape shape = t.shape();
  const auto b = [](std::int64_t v) { return pretty(Bytes(static_cast<std::uint64_t>(v))); };
  std::cout << fmt::format(
      "  memory per layer and micro-batch (seq {}, micro-batch {}, {}):\n"
      "    stored activations: none {}, selective {}, full {}, selective-op {} (recompute {})\n"
      "    attention workspace: {} fused (fp32 log-sum-exp, D and the backward's dQ accumulator, "
      "O(s)); eager s x s scores would "
      "be {}\n"
      "    backward working set ({}): {}; LM head + loss working set: {}\n"
      "  training state: {} B per parameter (weights {}, fp32 gradients {}, master + AdamW {})\n",
      t.seq_len, t.micro_batch_size, model::to_string(t.compute_dtype),
      b(model::layer_stored_activation_bytes(m, shape, model::RecomputePolicy::kNone)),
      b(model::layer_stored_activation_bytes(m, shape, model::RecomputePolicy::kSelective)),
      b(model::layer_stored_activation_bytes(m, shape, model::RecomputePolicy::kFull)),
      b(model::layer_stored_activation_bytes(m, shape, model::RecomputePolicy::kSelectiveOp)),
      model::to_string(t.recompute), b(model::attention_workspace_bytes(m, shape)),
      b(model::attention_workspace_bytes(m, shape, model::AttentionImpl::kEager)),
      model::to_string(t.recompute),
      b(model::layer_backward_working_set_bytes(m, shape, t.recompute)),
      b(model::head_working_set_bytes(m, shape, t.loss_kernel)),
      model::state_bytes_per_param(shape.dtype_bytes).total(),
      model::state_bytes_per_param(shape.dtype_bytes).weights,
      model::state_bytes_per_param(shape.dtype_bytes).gradients,
      model::state_bytes_per_param(shape.dtype_bytes).optimizer);
}

// The workload flags are --set items under the hood, so --sweep can vary them the same way.
void add_flag_sets(const Options& o, std::vector<std::string>& sets) {
  std::vector<std::string> flags;
  if (o.seq_len) flags.push_back("train.seq_len=" + *o.seq_len);
  if (o.micro_batch) flags.push_back("train.micro_batch_size=" + *o.micro_batch);
  if (o.micro_batches) {
    flags.push_back("train.micro_batches=" + *o.micro_batches);
    if (!o.global_batch) flags.push_back("train.global_batch=0");
  }
  if (o.global_batch) flags.push_back("train.global_batch=" + *o.global_batch);
  if (o.dtype) flags.push_back("train.compute_dtype=" + *o.dtype);
  if (o.recompute) flags.push_back("train.recompute=" + *o.recompute);
  if (o.dp) flags.push_back("dp=" + std::to_string(*o.dp));
  sets.insert(sets.begin(), flags.begin(), flags.end());  // explicit --set items win
}

int emit_programs(const schedules::Workload& w, const std::vector<schedules::ScheduleVariant>& vs,
                  const std::string& pattern) {
  if (vs.size() > 1 && pattern.find("{}") == std::string::npos) {
    return fail(
        make_error("--emit-ir with several schedules needs '{}' in the file name "
                   "(replaced by each schedule), e.g. --emit-ir run.{}.ir.json"));
  }
  // Generate and verify everything first: nothing is written unless all of it is valid.
  auto programs = generate_verified(w, vs);
  if (!programs.ok()) return fail(programs.error());
  for (std::size_t i = 0; i < vs.size(); ++i) {
    std::string file = pattern;
    if (auto pos = file.find("{}"); pos != std::string::npos) file.replace(pos, 2, vs[i].label);
    Status s = write_file_with(file, [&](std::ostream& out) {
      ir::write_program_json((*programs)[i], out);
      return Status::success();
    });
    if (!s.ok()) return fail(s.error());
  }
  return kExitOk;
}

Expected<Format> parse_format(const std::string& text) {
  if (text == "table") return Format::table;
  if (text == "csv") return Format::csv;
  if (text == "json") return Format::json;
  return make_error("--format must be table, csv or json, got '" + text + "'");
}

// Progress on stderr for sweeps: points done, rate and ETA; only when stderr is a terminal.
std::function<void(std::size_t, std::size_t)> progress_bar() {
  if (::isatty(2) == 0) return {};
  const auto start = std::chrono::steady_clock::now();
  return [start](std::size_t done, std::size_t total) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = elapsed > 0.0 ? static_cast<double>(done) / elapsed : 0.0;
    const double eta = rate > 0.0 ? static_cast<double>(total - done) / rate : 0.0;
    const int width = 30;
    const int filled =
        static_cast<int>(width * static_cast<double>(done) / static_cast<double>(total));
    std::fprintf(stderr, "\r[%s%s] %zu/%zu points, %.1f/s, ETA %.0f s ",
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done, total,
                 rate, eta);
    if (done == total) std::fprintf(stderr, "\n");
  };
}

// `host_defaults`: the CPU topology's default items applied (resolve_with_host_defaults), said
// under the table.
int simulate_command(const Options& o, const std::vector<schedules::ScheduleVariant>& variants,
                     const schedules::Workload& w, const std::string& host_defaults) {
  auto format = parse_format(o.format);
  if (!format.ok()) return fail(format.error());
  sim::SimOptions options = default_sim_options();
  if (!o.profile_file.empty()) {
    auto profile = profile::read_profile_file(o.profile_file);
    if (!profile.ok()) return fail(profile.error());
    options.profile = std::move(*profile);
    options.profile_name = std::filesystem::path(o.profile_file).filename().string();
    // A noise trace is replayed one unit per core (sim/run/noise.h): a trace of another layout
    // is bad input, said once here rather than as every method's n/a.
    const profile::NoiseTrace* noise = options.profile->noise ? &*options.profile->noise : nullptr;
    const auto& host = w.topology.host_cpu();
    if (!o.no_noise && noise != nullptr && host &&
        static_cast<int>(noise->units.size()) < host->cores_per_host) {
      return fail(make_error(o.profile_file + ": noise.units: " +
                             std::to_string(noise->units.size()) + " unit(s), but topology " +
                             w.topology.name() + " has " + std::to_string(host->cores_per_host) +
                             " cores per host (calibrate on the run's layout, or --no-noise)"));
    }
  }
  if (o.sm_contention != -1.0 && !(o.sm_contention >= 0.0 && o.sm_contention < 1.0)) {
    return fail(
        make_error("--sm-contention must be in [0, 1), got " + std::to_string(o.sm_contention)));
  }
  options.sm_contention = o.sm_contention;
  options.comm_order = !o.comm_overlap;
  options.symmetry = !o.no_symmetry;
  options.noise = !o.no_noise;
  if (o.noise_replicates < 1 || o.noise_replicates > 1000)
    return fail(make_error("--noise-replicates must be in [1, 1000], got " +
                           std::to_string(o.noise_replicates)));
  options.noise_replicates = o.noise_replicates;
  if (!sim::all_reduce_algo_from_name(o.nccl_algo, &options.nccl_algo))
    return fail(make_error("--nccl-algo must be auto, ring or tree, got '" + o.nccl_algo + "'"));
  // The device allocator of the trainer (sim/memory/memory_model.h): PyTorch's caching allocator
  // loses a share of its transient memory to fragmentation; a trainer that allocates every
  // buffer once before the first step (llm.c's gpt2_allocate_state, cudaMalloc) loses none.
  if (o.allocator == "static") {
    options.memory.fragmentation = 0.0;
  } else if (o.allocator != "caching") {
    return fail(make_error("--allocator must be caching or static, got '" + o.allocator + "'"));
  }

  if (!o.sweeps.empty()) {
    if (!o.report_file.empty() || !o.trace_file.empty()) {
      return fail(make_error("--report and --trace take a single workload, not a --sweep"));
    }
    std::vector<Sweep> sweeps;
    for (const auto& text : o.sweeps) {
      auto s = parse_sweep(text);
      if (!s.ok()) return fail(s.error());
      sweeps.push_back(std::move(*s));
    }
    Shard shard;
    if (!o.shard.empty()) {
      auto sh = parse_shard(o.shard);
      if (!sh.ok()) return fail(sh.error());
      shard = *sh;
    }
    const int jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::thread::hardware_concurrency());
    auto wall = run_sweep(o.spec, sweeps, variants, options, *format, jobs, std::cout,
                          progress_bar(), !o.no_fold, shard);
    if (!wall.ok()) return fail(wall.error());
    std::fprintf(stderr, "tawsim: sweep finished in %.2f s with %d job(s)\n", *wall, jobs);
    return kExitOk;
  }

  if (!o.shard.empty()) return fail(make_error("--shard slices a --sweep; give one"));
  RunOutputs outputs{o.report_file, o.trace_file, o.emit_ir, {}};
  std::vector<int> trace_ranks;
  for (const std::string& arg : o.trace_ranks) {
    std::size_t pos = 0;
    while (pos <= arg.size()) {
      const std::size_t comma = std::min(arg.find(',', pos), arg.size());
      const std::string item = arg.substr(pos, comma - pos);
      int r = 0;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), r);
      if (item.empty() || ec != std::errc() || end != item.data() + item.size())
        return fail(make_error("--trace-ranks: '" + arg + "' is not a list of ranks (e.g. 0,1,8)"));
      trace_ranks.push_back(r);
      pos = comma + 1;
    }
  }
  for (int r : trace_ranks) {
    if (r < 0 || r >= w.topology.num_gpus()) {
      return fail(make_error("--trace-ranks: rank " + std::to_string(r) + " is not in 0.." +
                             std::to_string(w.topology.num_gpus() - 1)));
    }
    outputs.trace_ranks.push_back(r);
  }
  auto results = run_methods(w, variants, options, outputs, !o.no_fold);
  if (!results.ok()) return fail(results.error());
  const std::string title = workload_title(w);
  switch (*format) {
    case Format::table:
      write_table(std::cout, title, *results);
      if (!host_defaults.empty()) {
        std::cout << "CPU topology: default workload " << host_defaults
                  << " (scripts/validate-host's; --model, --seq-len, --global-batch, --dtype "
                     "choose another)\n";
      }
      break;
    case Format::csv:
      write_csv_header(std::cout, {});
      write_csv_rows(std::cout, {}, *results);
      break;
    case Format::json:
      std::cout << point_json(title, {}, *results) << "\n";
      break;
  }
  return kExitOk;
}

}  // namespace

int main_command(const std::vector<std::string>& args) {
  Options o;
  po::options_description workload("Workload");
  // clang-format off
  workload.add_options()
    ("topology,t", po::value(&o.spec.topology), "topology name (--list-topologies) or YAML path "
                                                "[3x8-a100]")
    ("model,m", po::value(&o.spec.model), "model preset (--list-models) or YAML path "
                                          "[llama-h4096-l48; cpu-h256 on CPU topologies]")
    ("schedule,s", po::value(&o.schedule), "comma list of methods, 'all', or variants with "
                                           "options: tawpipe[overlap=off] [all]")
    ("dp", po::value<int>()->notifier([&](int v) { o.dp = v; }),
     "data-parallel replicas of every method [1]")
    ("seq-len", po::value<std::string>()->notifier([&](const std::string& v) { o.seq_len = v; }),
     "tokens per sequence [16384; 256 on CPU topologies]")
    ("micro-batch", po::value<std::string>()->notifier([&](const std::string& v) {
       o.micro_batch = v; }), "sequences per micro-batch [1]")
    ("micro-batches", po::value<std::string>()->notifier([&](const std::string& v) {
       o.micro_batches = v; }), "micro-batches per data-parallel worker (instead of --global-batch)")
    ("global-batch", po::value<std::string>()->notifier([&](const std::string& v) {
       o.global_batch = v; }), "sequences per iteration over all workers [1536; 4 per rank on "
                              "CPU topologies]")
    ("dtype", po::value<std::string>()->notifier([&](const std::string& v) { o.dtype = v; }),
     "compute dtype: bf16, fp16, fp32 [fp16; fp32 on CPU topologies]")
    ("recompute", po::value<std::string>()->notifier([&](const std::string& v) {
       o.recompute = v; }), "activation recomputation: none, selective (Korthikanti), full, selective-op (torchtitan's per-op SAC) [full]")
    ("set", po::value(&o.spec.sets)->composing(),
     "KEY=VALUE override, repeatable: a topology field by YAML key path "
     "(inter_node.nic.bandwidth=100Gb/s), model.KEY, train.KEY, SCHEDULE.KEY (tawpipe.groups=3)");
  po::options_description output("Simulation and output");
  output.add_options()
    ("sweep", po::value(&o.sweeps)->composing(),
     "KEY=V1,V2,...: simulate every value (repeatable: cartesian product); KEY as for --set or "
     "seq-len, micro-batch, micro-batches, global-batch, dtype, recompute, dp")
    ("jobs,j", po::value(&o.jobs), "parallel sweep points [number of cores]")
    ("shard", po::value(&o.shard), "K/N: run only the K-th of N contiguous slices of the sweep "
                                   "(csv/json; join them with tawsim merge)")
    ("format", po::value(&o.format), "table, csv or json [table]")
    ("report", po::value(&o.report_file), "write each method's report (JSON) to FILE ('{}' = method)")
    ("trace", po::value(&o.trace_file), "write each method's Chrome/Perfetto trace to FILE ('{}' = "
                                        "method)")
    ("trace-ranks", po::value(&o.trace_ranks)->multitoken(), "keep only these ranks in traces (e.g. 0,1,8)")
    ("profile", po::value(&o.profile_file), "calibration profile (YAML from tawexec calibrate)")
    ("sm-contention", po::value(&o.sm_contention),
     "override the modelled slow-down of compute while NCCL kernels run on the same GPU with a "
     "flat factor, e.g. 0.1; 0 = none [modelled from channels, SMs and bus traffic]")
    ("comm-overlap", po::bool_switch(&o.comm_overlap),
     "what-if: let operations of one NCCL communicator overlap on a GPU (NCCL runs them one at "
     "a time, in issue order)")
    ("no-fold", po::bool_switch(&o.no_fold),
     "simulate every micro-batch instead of extrapolating repeated rounds (sim/fold/fold.h)")
    ("no-symmetry", po::bool_switch(&o.no_symmetry),
     "simulate every data-parallel replica instead of one per set of identical replicas "
     "(sim/symmetry/symmetry.h)")
    ("no-noise", po::bool_switch(&o.no_noise),
     "CPU topologies: do not replay the profile's noise trace (sim/run/noise.h); every core runs "
     "at the calibrated rates")
    ("noise-replicates", po::value(&o.noise_replicates),
     "CPU topologies with a noise trace: iterations simulated at evenly spread trace offsets, "
     "the median reported [21]")
    ("allocator", po::value(&o.allocator),
     "device allocator of the trainer: caching (PyTorch's, a fragmentation reserve of 15 % of "
     "transient memory) or static (every buffer allocated once, as llm.c) [caching]")
    ("nccl-algo", po::value(&o.nccl_algo),
     "all-reduce algorithm as NCCL_ALGO: auto (NCCL's tuner: ring or tree), ring, tree [auto]");
  po::options_description actions("Actions");
  actions.add_options()
    ("print-topology", po::bool_switch(&o.print_topology), "print a summary of the topology")
    ("dot", po::value(&o.dot_file), "write the topology graph in Graphviz DOT to FILE")
    ("print-model", po::bool_switch(&o.print_model), "print the model's dimensions and sizes")
    ("emit-ir", po::value(&o.emit_ir), "write each schedule's IR (JSON) to FILE ('{}' = schedule)")
    ("emit-chakra", po::value(&o.emit_chakra),
     "write each schedule as Chakra execution traces (one .et file per rank) into DIR")
    ("list-topologies", po::bool_switch(&o.list_topologies), "list the shipped topologies")
    ("list-models", po::bool_switch(&o.list_models), "list the model presets")
    ("list-schedules", po::bool_switch(&o.list_schedules), "list the methods with their papers")
    ("help,h", "print this help with examples")
    ("version", "print the version");
  // clang-format on
  po::options_description all;
  all.add(workload).add(output).add(actions);

  po::variables_map vm;
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(all).run();
    // Boost keeps words that belong to no option as positional tokens and `store` drops them:
    // refuse them instead (`tawsim --topology 3x8-a100 tawpipe` would otherwise run all methods).
    for (const po::option& opt : parsed.options) {
      if (opt.position_key < 0 || opt.original_tokens.empty()) continue;
      const std::string& word = opt.original_tokens.front();
      std::vector<std::string> names;
      for (const auto& d : all.options())
        names.push_back(d->long_name());
      const std::string near = closest_match(word, names);
      return fail(make_error("unexpected argument '" + word + "'" +
                             (near.empty() ? std::string(" (options start with --")
                                           : " (did you mean '--" + near + "'?") +
                             "; see tawsim --help)"));
    }
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(make_error(std::string(e.what()) + " (see tawsim --help)"));
  }
  if (vm.count("help")) {
    std::cout << "Usage: tawsim [options]\n"
                 "       tawsim verify FILE.ir.json...\n\n"
              << workload << "\n"
              << output << "\n"
              << actions << "\n"
              << kExamples;
    return kExitOk;
  }
  if (vm.count("version")) {
    std::cout << "tawsim " TAWPIPE_VERSION "\n";
    return kExitOk;
  }
  if (o.list_topologies) {
    for (const auto& t : topo::list_shipped_topologies()) {
      std::cout << fmt::format("{:<22} {}\n", t.name, t.description);
    }
    return kExitOk;
  }
  if (o.list_models) {
    std::cout << model::list_models();
    return kExitOk;
  }
  if (o.list_schedules) {
    std::cout << schedules::list_schedules();
    return kExitOk;
  }

  auto variants = schedules::parse_schedule_list(o.schedule);
  if (!variants.ok()) return fail(variants.error().at("--schedule", 0, 0, ""));
  add_flag_sets(o, o.spec.sets);
  std::string host_defaults;
  auto w = resolve_with_host_defaults(o.spec, vm.count("model") > 0, o.sweeps, &host_defaults);
  if (!w.ok()) return fail(w.error());

  if (!o.dot_file.empty()) {
    Status s = write_file_with(o.dot_file, [&](std::ostream& out) {
      topo::write_dot(w->topology, out);
      return Status::success();
    });
    if (!s.ok()) return fail(s.error());
  }
  if (o.print_topology) std::cout << topo::describe(w->topology);
  if (o.print_model) {
    print_model(w->model);
    print_model_memory(w->model, w->train);
  }
  if (o.print_topology || o.print_model || !o.dot_file.empty()) return kExitOk;
  if (!o.emit_chakra.empty()) return emit_chakra(*w, *variants, o.emit_chakra);
  if (!o.emit_ir.empty() && o.report_file.empty() && o.trace_file.empty()) {
    return emit_programs(*w, *variants, o.emit_ir);
  }

  return simulate_command(o, *variants, *w, host_defaults);
}

}  // namespace tawpipe::cli
