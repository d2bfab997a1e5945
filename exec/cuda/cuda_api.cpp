// The real DeviceApi: each call is one CUDA/NCCL/cuBLAS call (or two), checked at its call site.
#include "exec/cuda/cuda_api.h"

#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <mpi.h>

#include "exec/cuda/check.h"
#include "exec/cuda/cudnn_sdpa.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/owners.h"

namespace tawpipe::exec::cuda {
namespace {

using device::Collective;
using device::CommHandle;
using device::DevicePtr;
using device::DType;
using device::EventHandle;
using device::StreamHandle;

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32:
      return ncclFloat32;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i32:
      return ncclInt32;
    case DType::u8:
      return ncclUint8;
    case DType::f16:
      return ncclFloat16;
  }
  return ncclUint8;
}

cudaDataType_t blas_type(DType t) {
  return t == DType::bf16 ? CUDA_R_16BF : t == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
}

/// tawexec's sink for the once-per-reason attention fallback notices.
void say_on_stderr(const std::string& line) {
  std::cerr << "tawexec: " << line << "\n";
}

void* ptr(DevicePtr p) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

class CudaApi final : public device::DeviceApi {
 public:
  explicit CudaApi(std::uint64_t release_threshold = UINT64_MAX, bool use_cudnn = true)
      : release_threshold_(release_threshold), attention_(say_on_stderr, use_cudnn) {}
  ~CudaApi() override {
    // Allocations go back to the pool first (their owners), then the pool itself.
    live_.clear();
    if (pool_) static_cast<void>(cudaMemPoolDestroy(pool_));
  }
  CudaApi(const CudaApi&) = delete;
  CudaApi& operator=(const CudaApi&) = delete;

  Expected<int> device_count() override {
    int n = 0;
    const cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
      return make_error(std::string("no CUDA device visible (cudaGetDeviceCount: ") +
                        cudaGetErrorString(rc) + ")");
    }
    if (n == 0) return make_error("no CUDA device visible (cudaGetDeviceCount: 0 devices)");
    return n;
  }

  Status set_device(int device) override {
    TAWPIPE_CUDA_CHECK(cudaSetDevice(device));
    // The stream-ordered pool of every IR alloc/free (cudaMallocFromPoolAsync / cudaFreeAsync):
    // freed memory stays in the pool up to the release threshold (no release, hence no
    // synchronisation, at stream synchronisations), and its high-water mark is the peak.
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    TAWPIPE_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
    std::uint64_t keep = release_threshold_, zero = 0;
    TAWPIPE_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
    TAWPIPE_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
    cublasHandle_t h = nullptr;
    TAWPIPE_CUBLAS_CHECK(cublasCreate(&h));
    blas_ = CublasOwner(h);
    return Status::success();
  }

  Expected<StreamHandle> stream_create() override {
    cudaStream_t s = nullptr;
    TAWPIPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams_.emplace_back(s);
    return static_cast<StreamHandle>(streams_.size() - 1);
  }
  Expected<EventHandle> event_create() override {
    cudaEvent_t e = nullptr;
    TAWPIPE_CUDA_CHECK(cudaEventCreate(&e));
    events_.emplace_back(e);
    return static_cast<EventHandle>(events_.size() - 1);
  }
  Status event_record(EventHandle e, StreamHandle s) override {
    TAWPIPE_CUDA_CHECK(cudaEventRecord(event(e), stream(s)));
    return Status::success();
  }
  Status stream_wait_event(StreamHandle s, EventHandle e) override {
    TAWPIPE_CUDA_CHECK(cudaStreamWaitEvent(stream(s), event(e), 0));
    return Status::success();
  }
  Expected<bool> event_query(EventHandle e) override {
    const cudaError_t rc = cudaEventQuery(event(e));
    if (rc == cudaErrorNotReady) return false;
    TAWPIPE_CUDA_CHECK(rc);
    return true;
  }
  Expected<float> event_elapsed_ms(EventHandle from, EventHandle to) override {
    float ms = 0.0f;
    TAWPIPE_CUDA_CHECK(cudaEventElapsedTime(&ms, event(from), event(to)));
    return ms;
  }
  Status stream_synchronize(StreamHandle s) override {
    TAWPIPE_CUDA_CHECK(cudaStreamSynchronize(stream(s)));
    return Status::success();
  }

  Expected<DevicePtr> mem_alloc(std::uint64_t bytes, StreamHandle s) override {
    void* p = nullptr;
    TAWPIPE_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, pool_, stream(s)));
    const auto address = static_cast<DevicePtr>(reinterpret_cast<std::uintptr_t>(p));
    live_.emplace(address, DeviceBuffer(p));
    return address;
  }
  Status mem_free(DevicePtr p, StreamHandle s) override {
    auto it = live_.find(p);
    if (it == live_.end())
      return make_error("cudaFreeAsync of an address this process never allocated");
    TAWPIPE_CUDA_CHECK(cudaFreeAsync(it->second.release(), stream(s)));
    live_.erase(it);
    return Status::success();
  }
  Status mem_zero(DevicePtr p, std::uint64_t bytes, StreamHandle s) override {
    TAWPIPE_CUDA_CHECK(cudaMemsetAsync(ptr(p), 0, bytes, stream(s)));
    return Status::success();
  }
  Status copy_to_device(DevicePtr dst, std::span<const std::byte> src, StreamHandle s) override {
    TAWPIPE_CUDA_CHECK(
        cudaMemcpyAsync(ptr(dst), src.data(), src.size(), cudaMemcpyHostToDevice, stream(s)));
    // Pageable source: the runtime has staged it when the call returns, but a pinned-memory
    // optimisation in the runtime could make that asynchronous; synchronise to keep the
    // interface's promise ("src may be reused") whatever the memory kind.
    TAWPIPE_CUDA_CHECK(cudaStreamSynchronize(stream(s)));
    return Status::success();
  }
  Status copy_to_device_async(DevicePtr dst, std::span<const std::byte> src,
                              StreamHandle s) override {
    TAWPIPE_CUDA_CHECK(
        cudaMemcpyAsync(ptr(dst), src.data(), src.size(), cudaMemcpyHostToDevice, stream(s)));
    return Status::success();
  }
  Status copy_to_host(std::span<std::byte> dst, DevicePtr src, StreamHandle s) override {
    TAWPIPE_CUDA_CHECK(
        cudaMemcpyAsync(dst.data(), ptr(src), dst.size(), cudaMemcpyDeviceToHost, stream(s)));
    TAWPIPE_CUDA_CHECK(cudaStreamSynchronize(stream(s)));
    return Status::success();
  }
  Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes, StreamHandle s) override {
    TAWPIPE_CUDA_CHECK(
        cudaMemcpyAsync(ptr(dst), ptr(src), bytes, cudaMemcpyDeviceToDevice, stream(s)));
    return Status::success();
  }
  Expected<std::uint64_t> peak_allocated_bytes() override {
    if (!pool_) return std::uint64_t{0};
    std::uint64_t high = 0;
    TAWPIPE_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &high));
    return high;
  }

  Expected<device::UniqueId> unique_id() override {
    ncclUniqueId id;
    TAWPIPE_NCCL_CHECK(ncclGetUniqueId(&id));
    static_assert(sizeof(id.internal) == sizeof(device::UniqueId::bytes));
    device::UniqueId out;
    std::copy(std::begin(id.internal), std::end(id.internal), out.bytes.begin());
    return out;
  }
  Expected<CommHandle> comm_init_rank(int nranks, const device::UniqueId& uid, int rank) override {
    ncclUniqueId id;
    std::copy(uid.bytes.begin(), uid.bytes.end(), std::begin(id.internal));
    ncclComm_t c = nullptr;
    TAWPIPE_NCCL_CHECK(ncclCommInitRank(&c, nranks, id, rank));
    comms_.emplace_back(c);
    return static_cast<CommHandle>(comms_.size() - 1);
  }
  Expected<CommHandle> comm_split(CommHandle parent, int color, int key) override {
    ncclComm_t c = nullptr;
    TAWPIPE_NCCL_CHECK(
        ncclCommSplit(comm(parent), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &c, nullptr));
    if (color < 0 || c == nullptr) return CommHandle{-1};
    comms_.emplace_back(c);
    return static_cast<CommHandle>(comms_.size() - 1);
  }
  Status comm_abort(CommHandle h) override {
    ncclComm_t c = comms_.at(static_cast<std::size_t>(h)).release();
    if (c) TAWPIPE_NCCL_CHECK(ncclCommAbort(c));
    return Status::success();
  }
  Status comm_destroy(CommHandle h) override {
    ncclComm_t c = comms_.at(static_cast<std::size_t>(h)).release();
    if (c) TAWPIPE_NCCL_CHECK(ncclCommDestroy(c));
    return Status::success();
  }
  Status group_start() override {
    TAWPIPE_NCCL_CHECK(ncclGroupStart());
    return Status::success();
  }
  Status group_end() override {
    TAWPIPE_NCCL_CHECK(ncclGroupEnd());
    return Status::success();
  }
  Status send(DevicePtr buf, std::uint64_t count, DType t, int peer, CommHandle c,
              StreamHandle s) override {
    TAWPIPE_NCCL_CHECK(ncclSend(ptr(buf), count, nccl_type(t), peer, comm(c), stream(s)));
    return Status::success();
  }
  Status recv(DevicePtr buf, std::uint64_t count, DType t, int peer, CommHandle c,
              StreamHandle s) override {
    TAWPIPE_NCCL_CHECK(ncclRecv(ptr(buf), count, nccl_type(t), peer, comm(c), stream(s)));
    return Status::success();
  }
  Status collective(Collective kind, DevicePtr sb, DevicePtr rb, std::uint64_t count, DType t,
                    int root, CommHandle c, StreamHandle s) override {
    const ncclDataType_t nt = nccl_type(t);
    switch (kind) {
      case Collective::broadcast:
        TAWPIPE_NCCL_CHECK(ncclBroadcast(ptr(sb), ptr(rb), count, nt, root, comm(c), stream(s)));
        break;
      case Collective::reduce:
        TAWPIPE_NCCL_CHECK(
            ncclReduce(ptr(sb), ptr(rb), count, nt, ncclSum, root, comm(c), stream(s)));
        break;
      case Collective::all_reduce:
        TAWPIPE_NCCL_CHECK(ncclAllReduce(ptr(sb), ptr(rb), count, nt, ncclSum, comm(c), stream(s)));
        break;
      case Collective::all_gather:
        TAWPIPE_NCCL_CHECK(ncclAllGather(ptr(sb), ptr(rb), count, nt, comm(c), stream(s)));
        break;
      case Collective::reduce_scatter:
        TAWPIPE_NCCL_CHECK(
            ncclReduceScatter(ptr(sb), ptr(rb), count, nt, ncclSum, comm(c), stream(s)));
        break;
    }
    return Status::success();
  }

  Status gemm(const device::Gemm& g, StreamHandle s) override {
    TAWPIPE_CUBLAS_CHECK(cublasSetStream(blas_.get(), stream(s)));
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
    const auto i = [](std::int64_t v) { return static_cast<int>(v); };
    TAWPIPE_CUBLAS_CHECK(cublasGemmEx(
        blas_.get(), g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
        i(g.n), i(g.m), i(g.k), &g.alpha, ptr(g.b), blas_type(g.ab_type), i(g.ldb), ptr(g.a),
        blas_type(g.ab_type), i(g.lda), &g.beta, ptr(g.c), blas_type(g.c_type), i(g.ldc),
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return Status::success();
  }
  Status launch(const device::KernelLaunch& k, StreamHandle s) override {
    if (k.kernel == device::Kernel::attention_forward ||
        k.kernel == device::Kernel::attention_backward)
      return attention_.run(k, stream(s));
    TAWPIPE_CUDA_CHECK(launch_kernel(k, stream(s)));
    return Status::success();
  }

  std::string attention_summary(bool reasons) const { return attention_.summary(reasons); }

 private:
  cudaStream_t stream(StreamHandle s) const {
    return streams_.at(static_cast<std::size_t>(s)).get();
  }
  cudaEvent_t event(EventHandle e) const { return events_.at(static_cast<std::size_t>(e)).get(); }
  ncclComm_t comm(CommHandle c) const { return comms_.at(static_cast<std::size_t>(c)).get(); }

  // Declaration order = reverse teardown order: communicators and memory go before streams.
  std::uint64_t release_threshold_;
  cudaMemPool_t pool_ = nullptr;
  CublasOwner blas_;
  std::vector<StreamOwner> streams_;
  std::vector<EventOwner> events_;
  std::map<DevicePtr, DeviceBuffer> live_;
  std::vector<CommOwner> comms_;
  AttentionRunner attention_;  // its cuDNN handle goes first
};

class MpiBootstrap final : public device::Bootstrap {
 public:
  MpiBootstrap() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int world_rank() const override { return rank_; }
  int world_size() const override { return size_; }
  Expected<int> local_rank() override {
    if (auto env = device::local_rank_from_env()) return *env;
    MPI_Comm node = MPI_COMM_NULL;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
      return make_error("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    int local = 0;
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return local;
  }
  Status broadcast(std::span<std::byte> data, int root) override {
    if (MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
      return make_error("MPI_Bcast of the NCCL unique id failed");
    return Status::success();
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

Status probe_device() {
  CudaApi api;
  auto n = api.device_count();
  if (!n.ok()) return n.error();
  return Status::success();
}

std::optional<std::string> missing_device() {
  Status s = probe_device();
  int ok = s.ok() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all) return std::nullopt;
  return s.ok() ? std::string("no CUDA device visible on some rank") : s.error().message;
}

std::unique_ptr<device::DeviceApi> make_cuda_api(std::uint64_t pool_release_threshold,
                                                 bool use_cudnn) {
  return std::make_unique<CudaApi>(pool_release_threshold, use_cudnn);
}

std::string attention_path(const device::DeviceApi& api, bool reasons) {
  if (const auto* cuda = dynamic_cast<const CudaApi*>(&api))
    return cuda->attention_summary(reasons);
  return "not the CUDA DeviceApi";
}

std::unique_ptr<device::Bootstrap> make_mpi_bootstrap() {
  return std::make_unique<MpiBootstrap>();
}

Expected<int> node_size() {
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS)
    return make_error("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  int n = 0;
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

}  // namespace tawpipe::exec::cuda
