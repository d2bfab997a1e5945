/// \file
/// Private to exec/device/device_backend*.cpp: the state of a DeviceBackend, shared by the
/// file that maps communication and memory ops and the one that maps compute ops.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exec/device/device_backend.h"
#include "exec/device/device_compute.h"

namespace tawpipe::exec::device {

/// Element type a buffer of `role` is stored in (see the file comment of device_backend.h).
inline DType storage_type(ir::BufferRole role, DType act) {
  switch (role) {
    case ir::BufferRole::master_weights:
    case ir::BufferRole::optimizer_state:
      return DType::f32;
    default:
      return act;
  }
}

inline bool is_weight_role(ir::BufferRole r) {
  return r == ir::BufferRole::weights || r == ir::BufferRole::weight_staging ||
         r == ir::BufferRole::master_weights;
}
inline bool is_grad_role(ir::BufferRole r) {
  return r == ir::BufferRole::gradient || r == ir::BufferRole::gradient_staging;
}

struct DeviceBackend::Impl {
  DeviceApi& api;
  Bootstrap& boot;
  DeviceOptions options;
  const ir::Program* program = nullptr;
  const ir::RankProgram* rp = nullptr;
  ir::Rank rank = 0;
  math::Dims dims;
  DType act = DType::f32;
  float grad_scale = 1.0f;
  std::int64_t step = 0;

  std::vector<StreamHandle> streams;
  CommHandle world = -1;
  std::vector<CommHandle> comms;
  std::vector<std::vector<int>> comm_rank;  ///< [comm][global rank] -> rank in comm or -1
  std::vector<DevicePtr> addr;
  std::vector<DType> types;
  std::vector<std::uint8_t> alive;
  /// Events of the ops in flight (-1 otherwise), from the pool `free_events`.
  std::vector<EventHandle> start_ev, end_ev;
  std::vector<std::pair<EventHandle, EventHandle>> free_events;
  std::vector<std::uint8_t> done;  ///< per op: seen complete in this iteration
  EventHandle begin_ev = -1;
  std::vector<std::optional<ComputeEnv>> envs;  ///< per IR stream with compute ops
  DevicePtr loss = 0;
  /// Ops in flight per IR stream, oldest first (a stream completes in order).
  std::vector<std::deque<ir::OpIndex>> in_flight;
  /// Micro-batch token ids of the iteration (inputs then targets per token-reading op), uploaded
  /// once in begin_iteration: the host copy stays alive until end_iteration's synchronisation.
  std::vector<std::int32_t> tokens_host;
  DevicePtr tokens_dev = 0;
  std::vector<std::int64_t> tokens_at;  ///< per op: offset (ids) into tokens_dev, or -1
  Nanos begin_host = 0;
  std::uint64_t live_bytes = 0, peak_live = 0;
  bool aborted = false;

  Impl(DeviceApi& a, Bootstrap& b, DeviceOptions o) : api(a), boot(b), options(std::move(o)) {}

  std::string where(ir::OpIndex i) const {
    return "rank " + std::to_string(rank) + " op " + std::to_string(i) + ": ";
  }
  std::uint64_t bytes_of(ir::BufferId b) const {
    return rp->buffers[static_cast<std::size_t>(b)].size.count();
  }
  std::uint64_t elements_of(ir::BufferId b) const {
    return bytes_of(b) / dtype_size(types[static_cast<std::size_t>(b)]);
  }
  /// The address of a live buffer holding at least `need` elements.
  Expected<DevicePtr> operand(ir::OpIndex i, ir::BufferId b, std::uint64_t need, const char* what) {
    if (b == ir::kNone) return make_error(where(i) + "no " + what + " operand");
    const auto u = static_cast<std::size_t>(b);
    const std::string& name = rp->buffers[u].name;
    if (!alive[u]) return make_error(where(i) + "buffer '" + name + "' is dead (not allocated)");
    if (elements_of(b) < need) {
      return make_error(where(i) + what + " operand '" + name + "' holds " +
                        std::to_string(elements_of(b)) + " elements of " + name_of(b) + ", needs " +
                        std::to_string(need));
    }
    return addr[u];
  }
  const char* name_of(ir::BufferId b) const { return name(types[static_cast<std::size_t>(b)]); }

  Status alloc(ir::BufferId b, StreamHandle s) {
    const auto u = static_cast<std::size_t>(b);
    const std::uint64_t bytes = std::max<std::uint64_t>(bytes_of(b), 1);
    auto p = api.mem_alloc(bytes, s);
    if (!p.ok()) return p.error();
    addr[u] = *p;
    alive[u] = 1;
    live_bytes += bytes;
    peak_live = std::max(peak_live, live_bytes);
    return api.mem_zero(*p, bytes, s);
  }
  Status release(ir::BufferId b, StreamHandle s) {
    const auto u = static_cast<std::size_t>(b);
    if (!alive[u]) return Status::success();
    alive[u] = 0;
    live_bytes -= std::max<std::uint64_t>(bytes_of(b), 1);
    return api.mem_free(std::exchange(addr[u], 0), s);
  }

  Status setup_communicators();
  Status setup_tokens();
  /// The host ids of op `i`'s micro-batch for this iteration (inputs, then targets).
  void fill_tokens(ir::OpIndex i, std::int32_t* out) const;
  Status post(ir::OpIndex i);
  Status post_collective(ir::OpIndex i, const ir::Op& op, StreamHandle s);
  Status post_compute(ir::OpIndex i, const ir::Op& op);
};

}  // namespace tawpipe::exec::device
