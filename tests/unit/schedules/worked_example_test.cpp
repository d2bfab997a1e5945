// Acceptance 1: the TawPipe and WeiPipe programs on 2 nodes x 2 GPUs x 4 layers follow the worked
// examples of algorithms.md §2.7 (per-device op order) and §3.3 (per-rank turn table), op by op.
#include <gtest/gtest.h>

#include <sstream>

#include "schedule_test_util.h"

namespace tawpipe::schedules {
namespace {

// Shard label of a weights/gradient op, derived locally: the layer range of the compute op that
// next reads (weights) or last wrote (gradients) the buffer. The verifier proves these contents;
// here they only name the shard the way the document does (one layer per shard: W<layer>).
int next_reader_layer(const ir::RankProgram& rp, std::size_t from, ir::BufferId buf) {
  for (std::size_t j = from + 1; j < rp.ops.size(); ++j) {
    const ir::Op& op = rp.ops[j];
    if (op.kind != ir::OpKind::compute) continue;
    for (ir::BufferId b : ir::reads(rp, op))
      if (b == buf) return op.layer_begin;
  }
  return -9;
}
int last_writer_layer(const ir::RankProgram& rp, std::size_t from, ir::BufferId buf) {
  for (std::size_t j = from; j-- > 0;) {
    const ir::Op& op = rp.ops[j];
    if (op.kind != ir::OpKind::compute) continue;
    for (ir::BufferId b : ir::writes(rp, op))
      if (b == buf) return op.layer_begin;
  }
  return -9;
}

/// Whether a P2P moves a gradient (the pair communicators' streams carry both kinds).
bool is_gradient(const ir::RankProgram& rp, ir::BufferId b) {
  return rp.buffers[static_cast<std::size_t>(b)].role == ir::BufferRole::gradient_staging;
}

/// §2.7's notation for one op, or "" for ops the document leaves out (alloc, free, embedding
/// forward, accumulate, the extra embedding AdamW).
std::string tawpipe_token(const ir::Program& p, ir::Rank r, std::size_t i) {
  const ir::RankProgram& rp = p.ranks[static_cast<std::size_t>(r)];
  const ir::Op& op = rp.ops[i];
  const auto W = [](int layer) { return "W" + std::to_string(layer); };
  const auto d = [](ir::Rank x) { return "d" + std::to_string(x); };
  const bool xnode = op.peer != ir::kNone && (op.peer / 2 != r / 2);
  switch (op.kind) {
    case ir::OpKind::compute:
      switch (op.compute) {
        case ir::ComputeKind::forward:
          return "F(" + W(op.layer_begin) + ")";
        case ir::ComputeKind::backward:
          return "B(" + W(op.layer_begin) + ")";
        case ir::ComputeKind::head:
          return "head";
        case ir::ComputeKind::embedding_backward:
          return "embed bwd";
        case ir::ComputeKind::optimizer:
          return op.layer_begin == ir::kEmbeddingLayer ? "" : "AdamW(" + W(op.layer_begin) + ")";
        default:
          return "";
      }
    case ir::OpKind::send: {
      const ir::BufferId b = ir::reads(rp, op)[0];
      if (!is_gradient(rp, b)) {
        return "xnode send " + W(rp.buffers[static_cast<std::size_t>(b)].initial.layer_begin) +
               "->" + d(op.peer);
      }
      return "xnode send grad " + W(last_writer_layer(rp, i, b)) + "->" + d(op.peer);
    }
    case ir::OpKind::recv: {
      const ir::BufferId b = ir::writes(rp, op)[0];
      if (!is_gradient(rp, b)) {
        return std::string(xnode ? "xnode " : "") + "recv " + W(next_reader_layer(rp, i, b)) +
               "<-" + d(op.peer);
      }
      // The owner accumulates what it receives into its own shard's gradient.
      return "xnode recv grad " + W(next_reader_layer(rp, i, b)) + "<-" + d(op.peer);
    }
    case ir::OpKind::collective: {
      const ir::BufferId b = ir::writes(rp, op)[0];
      if (op.collective == ir::CollectiveKind::broadcast) {
        const std::string w = W(next_reader_layer(rp, i, b));
        return op.peer == r ? "bcast " + w + " (root)" : "recv bcast " + w;
      }
      if (op.collective == ir::CollectiveKind::reduce) {
        const std::string w = W(last_writer_layer(rp, i, ir::reads(rp, op)[0]));
        return op.peer == r ? "reduce grad " + w + " (root)"
                            : "reduce grad " + w + " (to " + d(op.peer) + ")";
      }
      return "all-reduce";
    }
    default:
      return "";
  }
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t end = std::min(list.find(" | ", pos), list.size());
    out.push_back(list.substr(pos, end - pos));
    pos = end + 3;
  }
  return out;
}

char token_class(const std::string& t) {
  if (t.find("grad") != std::string::npos || t == "all-reduce") return 'g';
  if (t.find("bcast") != std::string::npos || t.find("send") != std::string::npos ||
      t.find("recv") != std::string::npos)
    return 'w';
  return 'c';
}

std::vector<std::string> only(const std::vector<std::string>& v, char cls) {
  std::vector<std::string> out;
  for (const auto& t : v)
    if (token_class(t) == cls) out.push_back(t);
  return out;
}

// The per-device lists of §2.7, with "xnode swap X->a / Y<-a" written as its two halves in the
// order the paper's code posts them on their pair communicator: the rank of the lower group sends
// first, the other receives first (tawpipe.py weight_p2p, `if self.group_id < dst_gid`).
const char* const kTawpipeLists[4] = {
    "bcast W0 (root) | F(W0) | xnode send W0->d2 | xnode recv W1<-d2 | bcast W1 (root) | F(W1) | "
    "recv bcast W2 | F(W2) | recv bcast W3 | F(W3) | head | B(W3) | recv bcast W2 | B(W2) | "
    "xnode recv W1<-d2 | bcast W1 (root) | reduce grad W3 (root) | xnode send grad W3->d3 | "
    "B(W1) | bcast W0 (root) | reduce grad W2 (to d1) | B(W0) | xnode send W0->d2 | "
    "reduce grad W1 (root) | xnode send grad W1->d2 | reduce grad W0 (root) | "
    "xnode recv grad W0<-d2 | embed bwd | all-reduce | AdamW(W0)",
    "recv bcast W0 | F(W0) | recv bcast W1 | F(W1) | bcast W2 (root) | F(W2) | "
    "xnode send W2->d3 | xnode recv W3<-d3 | bcast W3 (root) | F(W3) | head | B(W3) | "
    "bcast W2 (root) | xnode send W2->d3 | B(W2) | recv bcast W1 | reduce grad W3 (to d0) | "
    "B(W1) | recv bcast W0 | reduce grad W2 (root) | B(W0) | reduce grad W1 (to d0) | "
    "xnode recv grad W2<-d2 | reduce grad W0 (to d0) | embed bwd | all-reduce | AdamW(W2)",
    "xnode recv W0<-d0 | xnode send W1->d0 | bcast W0 (root) | F(W0) | bcast W1 (root) | F(W1) | "
    "recv bcast W2 | F(W2) | recv bcast W3 | F(W3) | head | xnode send W1->d0 | recv bcast W2 | "
    "B(W3) | bcast W1 (root) | B(W2) | reduce grad W3 (to d3) | xnode recv W0<-d0 | "
    "bcast W0 (root) | B(W1) | reduce grad W2 (root) | xnode send grad W2->d1 | "
    "xnode recv grad W1<-d0 | B(W0) | reduce grad W1 (root) | reduce grad W0 (root) | "
    "xnode send grad W0->d0 | embed bwd | all-reduce | AdamW(W1)",
    "recv bcast W0 | F(W0) | recv bcast W1 | F(W1) | xnode recv W2<-d1 | xnode send W3->d1 | "
    "bcast W2 (root) | F(W2) | bcast W3 (root) | F(W3) | head | xnode recv W2<-d1 | "
    "bcast W2 (root) | B(W3) | xnode recv grad W3<-d0 | recv bcast W1 | B(W2) | "
    "reduce grad W3 (root) | recv bcast W0 | B(W1) | reduce grad W2 (to d2) | B(W0) | "
    "reduce grad W1 (to d2) | reduce grad W0 (to d2) | embed bwd | all-reduce | AdamW(W3)",
};

TEST(WorkedExample, TawpipeMatchesSection27) {
  const ScheduleInput in = testing::small_input(2, 2, 4, 1);
  const ir::Program p = testing::must_generate("tawpipe", in);
  ASSERT_TRUE(ir::verify(p).ok);
  for (ir::Rank r = 0; r < 4; ++r) {
    std::vector<std::string> got;
    for (std::size_t i = 0; i < p.ranks[static_cast<std::size_t>(r)].ops.size(); ++i) {
      std::string t = tawpipe_token(p, r, i);
      if (!t.empty()) got.push_back(t);
    }
    const std::vector<std::string> want = split(kTawpipeLists[r]);
    // The document interleaves the three streams of a device in its own reading order; the
    // program order that matters is per stream (compute, weights, grads).
    for (char cls : {'c', 'w', 'g'}) {
      EXPECT_EQ(only(got, cls), only(want, cls)) << "d" << r << " stream class " << cls;
    }
    // d0's list is also the program's exact issue order across streams.
    if (r == 0) {
      EXPECT_EQ(got, want);
    }
  }
}

// §3.3's table for N = 2: every rank issues the same compute sequence, r turns after rank 0. W<k>
// is the shard stored on rank k (logical shard l lives on rank (P - l) mod P).
TEST(WorkedExample, WeipipeMatchesSection33) {
  const ScheduleInput in = testing::small_input(2, 2, 4, 2);
  const ir::Program p = testing::must_generate("weipipe", in);
  ASSERT_TRUE(ir::verify(p).ok);
  const std::string want =
      "F(0,W0) F(0,W3) F(0,W2) F(0,W1) loss B(0,W1) F(1,W0) B(0,W2) F(1,W3) B(0,W3) F(1,W2) "
      "B(0,W0) F(1,W1) loss B(1,W1) B(1,W2) B(1,W3) B(1,W0) ";
  const auto stored_on = [](int logical) { return "W" + std::to_string((4 - logical) % 4); };
  for (ir::Rank r = 0; r < 4; ++r) {
    std::ostringstream got;
    for (const ir::Op& op : p.ranks[static_cast<std::size_t>(r)].ops) {
      if (op.kind != ir::OpKind::compute) continue;
      const int m = op.sample % 2;
      if (op.compute == ir::ComputeKind::forward)
        got << "F(" << m << "," << stored_on(op.layer_begin) << ") ";
      if (op.compute == ir::ComputeKind::backward)
        got << "B(" << m << "," << stored_on(op.layer_begin) << ") ";
      if (op.compute == ir::ComputeKind::head) got << "loss ";
    }
    EXPECT_EQ(got.str(), want) << "r" << r;
  }
  // Turn structure: the ring stream of rank r has one NCCL group per turn in which it moves
  // anything; in the steady state (turns 5..8 of rank 0) each group carries three shards out
  // (forward weights, backward weights, gradient sum) unless a weight stream is re-injected by
  // its owner (§3.3: "every P-th turn the rank instead reloads its own shard").
  for (ir::Rank r = 0; r < 4; ++r) {
    std::map<std::int32_t, int> sends_per_group;
    for (const ir::Op& op : p.ranks[static_cast<std::size_t>(r)].ops)
      if (op.kind == ir::OpKind::send) ++sends_per_group[op.group];
    for (const auto& [group, n] : sends_per_group)
      EXPECT_LE(n, 3) << "r" << r << " group " << group;
  }
}

}  // namespace
}  // namespace tawpipe::schedules
