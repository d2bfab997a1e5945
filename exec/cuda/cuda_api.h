/// \file
/// The real DeviceApi (CUDA runtime, NCCL, cuBLAS) and the MPI bootstrap, behind headers free of
/// CUDA types so that tawexec.cpp can include them. Built only when the CUDA Toolkit and NCCL are
/// found (TAWPIPE_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "exec/device/device_api.h"
#include "exec/device/device_backend.h"

namespace tawpipe::exec::cuda {

/// Whether a device is visible: the error is one line, "no CUDA device visible
/// (cudaGetDeviceCount: <the runtime's message>)". Never crashes without a driver.
Status probe_device();

/// probe_device on every rank (collective over MPI_COMM_WORLD): nullopt when every rank sees a
/// device, else the line to report, this rank's own error when it has one, otherwise "no CUDA
/// device visible on some rank".
std::optional<std::string> missing_device();

/// The DeviceApi over CUDA, NCCL and cuBLAS. It owns every stream, event, communicator,
/// allocation and cuBLAS handle it hands out (RAII owners) and releases them when destroyed.
/// Allocations come from a stream-ordered pool of its own (cudaMallocFromPoolAsync /
/// cudaFreeAsync) that keeps up to `pool_release_threshold` bytes of freed memory (default:
/// all of it) instead of returning them to the driver. Attention runs cuDNN's fused SDPA where
/// it can (cudnn_sdpa.h); `use_cudnn` false forces the tiled kernel (tests of the fallback).
std::unique_ptr<device::DeviceApi> make_cuda_api(std::uint64_t pool_release_threshold = UINT64_MAX,
                                                 bool use_cudnn = true);

/// Which attention implementation ran on `api` (made by make_cuda_api), per direction, with the
/// reason of any fallback to the tiled kernel unless `reasons` is false: for run and calibration
/// summaries and the producer line of their report and profile.
std::string attention_path(const device::DeviceApi& api, bool reasons = true);

/// The bootstrap over MPI_COMM_WORLD (MPI must be initialised): local rank from the launcher's
/// environment, else from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); broadcast = MPI_Bcast.
std::unique_ptr<device::Bootstrap> make_mpi_bootstrap();

/// Ranks sharing this process's node (MPI_Comm_split_type SHARED): for link classes in
/// calibration. Collective over the world.
Expected<int> node_size();

}  // namespace tawpipe::exec::cuda
