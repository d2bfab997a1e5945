/// \file
/// The IR interpreter: runs one rank's ops of a Program on a Backend with the semantics of
/// program.h (stream FIFO, dependencies, groups posted together), issuing each op as soon as it
/// may be issued and blocking in Backend::wait() while nothing can. For a host backend an op
/// may be issued once its inputs are complete; for a device backend (Backend::issue_ahead() > 0)
/// once they are issued, so the device queues work ahead and the host never sits between two
/// dependent kernels. It also enforces the watchdog: an op that could run (its stream's previous
/// op and its dependencies complete) but has not completed within the timeout ends the
/// iteration with an error naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"
#include "exec/backend.h"

namespace tawpipe::exec {

struct InterpreterOptions {
  double timeout_seconds = 0.0;  ///< watchdog; 0 = none
  /// Test-only fault injection: before issuing op `stall_op`, sleep `stall_seconds` (applies
  /// when >= 0; set from TAWPIPE_TEST_STALL_* by tawexec on the chosen rank).
  ir::OpIndex stall_op = ir::kNone;
  double stall_seconds = 0.0;
};

/// Start and end of one op in one iteration, relative to the iteration's begin.
struct OpTiming {
  ir::OpIndex op = ir::kNone;
  Nanos start = 0;
  Nanos end = 0;
  Nanos cpu = -1;                 ///< Completion::cpu
  std::int64_t preemptions = -1;  ///< Completion::preemptions
};

/// What one iteration measured on this rank.
struct IterationRecord {
  Nanos begin = 0;            ///< backend clock at begin_iteration
  Nanos end = 0;              ///< backend clock when the last op completed
  std::vector<OpTiming> ops;  ///< indexed by op, relative to `begin`
};

/// Runs iterations of one rank's program. The program must outlive the interpreter and pass
/// ir::verify (or its structure, matching and deadlock stages for --unverified-ir runs).
class Interpreter {
 public:
  Interpreter(const ir::Program& program, ir::Rank rank, Backend& backend,
              InterpreterOptions options = {});

  /// Runs every op of the rank once (iteration `step`). Errors: backend errors, and the
  /// watchdog's "rank R: timeout after T s waiting for op N (<kind> ...)".
  Expected<IterationRecord> run_iteration(std::int64_t step);

  /// "recv from rank 0 on comm pair0-2", "all_gather on comm world", "compute forward [0,2)":
  /// what an op waits for, for the watchdog's message.
  static std::string describe_wait(const ir::Program& program, ir::Rank rank, ir::OpIndex op);

 private:
  const ir::Program& program_;
  ir::Rank rank_;
  Backend& backend_;
  InterpreterOptions options_;
  std::vector<std::vector<ir::OpIndex>> stream_ops_;        ///< per stream, in program order
  std::vector<std::vector<ir::OpIndex>> comm_collectives_;  ///< per communicator
  std::vector<ir::OpIndex> comm_ops_;  ///< send, recv and collective ops in program order
  /// Per op: the ops that must complete before it runs (stream predecessor + dependencies) and
  /// the reverse lists, for the watchdog's "could run since" time under issue-ahead.
  std::vector<std::vector<ir::OpIndex>> preds_, succs_;
};

}  // namespace tawpipe::exec
