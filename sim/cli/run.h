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

/// The simulator options every tawsim command starts from: verification on
/// (sim::SimOptions::verify), and the test hook sim::SimOptions::test_fault from the environment
/// variable TAWSIM_TEST_FAULT (tests only).
sim::SimOptions default_sim_options();

/// Generates and verifies the program of every variant, in order, for the commands that write
/// programs (--emit-ir, --emit-chakra): nothing is returned unless all of them are valid, so
/// nothing is written otherwise. Errors: `--schedule LABEL: ...` (generation) or `LABEL: program
/// fails verification (STAGE): ...`.
Expected<std::vector<ir::Program>> generate_verified(
    const schedules::Workload& workload, const std::vector<schedules::ScheduleVariant>& variants);

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

/// `--shard K/N`: the K-th (1-based) of N contiguous slices of a sweep's points. Slice K holds
/// points [floor((K-1) T / N), floor(K T / N)) of T. count 0 = no sharding.
struct Shard {
  std::int64_t index = 0;
  std::int64_t count = 0;
};
/// Parses `K/N` with 1 <= K <= N. Errors name the flag.
Expected<Shard> parse_shard(std::string_view text);

/// First line of a shard's output, which `tawsim merge` reads back:
///   csv:  `# tawsim shard K/N first_point=F points=C total_points=T`
///   json: `{"tawsim_shard": "K/N", "first_point": F, "points": C, "total_points": T, "slice": [`
/// followed by exactly the lines the unsliced sweep prints for those points (csv: the header and
/// the rows; json: the point objects, ",\n"-separated), then (json) `]}`.
std::string shard_marker(Format format, const Shard& shard, std::int64_t first, std::int64_t points,
                         std::int64_t total);

/// Runs the cartesian product of `sweeps` over `base` with `jobs` threads (only `shard`'s slice
/// of it when sharding; formats csv and json only). Every point is resolved
/// (and so validated) before any simulation starts; results are written to `out` in point order as
/// soon as all earlier points are done; `progress` (if set) is called after each finished point
/// with (done, total). Returns the wall time in seconds.
Expected<double> run_sweep(const schedules::WorkloadSpec& base, const std::vector<Sweep>& sweeps,
                           const std::vector<schedules::ScheduleVariant>& variants,
                           const sim::SimOptions& options, Format format, int jobs,
                           std::ostream& out,
                           const std::function<void(std::size_t, std::size_t)>& progress,
                           bool fold = true, const Shard& shard = {});

}  // namespace tawpipe::cli
