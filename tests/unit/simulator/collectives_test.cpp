// Analytical tests of the collective algorithms (sim/network/collectives.h) through the
// collectives table (sim/collectives_table.h). dgx-a100: 8 GPUs on NVSwitch, every GPU-GPU route
// is two links of C = 300 GB/s x 0.91 with 500 ns each. NCCL's constants are those of
// sim/network/nccl_tuning.h (tuning.cc, enqueue.cc); the acceptance derivations (ring all-reduce
// at 1 MiB, 64 MiB, 4 GiB; trees on 2 and 4 nodes) are in nccl_test.cpp.
#include <gtest/gtest.h>

#include "sim/collectives_table.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

CollectiveRow one_row(const topo::Topology& t, const std::string& op, std::uint64_t bytes,
                      std::int32_t ranks = 0, AllReduceAlgo algo = AllReduceAlgo::automatic) {
  CollectiveTableRequest req;
  req.op = op;
  req.min_bytes = bytes;
  req.max_bytes = bytes;
  req.ranks = ranks;
  req.all_reduce_algo = algo;
  auto rows = collectives_table(t, req);
  EXPECT_TRUE(rows.ok()) << (rows.ok() ? "" : rows.error().to_string());
  EXPECT_EQ(rows->size(), 1u);
  return rows->front();
}

// Ring all-gather on 8 GPUs, 1 GiB: 12 NVLink3 links per GPU (300 / 25 GB/s) -> 24 channels,
// at most 12 x 20 GB/s = 240 GB/s of SM-driven copies (below the links' C); Simple wins at this
// size: latency 8.4 + 7 x 3.4 us, every edge carries 7/8 S at 240 GB/s.
TEST(Collectives, RingAllGatherOnNvswitchNode) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const double s = static_cast<double>(1ull << 30);
  const CollectiveRow row = one_row(t, "all_gather", 1ull << 30);
  EXPECT_EQ(row.proto, nccl::Proto::simple);
  EXPECT_EQ(row.channels, 24);
  EXPECT_NEAR(row.time.seconds(), (8.4 + 7 * 3.4) * 1e-6 + 7.0 / 8.0 * s / 240e9, 2e-12);
  EXPECT_NEAR(row.algbw_gb_per_s, s / row.time.seconds() / 1e9, 1e-9);
}

// Broadcast, 64 MiB: a chain of 7 edges. LL128 wins (latency 14 + 8 x 1.9 us = 29.2 us, bus
// min(240 x 0.92, 24 x 20) = 220.8 GB/s) over Simple (8.4 + 8 x 28 us of chunk latency, 240
// GB/s) and LL (11.4 us, min(87.7, 240 / 3) = 80 GB/s): t = 29.2 us + S / 220.8 GB/s.
TEST(Collectives, BroadcastChain) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const double s = 64.0 * (1 << 20);
  const CollectiveRow row = one_row(t, "broadcast", 64ull << 20);
  EXPECT_EQ(row.proto, nccl::Proto::ll128);
  EXPECT_NEAR(row.time.seconds(), 29.2e-6 + s / 220.8e9, 2e-12);
}

// Latency dominates tiny messages: an 8-byte all-gather runs LL on one channel, 6.6 + 7 x 0.6 us.
TEST(Collectives, TinyMessagesAreLatencyBound) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const CollectiveRow row = one_row(t, "all_gather", 8);
  EXPECT_EQ(row.proto, nccl::Proto::ll);
  EXPECT_EQ(row.channels, 1);
  EXPECT_NEAR(row.time.seconds(), 10.8e-6, 1e-8);
}

// sendrecv, 16 MiB, 8 ranks (NCCL 2.28.9): P2P channels per peer 2 x 12 -> 32 (p2pnChannels
// 32); an operation starts from 4 (4 x 8 <= 32) and doubles only while a channel's part exceeds
// 32 x 512 KiB = 16 MiB: 16 MiB / 4 = 4 MiB stays on 4. 4 x 9 GB/s = 36 GB/s; latency route
// 1 us + one Simple step 3.4 us.
TEST(Collectives, SendRecvRing) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const double s = 16.0 * (1 << 20);
  const CollectiveRow row = one_row(t, "sendrecv", 16ull << 20);
  EXPECT_EQ(row.channels, 4);
  EXPECT_NEAR(row.time.seconds(), 4.4e-6 + s / 36e9, 2e-12);
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

TEST(Collectives, AllReduceAlgoNames) {
  AllReduceAlgo a = AllReduceAlgo::automatic;
  EXPECT_TRUE(all_reduce_algo_from_name("Tree", &a));
  EXPECT_EQ(a, AllReduceAlgo::tree);
  EXPECT_TRUE(all_reduce_algo_from_name("ring", &a));
  EXPECT_EQ(a, AllReduceAlgo::ring);
  EXPECT_TRUE(all_reduce_algo_from_name("auto", &a));
  EXPECT_EQ(a, AllReduceAlgo::automatic);
  EXPECT_FALSE(all_reduce_algo_from_name("collnet", &a));
  EXPECT_STREQ(name(AllReduceAlgo::tree), "tree");
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
  EXPECT_NE(text.find("#       size         count      type   redop    root     time   algbw   "
                      "busbw   proto  nch  algo\n"),
            std::string::npos);
  EXPECT_NE(text.find("        1024           256     float     sum      -1"), std::string::npos);
  EXPECT_NE(text.find("      LL    1  ring\n"), std::string::npos);
  EXPECT_FALSE(parse_size_range("16G:8").ok());
  EXPECT_FALSE(parse_size_range("abc").ok());
  req->op = "allgather";
  auto bad = collectives_table(t, *req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("did you mean"), std::string::npos);
}

}  // namespace
}  // namespace tawpipe::sim
