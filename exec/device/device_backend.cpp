#include "exec/device/device_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "exec/device/device_backend_impl.h"
#include "exec/math/init.h"

namespace tawpipe::exec::device {
namespace {

using ir::BufferRole;

Nanos clock_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// fp32 -> bf16 bits, round to nearest even (NaN kept quiet).
std::uint16_t to_bf16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

std::vector<std::byte> encode(const std::vector<float>& v, DType t) {
  std::vector<std::byte> out(v.size() * dtype_size(t));
  if (t == DType::f32) {
    std::memcpy(out.data(), v.data(), out.size());
  } else {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint16_t b = to_bf16(v[i]);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

}  // namespace

std::optional<int> local_rank_from_env(const std::function<const char*(const char*)>& getenv_fn) {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MV2_COMM_WORLD_LOCAL_RANK"}) {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && r >= 0 && r < 1 << 20) return static_cast<int>(r);
  }
  return std::nullopt;
}

DeviceBackend::DeviceBackend(DeviceApi& api, Bootstrap& boot, DeviceOptions options)
    : impl_(std::make_unique<Impl>(api, boot, std::move(options))) {}

DeviceBackend::~DeviceBackend() = default;

Nanos DeviceBackend::now() const {
  return clock_now();
}

Status DeviceBackend::Impl::setup_communicators() {
  const int world_rank = boot.world_rank(), world_size = boot.world_size();
  UniqueId id;
  if (world_rank == 0) {
    auto made = api.unique_id();
    if (!made.ok()) return made.error();
    id = *made;
  }
  TAWPIPE_TRY(boot.broadcast(std::as_writable_bytes(std::span(id.bytes)), 0));
  auto w = api.comm_init_rank(world_size, id, world_rank);
  if (!w.ok()) return w.error();
  world = *w;
  // Every rank splits every IR communicator in id order (ncclCommSplit is collective over the
  // parent), members with color = id and key = their index.
  comms.assign(program->communicators.size(), -1);
  comm_rank.assign(program->communicators.size(),
                   std::vector<int>(static_cast<std::size_t>(world_size), -1));
  for (std::size_t c = 0; c < program->communicators.size(); ++c) {
    const auto& members = program->communicators[c].members;
    for (std::size_t k = 0; k < members.size(); ++k)
      comm_rank[c][static_cast<std::size_t>(members[k])] = static_cast<int>(k);
    const int key = comm_rank[c][static_cast<std::size_t>(rank)];
    auto split = api.comm_split(world, key >= 0 ? static_cast<int>(c) : -1, std::max(key, 0));
    if (!split.ok()) return split.error();
    comms[c] = key >= 0 ? *split : -1;
  }
  return Status::success();
}

Status DeviceBackend::prepare(const ir::Program& program, ir::Rank rank) {
  Impl& m = *impl_;
  m.program = &program;
  m.rank = rank;
  m.rp = &program.ranks[static_cast<std::size_t>(rank)];
  const ir::Header& h = program.header;
  if (m.boot.world_size() != program.num_ranks()) {
    return make_error("cuda backend: the program has " + std::to_string(program.num_ranks()) +
                      " ranks but " + std::to_string(m.boot.world_size()) + " processes run");
  }
  if (h.dtype == "fp32") {
    m.act = DType::f32;
  } else if (h.dtype == "bf16") {
    m.act = DType::bf16;
  } else {
    return make_error("cuda backend: the program computes in " + h.dtype +
                      "; the cuda backend runs fp32 and bf16 programs");
  }
  auto dims = math::host_dims(m.options.model, h.seq_len, h.micro_batch_size);
  if (!dims.ok()) return dims.error();
  m.dims = *dims;
  std::uint64_t samples = 0;
  for (const ir::RankProgram& r : program.ranks)
    for (const ir::Op& op : r.ops)
      samples += op.kind == ir::OpKind::compute && op.compute == ir::ComputeKind::embedding_forward;
  // A program without a micro-batch (the calibration's op-overhead chain) has no loss to scale.
  m.grad_scale = samples == 0 ? 1.0f
                              : static_cast<float>(1.0 / (static_cast<double>(samples) *
                                                          static_cast<double>(m.dims.tokens())));

  // Device: the local rank's, round robin over the visible devices.
  m.api.mark_op(ir::kNone);
  auto count = m.api.device_count();
  if (!count.ok()) return count.error();
  if (*count <= 0) return make_error("no CUDA device visible");
  auto local = m.boot.local_rank();
  if (!local.ok()) return local.error();
  TAWPIPE_TRY(m.api.set_device(*local % *count));

  m.streams.clear();
  for (std::size_t s = 0; s < program.streams.size(); ++s) {
    auto st = m.api.stream_create();
    if (!st.ok()) return st.error();
    m.streams.push_back(*st);
  }
  TAWPIPE_TRY(m.setup_communicators());

  const ir::RankProgram& rp = *m.rp;
  const std::size_t n = rp.ops.size();
  // Events come from a pool as ops are issued (at most 2 x max_in_flight are ever made).
  m.start_ev.assign(n, -1);
  m.end_ev.assign(n, -1);
  m.free_events.clear();
  m.done.assign(n, 0);
  m.in_flight.assign(program.streams.size(), {});
  auto be = m.api.event_create();
  if (!be.ok()) return be.error();
  m.begin_ev = *be;

  // Persistent buffers, with their initial contents; transient ones are dead.
  const StreamHandle s0 = m.streams.at(0);
  m.addr.assign(rp.buffers.size(), 0);
  m.alive.assign(rp.buffers.size(), 0);
  m.types.assign(rp.buffers.size(), DType::f32);
  m.live_bytes = m.peak_live = 0;
  for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
    const ir::Buffer& buf = rp.buffers[b];
    m.types[b] = storage_type(buf.role, m.act);
    if (!buf.persistent) continue;
    const auto id = static_cast<ir::BufferId>(b);
    TAWPIPE_TRY(m.alloc(id, s0));
    if (buf.initial.kind == ir::TensorKind::weights) {
      std::vector<float> w(m.elements_of(id));
      math::fill_initial_weights(m.dims, m.options.seed, buf.initial.layer_begin,
                                 buf.initial.layer_end,
                                 static_cast<std::size_t>(buf.initial.piece) * w.size(), w);
      TAWPIPE_TRY(m.api.copy_to_device(m.addr[b], encode(w, m.types[b]), s0));
    }
  }

  // Scratch for every stream that runs block compute, sized for its longest layer range.
  m.envs.assign(program.streams.size(), std::nullopt);
  std::vector<std::size_t> max_layers(program.streams.size(), 0);
  std::vector<std::uint8_t> needs(program.streams.size(), 0);
  for (const ir::Op& op : rp.ops) {
    if (op.kind != ir::OpKind::compute || op.compute == ir::ComputeKind::accumulate ||
        op.compute == ir::ComputeKind::optimizer)
      continue;
    needs[op.stream] = 1;
    if (op.layer_end > op.layer_begin)
      max_layers[op.stream] =
          std::max(max_layers[op.stream], static_cast<std::size_t>(op.layer_end - op.layer_begin));
  }
  for (std::size_t s = 0; s < needs.size(); ++s) {
    if (!needs[s]) continue;
    auto scratch = allocate_scratch(m.api, m.streams[s], m.dims, m.act, max_layers[s]);
    if (!scratch.ok()) return scratch.error();
    m.envs[s] = ComputeEnv{&m.api, m.streams[s], m.dims, m.act, *scratch};
  }
  auto loss = m.api.mem_alloc(8, s0);
  if (!loss.ok()) return loss.error();
  m.loss = *loss;
  TAWPIPE_TRY(m.api.mem_zero(m.loss, 8, s0));
  TAWPIPE_TRY(m.setup_tokens());
  return m.api.stream_synchronize(s0);
}

Status DeviceBackend::Impl::setup_tokens() {
  // One slot of 2T ids (inputs, then targets: scratch.tokens' layout) per token-reading op.
  const std::size_t T = dims.tokens();
  tokens_at.assign(rp->ops.size(), -1);
  std::int64_t slots = 0;
  for (std::size_t i = 0; i < rp->ops.size(); ++i) {
    const ir::Op& op = rp->ops[i];
    if (op.kind != ir::OpKind::compute) continue;
    if (op.compute == ir::ComputeKind::embedding_forward || op.compute == ir::ComputeKind::head ||
        op.compute == ir::ComputeKind::embedding_backward)
      tokens_at[i] = slots++ * static_cast<std::int64_t>(2 * T);
  }
  tokens_host.assign(static_cast<std::size_t>(slots) * 2 * T, 0);
  if (slots == 0) return Status::success();
  auto p = api.mem_alloc(tokens_host.size() * sizeof(std::int32_t), streams.at(0));
  if (!p.ok()) return p.error();
  tokens_dev = *p;
  return Status::success();
}

void DeviceBackend::Impl::fill_tokens(ir::OpIndex i, std::int32_t* out) const {
  const ir::Op& op = rp->ops[static_cast<std::size_t>(i)];
  const auto mb = math::micro_batch_tokens(dims, options.seed, step, op.sample);
  std::copy(mb.inputs.begin(), mb.inputs.end(), out);
  std::copy(mb.targets.begin(), mb.targets.end(), out + mb.inputs.size());
}

std::size_t DeviceBackend::issue_ahead() const {
  return std::max<std::size_t>(impl_->options.max_in_flight, 1);
}

Status DeviceBackend::begin_iteration(std::int64_t step) {
  Impl& m = *impl_;
  m.step = step;
  m.api.mark_op(ir::kNone);
  const StreamHandle s0 = m.streams.at(0);
  for (std::size_t b = 0; b < m.rp->buffers.size(); ++b) {
    const ir::Buffer& buf = m.rp->buffers[b];
    const auto id = static_cast<ir::BufferId>(b);
    if (!buf.persistent) {
      TAWPIPE_TRY(m.release(id, s0));
      continue;
    }
    const bool keeps = buf.role == BufferRole::weights || buf.role == BufferRole::master_weights ||
                       buf.role == BufferRole::optimizer_state ||
                       buf.initial.kind == ir::TensorKind::weights;
    if (!keeps) TAWPIPE_TRY(m.api.mem_zero(m.addr[b], m.bytes_of(id), s0));
  }
  // This iteration's micro-batch tokens, all at once and asynchronously (no synchronisation
  // inside the iteration); the host copy lives until end_iteration has synchronised.
  if (!m.tokens_host.empty()) {
    for (std::size_t i = 0; i < m.tokens_at.size(); ++i)
      if (m.tokens_at[i] >= 0)
        m.fill_tokens(static_cast<ir::OpIndex>(i),
                      m.tokens_host.data() + static_cast<std::size_t>(m.tokens_at[i]));
    TAWPIPE_TRY(
        m.api.copy_to_device_async(m.tokens_dev, std::as_bytes(std::span(m.tokens_host)), s0));
  }
  TAWPIPE_TRY(m.api.event_record(m.begin_ev, s0));
  for (std::size_t s = 1; s < m.streams.size(); ++s)
    TAWPIPE_TRY(m.api.stream_wait_event(m.streams[s], m.begin_ev));
  std::fill(m.done.begin(), m.done.end(), 0);
  for (auto& q : m.in_flight)
    q.clear();
  m.begin_host = clock_now();
  return Status::success();
}

Status DeviceBackend::issue(std::span<const ir::OpIndex> ops) {
  Impl& m = *impl_;
  if (ops.empty()) return Status::success();
  const ir::RankProgram& rp = *m.rp;
  const ir::Op& head = rp.ops[static_cast<std::size_t>(ops[0])];
  const StreamHandle s = m.streams.at(head.stream);
  m.api.mark_op(ops[0]);
  // Cross-stream dependencies not yet seen complete: wait on the producer's end event (it is
  // issued: the interpreter's contract; same-stream order is free). A dependency seen complete
  // needs no wait, and its events may already serve another op.
  std::vector<ir::OpIndex> waits;
  for (ir::OpIndex i : ops) {
    for (ir::OpIndex dep : ir::deps(rp, rp.ops[static_cast<std::size_t>(i)])) {
      const auto d = static_cast<std::size_t>(dep);
      if (rp.ops[d].stream == head.stream || m.done[d]) continue;
      if (m.end_ev[d] < 0)
        return make_error(m.where(i) + "dependency op " + std::to_string(dep) +
                          " was not issued before it");
      waits.push_back(dep);
    }
  }
  std::sort(waits.begin(), waits.end());
  waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
  for (ir::OpIndex dep : waits)
    TAWPIPE_TRY(m.api.stream_wait_event(s, m.end_ev[static_cast<std::size_t>(dep)]));
  for (ir::OpIndex i : ops) {
    m.api.mark_op(i);
    const auto u = static_cast<std::size_t>(i);
    if (m.free_events.empty()) {
      auto a = m.api.event_create();
      auto b = m.api.event_create();
      if (!a.ok()) return a.error();
      if (!b.ok()) return b.error();
      m.free_events.emplace_back(*a, *b);
    }
    std::tie(m.start_ev[u], m.end_ev[u]) = m.free_events.back();
    m.free_events.pop_back();
    TAWPIPE_TRY(m.api.event_record(m.start_ev[u], s));
  }
  const bool grouped = head.group != ir::kNone;
  if (grouped) TAWPIPE_TRY(m.api.group_start());
  for (ir::OpIndex i : ops) {
    m.api.mark_op(i);
    Status st = m.post(i);
    if (!st.ok()) {
      if (grouped) static_cast<void>(m.api.group_end());
      return st;
    }
  }
  m.api.mark_op(ops[0]);
  if (grouped) TAWPIPE_TRY(m.api.group_end());
  for (ir::OpIndex i : ops) {
    m.api.mark_op(i);
    TAWPIPE_TRY(m.api.event_record(m.end_ev[static_cast<std::size_t>(i)], s));
    m.in_flight[head.stream].push_back(i);
  }
  return Status::success();
}

Status DeviceBackend::Impl::post(ir::OpIndex i) {
  const ir::Op& op = rp->ops[static_cast<std::size_t>(i)];
  const StreamHandle s = streams.at(op.stream);
  switch (op.kind) {
    case ir::OpKind::alloc:
      for (ir::BufferId b : ir::writes(*rp, op))
        TAWPIPE_TRY(alloc(b, s));
      return Status::success();
    case ir::OpKind::free:
      for (ir::BufferId b : ir::writes(*rp, op))
        TAWPIPE_TRY(release(b, s));
      return Status::success();
    case ir::OpKind::copy: {
      const ir::BufferId src = ir::reads(*rp, op)[0], dst = ir::writes(*rp, op)[0];
      const DType ts = types[static_cast<std::size_t>(src)],
                  td = types[static_cast<std::size_t>(dst)];
      const std::uint64_t n = std::min(elements_of(src), elements_of(dst));
      auto a = operand(i, src, 0, "copy source");
      auto b = operand(i, dst, 0, "copy destination");
      if (!a.ok()) return a.error();
      if (!b.ok()) return b.error();
      if (ts == td)
        return api.copy_device(*b, *a, std::min<std::uint64_t>(op.bytes, n * dtype_size(ts)), s);
      KernelLaunch k;
      k.kernel = Kernel::cast;
      k.dtype = td;
      k.dtype2 = ts;
      k.p[0] = *b;
      k.p[1] = *a;
      k.s[0] = static_cast<std::int64_t>(n);
      return api.launch(k, s);
    }
    case ir::OpKind::send:
    case ir::OpKind::recv: {
      const bool is_send = op.kind == ir::OpKind::send;
      const ir::BufferId b = is_send ? ir::reads(*rp, op)[0] : ir::writes(*rp, op)[0];
      auto p = operand(i, b, 0, is_send ? "send" : "recv");
      if (!p.ok()) return p.error();
      if (bytes_of(b) < op.bytes)
        return make_error(where(i) + "message of " + std::to_string(op.bytes) +
                          " bytes exceeds its buffer");
      const auto c = static_cast<std::size_t>(op.comm);
      const int peer = comm_rank[c][static_cast<std::size_t>(op.peer)];
      return is_send ? api.send(*p, op.bytes, DType::u8, peer, comms[c], s)
                     : api.recv(*p, op.bytes, DType::u8, peer, comms[c], s);
    }
    case ir::OpKind::collective:
      return post_collective(i, op, s);
    case ir::OpKind::compute:
      return post_compute(i, op);
  }
  return make_error(where(i) + "unknown op kind");
}

Status DeviceBackend::Impl::post_collective(ir::OpIndex i, const ir::Op& op, StreamHandle s) {
  const auto reads = ir::reads(*rp, op);
  const auto writes = ir::writes(*rp, op);
  if (reads.empty() || writes.empty()) return make_error(where(i) + "collective without buffers");
  const auto c = static_cast<std::size_t>(op.comm);
  const int size = static_cast<int>(program->communicators[c].members.size());
  const int me = comm_rank[c][static_cast<std::size_t>(rank)];
  const DType t = types[static_cast<std::size_t>(writes[0])];
  const std::uint64_t elem = dtype_size(t);
  const std::uint64_t total = op.bytes / elem;
  const auto usize = static_cast<std::uint64_t>(size);
  const bool in_place = reads[0] == writes[0];
  auto send = operand(i, reads[0], 0, "send");
  auto recv = operand(i, writes[0], 0, "receive");
  if (!send.ok()) return send.error();
  if (!recv.ok()) return recv.error();
  const int root = op.peer != ir::kNone ? comm_rank[c][static_cast<std::size_t>(op.peer)] : -1;
  Collective kind = Collective::broadcast;
  std::uint64_t count = total;
  DevicePtr sbuf = *send, rbuf = *recv;
  switch (op.collective) {
    case ir::CollectiveKind::broadcast:
      kind = Collective::broadcast;
      break;
    case ir::CollectiveKind::reduce:
      kind = Collective::reduce;
      break;
    case ir::CollectiveKind::all_reduce:
      kind = Collective::all_reduce;
      break;
    case ir::CollectiveKind::all_gather:
      kind = Collective::all_gather;
      count = total / usize;
      // In place (MPI_IN_PLACE in the host backend): this member's piece already sits at its
      // offset of the output, which is NCCL's in-place form.
      if (in_place) sbuf = rbuf + static_cast<DevicePtr>(me) * count * elem;
      break;
    case ir::CollectiveKind::reduce_scatter:
      kind = Collective::reduce_scatter;
      count = total / usize;
      // In place, NCCL leaves piece `me` at its offset; the IR wants it at the start (below).
      if (in_place) rbuf = sbuf + static_cast<DevicePtr>(me) * count * elem;
      break;
  }
  TAWPIPE_TRY(api.collective(kind, sbuf, rbuf, count, t, root, comms[c], s));
  if (op.collective == ir::CollectiveKind::reduce_scatter && in_place && me > 0)
    TAWPIPE_TRY(api.copy_device(*recv, rbuf, count * elem, s));
  return Status::success();
}

Status DeviceBackend::wait(Nanos deadline, std::vector<Completion>& done) {
  Impl& m = *impl_;
  for (;;) {
    const std::size_t before = done.size();
    bool any_in_flight = false;
    for (auto& queue : m.in_flight) {
      // A stream completes in order: query its oldest op, and the next once that one is done.
      while (!queue.empty()) {
        const ir::OpIndex i = queue.front();
        const auto u = static_cast<std::size_t>(i);
        auto q = m.api.event_query(m.end_ev[u]);
        if (!q.ok()) return q.error();
        if (!*q) break;
        auto a = m.api.event_elapsed_ms(m.begin_ev, m.start_ev[u]);
        auto b = m.api.event_elapsed_ms(m.begin_ev, m.end_ev[u]);
        if (!a.ok()) return a.error();
        if (!b.ok()) return b.error();
        done.push_back({i, m.begin_host + static_cast<Nanos>(static_cast<double>(*a) * 1e6),
                        m.begin_host + static_cast<Nanos>(static_cast<double>(*b) * 1e6)});
        m.done[u] = 1;
        m.free_events.emplace_back(m.start_ev[u], m.end_ev[u]);
        m.start_ev[u] = m.end_ev[u] = -1;
        queue.pop_front();
      }
      any_in_flight = any_in_flight || !queue.empty();
    }
    if (done.size() > before || !any_in_flight) return Status::success();
    if (clock_now() >= deadline) return Status::success();
    std::this_thread::sleep_for(std::chrono::nanoseconds(m.options.poll_interval_ns));
  }
}

Status DeviceBackend::end_iteration() {
  Impl& m = *impl_;
  m.api.mark_op(ir::kNone);
  for (StreamHandle s : m.streams)
    TAWPIPE_TRY(m.api.stream_synchronize(s));
  return Status::success();
}

Expected<double> DeviceBackend::take_loss_sum() {
  Impl& m = *impl_;
  m.api.mark_op(ir::kNone);
  double v = 0.0;
  TAWPIPE_TRY(
      m.api.copy_to_host(std::as_writable_bytes(std::span(&v, 1)), m.loss, m.streams.at(0)));
  TAWPIPE_TRY(m.api.mem_zero(m.loss, 8, m.streams.at(0)));
  return v;
}

std::uint64_t DeviceBackend::peak_bytes() {
  auto p = impl_->api.peak_allocated_bytes();
  return p.ok() && *p > 0 ? *p : impl_->peak_live;
}

void DeviceBackend::abort_communicators() {
  Impl& m = *impl_;
  if (m.aborted) return;
  m.aborted = true;
  for (CommHandle c : m.comms)
    if (c >= 0) static_cast<void>(m.api.comm_abort(c));
  if (m.world >= 0) static_cast<void>(m.api.comm_abort(m.world));
}

StreamHandle DeviceBackend::stream_of(ir::StreamId s) const {
  return impl_->streams.at(s);
}
CommHandle DeviceBackend::comm_of(ir::CommId c) const {
  return impl_->comms.at(static_cast<std::size_t>(c));
}
DevicePtr DeviceBackend::buffer_address(ir::BufferId b) const {
  return impl_->addr.at(static_cast<std::size_t>(b));
}
DType DeviceBackend::buffer_dtype(ir::BufferId b) const {
  return impl_->types.at(static_cast<std::size_t>(b));
}

Expected<std::vector<float>> DeviceBackend::buffer_values(ir::BufferId b) {
  Impl& m = *impl_;
  const auto u = static_cast<std::size_t>(b);
  if (!m.alive.at(u)) return make_error("buffer '" + m.rp->buffers[u].name + "' is dead");
  const DType t = m.types[u];
  if (t != DType::f32 && t != DType::bf16)
    return make_error("buffer '" + m.rp->buffers[u].name + "' holds " + name(t));
  m.api.mark_op(ir::kNone);
  std::vector<std::byte> raw(m.elements_of(b) * dtype_size(t));
  TAWPIPE_TRY(m.api.copy_to_host(raw, m.addr[u], m.streams.at(0)));
  std::vector<float> out(m.elements_of(b));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (t == DType::f32) {
      std::memcpy(&out[i], raw.data() + 4 * i, 4);
    } else {
      std::uint16_t h = 0;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      const std::uint32_t bits = std::uint32_t{h} << 16;
      std::memcpy(&out[i], &bits, 4);
    }
  }
  return out;
}

}  // namespace tawpipe::exec::device
