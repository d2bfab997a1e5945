#include "exec/host/host_backend.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "exec/host/compute_ops.h"
#include "exec/host/mpi_util.h"
#include "exec/math/init.h"

namespace tawpipe::exec::host {
namespace {

Nanos clock_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int to_int(std::uint64_t v) {
  return static_cast<int>(std::min<std::uint64_t>(v, 0x7fffffff));
}

/// An MPI operation in flight.
struct InFlight {
  ir::OpIndex op = ir::kNone;
  Nanos start = 0;
  std::vector<float> temp;           ///< staging for in-place reduce-scatter
  ir::BufferId copy_to = ir::kNone;  ///< copy `temp` here on completion
};

}  // namespace

struct HostBackend::Impl {
  HostOptions options;
  const ir::Program* program = nullptr;
  ir::Rank rank = 0;
  ComputeContext ctx;
  std::vector<std::vector<float>> data;
  std::vector<std::uint8_t> alive;
  std::uint64_t live_bytes = 0, peak_bytes = 0;
  std::vector<MpiComm> comms;
  std::vector<std::vector<int>> comm_rank;  ///< [comm][global rank] -> rank in comm, or -1
  std::vector<int> tags;                    ///< per op: p2p tag
  int tag_ub = 32767;

  // MPI progress (main thread only).
  std::vector<MPI_Request> requests;
  std::vector<InFlight> in_flight;
  std::vector<Completion> local_done;  ///< alloc/free/copy completed inline

  // Compute worker.
  std::thread worker;
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::deque<ir::OpIndex> work;
  std::vector<Completion> compute_done;
  std::optional<Error> worker_error;
  double loss_sum = 0.0;
  std::size_t compute_in_flight = 0;  ///< main thread's count
  bool stop = false;

  Expected<std::span<float>> access(ir::BufferId b) {
    const auto u = static_cast<std::size_t>(b);
    if (u >= data.size()) return make_error("buffer " + std::to_string(b) + " out of range");
    if (!alive[u]) {
      return make_error("buffer '" +
                        program->ranks[static_cast<std::size_t>(rank)].buffers[u].name +
                        "' is dead (not allocated)");
    }
    return std::span<float>(data[u]);
  }

  void make_alive(ir::BufferId b) {
    const auto u = static_cast<std::size_t>(b);
    const std::uint64_t bytes =
        program->ranks[static_cast<std::size_t>(rank)].buffers[u].size.count();
    data[u].assign((bytes + 3) / 4, 0.0f);
    if (!alive[u]) {
      live_bytes += bytes;
      peak_bytes = std::max(peak_bytes, live_bytes);
    }
    alive[u] = 1;
  }

  void kill(ir::BufferId b) {
    const auto u = static_cast<std::size_t>(b);
    if (alive[u])
      live_bytes -= program->ranks[static_cast<std::size_t>(rank)].buffers[u].size.count();
    alive[u] = 0;
    std::vector<float>().swap(data[u]);
  }

  void worker_loop() {
    for (;;) {
      ir::OpIndex op;
      {
        std::unique_lock lock(mu);
        work_cv.wait(lock, [&] { return stop || !work.empty(); });
        if (stop) return;
        op = work.front();
        work.pop_front();
      }
      const Nanos start = clock_now();
      auto result =
          run_compute(*program, rank, op, ctx, [this](ir::BufferId b) { return access(b); });
      const Nanos end = clock_now();
      {
        std::lock_guard lock(mu);
        if (!result.ok()) {
          if (!worker_error) worker_error = result.error();
        } else {
          loss_sum += *result;
        }
        compute_done.push_back(Completion{op, start, end});
      }
      done_cv.notify_all();
    }
  }

  Status post_collective(ir::OpIndex index, const ir::Op& op);
  Status post(ir::OpIndex index);
};

HostBackend::HostBackend(HostOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

HostBackend::~HostBackend() {
  if (impl_->worker.joinable()) {
    {
      std::lock_guard lock(impl_->mu);
      impl_->stop = true;
    }
    impl_->work_cv.notify_all();
    impl_->worker.join();
  }
}

Nanos HostBackend::now() const {
  return clock_now();
}

Status HostBackend::prepare(const ir::Program& program, ir::Rank rank) {
  Impl& m = *impl_;
  m.program = &program;
  m.rank = rank;
  const ir::Header& h = program.header;
  if (h.dtype != "fp32") {
    return make_error("host backend: the program computes in " + h.dtype +
                      "; the host backend runs fp32 programs only (generate with dtype fp32)");
  }
  auto dims = math::host_dims(m.options.model, h.seq_len, h.micro_batch_size);
  if (!dims.ok()) return dims.error();
  m.ctx.dims = *dims;
  m.ctx.seed = m.options.seed;
  m.ctx.optimizer = m.options.optimizer;
  // 1/N of the global-batch mean: N = tokens of every embedding_forward of the program.
  std::uint64_t samples = 0;
  for (const ir::RankProgram& rp : program.ranks) {
    for (const ir::Op& op : rp.ops) {
      samples += op.kind == ir::OpKind::compute && op.compute == ir::ComputeKind::embedding_forward;
    }
  }
  if (samples == 0) return make_error("host backend: the program embeds no micro-batch");
  m.ctx.grad_scale = static_cast<float>(
      1.0 / (static_cast<double>(samples) * static_cast<double>(dims->tokens())));

  // Communicators, created in id order by their members only (deadlock-free: every member
  // walks the same increasing sequence).
  int world = 0;
  TAWPIPE_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world));
  void* ub = nullptr;
  int flag = 0;
  TAWPIPE_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
  if (flag && ub) m.tag_ub = *static_cast<int*>(ub);
  MPI_Group world_group;
  TAWPIPE_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  MpiGroup world_owner(world_group);
  m.comms.clear();
  m.comms.resize(program.communicators.size());
  m.comm_rank.assign(program.communicators.size(),
                     std::vector<int>(static_cast<std::size_t>(world), -1));
  for (std::size_t c = 0; c < program.communicators.size(); ++c) {
    const auto& members = program.communicators[c].members;
    for (std::size_t i = 0; i < members.size(); ++i) {
      m.comm_rank[c][static_cast<std::size_t>(members[i])] = static_cast<int>(i);
    }
    if (m.comm_rank[c][static_cast<std::size_t>(rank)] < 0) continue;
    MPI_Group g;
    TAWPIPE_MPI(MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &g));
    MpiGroup owner(g);
    MPI_Comm comm = MPI_COMM_NULL;
    TAWPIPE_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, static_cast<int>(c % 32768), &comm));
    m.comms[c] = MpiComm(comm);
  }

  // Point-to-point tags: the k-th send (recv) to (from) a peer on a communicator gets tag k.
  const ir::RankProgram& rp = program.ranks[static_cast<std::size_t>(rank)];
  m.tags.assign(rp.ops.size(), 0);
  std::map<std::tuple<ir::CommId, ir::Rank, bool>, int> next_tag;
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    const ir::Op& op = rp.ops[i];
    if (op.kind != ir::OpKind::send && op.kind != ir::OpKind::recv) continue;
    int& k = next_tag[{op.comm, op.peer, op.kind == ir::OpKind::send}];
    m.tags[i] = k % (m.tag_ub + 1);
    ++k;
  }

  // Buffers: persistent ones live from the start with their initial contents.
  m.data.assign(rp.buffers.size(), {});
  m.alive.assign(rp.buffers.size(), 0);
  m.live_bytes = m.peak_bytes = 0;
  for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
    const ir::Buffer& buf = rp.buffers[b];
    if (!buf.persistent) continue;
    m.make_alive(static_cast<ir::BufferId>(b));
    if (buf.initial.kind == ir::TensorKind::weights) {
      const std::size_t n = m.data[b].size();
      math::fill_initial_weights(m.ctx.dims, m.ctx.seed, buf.initial.layer_begin,
                                 buf.initial.layer_end,
                                 static_cast<std::size_t>(buf.initial.piece) * n, m.data[b]);
    }
  }
  if (!m.worker.joinable()) m.worker = std::thread([this] { impl_->worker_loop(); });
  return Status::success();
}

Status HostBackend::begin_iteration(std::int64_t step) {
  Impl& m = *impl_;
  m.ctx.step = step;
  const ir::RankProgram& rp = m.program->ranks[static_cast<std::size_t>(m.rank)];
  for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
    const ir::Buffer& buf = rp.buffers[b];
    const auto id = static_cast<ir::BufferId>(b);
    if (!buf.persistent) {
      m.kill(id);
      continue;
    }
    const bool keeps =
        buf.role == ir::BufferRole::weights || buf.role == ir::BufferRole::master_weights ||
        buf.role == ir::BufferRole::optimizer_state || buf.initial.kind == ir::TensorKind::weights;
    if (!keeps) std::fill(m.data[b].begin(), m.data[b].end(), 0.0f);
  }
  return Status::success();
}

Status HostBackend::Impl::post_collective(ir::OpIndex index, const ir::Op& op) {
  const ir::RankProgram& rp = program->ranks[static_cast<std::size_t>(rank)];
  const auto c = static_cast<std::size_t>(op.comm);
  MPI_Comm comm = comms[c].get();
  const int size = static_cast<int>(program->communicators[c].members.size());
  const int me = comm_rank[c][static_cast<std::size_t>(rank)];
  const auto reads = ir::reads(rp, op);
  const auto writes = ir::writes(rp, op);
  if (reads.empty() || writes.empty()) return make_error("collective without buffers");
  auto send = access(reads[0]);
  if (!send.ok()) return send.error();
  auto recv = access(writes[0]);
  if (!recv.ok()) return recv.error();
  const bool in_place = reads[0] == writes[0];
  InFlight f;
  f.op = index;
  f.start = clock_now();
  MPI_Request req = MPI_REQUEST_NULL;
  const int count = to_int(op.bytes / 4);  // floats
  switch (op.collective) {
    case ir::CollectiveKind::broadcast: {
      const int root = comm_rank[c][static_cast<std::size_t>(op.peer)];
      if (root == me && !in_place) std::memcpy(recv->data(), send->data(), op.bytes);
      TAWPIPE_MPI(MPI_Ibcast(recv->data(), to_int(op.bytes), MPI_BYTE, root, comm, &req));
      break;
    }
    case ir::CollectiveKind::reduce: {
      const int root = comm_rank[c][static_cast<std::size_t>(op.peer)];
      const void* sbuf = (root == me && in_place) ? MPI_IN_PLACE : send->data();
      TAWPIPE_MPI(MPI_Ireduce(sbuf, recv->data(), count, MPI_FLOAT, MPI_SUM, root, comm, &req));
      break;
    }
    case ir::CollectiveKind::all_reduce: {
      const void* sbuf = in_place ? MPI_IN_PLACE : send->data();
      TAWPIPE_MPI(MPI_Iallreduce(sbuf, recv->data(), count, MPI_FLOAT, MPI_SUM, comm, &req));
      break;
    }
    case ir::CollectiveKind::all_gather: {
      const int piece = count / size;
      const void* sbuf = in_place ? MPI_IN_PLACE : send->data();
      TAWPIPE_MPI(
          MPI_Iallgather(sbuf, piece, MPI_FLOAT, recv->data(), piece, MPI_FLOAT, comm, &req));
      break;
    }
    case ir::CollectiveKind::reduce_scatter: {
      const int piece = count / size;
      float* out = recv->data();
      if (in_place) {
        f.temp.assign(static_cast<std::size_t>(piece), 0.0f);
        f.copy_to = writes[0];
        out = f.temp.data();
      }
      TAWPIPE_MPI(
          MPI_Ireduce_scatter_block(send->data(), out, piece, MPI_FLOAT, MPI_SUM, comm, &req));
      break;
    }
  }
  requests.push_back(req);
  in_flight.push_back(std::move(f));
  return Status::success();
}

Status HostBackend::Impl::post(ir::OpIndex index) {
  const ir::RankProgram& rp = program->ranks[static_cast<std::size_t>(rank)];
  const ir::Op& op = rp.ops[static_cast<std::size_t>(index)];
  const std::string where = "rank " + std::to_string(rank) + " op " + std::to_string(index) + ": ";
  auto fail = [&](const Error& e) { return make_error(where + e.message); };
  const Nanos t = clock_now();
  switch (op.kind) {
    case ir::OpKind::compute: {
      {
        std::lock_guard lock(mu);
        work.push_back(index);
      }
      ++compute_in_flight;
      work_cv.notify_one();
      return Status::success();
    }
    case ir::OpKind::alloc:
      for (ir::BufferId b : ir::writes(rp, op))
        make_alive(b);
      local_done.push_back({index, t, clock_now()});
      return Status::success();
    case ir::OpKind::free:
      for (ir::BufferId b : ir::writes(rp, op))
        kill(b);
      local_done.push_back({index, t, clock_now()});
      return Status::success();
    case ir::OpKind::copy: {
      auto src = access(ir::reads(rp, op)[0]);
      if (!src.ok()) return fail(src.error());
      auto dst = access(ir::writes(rp, op)[0]);
      if (!dst.ok()) return fail(dst.error());
      const std::size_t n =
          std::min({src->size(), dst->size(), static_cast<std::size_t>(op.bytes / 4)});
      std::copy(src->begin(), src->begin() + static_cast<std::ptrdiff_t>(n), dst->begin());
      local_done.push_back({index, t, clock_now()});
      return Status::success();
    }
    case ir::OpKind::send:
    case ir::OpKind::recv: {
      const bool is_send = op.kind == ir::OpKind::send;
      const auto c = static_cast<std::size_t>(op.comm);
      const int peer = comm_rank[c][static_cast<std::size_t>(op.peer)];
      auto buf = access(is_send ? ir::reads(rp, op)[0] : ir::writes(rp, op)[0]);
      if (!buf.ok()) return fail(buf.error());
      MPI_Request req = MPI_REQUEST_NULL;
      const int tag = tags[static_cast<std::size_t>(index)];
      if (is_send) {
        TAWPIPE_MPI(
            MPI_Isend(buf->data(), to_int(op.bytes), MPI_BYTE, peer, tag, comms[c].get(), &req));
      } else {
        TAWPIPE_MPI(
            MPI_Irecv(buf->data(), to_int(op.bytes), MPI_BYTE, peer, tag, comms[c].get(), &req));
      }
      requests.push_back(req);
      in_flight.push_back(InFlight{index, t, {}, ir::kNone});
      return Status::success();
    }
    case ir::OpKind::collective: {
      Status s = post_collective(index, op);
      if (!s.ok()) return fail(s.error());
      return s;
    }
  }
  return make_error(where + "unknown op kind");
}

Status HostBackend::issue(std::span<const ir::OpIndex> ops) {
  for (ir::OpIndex op : ops)
    TAWPIPE_TRY(impl_->post(op));
  return Status::success();
}

Status HostBackend::wait(Nanos deadline, std::vector<Completion>& done) {
  Impl& m = *impl_;
  // MPI's non-blocking collectives (libnbc) advance one round per test call, so the sleep between
  // polls bounds their speed: start at 5 us and double to 100 us while only MPI is pending.
  Nanos backoff = 5'000;
  std::vector<int> indices;
  for (;;) {
    const std::size_t before = done.size();
    done.insert(done.end(), m.local_done.begin(), m.local_done.end());
    m.local_done.clear();
    {
      std::lock_guard lock(m.mu);
      if (m.worker_error) return *m.worker_error;
      m.compute_in_flight -= m.compute_done.size();
      done.insert(done.end(), m.compute_done.begin(), m.compute_done.end());
      m.compute_done.clear();
    }
    if (!m.requests.empty()) {
      indices.resize(m.requests.size());
      int outcount = 0;
      TAWPIPE_MPI(MPI_Testsome(static_cast<int>(m.requests.size()), m.requests.data(), &outcount,
                               indices.data(), MPI_STATUSES_IGNORE));
      if (outcount > 0 && outcount != MPI_UNDEFINED) {
        const Nanos t = clock_now();
        for (int k = 0; k < outcount; ++k) {
          InFlight& f = m.in_flight[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)])];
          if (f.copy_to != ir::kNone) {
            auto dst = m.access(f.copy_to);
            if (dst.ok()) std::copy(f.temp.begin(), f.temp.end(), dst->begin());
          }
          done.push_back({f.op, f.start, t});
        }
        // Compact: drop completed (now MPI_REQUEST_NULL) entries.
        std::size_t w = 0;
        for (std::size_t r = 0; r < m.requests.size(); ++r) {
          if (m.requests[r] == MPI_REQUEST_NULL) continue;
          m.requests[w] = m.requests[r];
          m.in_flight[w] = std::move(m.in_flight[r]);
          ++w;
        }
        m.requests.resize(w);
        m.in_flight.resize(w);
      }
    }
    if (done.size() > before) return Status::success();
    const Nanos now = clock_now();
    if (now >= deadline) return Status::success();
    if (m.requests.empty() && m.compute_in_flight == 0) return Status::success();
    // Sleep until a compute op completes, or (with MPI pending) a short backoff.
    const Nanos sleep = m.requests.empty() ? deadline - now : std::min(backoff, deadline - now);
    std::unique_lock lock(m.mu);
    m.done_cv.wait_for(lock, std::chrono::nanoseconds(sleep),
                       [&] { return !m.compute_done.empty() || m.worker_error.has_value(); });
    backoff = std::min<Nanos>(backoff * 2, 100'000);
  }
}

Status HostBackend::end_iteration() {
  return Status::success();
}

double HostBackend::take_loss_sum() {
  std::lock_guard lock(impl_->mu);
  return std::exchange(impl_->loss_sum, 0.0);
}

std::uint64_t HostBackend::peak_bytes() const {
  return impl_->peak_bytes;
}

std::span<const float> HostBackend::buffer_data(ir::BufferId buffer) const {
  const auto u = static_cast<std::size_t>(buffer);
  if (u >= impl_->data.size() || !impl_->alive[u]) return {};
  return impl_->data[u];
}

}  // namespace tawpipe::exec::host
