// `tawexec calibrate --backend cuda`: every rank measures its device (calibrate_device.cpp:
// kernel-class points at the block's real shapes, launch overhead; here: the per-IR-op overhead
// of the interpreter and the CUDA backend, as the host calibration measures it) and the
// communication (calibrate_comm.cpp: NCCL collectives by size inside a node and across nodes,
// send/recv exchanges); rank 0 combines them (exec/device/calibration.h: medians over the ranks,
// the spread, slow GPUs as outliers; collective times as the slowest member's; slow NICs from each
// rank's inter-node bandwidth) and writes one profile v2 (common/profile/profile.h). The
// spread and the outliers are also reported on stderr.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include <mpi.h>

#include "common/model/presets.h"
#include "common/profile/profile.h"
#include "exec/calibrate_flags.h"
#include "exec/cli_support.h"
#include "exec/cuda/calibrate_bench.h"
#include "exec/cuda/cuda_api.h"
#include "exec/cuda/cuda_run.h"
#include "exec/device/calibration.h"
#include "exec/device/device_backend.h"
#include "exec/host/calibrate_comm.h"
#include "exec/math/dims.h"

namespace tawpipe::exec::cuda {
namespace {

/// Gathers each rank's `mine` (the same length on every rank) to rank 0: [rank][i].
Expected<std::vector<std::vector<double>>> gather(const std::vector<double>& mine, int world) {
  int n = static_cast<int>(mine.size()), lo = 0, hi = 0;
  MPI_Allreduce(&n, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&n, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) return make_error("ranks measured different numbers of figures");
  std::vector<double> all(static_cast<std::size_t>(n) * static_cast<std::size_t>(world));
  MPI_Gather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(world));
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r].assign(all.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(n)),
                  all.begin() + static_cast<std::ptrdiff_t>((r + 1) * static_cast<std::size_t>(n)));
  return out;
}

/// The slowest member's time of every point, on rank 0: the curves of every rank are laid out
/// alike (the send/recv curve of a rank outside a pair counts as zeros).
void slowest_times(std::vector<profile::CommMeasurement>& curves, const Placement& at) {
  // Slots: every collective curve, then the intra and inter exchange curves where they exist
  // (null: this rank is outside that pair).
  std::vector<profile::CommMeasurement*> slots;
  for (auto& m : curves)
    if (m.op != profile::CommOp::sendrecv) slots.push_back(&m);
  for (auto [exists, scope] : {std::pair{at.per_node >= 2, profile::CommScope::intra_node},
                               std::pair{at.nodes() >= 2, profile::CommScope::inter_node}}) {
    if (!exists) continue;
    profile::CommMeasurement* found = nullptr;
    for (auto& m : curves)
      if (m.op == profile::CommOp::sendrecv && m.scope == scope) found = &m;
    slots.push_back(found);
  }
  constexpr std::size_t kPoints = 4;  // calibrate_comm.cpp's sizes
  std::vector<double> t;
  for (auto* m : slots) {
    for (std::size_t k = 0; k < kPoints; ++k)
      t.push_back(m && k < m->points.size() ? m->points[k].time.seconds() : 0.0);
  }
  std::vector<double> worst(t.size());
  MPI_Reduce(t.data(), worst.data(), static_cast<int>(t.size()), MPI_DOUBLE, MPI_MAX, 0,
             MPI_COMM_WORLD);
  for (std::size_t j = 0; j < slots.size(); ++j) {
    if (!slots[j]) continue;
    for (std::size_t k = 0; k < slots[j]->points.size() && k < kPoints; ++k)
      slots[j]->points[k].time = SimTime::from_seconds(worst[j * kPoints + k]);
  }
}

/// A world of one process: the op-overhead program is one rank's, measured on every rank alone.
class SoloBootstrap final : public device::Bootstrap {
 public:
  explicit SoloBootstrap(int local) : local_(local) {}
  int world_rank() const override { return 0; }
  int world_size() const override { return 1; }
  Expected<int> local_rank() override { return local_; }
  Status broadcast(std::span<std::byte>, int) override { return Status::success(); }

 private:
  int local_;
};

/// op_overhead: what the interpreter and the CUDA backend add per IR op (issue, event record and
/// waits, completion polling), from the host calibration's chain of 4-byte copies run through
/// DeviceBackend on this rank's GPU (a DeviceApi of its own, a one-rank NCCL communicator).
Expected<SimTime> measure_op_overhead(int local_rank, double seconds) {
  auto tiny = model::preset("tiny");
  if (!tiny.ok()) return tiny.error();
  auto api = make_cuda_api();
  SoloBootstrap boot(local_rank);
  device::DeviceOptions o;
  o.model = *tiny;
  device::DeviceBackend backend(*api, boot, o);
  return host::time_per_op(host::op_overhead_program(200), backend, seconds);
}

}  // namespace

using cli::kCalibrate;

int calibrate_main(int argc, char** argv) {
  const int rank = cli::world_rank(), world = cli::world_size();
  cli::CalibrateFlags flags{"cuda", "3x8-a100",   "llama-h4096-l48", 4096,
                            "-",    std::nullopt, std::nullopt,      std::nullopt};
  if (auto status = cli::parse_calibrate_flags(argc, argv, flags)) return *status;
  if (auto missing = missing_device()) return kCalibrate.usage_error(*missing);
  auto kind = cli::calibrate_device_kind(flags.topology);
  if (!kind.ok()) return kCalibrate.usage_error(kind.error().to_string());
  auto model = model::resolve_model(flags.model);
  if (!model.ok()) return kCalibrate.usage_error(model.error().to_string());
  auto dims = math::host_dims(*model, flags.seq_len, 1);
  if (!dims.ok()) return kCalibrate.usage_error(dims.error().to_string());

  auto api = make_cuda_api();
  auto boot = make_mpi_bootstrap();
  auto run = [&]() -> Expected<profile::Profile> {
    auto count = api->device_count();
    if (!count.ok()) return count.error();
    auto local = boot->local_rank();
    if (!local.ok()) return local.error();
    TAWPIPE_TRY(api->set_device(*local % *count));
    auto dev = measure_device(*api, *dims);
    if (!dev.ok()) return dev.error();
    auto per_op = measure_op_overhead(*local, 1.0);
    if (!per_op.ok()) return per_op.error();
    dev->op_overhead = *per_op;
    auto figures = gather(device::device_figures(*dev), world);
    if (!figures.ok()) return figures.error();
    profile::Profile p;
    p.producer = "tawexec calibrate " TAWPIPE_VERSION " (cuda backend, " + std::to_string(world) +
                 " ranks; attention " + attention_path(*api, false) + ")";
    p.backend = profile::Backend::cuda;
    if (rank == 0) p.devices[*kind] = device::combine_ranks(*dev, *figures);
    if (world < 2) return p;
    device::UniqueId id;
    if (rank == 0) {
      auto made = api->unique_id();
      if (!made.ok()) return made.error();
      id = *made;
    }
    TAWPIPE_TRY(boot->broadcast(std::as_writable_bytes(std::span(id.bytes)), 0));
    auto comm = api->comm_init_rank(world, id, rank);
    if (!comm.ok()) return comm.error();
    auto per_node = node_size();
    if (!per_node.ok()) return per_node.error();
    const Placement at{rank, world, *per_node};
    auto measured = measure_comm(*api, *comm, at);
    if (!measured.ok()) return measured.error();
    slowest_times(measured->curves, at);
    auto nic = gather({measured->nic_bandwidth}, world);
    if (!nic.ok()) return nic.error();
    if (rank != 0) return p;
    p.communication = std::move(measured->curves);
    // Rank 0 is in both pairs: links[0] inside its node, the last across nodes.
    if (at.per_node >= 2 && !measured->links.empty())
      p.links["nvlink"] = p.links["nvswitch"] = measured->links.front();
    if (at.nodes() >= 2 && !measured->links.empty()) p.links["nic"] = measured->links.back();
    if (at.nodes() >= 2) {
      std::vector<double> bw;
      for (const auto& v : *nic)
        bw.push_back(v[0]);
      std::vector<double> paired;
      std::vector<int> ids;
      for (std::size_t r = 0; r < bw.size(); ++r)
        if (bw[r] > 0.0) {
          paired.push_back(bw[r]);
          ids.push_back(static_cast<int>(r));
        }
      std::vector<int> slow;
      for (int k : device::slow_ranks(paired))
        slow.push_back(ids[static_cast<std::size_t>(k)]);
      if (!slow.empty()) {
        std::string list;
        for (int r : slow)
          list += (list.empty() ? "" : ", ") + std::to_string(r);
        kCalibrate.say("slow NIC (inter-node send/recv below 90% of the median " +
                       std::to_string(device::median(paired) / 1e9) + " GB/s) on ranks " + list);
      }
    }
    return p;
  };
  auto profile = run();
  if (!profile.ok()) {
    kCalibrate.abort_rank(profile.error().to_string());
  }
  int status = cli::kExitOk;
  if (rank == 0) {
    const profile::DeviceProfile& d = profile->devices.begin()->second;
    if (d.ranks) {
      std::string list;
      for (int r : d.ranks->outliers)
        list += (list.empty() ? "" : ", ") + std::to_string(r);
      kCalibrate.say(std::to_string(d.ranks->count) + " ranks, device spread " +
                     std::to_string(d.ranks->spread * 100.0) + "%" +
                     (list.empty() ? "" : ", slow GPU on ranks " + list));
    }
    kCalibrate.say("attention: " + attention_path(*api));
    status = cli::write_calibrated_profile(flags.output, *profile);
  }
  MPI_Finalize();
  return status;
}

}  // namespace tawpipe::exec::cuda
