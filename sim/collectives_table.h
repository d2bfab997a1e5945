/// \file
/// `tawsim collectives`: predicted nccl-tests tables. For each message size (doubling from the
/// minimum to the maximum, as nccl-tests' `-b MIN -e MAX -f 2`), one collective alone on the
/// first N GPUs of a topology is simulated with the full network model; rows give the time,
/// algorithm bandwidth (size / time) and bus bandwidth with nccl-tests' factors
/// (NVIDIA/nccl-tests doc/PERFORMANCE.md): all_reduce 2(n-1)/n, all_gather and reduce_scatter
/// (n-1)/n, broadcast, reduce and sendrecv 1.
///
/// Sizes follow nccl-tests: `size` is the total buffer (all_gather: the gathered output;
/// reduce_scatter: the full input), `count` the number of float elements. sendrecv: every rank
/// sends `size` bytes to the next rank and receives from the previous one, in one group.
/// all_reduce runs ring or tree as NCCL's tuner would choose (or as forced,
/// `CollectiveTableRequest::all_reduce_algo`; sim/network/collectives.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/units.h"
#include "sim/network/collectives.h"

namespace tawpipe::sim {

/// What to tabulate.
struct CollectiveTableRequest {
  std::string op;               ///< all_reduce, all_gather, reduce_scatter, broadcast, reduce,
                                ///< sendrecv
  std::uint64_t min_bytes = 8;  ///< first size (> 0)
  std::uint64_t max_bytes = 16ull << 30;  ///< last size (>= min_bytes)
  std::int32_t ranks = 0;                 ///< first N GPUs; 0 = all GPUs of the topology
  /// all_reduce: the algorithm (NCCL_ALGO); automatic = NCCL's tuner, per size.
  AllReduceAlgo all_reduce_algo = AllReduceAlgo::automatic;
  /// NCCL_PROTO / NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (sim/network/nccl_tuning.h).
  NcclOptions nccl;
};

/// One row of the table.
struct CollectiveRow {
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;  ///< float elements
  SimTime time;
  double algbw_gb_per_s = 0.0;  ///< size / time, GB/s = 1e9 B/s
  double busbw_gb_per_s = 0.0;
  AllReduceAlgo algo = AllReduceAlgo::ring;  ///< all_reduce: the algorithm that ran
  nccl::Proto proto = nccl::Proto::simple;   ///< the protocol NCCL's tuner chose
  int channels = 0;                          ///< channels used (0: host communicator)
};

/// The op names `CollectiveTableRequest::op` accepts.
const std::vector<std::string>& collective_table_ops();

/// Parses nccl-tests-style sizes `MIN:MAX` with optional K, M, G suffixes (powers of 1024, as
/// nccl-tests' -b/-e): `8:16G`, `1M:1G`. Errors: bad numbers, MIN > MAX, zero.
Expected<CollectiveTableRequest> parse_size_range(std::string_view text);

/// Simulates every size. `profile` may be null. Errors: unknown op (with a "did you mean"),
/// ranks out of range or < 2, bad size range.
Expected<std::vector<CollectiveRow>> collectives_table(const topo::Topology& topology,
                                                       const CollectiveTableRequest& request,
                                                       const profile::Profile* profile = nullptr);

/// The rows in nccl-tests' column layout, with a header naming the op, topology and ranks;
/// rows end with the protocol and channel count NCCL's tuner chose (`proto`, `nch`; a
/// sendrecv is always Simple), all_reduce tables also with the algorithm (ring or tree), as
/// NCCL_DEBUG_SUBSYS=TUNING would tell.
std::string format_collectives_table(const topo::Topology& topology,
                                     const CollectiveTableRequest& request,
                                     const std::vector<CollectiveRow>& rows);

}  // namespace tawpipe::sim
