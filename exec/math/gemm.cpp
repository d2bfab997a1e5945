#include "exec/math/gemm.h"

#include <cassert>
#include <climits>

#include <cblas.h>

namespace tawpipe::exec::math {
namespace {

blasint to_blas(std::size_t v) {
  assert(v <= static_cast<std::size_t>(INT_MAX));
  return static_cast<blasint>(v);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, to_blas(m), to_blas(n), to_blas(k), alpha, a,
              to_blas(lda), b, to_blas(ldb), beta, c, to_blas(ldc));
}

void use_single_blas_thread() {
  openblas_set_num_threads(1);
}

}  // namespace tawpipe::exec::math
