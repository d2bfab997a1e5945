// `tawsim plan`: which method, options, micro-batch size, data-parallel degree and
// recomputation to use on a cluster for a model, sequence length and global batch.
//
// Search: every method variant (TawPipe default / overlap=off / grouping=off; WeiPipe
// interleave / naive; FSDP; 1F1B) x micro-batch size {1, 2, 4} x every data-parallel degree that
// divides the GPU count x recomputation {none, selective, full}. Cheap bounds first: each
// candidate is generated and simulated with ONE micro-batch per worker (a program of a few
// thousand ops), which gives
//   - the batch check (the global batch must split over workers x micro-batch size),
//   - a memory lower bound (peak with one micro-batch in flight; more micro-batches only add
//     activations), pruning what cannot fit the devices' usable memory, and
//   - a compute lower bound on the iteration time: m x the probe's hardware FLOPs at the summed
//     peak FLOP/s of all GPUs, i.e. an upper bound on tokens/s.
// Candidates are then simulated (with steady-state folding, sim/fold/fold.h) best bound first,
// and the search stops as soon as no remaining bound can enter the top list.
#include <fmt/format.h>
#include <unistd.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/model/precision.h"
#include "schedules/workload.h"
#include "sim/cli/cli.h"
#include "sim/cli/host_defaults.h"
#include "sim/cli/results.h"
#include "sim/cli/run.h"
#include "sim/fold/fold.h"

namespace po = boost::program_options;

namespace tawpipe::cli {
namespace {

struct Candidate {
  schedules::ScheduleVariant variant;
  std::int64_t micro_batch_size = 1;
  std::int32_t dp = 1;
  std::string recompute;
  std::string label;
  double tokens_bound = 0.0;       ///< upper bound on tokens/s
  std::uint64_t memory_bound = 0;  ///< lower bound on the peak memory of the busiest rank
  std::optional<report::Report> report;
  std::vector<std::string> equivalents;  ///< configurations with identical results
};

int fail(const std::string& message) {
  std::fprintf(stderr, "tawsim plan: %s\n", message.c_str());
  return kExitUsage;
}

std::vector<schedules::ScheduleVariant> plan_variants() {
  const auto v = [](std::string s, std::map<std::string, std::string> o, std::string label) {
    return schedules::ScheduleVariant{std::move(s), std::move(o), std::move(label)};
  };
  return {v("tawpipe", {}, "tawpipe"),
          v("tawpipe", {{"overlap", "off"}}, "tawpipe[overlap=off]"),
          v("tawpipe", {{"grouping", "off"}}, "tawpipe[grouping=off]"),
          v("weipipe", {}, "weipipe"),
          v("weipipe", {{"variant", "naive"}}, "weipipe[variant=naive]"),
          v("fsdp", {}, "fsdp"),
          v("1f1b", {}, "1f1b")};
}

bool is_comm_class(const std::string& name) {
  for (const char* c :
       {"send", "recv", "broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"})
    if (name == c) return true;
  return false;
}

std::uint64_t max_peak(const report::Report& r) {
  std::uint64_t m = 0;
  for (const auto& s : r.rank_stats)
    m = std::max(m, s.peak_memory_bytes);
  return m;
}
bool fits(const report::Report& r) {
  return std::none_of(r.rank_stats.begin(), r.rank_stats.end(),
                      [](const report::RankStats& s) { return s.oom; });
}
double mean_compute_s(const report::Report& r) {
  double sum = 0.0;
  for (const auto& s : r.rank_stats)
    sum += s.compute.seconds();
  return r.rank_stats.empty() ? 0.0 : sum / static_cast<double>(r.rank_stats.size());
}

// Why `c` loses to `best`: the differences that explain the gap, largest first.
std::string why_loses(const Candidate& c, const Candidate& best, bool memory_objective) {
  const RowFigures f = figures(*c.report), b = figures(*best.report);
  std::vector<std::pair<double, std::string>> parts;
  if (memory_objective) {
    parts.emplace_back(1e9, fmt::format("{:+.1f} GiB peak", f.peak_memory_gib - b.peak_memory_gib));
  } else {
    parts.emplace_back(
        f.bubble_fraction - b.bubble_fraction,
        fmt::format("bubble {:+.1f} pp", 100 * (f.bubble_fraction - b.bubble_fraction)));
    parts.emplace_back(f.exposed_comm_fraction - b.exposed_comm_fraction,
                       fmt::format("exposed comm {:+.1f} pp",
                                   100 * (f.exposed_comm_fraction - b.exposed_comm_fraction)));
    const double cb = mean_compute_s(*best.report), cc = mean_compute_s(*c.report);
    if (cb > 0.0) {
      const double rel = cc / cb - 1.0;
      parts.emplace_back(rel, fmt::format("compute {:+.1f} %", 100 * rel));
    }
  }
  std::sort(parts.begin(), parts.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string out;
  if (!memory_objective)
    out = fmt::format("{:.1f} % slower: ", 100 * (1.0 - f.tokens_per_s / b.tokens_per_s));
  int n = 0;
  for (const auto& [weight, text] : parts) {
    if (n > 0 && weight <= 0.0) break;
    out += (n ? ", " : "") + text;
    if (++n == 2) break;
  }
  return out;
}

void progress(std::size_t done, std::size_t total, const char* what) {
  if (::isatty(2) == 0 || total == 0) return;
  const int width = 30;
  const int filled =
      static_cast<int>(width * static_cast<double>(done) / static_cast<double>(total));
  std::fprintf(stderr, "\r%-9s [%s%s] %zu/%zu ", what,
               std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
}

}  // namespace

int plan_command(const std::vector<std::string>& args) {
  schedules::WorkloadSpec spec;
  std::string seq_len = "16384", global_batch = "1536", objective = "tokens_per_s", pareto_file;
  std::size_t top = 10;
  bool no_fold = false;
  po::options_description opts("Options");
  // clang-format off
  opts.add_options()
    ("topology,t", po::value(&spec.topology), "topology name or YAML path [3x8-a100]")
    ("model,m", po::value(&spec.model), "model preset or YAML path [llama-h4096-l48; cpu-h256 on "
                                        "CPU topologies]")
    ("seq-len", po::value(&seq_len), "tokens per sequence [16384; 256 on CPU topologies]")
    ("global-batch", po::value(&global_batch), "sequences per iteration [1536; 4 per rank on CPU "
                                               "topologies]")
    ("objective", po::value(&objective), "tokens_per_s (highest first) or memory (lowest peak "
                                         "first) [tokens_per_s]")
    ("top", po::value(&top), "configurations in the table [10]")
    ("pareto", po::value(&pareto_file), "write every simulated configuration as CSV with its "
                                        "Pareto flag (throughput vs peak memory) to FILE; "
                                        "scripts/plot FILE draws it")
    ("set", po::value(&spec.sets)->composing(), "KEY=VALUE override, as for tawsim --set")
    ("no-fold", po::bool_switch(&no_fold), "simulate every micro-batch")
    ("help,h", "print this help");
  // clang-format on
  po::variables_map vm;
  try {
    const po::parsed_options parsed = po::command_line_parser(args).options(opts).run();
    for (const po::option& o : parsed.options) {
      if (o.position_key >= 0 && !o.original_tokens.empty())
        return fail("unexpected argument '" + o.original_tokens.front() + "' (see --help)");
    }
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see tawsim plan --help)");
  }
  if (vm.count("help")) {
    std::cout << "Usage: tawsim plan --topology T --model M --seq-len S --global-batch B "
                 "[--objective tokens_per_s|memory]\n\nSearches methods x options x micro-batch "
                 "size x data-parallel degree x recomputation\nfor the best configuration that "
                 "fits in memory.\n\n"
              << opts;
    return kExitOk;
  }
  if (objective != "tokens_per_s" && objective != "memory")
    return fail("--objective must be tokens_per_s or memory, got '" + objective + "'");
  if (top == 0) top = 1;
  const bool memory_objective = objective == "memory";
  // Given flags only: tawsim's defaults (16384, 1536) are TrainConfig's, and CPU topologies
  // have their own (sim/cli/host_defaults.h).
  if (vm.count("global-batch"))
    spec.sets.insert(spec.sets.begin(), "train.global_batch=" + global_batch);
  if (vm.count("seq-len")) spec.sets.insert(spec.sets.begin(), "train.seq_len=" + seq_len);
  auto base = resolve_with_host_defaults(spec, vm.count("model") > 0, {}, nullptr);
  if (!base.ok()) return fail(base.error().to_string());
  // As the user wrote them, else the resolved defaults (what the table's header says).
  if (!vm.count("seq-len")) seq_len = std::to_string(base->train.seq_len);
  if (!vm.count("global-batch")) global_batch = std::to_string(base->train.global_batch);
  const auto start = std::chrono::steady_clock::now();

  std::vector<Candidate> candidates;
  const std::int32_t gpus = base->topology.num_gpus();
  for (const auto& v : plan_variants())
    for (const std::int64_t mbs : {1, 2, 4})
      for (std::int32_t dp = 1; dp <= gpus; ++dp) {
        if (gpus % dp != 0) continue;
        for (const char* rc : {"none", "selective", "full"}) {
          Candidate c;
          c.variant = v;
          c.micro_batch_size = mbs;
          c.dp = dp;
          c.recompute = rc;
          c.label = fmt::format("{} mbs={} dp={} recompute={}", v.label, mbs, dp, rc);
          candidates.push_back(std::move(c));
        }
      }

  // Every simulated program is verified first (an invalid one ends the plan with its error);
  // candidates whose programs are identical verify them once.
  const sim::SimOptions sim_options = default_sim_options();
  // Stage 1: one-micro-batch probes give the batch check and both bounds.
  const auto workload_of = [&](const Candidate& c, std::int64_t micro_batches) {
    schedules::Workload w = *base;
    w.dp = c.dp;
    w.train.micro_batch_size = c.micro_batch_size;
    w.train.recompute = model::parse_recompute(c.recompute).value();
    if (micro_batches > 0) {
      w.train.micro_batches = micro_batches;
      w.train.global_batch = 0;
    }
    return w;
  };
  std::size_t rejected = 0, pruned_memory = 0, pruned_bound = 0, simulated = 0;
  std::vector<Candidate*> feasible;
  std::size_t done = 0;
  for (Candidate& c : candidates) {
    progress(++done, candidates.size(), "bounds");
    sim::SimOptions options = sim_options;
    options.model = base->model;
    const schedules::Workload probe_w = workload_of(c, 1);
    auto probe = sim::simulate_workload(probe_w, c.variant, options, false);
    if (!probe.ok() && sim::is_invalid_program(probe.error()))
      return fail(c.label + ": " + probe.error().message);
    if (!probe.ok()) {
      ++rejected;
      continue;
    }
    const report::Report& p = probe->output.report;
    const std::int64_t workers =
        p.header.global_batch / std::max<std::int64_t>(1, p.header.micro_batch_size);
    const std::int64_t per_round = workers * c.micro_batch_size;
    const std::int64_t global = base->train.global_batch;
    if (per_round <= 0 || global % per_round != 0) {
      ++rejected;
      continue;
    }
    const auto m = static_cast<double>(global / per_round);
    c.memory_bound = max_peak(p);
    if (!fits(p)) {
      ++pruned_memory;
      continue;
    }
    // Every rank must at least run its compute ops: with m micro-batches the summed compute
    // time is m x (the probe's, less the optimizer step) + the optimizer step, and the
    // iteration lasts at least its mean over ranks (compute times do not depend on m; SM
    // contention only lengthens them). Never below m x FLOPs at the summed peak.
    double compute_round = 0.0, once = 0.0;
    for (const auto& k : p.op_classes) {
      if (is_comm_class(k.name)) continue;
      (k.name == "optimizer" ? once : compute_round) += k.total.seconds();
    }
    const double ranks = static_cast<double>(std::max<std::size_t>(1, p.rank_stats.size()));
    const double time_bound =
        std::max((m * compute_round + once) / ranks,
                 m * p.hardware_flops / std::max(1.0, p.peak_flops_per_second));
    c.tokens_bound = static_cast<double>(global) * static_cast<double>(p.header.seq_len) /
                     std::max(1e-30, time_bound);
    feasible.push_back(&c);
  }
  // Stage 2: simulate best bound first; stop when no bound can enter the top list.
  std::sort(feasible.begin(), feasible.end(), [&](const Candidate* a, const Candidate* b) {
    return memory_objective ? a->memory_bound < b->memory_bound : a->tokens_bound > b->tokens_bound;
  });
  std::vector<Candidate*> ranked;
  const auto better = [&](const Candidate* a, const Candidate* b) {
    return memory_objective ? max_peak(*a->report) < max_peak(*b->report)
                            : a->report->tokens_per_second > b->report->tokens_per_second;
  };
  done = 0;
  for (Candidate* c : feasible) {
    progress(++done, feasible.size(), "simulate");
    if (ranked.size() >= top) {
      const Candidate* last = ranked[top - 1];
      const bool hopeless = memory_objective ? c->memory_bound >= max_peak(*last->report)
                                             : c->tokens_bound <= last->report->tokens_per_second;
      if (hopeless) {
        ++pruned_bound;
        continue;
      }
    }
    sim::SimOptions options = sim_options;
    options.model = base->model;
    auto out = sim::simulate_workload(workload_of(*c, 0), c->variant, options, !no_fold);
    if (!out.ok() && sim::is_invalid_program(out.error()))
      return fail(c->label + ": " + out.error().message);
    ++simulated;
    if (!out.ok() || !fits(out->output.report)) continue;
    c->report = std::move(out->output.report);
    // Options a method ignores (TawPipe always recomputes; one group when a replica sits in one
    // node) give identical results: keep the first, count the others as equivalent.
    const auto same = std::find_if(ranked.begin(), ranked.end(), [&](const Candidate* o) {
      return o->variant.schedule == c->variant.schedule &&
             o->micro_batch_size == c->micro_batch_size && o->dp == c->dp &&
             o->report->iteration_time == c->report->iteration_time &&
             max_peak(*o->report) == max_peak(*c->report);
    });
    if (same != ranked.end()) {
      (*same)->equivalents.push_back(c->label);
      continue;
    }
    ranked.insert(std::upper_bound(ranked.begin(), ranked.end(), c, better), c);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << fmt::format(
      "tawsim plan: {} ({} GPUs) | model {} | seq {} | global batch {} | "
      "objective {}\n\n",
      base->topology.name(), gpus, base->model.name, seq_len, global_batch, objective);
  if (ranked.empty()) {
    std::cout << "no configuration fits in device memory\n";
  } else {
    std::cout << fmt::format("{:>3}  {:<62} {:>10} {:>9} {:>6} {:>9} {:>7} {:>8} {:>8}  {}\n", "#",
                             "configuration", "tokens/s", "tok/s/GPU", "MFU", "iter (s)", "bubble",
                             "exp.comm", "peak GiB", "why it loses to #1");
    for (std::size_t i = 0; i < ranked.size() && i < top; ++i) {
      const RowFigures f = figures(*ranked[i]->report);
      std::cout << fmt::format(
          "{:>3}  {:<62} {:>10.0f} {:>9.1f} {:>5.1f}% {:>9.3f} {:>6.1f}% {:>7.1f}% {:>8.1f}  {}\n",
          i + 1,
          ranked[i]->label + (ranked[i]->equivalents.empty()
                                  ? std::string()
                                  : fmt::format(" (+{} equiv.)", ranked[i]->equivalents.size())),
          f.tokens_per_s, f.tokens_per_s_per_gpu, 100 * f.mfu, f.iteration_time_s,
          100 * f.bubble_fraction, 100 * f.exposed_comm_fraction, f.peak_memory_gib,
          i == 0 ? "-" : why_loses(*ranked[i], *ranked[0], memory_objective));
    }
  }
  std::cout << fmt::format(
      "\n{} candidates: {} rejected (batch split or method constraints), {} pruned by the "
      "memory bound, {} pruned by the {} bound, {} simulated; {:.1f} s\n",
      candidates.size(), rejected, pruned_memory, pruned_bound,
      memory_objective ? "memory" : "compute", simulated, seconds);

  // Pareto front: no other simulated configuration is both faster and lighter.
  std::vector<const Candidate*> all;
  for (const Candidate* c : ranked)
    all.push_back(c);
  std::ostringstream csv;
  csv << "config,method,micro_batch_size,dp,recompute,tokens_per_s,tokens_per_s_per_gpu,"
         "iteration_time_s,peak_memory_gib,mfu,bubble_fraction,exposed_comm_fraction,pareto\n";
  std::size_t front = 0;
  for (const Candidate* c : all) {
    const RowFigures f = figures(*c->report);
    const bool dominated = std::any_of(all.begin(), all.end(), [&](const Candidate* o) {
      const RowFigures g = figures(*o->report);
      return o != c && g.tokens_per_s >= f.tokens_per_s && g.peak_memory_gib <= f.peak_memory_gib &&
             (g.tokens_per_s > f.tokens_per_s || g.peak_memory_gib < f.peak_memory_gib);
    });
    front += dominated ? 0 : 1;
    csv << fmt::format("\"{}\",{},{},{},{},{},{},{},{},{},{},{},{}\n", c->label, c->variant.label,
                       c->micro_batch_size, c->dp, c->recompute, f.tokens_per_s,
                       f.tokens_per_s_per_gpu, f.iteration_time_s, f.peak_memory_gib, f.mfu,
                       f.bubble_fraction, f.exposed_comm_fraction, dominated ? "false" : "true");
  }
  if (!pareto_file.empty()) {
    std::ofstream out(pareto_file);
    out << csv.str();
    if (!out) return fail("cannot write " + pareto_file);
    std::cout << fmt::format(
        "Pareto front: {} of {} simulated configurations; all written to {} "
        "(scripts/plot {} draws it)\n",
        front, all.size(), pareto_file, pareto_file);
  } else {
    std::cout << "\nPareto front (throughput vs peak memory), CSV:\n";
    std::istringstream in(csv.str());
    std::string line;
    std::getline(in, line);
    std::cout << line << "\n";
    while (std::getline(in, line))
      if (line.size() >= 4 && line.compare(line.size() - 4, 4, "true") == 0)
        std::cout << line << "\n";
  }
  return kExitOk;
}

}  // namespace tawpipe::cli
