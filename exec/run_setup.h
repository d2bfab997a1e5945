/// \file
/// What a tawexec run executes: the options shared with tawsim (topology, model, schedule,
/// batch shape) turned into a verified IR Program, or a Program read from --ir FILE.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/model/model.h"
#include "common/model/train_config.h"
#include "common/topology/topology.h"
#include "schedules/workload.h"

namespace tawpipe::exec {

/// The program-defining options of `tawexec`: the same workload flags as tawsim
/// (schedules/workload.h), with host-friendly defaults.
struct ProgramOptions {
  schedules::WorkloadSpec workload{"2x2-cpu", "tiny", {}};  ///< --topology, --model, --set
  std::string schedule = "tawpipe";  ///< --schedule NAME or NAME[key=value,...]
  /// Workload flags as --set items (`train.seq_len=64`, `dp=2`), applied before `--set`.
  std::vector<std::string> flag_sets;
  std::string ir_file;         ///< --ir FILE: run this program instead of generating
  bool unverified_ir = false;  ///< --unverified-ir: skip the dataflow check (tests only)
};

/// A program ready to run, with the model and training settings it was made from.
struct PreparedRun {
  ir::Program program;
  /// What the user named: the --schedule item as written ("tawpipe[overlap=off]") or the --ir
  /// file's path.
  std::string label;
  model::ModelConfig model;
  model::TrainConfig train;  ///< optimizer and seed used by the backend and the reference
  /// The topology's `host:` section (CPU topologies): where the host backend pins each rank.
  std::optional<topo::HostCpu> host_cpu;
};

/// Generates (defaults: seq_len 64, 2 micro-batches per worker, compute dtype fp32 so IR bytes
/// are real fp32 bytes, full recomputation; then the flags, then --set) or reads the program,
/// and verifies it. Errors are one line (file:line:col where they come from a file).
Expected<PreparedRun> prepare_run(const ProgramOptions& options);

/// The micro-batch ids the program embeds (its embedding_forward ops over all ranks), sorted:
/// the global batch of one iteration, as the reference trainer replays it.
std::vector<std::int32_t> program_samples(const ir::Program& program);

}  // namespace tawpipe::exec
