/// \file
/// The IR verifier: proves a Program well-formed before anything runs it, or names the first
/// thing that is wrong. Checks run in this order, and the first failing one is reported:
///  1. structure: ids in range, dependencies point backwards, group ops consecutive on one
///     stream, buffer sizes agree with op bytes, communicator membership;
///  2. matching: every send has its recv (k-th send from a to b on a communicator matches the
///     k-th recv at b from a, in program order) with equal bytes; collectives on a communicator
///     agree in order, kind, bytes and root on all members;
///  3. deadlock freedom: a logical execution (infinite speed) with the stream, dependency, group
///     and rendezvous semantics of program.h completes every op;
///  4. symbolic dataflow, evaluated during that execution (rules in program.h): compute reads
///     the right weights/activations, gradients reach the optimizer complete and exactly once,
///     every owned weight is updated once, no dead buffer is touched.
/// Statistics (op counts, bytes by kind, per-rank peak live bytes under program-order
/// execution) are filled whenever the structure check passes (unless turned off).
///
/// Complexity: O(ops + deps + buffers + sum of communicator sizes) time and memory, plus
/// O(layers) per backward op and O(samples * layers) for the expected gradient fingerprints.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ir/program.h"

namespace tawpipe::ir {

/// Knobs of verify().
struct VerifyOptions {
  /// Skip the symbolic dataflow check (test-only escape hatch for executor tests that run
  /// deliberately incomplete programs). Structure, matching and deadlock checks still run.
  bool skip_dataflow = false;
  /// Fill VerifyResult::stats (counts and program-order peak memory; not a check). The
  /// simulator, which computes its own figures, turns it off.
  bool statistics = true;
  /// Threads for the per-rank stages (structure, statistics); 0: the machine's hardware
  /// threads. The result does not depend on it.
  int threads = 0;
};

/// Counts gathered while verifying.
struct VerifyStats {
  std::uint64_t total_ops = 0;
  std::array<std::uint64_t, 7> ops_by_kind{};    ///< indexed by OpKind
  std::array<std::uint64_t, 7> bytes_by_kind{};  ///< send/recv/collective/copy `bytes`, by OpKind
  std::array<std::uint64_t, 5> collective_bytes{};  ///< indexed by CollectiveKind
  /// Per rank: persistent bytes + live allocations + the running compute op's workspace, at
  /// its maximum over program-order execution.
  std::vector<Bytes> peak_live_bytes;
  std::vector<Bytes> persistent_bytes;  ///< per rank
};

/// Which check failed.
enum class VerifyStage : std::uint8_t { none, structure, matching, deadlock, dataflow };

/// Outcome of verify(). On failure `message` is one line, starting with the offending op as the
/// text dump prints it (`r1 #4 comm recv from=r0 ...: <what is wrong>`), or `r1: ...` for
/// failures that belong to a buffer rather than an op.
struct VerifyResult {
  bool ok = true;
  VerifyStage stage = VerifyStage::none;
  std::string message;
  Rank rank = kNone;   ///< rank of the offending op, or kNone
  OpIndex op = kNone;  ///< index of the offending op, or kNone
  /// Deadlocks: one line per blocked stream (its first unfinished op and what it waits for).
  std::vector<std::string> details;
  /// A replica-compact program (Program::stored_ranks) whose compact form cannot be verified
  /// (`message` says which premise of verify_replicas.cpp fails, e.g. a transfer between
  /// replicas): `ok` is false although nothing was found wrong; verify the whole form instead.
  bool whole_form_needed = false;
  VerifyStats stats;
};

/// Verifies `program`. Never crashes on malformed programs (any ids, offsets, enum values).
/// A replica-compact program is verified in its compact form, never expanded: the verdict is
/// the whole form's (proof in verify_replicas.cpp), and so are the statistics; where that
/// cannot be established, VerifyResult::whole_form_needed.
VerifyResult verify(const Program& program, const VerifyOptions& options = {});

/// Name of a stage for messages ("structure", ...).
const char* name(VerifyStage stage);

}  // namespace tawpipe::ir
