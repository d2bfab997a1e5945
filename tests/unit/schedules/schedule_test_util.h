/// \file
/// Shared fixtures of the schedule tests: small inputs, verification, op descriptions, traffic.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/ir/program.h"
#include "common/ir/verifier.h"
#include "schedules/schedule.h"

namespace tawpipe::schedules::testing {

/// `nodes` x `gpus` ranks, the tiny preset resized to `layers` decoder layers, seq 256,
/// micro-batch 1, `micro_batches` per worker.
ScheduleInput small_input(std::int32_t nodes, std::int32_t gpus, std::int32_t layers,
                          std::int32_t micro_batches, std::int32_t dp = 1,
                          std::map<std::string, std::string> options = {});

/// Generates or fails the test with the generator's message.
ir::Program must_generate(std::string_view method, const ScheduleInput& input);

/// Bytes sent by point-to-point ops, split by whether the peer is on another node.
struct P2pTraffic {
  std::uint64_t intra = 0;
  std::uint64_t inter = 0;
  std::uint64_t messages = 0;
};
P2pTraffic p2p_traffic(const ir::Program& p, const std::vector<std::int32_t>& node_of_rank);

/// Removes op `op` of rank `rank`: dependencies on it are dropped, later indices shift down.
ir::Program without_op(const ir::Program& p, ir::Rank rank, ir::OpIndex op);

}  // namespace tawpipe::schedules::testing
