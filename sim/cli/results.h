/// \file
/// The comparison of methods that tawsim prints: one row per method (or per sweep point and
/// method) derived from a report::Report, formatted as a table, CSV or JSON. The table closes
/// with the fastest feasible method and its speedup over each other method.
#pragma once

#include <array>
#include <iterator>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common/report/report.h"
#include "sim/fold/fold.h"

namespace tawpipe::cli {

/// One simulated method: its report, or why it could not run (generator or config error).
struct MethodResult {
  std::string label;                     ///< schedule variant as written ("tawpipe[overlap=off]")
  std::optional<report::Report> report;  ///< empty when `error` is set
  std::string error;
  sim::FoldInfo fold;  ///< how the iteration was timed (steady-state folding, sim/fold/fold.h)
};

/// The figures of one row, derived from a Report (definitions in report.h).
struct RowFigures {
  double iteration_time_s = 0.0;
  double tokens_per_s = 0.0;
  double tokens_per_s_per_gpu = 0.0;
  double tflops_per_gpu = 0.0;  ///< model FLOPs
  double mfu = 0.0;
  double hfu = 0.0;
  double exposed_comm_fraction = 0.0;  ///< mean over ranks of exposed comm / iteration time
  double bubble_fraction = 0.0;        ///< mean over ranks of idle / iteration time
  double inter_node_gb_per_gpu = 0.0;  ///< mean inter-node bytes sent per rank, in GB
  double peak_memory_gib = 0.0;        ///< max over ranks
  bool oom = false;
  /// Breakdown of the highest peak (the rank with peak_memory_gib), GiB per
  /// report::kMemoryBytesFields entry; all 0 for reports without one (measured).
  std::array<double, std::size(report::kMemoryBytesFields)> peak_memory_breakdown_gib{};
};
RowFigures figures(const report::Report& r);

/// Sweep coordinates of a point: (key, value) pairs, in the order the sweeps were given.
using SweepPoint = std::vector<std::pair<std::string, std::string>>;

/// The comparison table for one workload. `title` is the header line stating the workload.
void write_table(std::ostream& out, const std::string& title,
                 const std::vector<MethodResult>& results);

/// CSV: a header line (when `header`), then one line per method: the sweep keys, method, the
/// RowFigures fields, error, the kernel-time share of every kernel class (share_gemm ...
/// share_copy) and the profile used. Numbers in full precision.
void write_csv_header(std::ostream& out, const SweepPoint& point);
void write_csv_rows(std::ostream& out, const SweepPoint& point,
                    const std::vector<MethodResult>& results);

/// JSON object for one point: {"point": {...}, "title": ..., "methods": [{label, figures...,
/// links: [{name, class, inter_node, utilisation, bytes}], profile, kernel_classes: [{name,
/// time_s, share, flops, bytes, kernels}], error}]}. Schema: docs/output-schema.md.
std::string point_json(const std::string& title, const SweepPoint& point,
                       const std::vector<MethodResult>& results);

}  // namespace tawpipe::cli
