/// \file
/// The memory-bound kernel figures of `tawexec calibrate --backend host`, at the sizes and cache
/// state a run gives them (calibrate.cpp measures them, calibrate_kernels.cpp says which).
///
/// What a run's memory-bound ops touch (rank 0's op order in the session-12 IRs of cpu-h256 on
/// 2x2-cpu, seq 256, 4 layers per rank; "reuse distance" = bytes of other buffers the rank's ops
/// touch between two touches of a buffer):
///  - norm, activation, residual inside a layer: activation-sized (T x H, T x F floats), just
///    written by the previous kernel of the same op: hot (in the core's 1 MiB L2).
///  - accumulate (IR op, kernel class residual): weight-sized. WeiPipe and TawPipe add a whole
///    block (12.9 MB, 4 layers) into a gradient block last touched 40-350 MB ago; FSDP adds one
///    reduce-scattered piece (0.8 MB, a quarter of a layer) into a gradient piece not touched
///    since the previous step. Beyond every cache either way.
///  - optimizer (AdamW + the master copy): the rank's shard (a 12.9 MB block, or FSDP's 0.8 MB
///    pieces) with its gradient, weights and state, last touched 30-570 MB ago: cold.
///  - copy: a weight block (WeiPipe's last copy, 12.9 MB), cold.
///  - embedding: a gather of T rows of the table into the activations (forward), a scatter-add
///    of the activation gradient into the table's gradient (backward); small.
/// So the calibration measures the layer-internal classes hot at activation size (as before) and
/// the weight-sized ones at the run's sizes with their operands rotated over a pool larger than
/// the caches (kColdPoolBytes), as Intel MPI Benchmarks' -off_cache does and as the GEMM figures
/// already rotate their weight operands. Each figure's byte count is the kernel model's
/// (common/model/kernels.h), so the simulator's by-bytes interpolation (sim/compute/
/// kernel_rates.cpp) meets the point exactly at the run's kernels.
///
/// Measured (this VM, 2x2-cpu, quiet, 2026-11-25 13:09-13:11, six calibrations in a row; GB/s of
/// the kernel model's bytes): residual add over T x H hot 26.2-27.8; accumulate of a 0.8 MB
/// piece, cold 25.7-27.3; of a 12.9 MB block, cold 26.4-27.5: no cache effect on the
/// accumulate (its operands already exceed the L2 and stream). Copy hot (1.4 MB moved) 109-117,
/// a block cold (25.7 MB moved) 24.8-29.1: 4x apart, so a weight copy needs the cold point.
/// AdamW with its master copy 8.4-8.9 at both sizes, where the optimizer used to get the norm
/// figure (6.0-6.3); embedding gather 114-125, scatter-add 18.2-18.8 (also the norm figure
/// before). On the predictions (tawsim with these classes' figures of one calibration swapped
/// into another's) they move each method by at most 0.3 % and no adjacent gap by more than 0.3
/// points: the memory-bound classes are not what orders the methods on this machine.
/// Session 26 (localhost-cpu, 10:56 UTC, docs/validate-host.md) gave RoPE and the loss their
/// own figures: rope 19.2 GB/s, softmax_xent 1.43 (the loss's exp and log per logit), where both
/// had the norm's 8.9; every method's prediction moved by -0.4 to -0.7 %, its order not at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/aligned.h"
#include "common/model/kernel_class.h"
#include "common/model/model.h"
#include "common/profile/profile.h"
#include "exec/math/dims.h"

namespace tawpipe::exec::host {

/// Bytes a cold figure's operand sets rotate over (per measuring rank): 64 MiB, past the 1 MiB L2
/// per core and the last-level cache share of this VM (session 13, mb2 micro-benchmark: copying
/// a 12.9 MB block rotated over 64 MiB ran at 15-27 GB/s against 20-30 hot, the same block held
/// in one set).
inline constexpr double kColdPoolBytes = 64.0 * 1024 * 1024;

/// Bytes the zero fill's buffers rotate over (per measuring rank): 1 GiB. A fill only writes, and
/// on this VM a written buffer stays cached far beyond 64 MiB: a fill of a 12.9 MB buffer rotated
/// over 64 MiB ran at 52 GB/s, over 128 MiB at 36, over 512 MiB at 23, and from 768 MiB to 2 GiB
/// at 16-21 GB/s, the plateau of a buffer in no cache (session 16, /tmp/s16/mb/z.cpp, back-to-back
/// fills; with 64 MB read between two fills of a 64 MiB pool: 15 GB/s). The backend zeroes a
/// pooled buffer last touched a step phase earlier, with the rank's working set (~120 MB, plus
/// the other ranks' on the shared caches) streamed since: past the caches, so the plateau.
inline constexpr double kZeroPoolBytes = 1024.0 * 1024 * 1024;

/// One memory-bound figure: what the run does, how big, and hot or cold.
struct MemoryFigure {
  enum class Kernel : std::uint8_t {
    rmsnorm,        ///< RMSNorm forward over T x H
    swiglu,         ///< SwiGLU forward over T x F
    residual_add,   ///< z = x + y over T x H
    accumulate,     ///< dst += src over `elements` (the IR's accumulate op)
    adamw,          ///< AdamW over `elements`, then the master copy (the IR's optimizer op)
    copy,           ///< memcpy of `elements` floats
    embedding_fwd,  ///< gather of T rows of the embedding table
    embedding_bwd,  ///< scatter-add of T rows into the embedding gradient
    rope,           ///< RoPE on q and k (T x H each), as the block's forward applies it
    softmax_xent,   ///< softmax cross-entropy over T x V with its gradient (the head's loss)
    /// fill with 0 of `elements` floats: the backend's zeroing of a buffer an alloc hands out
    /// (common/ir/zeroing.h). No kernel class point (memory_points skips it): it is the
    /// profile's host.zero_bandwidth, `model_bytes` the bytes written.
    zero,
  };
  Kernel kernel = Kernel::copy;
  model::KernelClass cls = model::KernelClass::copy;
  std::string what;          ///< for logs: "accumulate of a 4-layer block" ...
  std::size_t elements = 0;  ///< floats of the main operand
  double model_bytes = 0.0;  ///< bytes the kernel model counts for this kernel
  bool cold = false;         ///< operands rotate over kColdPoolBytes
};

/// The figures a run of `model` at `seq_len` (micro-batch 1, fp32) needs when each rank cycles
/// through `layers` layers and `world` ranks split a layer into pieces (FSDP): hot norm,
/// activation, residual and copy at activation size; cold accumulate, optimizer at a piece
/// (per_layer / world) and at a block (layers x per_layer); a cold copy of a block; embedding
/// forward and backward; a cold zero fill of a block (host.zero_bandwidth). Figures whose byte
/// count repeats an earlier one of the same class are left out (the simulator needs distinct sizes
/// per class).
std::vector<MemoryFigure> memory_figures(const model::ModelConfig& model, const math::Dims& dims,
                                         std::int64_t layers, int world);

/// Operand sets a figure rotates over: 1 when hot, else enough sets of `set_bytes` to fill
/// `pool_bytes`, at least 2.
std::size_t rotation_sets(double set_bytes, bool cold, double pool_bytes = kColdPoolBytes);

/// One GEMM of the block: C (m x n) = op(A) B, op(A) = A^T (stored k x m) when trans_a.
struct GemmShape {
  std::size_t m = 0, n = 0, k = 0;
  bool trans_a = false;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

/// The block's GEMM shapes at its dims: forward QKV/O (T x H x H), MLP up (T x F x H) and down
/// (T x H x F); backward weight gradients (H x H x T, H x F x T, F x H x T, A^T B).
std::vector<GemmShape> block_gemm_shapes(const math::Dims& dims);

/// The block's GEMMs as a run finds their operands, for every calibration figure that times
/// GEMMs (the compute figures, and the wake-up figures' loop beside them): A (the activations,
/// just written by the previous op) hot; B and C (the weight of a forward, the weight gradient
/// of a backward) rotated per shape over as many sets as the rank's layers' weights fill
/// (`weight_bytes`), so that between two uses of one set the others have gone through the
/// caches, as the rank's other layers go between two uses of one layer's matrix.
class BlockGemms {
 public:
  BlockGemms(std::vector<GemmShape> shapes, double weight_bytes);
  /// One call of shape `i` on its next operand set.
  void run(std::size_t i);
  /// The next shape in turn (0, 1, ..., shapes - 1, 0, ...): one call; its flops.
  double next();
  /// The flops of the `call`-th call of next() counted from construction.
  double flops_of_call(std::uint64_t call) const { return shapes_[call % shapes_.size()].flops(); }
  /// Operand sets shape `i` rotates over.
  std::size_t sets(std::size_t i) const { return sets_[i]; }
  /// The B operand shape `i`'s next call will read, and the C its last call wrote (for tests).
  const float* next_b(std::size_t i) const;
  const float* last_c(std::size_t i) const;

 private:
  std::vector<GemmShape> shapes_;
  AlignedVector a_;
  std::vector<AlignedVector> pools_;  ///< per shape: sets x (B, C)
  std::vector<std::size_t> sets_, next_set_;
  std::uint64_t turn_ = 0;
};

/// Profile points per class from the figures and their measured seconds per call (same order):
/// one point {bytes: model_bytes, bandwidth: model_bytes / seconds} per figure, sorted by bytes.
std::map<model::KernelClass, std::vector<profile::KernelPoint>> memory_points(
    const std::vector<MemoryFigure>& figures, const std::vector<double>& seconds);

}  // namespace tawpipe::exec::host
