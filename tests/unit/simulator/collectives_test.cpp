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

// Sum of the one-way latencies along the route from GPU a to GPU b.
double route_latency(const topo::Topology& t, topo::GpuId a, topo::GpuId b) {
  double s = 0.0;
  for (const topo::LinkId l : t.route(a, b))
    s += t.links()[static_cast<std::size_t>(l)].latency.seconds();
  return s;
}

// Tree all-reduce on 2 nodes of the paper cluster (16 ranks, one 10 GbE NIC per node, NIC
// effective bandwidth C = 1.25 GB/s x 0.85; one channel). Each node is a chain of m = 8 GPUs
// headed by GPU 0; the double binary tree over 2 nodes is node 0 -> node 1 (tree 0) and its
// mirror node 1 -> node 0 (tree 1), depth d = 1. Each tree carries D = S/2. Node 0's NIC sends
// tree 0's broadcast down and tree 1's reduction up: coefficient 2, the bottleneck (NVSwitch
// edges: at most 4 x D per 273 GB/s GPU port; PCIe: 2 x D per 25.6 GB/s): rate C/2.
// Latency 2 (7 h_i + h_n) with h_i = 1 us (two NVSwitch hops of 500 ns) and h_n the GPU 0 ->
// GPU 8 route latency, plus one chunk c = min(D, 512 KiB) along the longest path:
// 2 c (7 / C_nvswitch + 1 / C). S = 1 MiB: D = c = 512 KiB:
//   t = 2 (7 us + h_n) + 2 c (7 / C_nvswitch + 1 / C) + S / C.
TEST(Collectives, TreeAllReduceOnTwoNodes) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const double c = 1.25e9 * 0.85;
  const double hn = route_latency(t, 0, 8);
  const double s = 1 << 20;
  const double chunk = 512.0 * 1024;
  const CollectiveRow row = one_row(t, "all_reduce", 1 << 20, 16, AllReduceAlgo::tree);
  EXPECT_EQ(row.algo, AllReduceAlgo::tree);
  EXPECT_NEAR(row.time.seconds(), 2 * (7 * kH + hn) + 2 * chunk * (7 / kC + 1 / c) + s / c, 3e-12);
  // The ring for comparison: 16 ranks, one ring; its inter-node edges run exit member ->
  // entry member (h_i) -> next node's entry member (h_n): h = h_i + h_n, 30 steps, and each
  // NIC direction carries one edge of 2 (15/16) S: t = 30 (h_i + h_n) + (15/8) S / C.
  const CollectiveRow ring = one_row(t, "all_reduce", 1 << 20, 16, AllReduceAlgo::ring);
  EXPECT_EQ(ring.algo, AllReduceAlgo::ring);
  EXPECT_NEAR(ring.time.seconds(), 30 * (kH + hn) + 15.0 / 8.0 * s / c, 2e-12);
  // NCCL's tuner (automatic) picks the faster one: the tree.
  const CollectiveRow tuned = one_row(t, "all_reduce", 1 << 20, 16);
  EXPECT_EQ(tuned.algo, AllReduceAlgo::tree);
  EXPECT_EQ(tuned.time, row.time);
  // Large messages on 2 nodes: the tree sends S per NIC direction, the ring (15/8) S, so the
  // tree stays ahead (NVIDIA/nccl issue 946: on two nodes the tree goes up to ~2x the network
  // speed) and its bus bandwidth exceeds the NIC's: 2 (15/16) S / (S / C) = 1.875 C.
  const CollectiveRow big = one_row(t, "all_reduce", 1ull << 30, 16);
  EXPECT_EQ(big.algo, AllReduceAlgo::tree);
  EXPECT_GT(big.busbw_gb_per_s, 1.8 * c / 1e9);
}

// Four nodes of H100s with 8 NDR rails: 8 channels; tree 0 over the nodes is 0 <- 2 <- {1, 3},
// its mirror 3 <- 1 <- {0, 2}. Node 2's rail-r NIC sends 3 D in tree 0 (up to 0, down to 1 and
// 3) and D in tree 1 (a leaf): 4 D = 2 S / 8 per direction, against the ring's 2 (31/32) S / 8:
// the ring wins large messages (and has no pipeline fill), while small messages pay the
// latency: 62 steps for the ring, 2 (7 + 2) edges for the tree.
TEST(Collectives, TunerPicksTreeForSmallAndRingForLargeOnFourNodes) {
  const topo::Topology t = testing::shipped("4x8-h100-ndr");
  for (const std::uint64_t small : {8ull, 64ull << 10}) {
    const CollectiveRow tuned = one_row(t, "all_reduce", small, 32);
    const CollectiveRow ring = one_row(t, "all_reduce", small, 32, AllReduceAlgo::ring);
    EXPECT_EQ(tuned.algo, AllReduceAlgo::tree) << small;
    EXPECT_LT(tuned.time, ring.time) << small;
  }
  const CollectiveRow tuned = one_row(t, "all_reduce", 4ull << 30, 32);
  const CollectiveRow tree = one_row(t, "all_reduce", 4ull << 30, 32, AllReduceAlgo::tree);
  EXPECT_EQ(tuned.algo, AllReduceAlgo::ring);
  EXPECT_LT(tuned.time, tree.time);
  // The tree's bandwidth term: 4 D per NIC at rate C_nic: t -> 2 S / (8 C_nic), i.e. a bus
  // bandwidth of 2 (31/32) S / t -> (31/32) 8 C_nic: within 5 % of the ring's 8 C_nic.
  EXPECT_NEAR(tree.busbw_gb_per_s, tuned.busbw_gb_per_s, 0.05 * tuned.busbw_gb_per_s);
}

// On one node the tuner keeps the ring (NCCL's tree is a chain there); forcing the tree runs the
// chain: 8 GPUs, 7 edges up and down, no inter-node part; D = S/2 per tree; a middle GPU's port
// sends up and down in both trees: 4 D at C_nvswitch. Latency 2 x 7 h plus one 512 KiB chunk
// over the 14 edges: t = 14 h + 14 x 512 KiB / C + 4 D / C.
TEST(Collectives, OneNodeAllReduceStaysRing) {
  const topo::Topology t = testing::shipped("dgx-a100");
  EXPECT_EQ(one_row(t, "all_reduce", 8).algo, AllReduceAlgo::ring);
  EXPECT_EQ(one_row(t, "all_reduce", 1ull << 30).algo, AllReduceAlgo::ring);
  const double s = 64 << 20;
  const CollectiveRow chain = one_row(t, "all_reduce", 64 << 20, 0, AllReduceAlgo::tree);
  EXPECT_EQ(chain.algo, AllReduceAlgo::tree);
  EXPECT_NEAR(chain.time.seconds(), 14 * kH + 14 * 512.0 * 1024 / kC + 4 * (s / 2) / kC, 3e-12);
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
                      "busbw  algo\n"),
            std::string::npos);
  EXPECT_NE(text.find("        1024           256     float     sum      -1"), std::string::npos);
  EXPECT_NE(text.find("  ring\n"), std::string::npos);
  EXPECT_FALSE(parse_size_range("16G:8").ok());
  EXPECT_FALSE(parse_size_range("abc").ok());
  req->op = "allgather";
  auto bad = collectives_table(t, *req);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("did you mean"), std::string::npos);
}

}  // namespace
}  // namespace tawpipe::sim
