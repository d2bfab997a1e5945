/// \file
/// The one GEMM entry point of the host kernels (OpenBLAS cblas_sgemm, row-major), so that every
/// kernel states its products the same way and the BLAS header stays out of other headers.
#pragma once

#include <cstddef>

namespace tawpipe::exec::math {

/// C[m x n] = alpha * op(A) * op(B) + beta * C, row-major; op(X) = X^T when the flag is set.
/// lda/ldb/ldc are the row strides of A, B and C as stored.
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc);

/// Pins OpenBLAS to one thread: several ranks share the machine's cores.
void use_single_blas_thread();

}  // namespace tawpipe::exec::math
