/// \file
/// The shift by whole replicas on a program's communicators: shared by the verifier's compact
/// form (verify_replicas.cpp) and replica symmetry (sim/symmetry/symmetry.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ir/program.h"

namespace tawpipe::ir {

/// The map c -> s(c) induced on communicators by the rank shift s(r) = (r + R) mod N, R =
/// `replica_ranks` (N = program.num_ranks()). A communicator whose members all lie in one
/// replica (ranks [d R, (d + 1) R)) maps onto the i-th communicator with exactly the shifted
/// member list, in the same order, the i-th of the same list mapping to the i-th (replica-local);
/// one whose members span replicas must have an s-invariant member set and maps onto itself
/// (cross-replica: s(c) = c); a communicator without members maps onto itself. Returns false
/// with `why` when some communicator has no image (a missing counterpart in the next replica, a
/// member set spanning only some replicas, a member out of range). O(sum of communicator sizes
/// times log of the communicator count).
bool map_replica_communicators(const Program& program, std::int32_t replica_ranks,
                               std::vector<CommId>& image, std::string& why);

}  // namespace tawpipe::ir
