/// \file
/// tawsim's default workload on a CPU topology (one with a `host:` section, topo::HostCpu).
///
/// tawsim's built-in defaults are the TawPipe paper's headline workload (llama-h4096-l48, seq
/// 16384, global batch 1536, fp16): on a 2-core CPU topology one iteration of it computes for
/// ~4.5 years of simulated time (near the end of SimTime's range), no method fits in the ranks'
/// memory, and simulating it takes seconds to minutes per method (where ranks share a core,
/// every 20 ms request end is an event, sim/run/core_sharing.h). A CPU
/// topology instead defaults to the workload scripts/validate-host measures there with tawexec:
/// model cpu-h256 with 4 layers per rank, seq 256, global batch 4 sequences per rank, fp32 (the
/// host backend computes in fp32, so its IR bytes are fp32 bytes), full recomputation (tawsim's
/// default already). Each item applies only where the user gave none: --model (the layer count
/// comes with the default model only), --seq-len, --global-batch or --micro-batches, --dtype,
/// or the equivalent --set train.KEY / model.layers.
#pragma once

#include <string>
#include <vector>

#include "common/error.h"
#include "schedules/workload.h"

namespace tawpipe::cli {

/// The default model of CPU topologies.
inline constexpr const char* kHostDefaultModel = "cpu-h256";

/// Resolves `spec`; on a CPU topology first adds the default items the user did not give (at
/// the front of spec.sets, so that sweeps see them too, and spec.model when `model_given` is
/// false) and resolves again. Given: spec.sets' keys and those of `swept` (KEY=VALUES items of
/// --sweep). `applied` receives a one-line description of the defaults added (empty when none).
/// Errors: resolve_workload's.
Expected<schedules::Workload> resolve_with_host_defaults(schedules::WorkloadSpec& spec,
                                                         bool model_given,
                                                         const std::vector<std::string>& swept,
                                                         std::string* applied);

}  // namespace tawpipe::cli
