/// \file
/// The seam INSIDE the CUDA backend: every call the backend makes to CUDA, NCCL and cuBLAS, as
/// one small interface with opaque handles and no CUDA types. Two implementations:
///  - exec/cuda/cuda_api.cpp (built when the CUDA Toolkit and NCCL are found) calls the real
///    libraries, each call checked by TAWPIPE_CUDA_CHECK / TAWPIPE_NCCL_CHECK /
///    TAWPIPE_CUBLAS_CHECK;
///  - exec/recording/recording_api.h logs the exact call sequence a rank would make, so that the
///    backend's logic (exec/device/device_backend.h: IR op -> these calls) runs on CPU in
///    tests.
///
/// Why a seam of calls and not of IR ops: everything that decides WHAT to call (stream per IR
/// stream, events for cross-stream dependencies, NCCL groups per IR group, communicator splits,
/// the kernel sequence of a decoder block) is then proven without a GPU, and the real layer is a
/// thin, mechanical translation.
///
/// Conventions: handles are small integers (or device addresses for memory) that only the
/// implementation that made them understands. GEMMs are stated row-major like exec/math/gemm.h
/// (the real layer swaps operands for cuBLAS's column-major). Every call returns a Status or an
/// Expected; the real layer's errors carry the failing call, file and line.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "common/error.h"

namespace tawpipe::exec::device {

/// A device address (bytes). Arithmetic on it is byte offsets.
using DevicePtr = std::uint64_t;
using StreamHandle = std::int32_t;  ///< from stream_create
using EventHandle = std::int32_t;   ///< from event_create
using CommHandle = std::int32_t;    ///< from comm_init_rank / comm_split

/// Element types of buffers, kernels and NCCL calls. f16 is accepted by the attention kernels
/// only (cuDNN SDPA and the tiled kernel); the block runs in f32 or bf16.
enum class DType : std::uint8_t { f32, bf16, i32, u8, f16 };
/// Bytes per element.
std::size_t dtype_size(DType t);
const char* name(DType t);

/// NCCL collectives (sum for the reducing ones).
enum class Collective : std::uint8_t { broadcast, reduce, all_reduce, all_gather, reduce_scatter };
const char* name(Collective c);

/// The NCCL unique id (NCCL_UNIQUE_ID_BYTES = 128), opaque bytes.
struct UniqueId {
  std::array<char, 128> bytes{};
};

/// C[m x n] = alpha * op(A) op(B) + beta * C, row-major, A/B of `ab_type`, C of `c_type`,
/// accumulation in fp32 (cuBLAS: CUBLAS_COMPUTE_32F). ld* are row strides in elements.
struct Gemm {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  DevicePtr a = 0, b = 0, c = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  DType ab_type = DType::f32, c_type = DType::f32;
};

/// The element-wise and attention kernels of the block (exec/cuda/kernels.cu), each the device
/// twin of an exec/math function (named in the comment; the argument slots are listed there).
enum class Kernel : std::uint8_t {
  rmsnorm_forward,   ///< p: x, g, y, r(f32);  s: rows, width;  f: eps
  rmsnorm_backward,  ///< p: x, g, r, dy, dx, dg(f32, added);  s: rows, width
  rope,              ///< p: x (in place);  s: tokens, heads, head_dim, seq_len;  f: base, inv
  /// Attention with O(seq_len) memory: cuDNN's fused SDPA when it takes the shape, else the
  /// tiled kernel (exec/device/attention_path.h says which and why). `dtype` f32, bf16 or f16
  /// (cuDNN: bf16/f16 only). s[4] = 1 for a full (non-causal) mask, 0 (default) causal.
  attention_forward,   ///< p: q, k, v, lse(f32 [batch x heads x seq]), out, workspace
                       ///< s: batch, heads, head_dim (1..256), seq_len, full, workspace bytes
  attention_backward,  ///< p: q, k, v, out, lse, dout, dq, dk, dv, delta(f32 scratch, as lse)
                       ///< s: as forward; the workspace lent to cuDNN IS delta (s[5] bytes)
  swiglu_forward,      ///< p: gate, up, m;  s: n
  swiglu_backward,     ///< p: gate, up, dm, dgate, dup;  s: n
  add,                 ///< p: dst, src (dst += src; dst of `dtype`, src of `dtype2`);  s: n
  embedding_forward,   ///< p: table, tokens(i32), x;  s: tokens, hidden
  embedding_backward,  ///< p: tokens(i32), dx, dtable(f32, added);  s: tokens, hidden
  cross_entropy,       ///< p: logits (-> dlogits in place), targets(i32), loss(f64 += sum)
                       ///< s: rows, vocab;  f: scale
  adamw,               ///< p: grad(f32), master(f32), m(f32), v(f32);  s: n;
                       ///< f: lr, beta1, beta2, eps, weight_decay, step
  cast,                ///< p: dst (`dtype`), src (`dtype2`);  s: n
};
const char* name(Kernel k);

/// One kernel launch: which kernel, its pointers, integer shape and float scalars. `dtype` is
/// the storage type of weights, activations and gradients (f32 or bf16); norms' r, attention's
/// log-sum-exp, master weights and moments are always f32.
struct KernelLaunch {
  Kernel kernel = Kernel::add;
  DType dtype = DType::f32;
  DType dtype2 = DType::f32;
  std::array<DevicePtr, 10> p{};
  std::array<std::int64_t, 6> s{};
  std::array<float, 6> f{};
};

/// Every call the CUDA backend makes. Not thread-safe; one instance per process (rank).
class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  /// Number of visible devices; an error when the driver says none (message names the call).
  virtual Expected<int> device_count() = 0;
  /// Selects the device of this process (cudaSetDevice) and creates the GEMM handle.
  virtual Status set_device(int device) = 0;

  virtual Expected<StreamHandle> stream_create() = 0;
  virtual Expected<EventHandle> event_create() = 0;
  /// cudaEventRecord(event, stream).
  virtual Status event_record(EventHandle event, StreamHandle stream) = 0;
  /// cudaStreamWaitEvent(stream, event): later work on `stream` waits for the event.
  virtual Status stream_wait_event(StreamHandle stream, EventHandle event) = 0;
  /// cudaEventQuery: true when complete, false when still pending.
  virtual Expected<bool> event_query(EventHandle event) = 0;
  /// cudaEventElapsedTime(from, to) in milliseconds (both complete).
  virtual Expected<float> event_elapsed_ms(EventHandle from, EventHandle to) = 0;
  /// cudaStreamSynchronize.
  virtual Status stream_synchronize(StreamHandle stream) = 0;

  /// Stream-ordered allocation (cudaMallocAsync), contents undefined.
  virtual Expected<DevicePtr> mem_alloc(std::uint64_t bytes, StreamHandle stream) = 0;
  /// cudaFreeAsync.
  virtual Status mem_free(DevicePtr ptr, StreamHandle stream) = 0;
  /// cudaMemsetAsync(ptr, 0, bytes, stream).
  virtual Status mem_zero(DevicePtr ptr, std::uint64_t bytes, StreamHandle stream) = 0;
  /// Host to device; `src` may be reused as soon as the call returns (staged copy). May
  /// synchronise the host with `stream`: for set-up, never inside an iteration.
  virtual Status copy_to_device(DevicePtr dst, std::span<const std::byte> src,
                                StreamHandle stream) = 0;
  /// Host to device, stream-ordered and never synchronising (cudaMemcpyAsync): `src` must stay
  /// alive and unchanged until `stream` has passed the copy (the caller keeps it until its next
  /// synchronisation with the stream).
  virtual Status copy_to_device_async(DevicePtr dst, std::span<const std::byte> src,
                                      StreamHandle stream) = 0;
  /// Device to host, synchronous with respect to `stream` (returns when the data is there).
  virtual Status copy_to_host(std::span<std::byte> dst, DevicePtr src, StreamHandle stream) = 0;
  /// Device to device, stream-ordered.
  virtual Status copy_device(DevicePtr dst, DevicePtr src, std::uint64_t bytes,
                             StreamHandle stream) = 0;
  /// The allocator's high-water mark in bytes since the process started (cudaMemPool
  /// attribute UsedMemHigh); 0 when unknown.
  virtual Expected<std::uint64_t> peak_allocated_bytes() = 0;

  /// ncclGetUniqueId (rank 0 only; the bootstrap broadcasts it).
  virtual Expected<UniqueId> unique_id() = 0;
  /// ncclCommInitRank: the world communicator.
  virtual Expected<CommHandle> comm_init_rank(int nranks, const UniqueId& id, int rank) = 0;
  /// ncclCommSplit(parent, color, key); color < 0 means NCCL_SPLIT_NOCOLOR (not a member; the
  /// result is then an invalid handle, -1). Collective over the parent's ranks.
  virtual Expected<CommHandle> comm_split(CommHandle parent, int color, int key) = 0;
  /// ncclCommAbort: for the watchdog; never blocks on other ranks.
  virtual Status comm_abort(CommHandle comm) = 0;
  /// ncclCommDestroy.
  virtual Status comm_destroy(CommHandle comm) = 0;
  virtual Status group_start() = 0;
  virtual Status group_end() = 0;
  /// ncclSend / ncclRecv of `count` elements of `type`; `peer` is the rank in `comm`.
  virtual Status send(DevicePtr buf, std::uint64_t count, DType type, int peer, CommHandle comm,
                      StreamHandle stream) = 0;
  virtual Status recv(DevicePtr buf, std::uint64_t count, DType type, int peer, CommHandle comm,
                      StreamHandle stream) = 0;
  /// A collective; `count` is NCCL's count (per-rank piece for all_gather and reduce_scatter),
  /// `root` the rank in `comm` for broadcast and reduce (else -1).
  virtual Status collective(Collective kind, DevicePtr send, DevicePtr recv, std::uint64_t count,
                            DType type, int root, CommHandle comm, StreamHandle stream) = 0;

  /// cublasGemmEx (or cublasLt) on `stream`.
  virtual Status gemm(const Gemm& g, StreamHandle stream) = 0;
  /// A kernel of exec/cuda/kernels.cu on `stream`.
  virtual Status launch(const KernelLaunch& k, StreamHandle stream) = 0;

  /// The calls that follow serve IR op `op` (ir::kNone: setup). The recording layer tags its
  /// log with it; the real layer ignores it (the place for an NVTX range).
  virtual void mark_op(std::int32_t op) { static_cast<void>(op); }
};

}  // namespace tawpipe::exec::device
