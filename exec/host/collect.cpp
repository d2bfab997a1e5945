#include "exec/host/collect.h"

#include <algorithm>
#include <cmath>

#include "exec/host/mpi_util.h"
#include "exec/math/init.h"

namespace tawpipe::exec::host {
namespace {

constexpr int kWeightsTag = 7;

/// The reference scalars of `block` (as a buffer's initial TensorRef names it), padded to the
/// piece size with zeros.
std::vector<float> reference_slice(const ReferenceTrainer& ref, const ir::TensorRef& t,
                                   std::size_t n) {
  std::vector<float> whole;
  if (t.layer_begin < 0) {
    whole = ref.embedding();
  } else {
    for (std::int32_t l = t.layer_begin; l < t.layer_end; ++l) {
      const auto& w = ref.layer(l);
      whole.insert(whole.end(), w.begin(), w.end());
    }
  }
  std::vector<float> out(n, 0.0f);
  const std::size_t offset = static_cast<std::size_t>(t.piece) * n;
  for (std::size_t i = 0; i < n && offset + i < whole.size(); ++i)
    out[i] = whole[offset + i];
  return out;
}

double rms(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v)
    s += static_cast<double>(x) * x;
  return v.empty() ? 0.0 : std::sqrt(s / static_cast<double>(v.size()));
}

bool compared(const ir::Buffer& b) {
  return b.persistent && b.role == ir::BufferRole::weights &&
         b.initial.kind == ir::TensorKind::weights;
}

/// Rank 0 receives every rank's `count` values of `type` from `data`, concatenated in rank
/// order (`all`, with each rank's `counts` and `offsets` into it); other ranks get empty vectors.
template <typename T>
struct Gathered {
  std::vector<T> all;
  std::vector<int> counts, offsets;
};
template <typename T>
Expected<Gathered<T>> gather_to_root(const T* data, int count, MPI_Datatype type, int world) {
  int rank = 0;
  TAWPIPE_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  Gathered<T> g;
  g.counts.resize(static_cast<std::size_t>(world));
  g.offsets.resize(g.counts.size());
  TAWPIPE_MPI(MPI_Gather(&count, 1, MPI_INT, g.counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  int total = 0;
  for (std::size_t r = 0; r < g.counts.size(); ++r) {
    g.offsets[r] = total;
    total += g.counts[r];
  }
  g.all.resize(rank == 0 ? static_cast<std::size_t>(total) : 0);
  TAWPIPE_MPI(MPI_Gatherv(data, count, type, g.all.data(), g.counts.data(), g.offsets.data(), type,
                          0, MPI_COMM_WORLD));
  if (rank != 0) g.counts.clear();
  return g;
}

}  // namespace

Expected<std::vector<IterationRecord>> gather_records(const IterationRecord& mine, int world) {
  // Flatten: [begin, end, (op, start, end, cpu, preemptions)...] as int64.
  constexpr std::size_t kFields = 5;
  std::vector<std::int64_t> flat = {mine.begin, mine.end};
  for (const OpTiming& t : mine.ops) {
    flat.push_back(t.op);
    flat.push_back(t.start);
    flat.push_back(t.end);
    flat.push_back(t.cpu);
    flat.push_back(t.preemptions);
  }
  auto g = gather_to_root(flat.data(), static_cast<int>(flat.size()), MPI_INT64_T, world);
  if (!g.ok()) return g.error();
  std::vector<IterationRecord> out;
  for (std::size_t r = 0; r < g->counts.size(); ++r) {  // rank 0 only: counts empty elsewhere
    const std::int64_t* p = g->all.data() + g->offsets[r];
    IterationRecord rec;
    rec.begin = p[0];
    rec.end = p[1];
    const auto ops = (static_cast<std::size_t>(g->counts[r]) - 2) / kFields;
    for (std::size_t i = 0; i < ops; ++i) {
      const std::int64_t* q = p + 2 + kFields * i;
      rec.ops.push_back(OpTiming{static_cast<ir::OpIndex>(q[0]), q[1], q[2], q[3], q[4]});
    }
    out.push_back(std::move(rec));
  }
  return out;
}

Expected<double> reduce_sum(double value) {
  double sum = 0.0;
  TAWPIPE_MPI(MPI_Reduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
  return sum;
}

Expected<std::vector<std::uint64_t>> gather_u64(std::uint64_t value, int world) {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(world));
  TAWPIPE_MPI(MPI_Gather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
  return out;
}

Expected<std::vector<std::string>> gather_strings(const std::string& value, int world) {
  auto g = gather_to_root(value.data(), static_cast<int>(value.size()), MPI_CHAR, world);
  if (!g.ok()) return g.error();
  std::vector<std::string> out;
  for (std::size_t r = 0; r < g->counts.size(); ++r)  // rank 0 only: counts empty elsewhere
    out.emplace_back(g->all.data() + g->offsets[r], static_cast<std::size_t>(g->counts[r]));
  return out;
}

Expected<WeightCheck> check_weights(const ir::Program& program, ir::Rank rank,
                                    const HostBackend& backend, const ReferenceTrainer* reference) {
  return check_weights(
      program, rank,
      [&](ir::BufferId b) -> Expected<std::vector<float>> {
        const auto data = backend.buffer_data(b);
        return std::vector<float>(data.begin(), data.end());
      },
      4, reference);
}

Expected<WeightCheck> check_weights(
    const ir::Program& program, ir::Rank rank,
    const std::function<Expected<std::vector<float>>(ir::BufferId)>& fetch,
    std::size_t element_bytes, const ReferenceTrainer* reference) {
  auto elements = [&](const ir::Buffer& buf) {
    return static_cast<std::size_t>((buf.size.count() + element_bytes - 1) / element_bytes);
  };
  if (rank != 0) {
    const ir::RankProgram& rp = program.ranks[static_cast<std::size_t>(rank)];
    for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
      if (!compared(rp.buffers[b])) continue;
      auto data = fetch(static_cast<ir::BufferId>(b));
      if (!data.ok()) return data.error();
      data->resize(elements(rp.buffers[b]), 0.0f);
      TAWPIPE_MPI(MPI_Send(data->data(), static_cast<int>(data->size()), MPI_FLOAT, 0, kWeightsTag,
                           MPI_COMM_WORLD));
    }
    return WeightCheck{};
  }
  WeightCheck check;
  for (ir::Rank r = 0; r < program.num_ranks(); ++r) {
    const ir::RankProgram& rp = program.ranks[static_cast<std::size_t>(r)];
    for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
      const ir::Buffer& buf = rp.buffers[b];
      if (!compared(buf)) continue;
      const std::size_t n = elements(buf);
      std::vector<float> got(n);
      if (r == 0) {
        auto data = fetch(static_cast<ir::BufferId>(b));
        if (!data.ok()) return data.error();
        std::copy(data->begin(),
                  data->begin() + static_cast<std::ptrdiff_t>(std::min(n, data->size())),
                  got.begin());
      } else {
        TAWPIPE_MPI(MPI_Recv(got.data(), static_cast<int>(n), MPI_FLOAT, r, kWeightsTag,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      }
      const std::vector<float> want = reference_slice(*reference, buf.initial, n);
      const double scale = std::max(rms(want), 1e-30);
      for (std::size_t i = 0; i < n; ++i) {
        const double diff = std::abs(static_cast<double>(got[i]) - want[i]);
        const double rel = diff / std::max(std::abs(static_cast<double>(want[i])), scale);
        if (!(rel <= check.max_relative_diff)) {  // also catches NaN
          check.max_relative_diff = std::isnan(rel) ? INFINITY : rel;
          check.worst =
              "rank " + std::to_string(r) + " buffer " + buf.name + " scalar " + std::to_string(i);
        }
      }
      ++check.buffers;
    }
  }
  return check;
}

}  // namespace tawpipe::exec::host
