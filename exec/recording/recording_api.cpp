#include "exec/recording/recording_api.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace tawpipe::exec::device {

const char* name(Call::Kind k) {
  static const char* const names[] = {"set_device",
                                      "stream_create",
                                      "event_create",
                                      "event_record",
                                      "stream_wait_event",
                                      "stream_synchronize",
                                      "mem_alloc",
                                      "mem_free",
                                      "mem_zero",
                                      "copy_to_device",
                                      "copy_to_device_async",
                                      "copy_to_host",
                                      "copy_device",
                                      "unique_id",
                                      "comm_init_rank",
                                      "comm_split",
                                      "comm_abort",
                                      "comm_destroy",
                                      "group_start",
                                      "group_end",
                                      "send",
                                      "recv",
                                      "collective",
                                      "gemm",
                                      "launch"};
  return names[static_cast<std::size_t>(k)];
}

std::string Call::to_string() const {
  std::ostringstream s;
  s << "op " << op << " " << name(kind);
  if (kind == Kind::collective) s << " " << name(collective);
  if (kind == Kind::launch) s << " " << name(kernel);
  if (comm >= 0) s << " comm " << comm;
  if (peer >= 0) s << " peer " << peer;
  if (count > 0) s << " count " << count << " " << name(dtype);
  if (event >= 0) s << " event " << event;
  if (stream >= 0) s << " stream " << stream;
  return s.str();
}

RecordingApi::RecordingApi(int devices) : devices_(devices) {}

Call& RecordingApi::add(Call::Kind kind, StreamHandle stream) {
  Call c;
  c.kind = kind;
  c.op = op_;
  c.stream = stream;
  calls_.push_back(c);
  return calls_.back();
}

void RecordingApi::check_range(DevicePtr p, std::uint64_t bytes, const char* what) {
  auto it = live_.upper_bound(p);
  if (it != live_.begin()) {
    --it;
    if (p >= it->first && p + bytes <= it->first + it->second) return;
  }
  std::ostringstream s;
  s << "op " << op_ << ": " << what << " [0x" << std::hex << p << ", +" << std::dec << bytes
    << ") is outside every live allocation";
  errors_.push_back(s.str());
}

void RecordingApi::check_stream(StreamHandle s) {
  if (s < 0 || s >= streams_) errors_.push_back("op " + std::to_string(op_) + ": bad stream");
}

void RecordingApi::check_comm(CommHandle c) {
  if (c < 0 || static_cast<std::size_t>(c) >= comm_colors_.size())
    errors_.push_back("op " + std::to_string(op_) + ": bad communicator handle");
}

int RecordingApi::comm_color(CommHandle c) const {
  return c >= 0 && static_cast<std::size_t>(c) < comm_colors_.size()
             ? comm_colors_[static_cast<std::size_t>(c)]
             : -1;
}

Expected<int> RecordingApi::device_count() {
  if (devices_ <= 0) return make_error("no CUDA device visible (recording: 0 devices)");
  return devices_;
}

Status RecordingApi::set_device(int device) {
  add(Call::Kind::set_device).peer = device;
  return Status::success();
}

Expected<StreamHandle> RecordingApi::stream_create() {
  add(Call::Kind::stream_create).stream = streams_;
  return streams_++;
}

Expected<EventHandle> RecordingApi::event_create() {
  // Not logged: one per op, noise in the log.
  return events_++;
}

Status RecordingApi::event_record(EventHandle event, StreamHandle stream) {
  check_stream(stream);
  add(Call::Kind::event_record, stream).event = event;
  recorded_.insert(event);
  if (op_ == stalled_op_) stalled_.insert(event);
  return Status::success();
}

Status RecordingApi::stream_wait_event(StreamHandle stream, EventHandle event) {
  check_stream(stream);
  if (!recorded_.count(event)) {
    errors_.push_back("op " + std::to_string(op_) + ": stream " + std::to_string(stream) +
                      " waits on event " + std::to_string(event) + " before it was recorded");
  }
  add(Call::Kind::stream_wait_event, stream).event = event;
  return Status::success();
}

Expected<bool> RecordingApi::event_query(EventHandle event) {
  return recorded_.count(event) > 0 && !stalled_.count(event);
}

Expected<float> RecordingApi::event_elapsed_ms(EventHandle, EventHandle) {
  return 0.0f;
}

Status RecordingApi::stream_synchronize(StreamHandle stream) {
  check_stream(stream);
  add(Call::Kind::stream_synchronize, stream);
  return Status::success();
}

Expected<DevicePtr> RecordingApi::mem_alloc(std::uint64_t bytes, StreamHandle stream) {
  check_stream(stream);
  Call& c = add(Call::Kind::mem_alloc, stream);
  const DevicePtr p = next_;
  next_ += (std::max<std::uint64_t>(bytes, 1) + 255) / 256 * 256;
  live_[p] = bytes;
  live_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  c.ptr = p;
  c.count = bytes;
  return p;
}

Status RecordingApi::mem_free(DevicePtr ptr, StreamHandle stream) {
  check_stream(stream);
  add(Call::Kind::mem_free, stream).ptr = ptr;
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    errors_.push_back("op " + std::to_string(op_) + ": free of an address never allocated");
    return Status::success();
  }
  live_bytes_ -= it->second;
  live_.erase(it);
  return Status::success();
}

Status RecordingApi::mem_zero(DevicePtr ptr, std::uint64_t bytes, StreamHandle stream) {
  check_stream(stream);
  check_range(ptr, bytes, "memset");
  Call& c = add(Call::Kind::mem_zero, stream);
  c.ptr = ptr;
  c.count = bytes;
  return Status::success();
}

Status RecordingApi::copy_to_device(DevicePtr dst, std::span<const std::byte> src,
                                    StreamHandle stream) {
  check_stream(stream);
  check_range(dst, src.size(), "host-to-device copy");
  Call& c = add(Call::Kind::copy_to_device, stream);
  c.ptr = dst;
  c.count = src.size();
  return Status::success();
}

Status RecordingApi::copy_to_device_async(DevicePtr dst, std::span<const std::byte> src,
                                          StreamHandle stream) {
  check_stream(stream);
  check_range(dst, src.size(), "host-to-device copy");
  Call& c = add(Call::Kind::copy_to_device_async, stream);
  c.ptr = dst;
  c.count = src.size();
  return Status::success();
}

bool RecordingApi::synchronises(Call::Kind k) {
  return k == Call::Kind::stream_synchronize || k == Call::Kind::copy_to_device ||
         k == Call::Kind::copy_to_host;
}

Status RecordingApi::copy_to_host(std::span<std::byte> dst, DevicePtr src, StreamHandle stream) {
  check_stream(stream);
  check_range(src, dst.size(), "device-to-host copy");
  std::memset(dst.data(), 0, dst.size());
  Call& c = add(Call::Kind::copy_to_host, stream);
  c.ptr = src;
  c.count = dst.size();
  return Status::success();
}

Status RecordingApi::copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes,
                                 StreamHandle stream) {
  check_stream(stream);
  check_range(dst, bytes, "copy destination");
  check_range(src, bytes, "copy source");
  Call& c = add(Call::Kind::copy_device, stream);
  c.ptr = dst;
  c.ptr2 = src;
  c.count = bytes;
  return Status::success();
}

Expected<std::uint64_t> RecordingApi::peak_allocated_bytes() {
  return peak_bytes_;
}

Expected<UniqueId> RecordingApi::unique_id() {
  add(Call::Kind::unique_id);
  UniqueId id;
  std::memcpy(id.bytes.data(), "tawpipe-recording", 17);
  return id;
}

Expected<CommHandle> RecordingApi::comm_init_rank(int nranks, const UniqueId&, int rank) {
  Call& c = add(Call::Kind::comm_init_rank);
  c.count = static_cast<std::uint64_t>(nranks);
  c.key = rank;
  c.comm = static_cast<CommHandle>(comm_colors_.size());
  comm_colors_.push_back(-1);
  return c.comm;
}

Expected<CommHandle> RecordingApi::comm_split(CommHandle parent, int color, int key) {
  check_comm(parent);
  Call& c = add(Call::Kind::comm_split);
  c.color = color;
  c.key = key;
  if (color < 0) return CommHandle{-1};
  c.comm = static_cast<CommHandle>(comm_colors_.size());
  comm_colors_.push_back(color);
  return c.comm;
}

Status RecordingApi::comm_abort(CommHandle comm) {
  check_comm(comm);
  add(Call::Kind::comm_abort).comm = comm;
  return Status::success();
}

Status RecordingApi::comm_destroy(CommHandle comm) {
  check_comm(comm);
  add(Call::Kind::comm_destroy).comm = comm;
  return Status::success();
}

Status RecordingApi::group_start() {
  ++group_depth_;
  add(Call::Kind::group_start);
  return Status::success();
}

Status RecordingApi::group_end() {
  if (group_depth_ == 0)
    errors_.push_back("op " + std::to_string(op_) + ": group_end without start");
  group_depth_ = std::max(group_depth_ - 1, 0);
  add(Call::Kind::group_end);
  return Status::success();
}

Status RecordingApi::send(DevicePtr buf, std::uint64_t count, DType type, int peer, CommHandle comm,
                          StreamHandle stream) {
  check_stream(stream);
  check_comm(comm);
  check_range(buf, count * dtype_size(type), "send buffer");
  Call& c = add(Call::Kind::send, stream);
  c.ptr = buf;
  c.count = count;
  c.dtype = type;
  c.peer = peer;
  c.comm = comm;
  return Status::success();
}

Status RecordingApi::recv(DevicePtr buf, std::uint64_t count, DType type, int peer, CommHandle comm,
                          StreamHandle stream) {
  check_stream(stream);
  check_comm(comm);
  check_range(buf, count * dtype_size(type), "recv buffer");
  Call& c = add(Call::Kind::recv, stream);
  c.ptr = buf;
  c.count = count;
  c.dtype = type;
  c.peer = peer;
  c.comm = comm;
  return Status::success();
}

Status RecordingApi::collective(Collective kind, DevicePtr send, DevicePtr recv,
                                std::uint64_t count, DType type, int root, CommHandle comm,
                                StreamHandle stream) {
  check_stream(stream);
  check_comm(comm);
  check_range(send, count * dtype_size(type), "collective send buffer");
  check_range(recv, count * dtype_size(type), "collective recv buffer");
  Call& c = add(Call::Kind::collective, stream);
  c.collective = kind;
  c.ptr = send;
  c.ptr2 = recv;
  c.count = count;
  c.dtype = type;
  c.peer = root;
  c.comm = comm;
  return Status::success();
}

Status RecordingApi::gemm(const Gemm& g, StreamHandle stream) {
  check_stream(stream);
  auto extent = [](bool trans, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    // Stored row-major as rows x cols (cols x rows when transposed).
    const std::int64_t r = trans ? cols : rows, c = trans ? rows : cols;
    return static_cast<std::uint64_t>((r - 1) * ld + c);
  };
  const std::uint64_t ab = dtype_size(g.ab_type);
  check_range(g.a, extent(g.trans_a, g.m, g.k, g.lda) * ab, "GEMM A");
  check_range(g.b, extent(g.trans_b, g.k, g.n, g.ldb) * ab, "GEMM B");
  check_range(g.c, extent(false, g.m, g.n, g.ldc) * dtype_size(g.c_type), "GEMM C");
  Call& c = add(Call::Kind::gemm, stream);
  c.ptr = g.c;
  c.count = static_cast<std::uint64_t>(g.m * g.n * g.k);
  c.dtype = g.ab_type;
  return Status::success();
}

Status RecordingApi::launch(const KernelLaunch& k, StreamHandle stream) {
  check_stream(stream);
  for (DevicePtr p : k.p)
    if (p != 0) check_range(p, 1, name(k.kernel));
  Call& c = add(Call::Kind::launch, stream);
  c.kernel = k.kernel;
  c.dtype = k.dtype;
  c.ptr = k.p[0];
  c.count = static_cast<std::uint64_t>(std::max<std::int64_t>(k.s[0], 0));
  return Status::success();
}

}  // namespace tawpipe::exec::device
