/// \file
/// A DeviceApi that runs nothing and logs every call a rank would make, in order, tagged with
/// the IR op it serves (DeviceApi::mark_op). Work "completes" as soon as it is recorded, so a
/// rank's program runs to the end on its own; tests then check the logs of all ranks against
/// each other (events recorded before waited on, NCCL groups balanced, sends matching recvs,
/// collectives in the same order on every member) and against the IR (stream assignment).
///
/// It also checks what it can on its own and lists violations in errors(): pointers outside
/// every live allocation, frees of unknown addresses, waits on never-recorded events, group
/// ends without a start.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exec/device/device_api.h"
#include "exec/device/device_backend.h"

namespace tawpipe::exec::device {

/// One recorded call. Fields that do not apply stay at their defaults.
struct Call {
  enum class Kind : std::uint8_t {
    set_device,
    stream_create,
    event_create,
    event_record,
    stream_wait_event,
    stream_synchronize,
    mem_alloc,
    mem_free,
    mem_zero,
    copy_to_device,
    copy_to_device_async,
    copy_to_host,
    copy_device,
    unique_id,
    comm_init_rank,
    comm_split,
    comm_abort,
    comm_destroy,
    group_start,
    group_end,
    send,
    recv,
    collective,
    gemm,
    launch,
  };
  Kind kind = Kind::set_device;
  std::int32_t op = -1;  ///< IR op being served (-1: setup / iteration bookkeeping)
  StreamHandle stream = -1;
  EventHandle event = -1;
  CommHandle comm = -1;
  int peer = -1;  ///< send/recv peer, collective root (ranks in `comm`), device for set_device
  std::uint64_t count = 0;  ///< elements (NCCL) or bytes (memory)
  DType dtype = DType::u8;
  Collective collective = Collective::broadcast;
  Kernel kernel = Kernel::add;
  DevicePtr ptr = 0, ptr2 = 0;
  int color = -1, key = -1;  ///< comm_split

  /// One line, e.g. "op 12 send comm 3 peer 1 count 4096 u8 stream 2".
  std::string to_string() const;
};
const char* name(Call::Kind k);

/// The recording DeviceApi (see the file comment).
class RecordingApi final : public DeviceApi {
 public:
  /// `devices`: what device_count() reports (0 reproduces the "no device" path).
  explicit RecordingApi(int devices = 1);

  const std::vector<Call>& calls() const { return calls_; }
  const std::vector<std::string>& errors() const { return errors_; }
  /// How many events event_create made (they are not logged as calls).
  int events_created() const { return events_; }
  /// Whether a call makes the host wait for the device (stream_synchronize, and the copies
  /// whose contract synchronises: copy_to_device, copy_to_host).
  static bool synchronises(Call::Kind k);
  /// The split color (= IR communicator id) a communicator handle was made with; -1 for the
  /// world communicator.
  int comm_color(CommHandle c) const;

  Expected<int> device_count() override;
  Status set_device(int device) override;
  Expected<StreamHandle> stream_create() override;
  Expected<EventHandle> event_create() override;
  Status event_record(EventHandle event, StreamHandle stream) override;
  Status stream_wait_event(StreamHandle stream, EventHandle event) override;
  Expected<bool> event_query(EventHandle event) override;
  Expected<float> event_elapsed_ms(EventHandle from, EventHandle to) override;
  Status stream_synchronize(StreamHandle stream) override;
  Expected<DevicePtr> mem_alloc(std::uint64_t bytes, StreamHandle stream) override;
  Status mem_free(DevicePtr ptr, StreamHandle stream) override;
  Status mem_zero(DevicePtr ptr, std::uint64_t bytes, StreamHandle stream) override;
  Status copy_to_device(DevicePtr dst, std::span<const std::byte> src,
                        StreamHandle stream) override;
  Status copy_to_device_async(DevicePtr dst, std::span<const std::byte> src,
                              StreamHandle stream) override;
  Status copy_to_host(std::span<std::byte> dst, DevicePtr src, StreamHandle stream) override;
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes,
                     StreamHandle stream) override;
  Expected<std::uint64_t> peak_allocated_bytes() override;
  Expected<UniqueId> unique_id() override;
  Expected<CommHandle> comm_init_rank(int nranks, const UniqueId& id, int rank) override;
  Expected<CommHandle> comm_split(CommHandle parent, int color, int key) override;
  Status comm_abort(CommHandle comm) override;
  Status comm_destroy(CommHandle comm) override;
  Status group_start() override;
  Status group_end() override;
  Status send(DevicePtr buf, std::uint64_t count, DType type, int peer, CommHandle comm,
              StreamHandle stream) override;
  Status recv(DevicePtr buf, std::uint64_t count, DType type, int peer, CommHandle comm,
              StreamHandle stream) override;
  Status collective(Collective kind, DevicePtr send, DevicePtr recv, std::uint64_t count,
                    DType type, int root, CommHandle comm, StreamHandle stream) override;
  Status gemm(const Gemm& g, StreamHandle stream) override;
  Status launch(const KernelLaunch& k, StreamHandle stream) override;
  void mark_op(std::int32_t op) override { op_ = op; }

  /// Fault injection for watchdog tests: the events recorded for IR op `op` never complete
  /// (event_query stays false), like a transfer whose peer never posts.
  void stall_op(std::int32_t op) { stalled_op_ = op; }

 private:
  Call& add(Call::Kind kind, StreamHandle stream = -1);
  /// Records an error unless [p, p + bytes) lies inside one live allocation.
  void check_range(DevicePtr p, std::uint64_t bytes, const char* what);
  void check_stream(StreamHandle s);
  void check_comm(CommHandle c);

  int devices_;
  std::int32_t op_ = -1;
  std::int32_t stalled_op_ = -2;
  std::set<EventHandle> stalled_;
  std::vector<Call> calls_;
  std::vector<std::string> errors_;
  int streams_ = 0, events_ = 0, group_depth_ = 0;
  std::set<EventHandle> recorded_;
  std::vector<int> comm_colors_;             ///< per handle
  std::map<DevicePtr, std::uint64_t> live_;  ///< address -> bytes
  DevicePtr next_ = 0x10000000;
  std::uint64_t live_bytes_ = 0, peak_bytes_ = 0;
};

/// A Bootstrap for one rank of a recorded run: broadcast does nothing (rank 0's unique id is
/// the recording's constant), local rank = rank % ranks_per_node.
class RecordingBootstrap final : public Bootstrap {
 public:
  RecordingBootstrap(int rank, int size, int ranks_per_node)
      : rank_(rank), size_(size), per_node_(ranks_per_node) {}
  int world_rank() const override { return rank_; }
  int world_size() const override { return size_; }
  Expected<int> local_rank() override { return rank_ % per_node_; }
  Status broadcast(std::span<std::byte>, int) override { return Status::success(); }

 private:
  int rank_, size_, per_node_;
};

}  // namespace tawpipe::exec::device
