// Analytical tests of the collective algorithms (sim/network/collectives.h) through the
// collectives table (sim/collectives_table.h). dgx-a100: 8 GPUs on NVSwitch, every GPU-GPU route
// is two links of C = 300 GB/s x 0.91 with 500 ns each, so the ring hop latency h = 1 us.
#include <gtest/gtest.h>

#include "sim/collectives_table.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

constexpr double kC = 300e9 * 0.91;
constexpr double kH = 1e-6;

CollectiveRow one_row(const topo::Topology& t, const std::string& op, std::uint64_t bytes,
                      std::int32_t ranks = 0) {
  CollectiveTableRequest req;
  req.op = op;
  req.min_bytes = bytes;
  req.max_bytes = bytes;
  req.ranks = ranks;
  auto rows = collectives_table(t, req);
  EXPECT_TRUE(rows.ok()) << (rows.ok() ? "" : rows.error().to_string());
  EXPECT_EQ(rows->size(), 1u);
  return rows->front();
}

// Ring all-gather on 8 GPUs: every GPU's uplink and downlink carry one ring edge, so the ring
// runs at C; each edge carries 7/8 S; 7 steps of latency h: t = 7h + (7/8) S / C, and the bus
// bandwidth (7/8) S / t tends to C for large S.
TEST(Collectives, RingAllGatherOnNvswitchNode) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const double s = static_cast<double>(1ull << 30);
  const CollectiveRow row = one_row(t, "all_gather", 1ull << 30);
  EXPECT_NEAR(row.time.seconds(), 7 * kH + 7.0 / 8.0 * s / kC, 2e-12);
  EXPECT_NEAR(row.busbw_gb_per_s, kC / 1e9, 0.01 * kC / 1e9);
  EXPECT_NEAR(row.algbw_gb_per_s, s / row.time.seconds() / 1e9, 1e-9);
}

// Ring all-reduce = reduce-scatter + all-gather: t = 14h + 2 (7/8) S / C.
TEST(Collectives, RingAllReduceOnNvswitchNode) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const double s = 256.0 * (1 << 20);
  const CollectiveRow row = one_row(t, "all_reduce", 256ull << 20);
  EXPECT_NEAR(row.time.seconds(), 14 * kH + 2 * 7.0 / 8.0 * s / kC, 2e-12);
  EXPECT_NEAR(row.busbw_gb_per_s, 2 * 7.0 / 8.0 * s / row.time.seconds() / 1e9, 1e-9);
}

// Broadcast as a pipelined chain of 7 edges, each on its own links: the chain runs at C and
// moves S plus the pipeline fill 6 x 512 KiB; latency 7h: t = 7h + (S + 6 * 512 KiB) / C.
TEST(Collectives, BroadcastChain) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const double s = 64.0 * (1 << 20);
  const CollectiveRow row = one_row(t, "broadcast", 64ull << 20);
  EXPECT_NEAR(row.time.seconds(), 7 * kH + (s + 6 * 512.0 * 1024) / kC, 2e-12);
  // Small messages: the chunk is the message itself: t = 7h + 7 S / C.
  const CollectiveRow tiny = one_row(t, "broadcast", 1024);
  EXPECT_NEAR(tiny.time.seconds(), 7 * kH + 7 * 1024.0 / kC, 2e-12);
}

// Latency dominates tiny messages: an 8-byte all-gather costs 7h (plus 7/8 * 8 B / C).
TEST(Collectives, TinyMessagesAreLatencyBound) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const CollectiveRow row = one_row(t, "all_gather", 8);
  EXPECT_NEAR(row.time.seconds(), 7 * kH, 1e-10);
}

// sendrecv: every rank sends S to the next: disjoint links, t = h + S / C, busbw = algbw.
TEST(Collectives, SendRecvRing) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const double s = 16.0 * (1 << 20);
  const CollectiveRow row = one_row(t, "sendrecv", 16ull << 20);
  EXPECT_NEAR(row.time.seconds(), kH + s / kC, 2e-12);
  EXPECT_DOUBLE_EQ(row.busbw_gb_per_s, row.algbw_gb_per_s);
}

// Across nodes NCCL runs one ring per rail; each NIC carries one ring per direction, so the
// all-gather bus bandwidth of large messages approaches (rails) x (NIC effective bandwidth).
TEST(Collectives, MultiNodeAllGatherUsesEveryRail) {
  const topo::Topology t = testing::shipped("4x8-h100-ndr");
  double nic = 0.0;
  for (const topo::Link& l : t.links()) {
    if (l.cls == topo::LinkClass::nic) nic = l.effective_bandwidth().bytes_per_second();
  }
  ASSERT_GT(nic, 0.0);
  const int rails = static_cast<int>(t.nics_of_node(0).size());
  const CollectiveRow row = one_row(t, "all_gather", 8ull << 30);
  EXPECT_NEAR(row.busbw_gb_per_s, rails * nic / 1e9, 0.03 * rails * nic / 1e9);
}

// The paper cluster: one 10 GbE NIC per node paces a 24-GPU ring: busbw -> 1.25 GB/s x 0.85.
TEST(Collectives, PaperClusterIsNicBound) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const CollectiveRow row = one_row(t, "all_gather", 1ull << 30);
  EXPECT_NEAR(row.busbw_gb_per_s, 1.25 * 0.85, 0.01);
}

TEST(Collectives, TableShapeAndSizes) {
  const topo::Topology t = testing::shipped("dgx-a100");
  auto req = parse_size_range("8:1K");
  ASSERT_TRUE(req.ok());
  req->op = "all_reduce";
  auto rows = collectives_table(t, *req);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 8u);  // 8, 16, ..., 1024
  EXPECT_EQ(rows->back().size_bytes, 1024u);
  EXPECT_EQ(rows->back().count, 256u);
  const std::string text = format_collectives_table(t, *req, *rows);
  EXPECT_NE(
      text.find("#       size         count      type   redop    root     time   algbw   busbw"),
      std::string::npos);
  EXPECT_NE(text.find("        1024           256     float     sum      -1"), std::string::npos);
  EXPECT_FALSE(parse_size_range("16G:8").ok());
  EXPECT_FALSE(parse_size_range("abc").ok());
  req->op = "allgather";
  auto bad = collectives_table(t, *req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("did you mean"), std::string::npos);
}

}  // namespace
}  // namespace tawpipe::sim
