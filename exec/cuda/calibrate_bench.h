/// \file
/// The measurements of `tawexec calibrate --backend cuda`, through the same DeviceApi calls the
/// backend makes (so the figures are what the backend's calls achieve), timed with CUDA events.
/// Private to exec/cuda/ (cuda_calibrate.cpp runs them on every rank and combines the results).
#pragma once

#include <functional>
#include <vector>

#include "common/error.h"
#include "common/profile/profile.h"
#include "exec/device/device_api.h"
#include "exec/math/dims.h"

namespace tawpipe::exec::cuda {

/// Seconds per call of `fn`: the mean over `reps` calls after one warm-up call, between two
/// events on `stream`.
struct EventTimer {
  device::DeviceApi& api;
  device::StreamHandle stream;
  device::EventHandle e0, e1;

  Expected<double> time(int reps, const std::function<Status()>& fn) {
    TAWPIPE_TRY(fn());
    TAWPIPE_TRY(api.event_record(e0, stream));
    for (int i = 0; i < reps; ++i)
      TAWPIPE_TRY(fn());
    TAWPIPE_TRY(api.event_record(e1, stream));
    TAWPIPE_TRY(api.stream_synchronize(stream));
    auto ms = api.event_elapsed_ms(e0, e1);
    if (!ms.ok()) return ms.error();
    return static_cast<double>(*ms) * 1e-3 / reps;
  }
};

/// Per kernel class (common/model/kernel_class.h) one point at the block's real shapes (BF16
/// GEMMs T x H x H, T x F x H, T x H x F; causal attention forward and backward at the block's
/// batch, heads, sequence and head dimension; each memory-bound kernel on the block's tensors),
/// the streaming copy rate and the cost of a one-element kernel (launch overhead).
Expected<profile::DeviceProfile> measure_device(device::DeviceApi& api, const math::Dims& d);

/// Where this rank sits: world rank and size, ranks per node (ranks are placed by node).
struct Placement {
  int rank = 0, world = 1, per_node = 1;
  int node() const { return rank / per_node; }
  int local() const { return rank % per_node; }
  int nodes() const { return (world + per_node - 1) / per_node; }
};

/// What this rank measured of the communication: times of each curve on this rank (the caller
/// takes the maximum over ranks: a collective ends with its slowest member), in the same order
/// on every rank, and this rank's inter-node send/recv bandwidth (bytes/s; 0 without a peer).
struct CommResult {
  std::vector<profile::CommMeasurement> curves;
  std::vector<profile::LinkProfile> links;  ///< intra (nvlink/nvswitch) then inter (nic) pair
  double nic_bandwidth = 0.0;
};

/// NCCL all-reduce, all-gather, reduce-scatter and broadcast by size on each node's ranks
/// (intra_node) and across nodes among ranks of the same local rank (inter_node), and send/recv
/// exchanges between local ranks 0 and 1 of each node and between paired nodes (every rank of
/// node 2k with its twin on node 2k + 1, all pairs at once, as training loads the NICs).
/// Collective over `world` (every rank joins every split).
Expected<CommResult> measure_comm(device::DeviceApi& api, device::CommHandle world,
                                  const Placement& at);

}  // namespace tawpipe::exec::cuda
