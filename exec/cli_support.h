/// \file
/// The command-line plumbing of the MPI commands (`tawexec`, `tawexec calibrate` and their CUDA
/// paths): how bad input and a failure seen by one rank are reported, and the exit statuses.
/// Every line these print reads "COMMAND: MESSAGE" on stderr. MPI must be initialised before any
/// of them is called.
#pragma once

#include <string>
#include <string_view>

namespace tawpipe::exec::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  ///< a run-time failure or a failed --verify
inline constexpr int kExitUsage = 2;   ///< bad input: one line on stderr, from rank 0

/// This process's rank in MPI_COMM_WORLD.
int world_rank();

/// The number of processes in MPI_COMM_WORLD.
int world_size();

/// One command, named by the prefix of its messages ("tawexec", "tawexec calibrate").
struct Command {
  std::string_view name;

  /// Bad input that every rank detects alike: rank 0 prints "NAME: MESSAGE" once, MPI is
  /// finalised. Returns kExitUsage, for main to return.
  int usage_error(const std::string& message) const;

  /// Prints "NAME: MESSAGE" from this rank (no MPI call): a rank-0 report such as a file that
  /// could not be written.
  void say(const std::string& message) const;

  /// A failure that the other ranks may not see: prints "NAME: MESSAGE" and takes every rank
  /// down with MPI_Abort(exit_code).
  [[noreturn]] void abort_run(const std::string& message, int exit_code = kExitFailed) const;

  /// As abort_run, with the line naming this rank: "NAME: rank R: MESSAGE".
  [[noreturn]] void abort_rank(const std::string& message, int exit_code = kExitFailed) const;
};

inline constexpr Command kTawexec{"tawexec"};
inline constexpr Command kCalibrate{"tawexec calibrate"};

}  // namespace tawpipe::exec::cli
