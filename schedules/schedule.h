/// \file
/// The schedule generators: one function per parallel-training method that turns (cluster
/// placement, model, training configuration, data-parallel degree, method options) into one
/// iteration of that method as an IR `Program` (common/ir/program.h).
///
/// Methods are rows of `schedule_registry()` (name, one-line description, paper); `generate`
/// looks one up by name. Adding a method is one source file, one row in registry.cpp and one
/// line in schedules/CMakeLists.txt.
///
/// Every generator:
///  - splits the ranks into `dp` data-parallel replicas of contiguous ranks (node-major rank
///    order, so replicas land on different nodes whenever a replica fills whole nodes), runs its
///    method inside each replica, and all-reduces each owned block's gradient across the
///    replicas (on a communicator of the ranks owning that block) before the optimizer step;
///  - numbers micro-batches globally (`sample` ids are unique over ranks and replicas);
///  - takes every size and cost from common/model (compute dtype weights and activations, fp32
///    master weights and AdamW moments), so the memory model falls out of the IR;
///  - rejects configurations it cannot run with an `Error` that suggests a valid setting.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "common/model/model.h"
#include "common/model/train_config.h"
#include "common/registry.h"

namespace tawpipe::schedules {

/// Everything a generator needs. The topology enters only as `node_of_rank`, so schedules stay
/// independent of the topology library (design.md: the IR never sees the topology).
struct ScheduleInput {
  /// rank -> node index, one entry per rank (ranks = GPUs in the topology's node-major order).
  std::vector<std::int32_t> node_of_rank;
  model::ModelConfig model;  ///< validated by the generator
  model::TrainConfig train;  ///< micro-batches are resolved per data-parallel worker
  std::int32_t dp = 1;       ///< data-parallel replicas (> 0, divides the rank count)
  /// Method options as given on the command line (`groups=3`, `variant=naive`, ...); unknown
  /// keys are an error naming the known ones.
  std::map<std::string, std::string> options;
  std::string topology_name;  ///< copied into the program header
  std::string topology_hash;  ///< copied into the program header
  /// Threads a generator may use to emit ranks in parallel (0: the machine's hardware threads).
  /// The program does not depend on it.
  int threads = 0;
  /// Emit a replica-compact program (ir::Program::stored_ranks): with dp > 1, only replica 0's
  /// ranks are stored, the others only counted; the simulator runs it under replica symmetry
  /// (sim/symmetry/symmetry.h) without ever holding the other replicas' ops. Every generator
  /// here emits replica d as the image of replica 0 under the shift by d replicas (the same
  /// code with the rank base moved; sample ids, names and group ids may differ), which is what
  /// makes the stored replica stand for all (tests/unit/simulator/replica_only_test.cpp checks
  /// it against the full program). Everything else is the same program as without it.
  bool replica_only = false;
};

/// A generator: builds the program or explains why it cannot.
using ScheduleFactory = std::function<Expected<ir::Program>(const ScheduleInput&)>;

/// The table of methods (immutable, built on first use, safe to read from several threads).
const Registry<ScheduleFactory>& schedule_registry();

/// Runs the generator named `schedule` ("tawpipe", "weipipe", "fsdp", "1f1b"). Unknown names
/// get the registry's "did you mean".
Expected<ir::Program> generate(std::string_view schedule, const ScheduleInput& input);

/// One line per method, sorted by name: `name  description  [reference]`, each ending in '\n'.
/// What `--list-schedules` prints.
std::string list_schedules();

/// Convenience for tests and tools: `nodes` x `gpus_per_node` ranks, node-major.
std::vector<std::int32_t> uniform_nodes(std::int32_t nodes, std::int32_t gpus_per_node);

// The generators themselves (one per file); registered in registry.cpp.

/// TawPipe (tawpipe.cpp). Options: groups=N, overlap=on|off, grouping=on|off.
Expected<ir::Program> generate_tawpipe(const ScheduleInput& input);
/// WeiPipe (weipipe.cpp). Options: variant=interleave|naive.
Expected<ir::Program> generate_weipipe(const ScheduleInput& input);
/// ZeRO-3 / FSDP (fsdp.cpp). No options.
Expected<ir::Program> generate_fsdp(const ScheduleInput& input);
/// 1F1B pipeline parallelism (one_f_one_b.cpp). Options: virtual=V (interleaved 1F1B).
Expected<ir::Program> generate_1f1b(const ScheduleInput& input);
/// Zero-bubble pipelines ZB-H1 and ZB-H2 (zero_bubble.cpp). No options.
Expected<ir::Program> generate_zb1(const ScheduleInput& input);
Expected<ir::Program> generate_zb2(const ScheduleInput& input);

}  // namespace tawpipe::schedules
