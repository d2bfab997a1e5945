/// \file
/// Simulating the methods of one workload, and sweeps over workloads: the part of `tawsim`
/// between the parsed command line and the formatted output.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "schedules/workload.h"
#include "sim/cli/results.h"
#include "sim/simulator.h"

namespace tawpipe::cli {

/// Files written per method; '{}' in a name is replaced by the method's label.
struct RunOutputs {
  std::string report_file;            ///< report::Report JSON per method
  std::string trace_file;             ///< Chrome trace per method
  std::string ir_file;                ///< IR JSON per method
  std::vector<ir::Rank> trace_ranks;  ///< empty = all ranks
};

/// The header line stating the workload ("3x8-a100 (24 GPUs in 3 nodes) | llama-h4096-l48 | ...").
std::string workload_title(const schedules::Workload& w);

/// Generates and simulates every variant. Generator errors become "n/a" rows; `outputs` names
/// files to write (only after every method has run, so a failure writes nothing). With `fold`
/// and no files to write, iterations are folded where their rounds repeat (sim/fold/fold.h).
Expected<std::vector<MethodResult>> run_methods(const schedules::Workload& w,
                                                const std::vector<schedules::ScheduleVariant>& vs,
                                                const sim::SimOptions& options,
                                                const RunOutputs& outputs = {}, bool fold = true);

/// One `--sweep KEY=V1,V2,...`.
struct Sweep {
  std::string key;
  std::vector<std::string> values;
};
/// Parses `KEY=V1,V2,...`. Errors: no '=', no values, an empty value.
Expected<Sweep> parse_sweep(std::string_view text);

/// Output format of a sweep / run.
enum class Format { table, csv, json };

/// Runs the cartesian product of `sweeps` over `base` with `jobs` threads. Every point is resolved
/// (and so validated) before any simulation starts; results are written to `out` in point order as
/// soon as all earlier points are done; `progress` (if set) is called after each finished point
/// with (done, total). Returns the wall time in seconds.
Expected<double> run_sweep(const schedules::WorkloadSpec& base, const std::vector<Sweep>& sweeps,
                           const std::vector<schedules::ScheduleVariant>& variants,
                           const sim::SimOptions& options, Format format, int jobs,
                           std::ostream& out,
                           const std::function<void(std::size_t, std::size_t)>& progress,
                           bool fold = true);

}  // namespace tawpipe::cli
