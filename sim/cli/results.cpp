#include "sim/cli/results.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "common/model/kernel_class.h"

namespace tawpipe::cli {
namespace {

constexpr double kGiB = 1ull << 30;

double mean_fraction(const report::Report& r, SimTime report::RankStats::*field) {
  if (r.rank_stats.empty() || r.iteration_time.picoseconds() <= 0) return 0.0;
  double sum = 0.0;
  for (const auto& s : r.rank_stats)
    sum += (s.*field).seconds();
  return sum / static_cast<double>(r.rank_stats.size()) / r.iteration_time.seconds();
}

// Index of the fastest method that ran and fits in memory, or -1.
int fastest_feasible(const std::vector<MethodResult>& results) {
  int best = -1;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& m = results[i];
    if (!m.report || figures(*m.report).oom) continue;
    // By throughput, not iteration time: methods may train different numbers of tokens per
    // iteration (a pipeline without a fixed global batch trains fewer), and equal for equal
    // batches.
    if (best < 0 || m.report->tokens_per_second >
                        results[static_cast<std::size_t>(best)].report->tokens_per_second) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The share of `cls` in a report's kernel time (0 when absent).
double kernel_share(const report::Report& r, model::KernelClass cls) {
  for (const report::KernelClassTotals& k : r.kernel_classes)
    if (k.name == model::to_string(cls)) return k.share;
  return 0.0;
}

// "gemm 61.0%, attention_fwd 7.2%, ..." over the classes with a share, in class order.
std::string kernel_share_line(const report::Report& r) {
  std::string s;
  for (model::KernelClass c : model::kAllKernelClasses) {
    const double share = kernel_share(r, c);
    if (!(share > 0.0)) continue;
    s += fmt::format("{}{} {:.1f}%", s.empty() ? "" : ", ", model::to_string(c), 100.0 * share);
  }
  return s;
}

}  // namespace

RowFigures figures(const report::Report& r) {
  RowFigures f;
  const double ranks = std::max(1, r.ranks);
  f.iteration_time_s = r.iteration_time.seconds();
  f.tokens_per_s = r.tokens_per_second;
  f.tokens_per_s_per_gpu = r.tokens_per_second / ranks;
  f.tflops_per_gpu =
      f.iteration_time_s > 0.0 ? r.model_flops / f.iteration_time_s / ranks / 1e12 : 0.0;
  f.mfu = r.mfu;
  f.hfu = r.hfu;
  f.exposed_comm_fraction = mean_fraction(r, &report::RankStats::exposed_comm);
  f.bubble_fraction = mean_fraction(r, &report::RankStats::idle);
  double inter = 0.0;
  const report::RankStats* top = nullptr;
  for (const auto& s : r.rank_stats) {
    inter += s.inter_node_bytes_sent;
    if (!top || s.peak_memory_bytes > top->peak_memory_bytes) top = &s;
    f.oom = f.oom || s.oom;
  }
  if (top) {
    f.peak_memory_gib = static_cast<double>(top->peak_memory_bytes) / kGiB;
    for (std::size_t k = 0; k < f.peak_memory_breakdown_gib.size(); ++k)
      f.peak_memory_breakdown_gib[k] =
          static_cast<double>(report::memory_field(top->peak_memory, k)) / kGiB;
  }
  f.inter_node_gb_per_gpu = inter / ranks / 1e9;
  return f;
}

namespace {
// "steady-state folding: tawpipe simulated 10 of 64 micro-batches per worker (54 folded), ...;
// not folded: weipipe (why)". Methods with the same reason are listed together; --no-fold (the
// user's choice) is not repeated back.
// "replica symmetry (--no-symmetry ...): fsdp simulated 1 of 64 replicas (16 ranks each); not
// collapsed: weipipe (why)". Programs of one replica and --no-symmetry are not mentioned.
void write_symmetry_note(std::ostream& out, const std::vector<MethodResult>& results) {
  std::vector<std::string> parts;
  for (const auto& m : results) {
    if (!m.report) continue;
    if (m.fold.replicas_collapsed > 1) {
      parts.push_back(fmt::format("{} simulated 1 of {} replicas ({} ranks each)", m.label,
                                  m.fold.replicas_collapsed, m.fold.replica_ranks));
    } else if (!m.fold.symmetry_note.empty() && m.fold.symmetry_note != "a single replica" &&
               m.fold.symmetry_note != "--no-symmetry") {
      parts.push_back(fmt::format("{} not collapsed: {}", m.label, m.fold.symmetry_note));
    }
  }
  if (parts.empty()) return;
  out << "replica symmetry (--no-symmetry to simulate every replica): ";
  for (std::size_t i = 0; i < parts.size(); ++i)
    out << (i ? "; " : "") << parts[i];
  out << "\n";
}

// "noise (the profile's FWQ trace replayed on the cores, 21 replicates ...): iteration s min /
// reported / max: fsdp 3.912 / 3.980 / 4.051, ...".
void write_noise_note(std::ostream& out, const std::vector<MethodResult>& results) {
  std::vector<std::string> parts;
  std::size_t replicates = 0;
  for (const auto& m : results) {
    const std::vector<SimTime>& it = m.fold.noise_iterations;
    if (!m.report || it.empty()) continue;
    replicates = it.size();
    const auto [lo, hi] = std::minmax_element(it.begin(), it.end());
    parts.push_back(fmt::format("{} {:.3f} / {:.3f} / {:.3f}", m.label, lo->seconds(),
                                it[static_cast<std::size_t>(m.fold.noise_replicate)].seconds(),
                                hi->seconds()));
  }
  if (parts.empty()) return;
  out << "noise (the profile's FWQ trace replayed on the cores, " << replicates
      << " replicates at evenly spread offsets, the median reported; --no-noise turns it off): "
         "iteration s min / reported / max: ";
  for (std::size_t i = 0; i < parts.size(); ++i)
    out << (i ? ", " : "") << parts[i];
  out << "\n";
}

void write_fold_note(std::ostream& out, const std::vector<MethodResult>& results) {
  std::vector<std::string> parts;
  std::vector<std::pair<std::string, std::string>> unfolded;  // reason, methods
  for (const auto& m : results) {
    if (!m.report) continue;
    if (m.fold.folded) {
      parts.push_back(fmt::format("{} simulated {} of {} micro-batches per worker ({} folded)",
                                  m.label, m.fold.rounds_simulated, m.fold.rounds,
                                  m.fold.rounds_folded));
    } else if (!m.fold.reason.empty() && m.fold.reason != "--no-fold") {
      const auto it = std::find_if(unfolded.begin(), unfolded.end(),
                                   [&](const auto& u) { return u.first == m.fold.reason; });
      if (it == unfolded.end()) {
        unfolded.emplace_back(m.fold.reason, m.label);
      } else {
        it->second += ", " + m.label;
      }
    }
  }
  for (const auto& [reason, methods] : unfolded)
    parts.push_back(fmt::format("{} not folded: {}", methods, reason));
  if (!parts.empty()) {
    out << "steady-state folding (--no-fold to simulate every round): ";
    for (std::size_t i = 0; i < parts.size(); ++i)
      out << (i ? "; " : "") << parts[i];
    out << "\n";
  }
  write_symmetry_note(out, results);
  write_noise_note(out, results);
}
}  // namespace

void write_table(std::ostream& out, const std::string& title,
                 const std::vector<MethodResult>& results) {
  out << title << "\n\n";
  std::size_t width = 6;
  for (const auto& m : results)
    width = std::max(width, m.label.size());
  const bool any_hfu = std::any_of(results.begin(), results.end(), [](const MethodResult& m) {
    return m.report && m.report->hfu > m.report->mfu * 1.0001;
  });
  out << fmt::format("{:<{}}  {:>9}  {:>10}  {:>9}  {:>8}  {:>5}  {}{:>7}  {:>7}  {:>9}  {:>10}\n",
                     "method", width, "iter (s)", "tokens/s", "tok/s/GPU", "TFLOP/s", "MFU",
                     any_hfu ? "  HFU  " : "", "exp.comm", "bubble", "xnode GB", "peak GiB");
  for (const auto& m : results) {
    if (!m.report) {
      out << fmt::format("{:<{}}  n/a: {}\n", m.label, width, m.error);
      continue;
    }
    const RowFigures f = figures(*m.report);
    out << fmt::format(
        "{:<{}}  {:>9.3f}  {:>10.0f}  {:>9.1f}  {:>8.1f}  {:>4.1f}%  {}{:>7.1f}%  {:>6.1f}%  "
        "{:>9.2f}  {:>6.1f}{}\n",
        m.label, width, f.iteration_time_s, f.tokens_per_s, f.tokens_per_s_per_gpu,
        f.tflops_per_gpu, 100.0 * f.mfu, any_hfu ? fmt::format("{:>5.1f}%  ", 100.0 * f.hfu) : "",
        100.0 * f.exposed_comm_fraction, 100.0 * f.bubble_fraction, f.inter_node_gb_per_gpu,
        f.peak_memory_gib, f.oom ? " OOM" : "");
  }
  // Where each method's highest peak goes (GiB), when the reports carry a breakdown.
  bool header = false;
  for (const auto& m : results) {
    if (!m.report) continue;
    const RowFigures f = figures(*m.report);
    double sum = 0.0;
    for (double v : f.peak_memory_breakdown_gib)
      sum += v;
    if (!(sum > 0.0)) continue;
    if (!header) {
      out << "\npeak memory (GiB, rank with the highest peak):\n";
      header = true;
    }
    std::string line = fmt::format("{:<{}}", m.label, width);
    for (std::size_t k = 0; k < f.peak_memory_breakdown_gib.size(); ++k)
      line +=
          fmt::format("  {} {:.1f}", report::kMemoryBytesFields[k], f.peak_memory_breakdown_gib[k]);
    out << line << "\n";
  }
  bool any_kernels = false;
  for (const auto& m : results)
    any_kernels = any_kernels || (m.report && !m.report->kernel_classes.empty());
  if (any_kernels) {
    out << "\nkernel time by class (rates: "
        << results.front().report.value_or(report::Report{}).profile << "):\n";
    for (const auto& m : results) {
      if (m.report && !m.report->kernel_classes.empty())
        out << fmt::format("  {:<{}}  {}\n", m.label, width, kernel_share_line(*m.report));
    }
  }
  const int best = fastest_feasible(results);
  if (best < 0) {
    // Either every simulated method is out of memory, or none could be simulated at all (each
    // row then carries its generation or verification error): say which.
    bool any_simulated = false;
    for (const auto& m : results)
      any_simulated = any_simulated || m.report.has_value();
    out << (any_simulated
                ? "\nno method fits in device memory with this configuration\n"
                : "\nno method could be generated for this configuration (errors above)\n");
    write_fold_note(out, results);
    return;
  }
  const MethodResult& b = results[static_cast<std::size_t>(best)];
  std::string line = "\nfastest feasible: " + b.label;
  std::vector<std::string> speedups;
  for (const auto& m : results) {
    if (&m == &b || !m.report) continue;
    const double ratio = b.report->tokens_per_second / m.report->tokens_per_second;
    speedups.push_back(
        fmt::format("{:.2f}x vs {}{}", ratio, m.label, figures(*m.report).oom ? " (OOM)" : ""));
  }
  if (!speedups.empty()) {
    line += ", ";
    for (std::size_t i = 0; i < speedups.size(); ++i)
      line += (i ? ", " : "") + speedups[i];
  }
  out << line << "\n";
  write_fold_note(out, results);
}

void write_csv_header(std::ostream& out, const SweepPoint& point) {
  for (const auto& kv : point)
    out << csv_quote(kv.first) << ',';
  out << "method,iteration_time_s,tokens_per_s,tokens_per_s_per_gpu,tflops_per_gpu,mfu,hfu,"
         "exposed_comm_fraction,bubble_fraction,inter_node_gb_per_gpu,peak_memory_gib,oom";
  for (const char* k : report::kMemoryBytesFields)
    out << ",mem_" << k << "_gib";
  out << ",error";
  for (model::KernelClass c : model::kAllKernelClasses)
    out << ",share_" << model::to_string(c);
  out << ",profile\n";
}

void write_csv_rows(std::ostream& out, const SweepPoint& point,
                    const std::vector<MethodResult>& results) {
  for (const auto& m : results) {
    for (const auto& kv : point)
      out << csv_quote(kv.second) << ',';
    out << csv_quote(m.label) << ',';
    if (!m.report) {
      out << ",,,,,,,,,,,";
      for (std::size_t k = 0; k < std::size(report::kMemoryBytesFields); ++k)
        out << ',';
      out << csv_quote(m.error) << std::string(model::kNumKernelClasses + 1, ',') << '\n';
      continue;
    }
    const RowFigures f = figures(*m.report);
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{}", f.iteration_time_s, f.tokens_per_s,
                       f.tokens_per_s_per_gpu, f.tflops_per_gpu, f.mfu, f.hfu,
                       f.exposed_comm_fraction, f.bubble_fraction, f.inter_node_gb_per_gpu,
                       f.peak_memory_gib, f.oom ? "true" : "false");
    for (double v : f.peak_memory_breakdown_gib)
      out << ',' << fmt::format("{}", v);
    out << ',';  // the (empty) error column
    for (model::KernelClass c : model::kAllKernelClasses)
      out << fmt::format(",{}", kernel_share(*m.report, c));
    out << ',' << csv_quote(m.report->profile) << '\n';
  }
}

std::string point_json(const std::string& title, const SweepPoint& point,
                       const std::vector<MethodResult>& results) {
  nlohmann::ordered_json j;
  j["title"] = title;
  j["point"] = nlohmann::ordered_json::object();
  for (const auto& kv : point)
    j["point"][kv.first] = kv.second;
  j["methods"] = nlohmann::ordered_json::array();
  for (const auto& m : results) {
    nlohmann::ordered_json row;
    row["method"] = m.label;
    if (!m.report) {
      row["error"] = m.error;
      j["methods"].push_back(std::move(row));
      continue;
    }
    const RowFigures f = figures(*m.report);
    row["iteration_time_s"] = f.iteration_time_s;
    row["tokens_per_s"] = f.tokens_per_s;
    row["tokens_per_s_per_gpu"] = f.tokens_per_s_per_gpu;
    row["tflops_per_gpu"] = f.tflops_per_gpu;
    row["mfu"] = f.mfu;
    row["hfu"] = f.hfu;
    row["exposed_comm_fraction"] = f.exposed_comm_fraction;
    row["bubble_fraction"] = f.bubble_fraction;
    row["inter_node_gb_per_gpu"] = f.inter_node_gb_per_gpu;
    row["peak_memory_gib"] = f.peak_memory_gib;
    row["oom"] = f.oom;
    row["peak_memory_breakdown_gib"] = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < f.peak_memory_breakdown_gib.size(); ++k)
      row["peak_memory_breakdown_gib"][report::kMemoryBytesFields[k]] =
          f.peak_memory_breakdown_gib[k];
    row["profile"] = m.report->profile;
    row["kernel_classes"] = nlohmann::ordered_json::array();
    for (const auto& k : m.report->kernel_classes) {
      row["kernel_classes"].push_back({{"name", k.name},
                                       {"time_s", k.time.seconds()},
                                       {"share", k.share},
                                       {"flops", k.flops},
                                       {"bytes", k.bytes},
                                       {"kernels", k.kernels}});
    }
    row["links"] = nlohmann::ordered_json::array();
    for (const auto& l : m.report->links) {
      row["links"].push_back({{"name", l.name},
                              {"class", l.link_class},
                              {"inter_node", l.inter_node},
                              {"bytes", l.bytes},
                              {"utilisation", l.utilisation}});
    }
    j["methods"].push_back(std::move(row));
  }
  return j.dump(1);
}

}  // namespace tawpipe::cli
