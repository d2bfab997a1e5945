/// \file
/// tawsim's sub-commands. Each takes the arguments after its name and returns the process exit
/// status: 0 success, 1 a negative answer (e.g. `verify` found the program invalid), 2 bad input
/// (one line on stderr: file:line:column: key.path: message). They print; library code does not.
#pragma once

#include <string>
#include <vector>

namespace tawpipe::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitNegative = 1;
inline constexpr int kExitUsage = 2;

/// `tawsim [options]`: topologies, models, schedules, IR emission and simulation.
int main_command(const std::vector<std::string>& args);
/// `tawsim verify FILE...`: verifies IR JSON files.
int verify_command(const std::vector<std::string>& args);
/// `tawsim compare PREDICTED.json MEASURED.json`: prediction against measurement.
int compare_command(const std::vector<std::string>& args);
/// `tawsim collectives ...`: predicted nccl-tests tables.
int collectives_command(const std::vector<std::string>& args);
/// `tawsim plan ...`: searches methods, options, micro-batch size, dp and recomputation.
int plan_command(const std::vector<std::string>& args);
/// `tawsim merge SLICE...`: joins the --shard slices of a sweep in point order.
int merge_command(const std::vector<std::string>& args);

}  // namespace tawpipe::cli
