// `tawsim compare PREDICTED.json MEASURED.json`: sets a predicted report (tawsim --report) beside
// a measured one (tawexec --report) of the same program: iteration time, throughput, and per op
// class and per rank the summed times, each with the error of the prediction
// (predicted - measured) / measured. On CPU runs also the core time of the compute classes: the
// work the simulator gave their ops against the CPU time their threads used (report.h
// OpRecord::cpu), which sharing a core does not change, so a miss there is the ops' cost, not
// their wait for a core.
#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "common/report/report.h"
#include "sim/cli/cli.h"
#include "sim/cli/file_args.h"

namespace po = boost::program_options;

namespace tawpipe::cli {
namespace {

std::string error_pct(double predicted, double measured) {
  if (measured == 0.0) return predicted == 0.0 ? "0.0%" : "n/a";
  return fmt::format("{:+.1f}%", 100.0 * (predicted - measured) / measured);
}

std::string ms(SimTime t) {
  return fmt::format("{:.3f}", t.seconds() * 1e3);
}

void compare(const report::Report& p, const report::Report& m, bool per_rank, std::ostream& out) {
  out << fmt::format("predicted: {} ({})\nmeasured:  {} ({})\n", p.producer, p.kind, m.producer,
                     m.kind);
  out << fmt::format("program: {} | model {} | {} ranks | topology {}\n", p.header.schedule,
                     p.header.model, p.ranks, p.header.topology);
  const bool same = p.header == m.header && p.ranks == m.ranks;
  if (!same) {
    out << "warning: the reports describe different programs (header or rank count differ); "
           "figures are not comparable op by op\n";
  }
  out << "\n";
  out << fmt::format("{:<22} {:>14} {:>14} {:>9}\n", "", "predicted", "measured", "error");
  out << fmt::format("{:<22} {:>14} {:>14} {:>9}\n", "iteration time (ms)", ms(p.iteration_time),
                     ms(m.iteration_time),
                     error_pct(p.iteration_time.seconds(), m.iteration_time.seconds()));
  out << fmt::format("{:<22} {:>14.1f} {:>14.1f} {:>9}\n", "tokens/s", p.tokens_per_second,
                     m.tokens_per_second, error_pct(p.tokens_per_second, m.tokens_per_second));

  // Op classes present in either report, in a stable order (predicted's, then measured-only).
  std::vector<std::string> names;
  std::map<std::string, const report::OpClassTotals*> pc, mc;
  for (const auto& c : p.op_classes) {
    pc[c.name] = &c;
    names.push_back(c.name);
  }
  for (const auto& c : m.op_classes) {
    mc[c.name] = &c;
    if (!pc.count(c.name)) names.push_back(c.name);
  }
  out << fmt::format("\n{:<16} {:>7} {:>7} {:>14} {:>14} {:>9}   (summed over ranks, ms)\n",
                     "op class", "count", "count", "predicted", "measured", "error");
  for (const auto& n : names) {
    const auto* a = pc.count(n) ? pc[n] : nullptr;
    const auto* b = mc.count(n) ? mc[n] : nullptr;
    const SimTime ta = a ? a->total : SimTime();
    const SimTime tb = b ? b->total : SimTime();
    out << fmt::format("{:<16} {:>7} {:>7} {:>14} {:>14} {:>9}\n", n, a ? a->count : 0,
                       b ? b->count : 0, ms(ta), ms(tb), error_pct(ta.seconds(), tb.seconds()));
  }
  bool any_cpu = false;
  for (const auto& n : names)
    any_cpu = any_cpu || (pc.count(n) && mc.count(n) && pc[n]->cpu && mc[n]->cpu);
  if (any_cpu) {
    out << fmt::format("\n{:<16} {:>14} {:>14} {:>9} {:>12}   (core time, summed over ranks, ms)\n",
                       "op class", "work p", "cpu m", "error", "preempt/op");
    for (const auto& n : names) {
      if (!pc.count(n) || !mc.count(n) || !pc[n]->cpu || !mc[n]->cpu) continue;
      const auto& a = *pc[n];
      const auto& b = *mc[n];
      const std::string per_op = b.preemptions >= 0 && b.count > 0
                                     ? fmt::format("{:.1f}", static_cast<double>(b.preemptions) /
                                                                 static_cast<double>(b.count))
                                     : "n/a";
      out << fmt::format("{:<16} {:>14} {:>14} {:>9} {:>12}\n", n, ms(*a.cpu), ms(*b.cpu),
                         error_pct(a.cpu->seconds(), b.cpu->seconds()), per_op);
    }
  }
  if (!per_rank) return;
  out << fmt::format("\n{:<6} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8} {:>12} {:>12}\n", "rank",
                     "compute p", "compute m", "error", "comm p", "comm m", "error", "exposed p",
                     "exposed m");
  const std::size_t n = std::min(p.rank_stats.size(), m.rank_stats.size());
  for (std::size_t r = 0; r < n; ++r) {
    const auto& a = p.rank_stats[r];
    const auto& b = m.rank_stats[r];
    out << fmt::format("{:<6} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8} {:>12} {:>12}\n", r,
                       ms(a.compute), ms(b.compute),
                       error_pct(a.compute.seconds(), b.compute.seconds()), ms(a.comm_sum),
                       ms(b.comm_sum), error_pct(a.comm_sum.seconds(), b.comm_sum.seconds()),
                       ms(a.exposed_comm), ms(b.exposed_comm));
  }
}

}  // namespace

int compare_command(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool no_ranks = false;
  po::options_description opts("Options");
  opts.add_options()("help,h", "print this help")("no-ranks", po::bool_switch(&no_ranks),
                                                  "leave out the per-rank table");
  if (auto status = parse_file_args(
          args, opts, "tawsim compare",
          "Usage: tawsim compare PREDICTED.json MEASURED.json\n\n"
          "Sets a predicted report (tawsim --report) beside a measured one (tawexec\n"
          "--report): iteration time, tokens/s, per op class and per rank summed times,\n"
          "with the prediction's error (predicted - measured) / measured.\n",
          files)) {
    return *status;
  }
  if (files.size() != 2) {
    std::fprintf(stderr, "tawsim compare: expected two report files, got %zu\n", files.size());
    return kExitUsage;
  }
  auto p = report::read_report_file(files[0]);
  if (!p.ok()) {
    std::fprintf(stderr, "tawsim compare: %s\n", p.error().to_string().c_str());
    return kExitUsage;
  }
  auto m = report::read_report_file(files[1]);
  if (!m.ok()) {
    std::fprintf(stderr, "tawsim compare: %s\n", m.error().to_string().c_str());
    return kExitUsage;
  }
  compare(*p, *m, !no_ranks, std::cout);
  return kExitOk;
}

}  // namespace tawpipe::cli
