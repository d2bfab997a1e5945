/// \file
/// `tawsim --emit-chakra DIR`: writes each schedule's program as Chakra execution traces
/// (common/chakra/export.h), one file per rank, compute durations from the built-in compute model.
#pragma once

#include <string>
#include <vector>

#include "schedules/workload.h"

namespace tawpipe::cli {

/// Generates and verifies every variant, then writes it into `dir` (one schedule) or
/// `dir/<label>/` (several). Prints one line per rank (file, nodes, edges). Returns the exit
/// status (0, 2 bad input or I/O, 70 internal error).
int emit_chakra(const schedules::Workload& workload,
                const std::vector<schedules::ScheduleVariant>& variants, const std::string& dir);

}  // namespace tawpipe::cli
