// The cuDNN half of the fused attention on CPU, against the real libcudnn: every graph key the
// backend can ask for (forward and backward, causal and full, bf16 and f16, head dimensions 32 to
// 256) has all its tensor and operation descriptors accepted and finalised by cuDNN (attribute
// types, enums, shapes and strides as cuDNN reads them); and without a device, an attention
// launch falls back to the tiled kernel because cudnnCreate fails, says so once with cuDNN's
// reason, and the summary names the path.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exec/cuda/cuda_api.h"
#include "exec/cuda/cudnn_sdpa.h"
#include "exec/device/sdpa_graph.h"

namespace tawpipe::exec::device {
namespace {

TEST(CudnnGraph, EveryKeyFinalisesItsTensorAndOperationDescriptors) {
  for (SdpaDirection dir : {SdpaDirection::forward, SdpaDirection::backward})
    for (bool causal : {true, false})
      for (DType t : {DType::bf16, DType::f16})
        for (std::int64_t d : {32, 64, 128, 256}) {
          SdpaKey k;
          k.batch = 2;
          k.heads = 4;
          k.seq = 300;
          k.head_dim = d;
          k.dtype = t;
          k.causal = causal;
          k.direction = dir;
          SCOPED_TRACE(to_string(k));
          auto g = build_sdpa_graph(k);
          ASSERT_TRUE(g.ok()) << g.error().message;
          auto n = cuda::finalize_graph_descriptors(*g);
          ASSERT_TRUE(n.ok()) << n.error().message;
          // One per tensor, one per operation, plus the matmul/pointwise/reduction descriptor
          // of every operation but the reshapes.
          std::size_t inner = 0;
          for (const GraphOp& op : g->ops)
            inner += op.kind == OpKind::reshape ? 0 : 1;
          EXPECT_EQ(*n, g->tensors.size() + g->ops.size() + inner);
        }
}

TEST(CudnnGraph, RefusesAGraphTheCheckerRejects) {
  SdpaKey k;
  k.batch = 1;
  k.heads = 2;
  k.seq = 96;
  k.head_dim = 64;
  auto g = build_sdpa_graph(k);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(cuda::finalize_graph_descriptors(*g).ok());
  g->ops.front().in[1] = g->ops.front().in[0];  // Q x Q: [96 x 64] x [96 x 64]
  auto n = cuda::finalize_graph_descriptors(*g);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("matmul_q_kt"), std::string::npos) << n.error().message;
}

TEST(CudnnRunner, WithoutADeviceFallsBackToTheTiledKernelAndSaysSoOnce) {
  if (cuda::probe_device().ok()) GTEST_SKIP() << "a CUDA device is visible: cuDNN can run here";
  std::vector<std::string> said;
  cuda::AttentionRunner runner([&](const std::string& s) { said.push_back(s); }, true);
  KernelLaunch k;
  k.kernel = Kernel::attention_forward;
  k.dtype = DType::bf16;
  k.s = {1, 2, 64, 128, 0, 1 << 20};
  for (int i = 0; i < 3; ++i) {
    // The tiled kernel cannot launch without a device either: an error, never a crash.
    EXPECT_FALSE(runner.run(k, nullptr).ok());
  }
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("fwd b1 h2 s128 d64 bf16 causal: no cuDNN plan"), std::string::npos)
      << said[0];
  EXPECT_NE(said[0].find("cudnnCreate"), std::string::npos) << said[0];
  const std::string summary = runner.summary();
  EXPECT_NE(summary.find("cuDNN 9."), std::string::npos) << summary;
  EXPECT_NE(summary.find("forward: tiled O(S) kernel"), std::string::npos) << summary;
}

}  // namespace
}  // namespace tawpipe::exec::device
