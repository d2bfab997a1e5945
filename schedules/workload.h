/// \file
/// What a command line says about a run, resolved into the inputs of a generator. Shared by
/// tawsim and tawexec so both accept the same `--topology`, `--model`, `--set`, `--dp`, ... and
/// build the very same Program.
///
/// `--set KEY=VALUE` keys are routed by their first component:
///  - `model.KEY`      -> model::apply_override (model.hidden=2048);
///  - `train.KEY`      -> model::apply_train_override (train.seq_len=8192);
///  - `SCHEDULE.KEY`   -> that schedule's options (tawpipe.groups=3, weipipe.variant=naive);
///  - `dp`             -> data-parallel replicas;
///  - anything else    -> a topology field by its YAML key path (inter_node.nic.bandwidth=...).
/// Command-line spellings are accepted as aliases: seq-len, micro-batch, micro-batches,
/// global-batch, dtype, recompute (so `--sweep seq-len=4096,8192` works).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/model/model.h"
#include "common/model/train_config.h"
#include "common/topology/topology.h"
#include "schedules/program_cache.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules {

/// The run as the user wrote it.
struct WorkloadSpec {
  std::string topology = "3x8-a100";      ///< name or path
  std::string model = "llama-h4096-l48";  ///< preset or path
  std::vector<std::string> sets;          ///< KEY=VALUE, applied in order
};

/// The run resolved: everything loaded, validated and overridden.
struct Workload {
  topo::Topology topology;
  model::ModelConfig model;
  model::TrainConfig train;
  std::int32_t dp = 1;
  /// Options per schedule name, from `--set SCHEDULE.KEY=VALUE`.
  std::map<std::string, std::map<std::string, std::string>> schedule_options;
  /// Threads a generator may use (ScheduleInput::threads; 0: all hardware threads). Sweeps that
  /// already run points in parallel set 1.
  int threads = 0;
  /// Programs shared with other workloads that generate equal ones (sweep points that differ
  /// in network or compute parameters only; schedules/program_cache.h); null: no sharing.
  std::shared_ptr<ProgramCache> programs{};
};

/// A method to run with its own options: `tawpipe`, or `tawpipe[overlap=off,groups=2]`.
struct ScheduleVariant {
  std::string schedule;                        ///< registry name
  std::map<std::string, std::string> options;  ///< on top of the workload's options
  std::string label;                           ///< as written, for tables ("tawpipe[overlap=off]")
};

/// The canonical key of an alias (`seq-len` -> `train.seq_len`); other keys unchanged.
std::string canonical_key(std::string_view key);

/// Loads and overrides everything. Errors: the loaders' (file:line:col + key path) and bad
/// `--set` items (the key path and the valid keys near it).
Expected<Workload> resolve_workload(const WorkloadSpec& spec);

/// Parses a comma-separated schedule list: `all` expands to every registered method;
/// brackets carry per-variant options (`tawpipe[overlap=off],fsdp`). Errors name the bad item.
Expected<std::vector<ScheduleVariant>> parse_schedule_list(std::string_view text);

/// The generator input for `variant` (placement = the topology's GPUs in node-major order).
ScheduleInput schedule_input(const Workload& workload, const ScheduleVariant& variant);

/// Generates the Program of `variant` for `workload`.
Expected<ir::Program> build_program(const Workload& workload, const ScheduleVariant& variant);

/// As build_program, shared: from `workload.programs` when set (whose header may then name the
/// topology of another workload with the same ranks: program_cache.h), else freshly generated.
/// `replica_only`: the replica-compact program (ScheduleInput::replica_only), for the simulator
/// under replica symmetry only.
Expected<std::shared_ptr<const ir::Program>> shared_program(const Workload& workload,
                                                            const ScheduleVariant& variant,
                                                            bool replica_only = false);

}  // namespace tawpipe::schedules
