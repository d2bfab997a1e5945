// Acceptance tests of NCCL's data movement (sim/network/nccl_tuning.h), expected times derived
// by hand from NCCL's published constants (NVIDIA/nccl src/graph/tuning.cc, src/enqueue.cc,
// src/graph/paths.cc, src/graph/topo.h at commit b6475625):
//   baseLat (us)  Ring {LL 6.6, LL128 14.0, Simple 8.4}, Tree {6.8, 14.0, 0}
//   hwLat (us)    NVLink Ring {0.6, 1.9, 3.4}, Tree {0.6, 1.25, 28}; NET Ring {2.7, 4.0, 14.0},
//                 Tree {5.0, 8.5, 28}
//   factors       Ring LL x 1/4 (capped at llMaxBw, Ampere 1 node 87.7 GB/s), LL128 x 0.92
//                 (capped at 20 GB/s per channel), Tree x 0.92 (capped at perChMaxTreeBw:
//                 Ampere 23.6 GB/s on 2 nodes, 17.8 on > 2), algbw = busbw x ranks / nsteps
//                 (ring) or x 1/2 (tree); multi-node Simple ring all-reduce latency x 1.4.
//   channels      NVLink: 2 per link (12 NVLink3 links -> 24), SM copies 20 GB/s per link;
//                 across nodes 2 per NIC; enqueue.cc drops channels while
//                 bytes < channels x 512 threads x 64 B (Simple) / 8 B x ranks (ring LL).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "common/topology/loader.h"
#include "sim/collectives_table.h"
#include "sim/network/nccl_tuning.h"
#include "sim/simulator.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

CollectiveRow row_of(const topo::Topology& t, const std::string& op, std::uint64_t bytes,
                     std::int32_t ranks = 0, AllReduceAlgo algo = AllReduceAlgo::automatic) {
  CollectiveTableRequest req;
  req.op = op;
  req.min_bytes = req.max_bytes = bytes;
  req.ranks = ranks;
  req.all_reduce_algo = algo;
  auto rows = collectives_table(t, req);
  EXPECT_TRUE(rows.ok()) << (rows.ok() ? "" : rows.error().to_string());
  return rows->front();
}

// N nodes x 2 A100 on NVSwitch, one HDR NIC per node under the GPUs' PCIe switch: the smallest
// cluster where NCCL's tree differs from its ring. NIC effective rate C = 25 GB/s x 0.96 =
// 24 GB/s; GPU->NIC over PCIe 32 GB/s x 0.8 = 25.6 GB/s; inter-node route latency 2 us (two NIC
// hops), under the 2.5 us of an InfiniBand path, so NCCL's NET step latency applies as is.
topo::Topology two_gpu_nodes(int nodes) {
  const std::string yaml = R"(name: tree-test
description: "N nodes x 2 A100 on NVSwitch, one HDR NIC per node"
device_kinds:
  a100-sxm4-80gb:
    peak_flops: {bf16: 312TFLOP/s, fp16: 312TFLOP/s, tf32: 156TFLOP/s, fp32: 19.5TFLOP/s}
    memory: 80GiB
    memory_bandwidth: 2039GB/s
    efficiency: {gemm: 0.86, attention_fwd: 0.73, attention_bwd: 0.63, elementwise: 0.7, memory: 0.8}
    launch_overhead: 5us
links:
  nvswitch: {latency: 500ns, efficiency: 0.91}
  pcie: {latency: 1us, efficiency: 0.80}
  cpu_link: {latency: 1us, efficiency: 0.70}
  nic: {latency: 1us, efficiency: 0.96}
  network: {latency: 500ns, efficiency: 1.0}
node_templates:
  t:
    device: a100-sxm4-80gb
    gpus: 2
    fabric: nvswitch
    nvswitch: {bandwidth: 300GB/s}
    pcie:
      bandwidth: 32GB/s
      switches:
        - {id: sw0, socket: 0, gpus: [0, 1]}
    nics:
      - {id: mlx5_0, pcie_switch: sw0}
nodes: )" + std::to_string(nodes) +
                           R"(
template: t
inter_node:
  nic: {bandwidth: 200Gb/s}
  network: {topology: single_switch}
)";
  auto t = topo::load_topology_string(yaml, "tree-test.yaml");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().to_string());
  return std::move(*t);
}

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;

// Ring all-reduce on 8 A100 (dgx-a100): 24 channels, bus bandwidth before protocol factors
// B = min(links alone 300 x 0.91 = 273, 12 links x 20) = 240 GB/s; nsteps = 14, algbw = bus x
// 8/14. Per protocol at 24 channels: LL bus min(87.7, 240/4) = 60 GB/s, latency 6.6 + 14 x 0.6
// = 15.0 us; LL128 bus min(240 x 0.92, 24 x 20) = 220.8 GB/s, latency 14 + 14 x 1.9 = 40.6 us;
// Simple bus 240 GB/s, latency 8.4 + 14 x 3.4 = 56.0 us.
TEST(Nccl, RingAllReduceEightA100At1MiB) {
  // 1 MiB: LL keeps 24 channels (1 MiB >= 24 x 512 x 8 x 8 B = 768 KiB).
  //   LL 15.0 + 1 MiB x 14/8 / 60 GB/s = 15.0 + 30.58 = 45.58 us
  //   LL128 40.6 + 8.31 = 48.91 us; Simple 56.0 + 7.65 = 63.65 us -> LL.
  const CollectiveRow r = row_of(testing::shipped("dgx-a100"), "all_reduce", 1u << 20);
  EXPECT_EQ(r.proto, nccl::Proto::ll);
  EXPECT_EQ(r.channels, 24);
  EXPECT_NEAR(r.time.seconds(), 15.0e-6 + kMiB * 14.0 / 8.0 / 60e9, 2e-12);
}

TEST(Nccl, RingAllReduceEightA100At64MiB) {
  // 64 MiB: LL 15.0 + 1957.4 us; LL128 40.6 + 531.9 = 572.5 us; Simple 56.0 + 489.3 =
  // 545.3 us -> Simple; algbw 123 GB/s, bus bandwidth 215 GB/s: still ramping (the peak is 240).
  const CollectiveRow r = row_of(testing::shipped("dgx-a100"), "all_reduce", 64ull << 20);
  EXPECT_EQ(r.proto, nccl::Proto::simple);
  EXPECT_EQ(r.channels, 24);
  EXPECT_NEAR(r.time.seconds(), 56.0e-6 + 64 * kMiB * 14.0 / 8.0 / 240e9, 2e-12);
  EXPECT_LT(r.busbw_gb_per_s, 0.9 * 240.0);
}

TEST(Nccl, RingAllReduceEightA100At4GiB) {
  // 4 GiB: Simple 56 + 31317 us; bus bandwidth 239.6 GB/s, 99.8 % of 240.
  const CollectiveRow r = row_of(testing::shipped("dgx-a100"), "all_reduce", 4ull << 30);
  EXPECT_EQ(r.proto, nccl::Proto::simple);
  EXPECT_NEAR(r.time.seconds(), 56.0e-6 + 4 * kGiB * 14.0 / 8.0 / 240e9, 2e-12);
  EXPECT_NEAR(r.busbw_gb_per_s, 239.6, 0.1);
}

// A P2P transfer, NCCL 2.28.9 rules (src/graph/paths.cc, src/enqueue.cc `addP2pToPlan`):
// sendrecv on 8 A100 of one node: p2pnChannels = pow2Up(24) = 32; per peer pow2Up(2 x 12 links)
// = 32; an operation starts from 32 halved while x 8 ranks > 32 -> 4; P2P chunk 512 KiB
// (all NVLink, one node): minPart 64 KiB, maxPart 32 x 512 KiB = 16 MiB; channels double while a
// channel's part exceeds 16 MiB. A P2P channel moves 9 GB/s (NVIDIA/nccl-tests issue 331:
// 72 GB/s over 8 channels), all of them at most the SM copies' 12 x 20 GB/s. Latency: route
// 2 x 500 ns + one Simple step 3.4 us.
//   1 MiB:   4 channels (part 256 KiB), 36 GB/s:  t = 4.4 us + 1 MiB / 36 GB/s = 33.53 us
//   64 MiB:  4 channels (part 16 MiB, not above), t = 4.4 us + 64 MiB / 36 GB/s = 1868.5 us
//   128 MiB: 8 channels (32 MiB -> 16 MiB), 72 GB/s: t = 4.4 us + 128 MiB / 72 GB/s
//   512 MiB: 32 channels (128 -> 64 -> 32 -> 16 MiB), min(288, 240) = 240 GB/s
// A P2P op uses far fewer channels than a collective (24) until hundreds of MiB, and never
// more than the SM-driven rate: 240 GB/s, not the links' 273.
TEST(Nccl, SendRecvUsesFewerChannels) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const CollectiveRow small = row_of(t, "sendrecv", 1u << 20);
  EXPECT_EQ(small.channels, 4);
  EXPECT_NEAR(small.time.seconds(), 4.4e-6 + kMiB / 36e9, 2e-12);
  const CollectiveRow mid = row_of(t, "sendrecv", 64u << 20);
  EXPECT_EQ(mid.channels, 4);
  EXPECT_NEAR(mid.time.seconds(), 4.4e-6 + 64 * kMiB / 36e9, 2e-12);
  const CollectiveRow big = row_of(t, "sendrecv", 128u << 20);
  EXPECT_EQ(big.channels, 8);
  EXPECT_NEAR(big.time.seconds(), 4.4e-6 + 128 * kMiB / 72e9, 2e-12);
  const CollectiveRow r = row_of(t, "sendrecv", 512ull << 20);
  EXPECT_EQ(r.channels, 32);
  EXPECT_NEAR(r.time.seconds(), 4.4e-6 + 512 * kMiB / 240e9, 2e-12);
}

// The per-peer count is the smallest over every pair of the communicator (paths.cc
// `ncclTopoComputeP2pChannels`): one network peer caps NVLink peers too.
//   8 NVSwitch A100 alone:           p2pnChannels 32, pairs 24 -> pow2Up 32.
//   3 nodes x 8, one NIC per node:    collective channels 2 (one ring per NIC, doubled) ->
//     p2pnChannels 2; network pair: 2 halved while 2 x 24 > 4 x 2 -> 1, max(1 NIC, 1) = 1;
//     per peer min(pow2Up(min(2, 24, 1)), 2) = 1.
//   4 nodes x 8, 8 HDR rails:         collective channels 16 -> p2pnChannels 16; network pair:
//     2 x 32 > 4 x 16? no -> 2; per peer 2.
//   1024 ranks, p2pnChannels 32:      2 x 1024 > 128 -> 1 per network peer.
TEST(Nccl, P2pChannelsPerPeerTakeTheCommunicatorsSmallestPair) {
  EXPECT_EQ(nccl::p2p_channels_per_peer(32, 24), 32);
  EXPECT_EQ(nccl::net_peer_channels(24, 2, 1), 1);
  EXPECT_EQ(nccl::p2p_channels_per_peer(2, std::min(24, nccl::net_peer_channels(24, 2, 1))), 1);
  EXPECT_EQ(nccl::net_peer_channels(32, 16, 1), 2);
  EXPECT_EQ(nccl::p2p_channels_per_peer(16, std::min(24, nccl::net_peer_channels(32, 16, 1))), 2);
  EXPECT_EQ(nccl::net_peer_channels(1024, 32, 1), 1);
  EXPECT_EQ(nccl::net_peer_channels(1024, 32, 4), 4);  // four NICs needed by bandwidth
  // Per operation across nodes (chunk 128 KiB: minPart 64 KiB, maxPart 128 KiB): per peer 2 on
  // 32 ranks with p2pnChannels 16 starts from 2 halved while x 32 > 16 -> 1; 64 KiB stays on 1,
  // 1 MiB doubles to 2 (the per-peer cap).
  EXPECT_EQ(nccl::p2p_chunk_bytes(4, true), 128.0 * 1024);
  EXPECT_EQ(nccl::p2p_channels_for_size(64.0 * 1024, 32, 4, 2, 16, 128.0 * 1024), 1);
  EXPECT_EQ(nccl::p2p_channels_for_size(1.0 * kMiB, 32, 4, 2, 16, 128.0 * 1024), 2);
}

// On the paper's cluster (3 x 8 A100, one 100 GbE NIC per node, NCCL over sockets) a P2P of the
// 24-rank world communicator runs on ONE channel = one TCP connection of one socket, 2.5 GB/s
// (nccl_tuning.h SocketTransport); sendrecv's slowest pair crosses nodes: t(1 GiB) =
// latency + 1 GiB / 2.5 GB/s, algbw -> 2.5 GB/s.
TEST(Nccl, SendRecvOnTheWorldCommunicatorOfThePaperClusterUsesOneSocket) {
  const CollectiveRow r = row_of(testing::shipped("3x8-a100"), "sendrecv", 1ull << 30);
  EXPECT_EQ(r.channels, 1);
  EXPECT_NEAR(r.algbw_gb_per_s, 2.5, 0.01);
}

// The same cluster, a TWO-RANK communicator of GPU 0 (node 0) and GPU 8 (node 1): what
// PyTorch creates for a single dist.isend / dist.irecv (ProcessGroupNCCL::pointToPoint, "For
// single P2P, preserve the old two-rank behavior"), the TawPipe code's P2P. Collective channels 2
// (one ring per NIC, doubled) -> p2pnChannels 2; network pair: 2 x 2 > 4 x 2? no -> 2 per peer;
// 1 GiB starts from 2 halved while 2 x 2 ranks > 2 -> 1 and doubles (parts > 128 KiB) to 2. So
// 2 sockets, 2 x 2.5 = 5 GB/s (below the NIC's 0.54 x 12.5 = 6.75 GB/s). Time = route latency +
// one NET Simple step (14 us) + 1 GiB / 5 GB/s; the route's latency is well under 1 ms.
// The two halves of an exchange posted one after the other on that pair (no NCCL group) run
// in turn: twice the time; on the 24-rank world communicator a lone send takes one socket.
ir::Program cross_node_pair(const topo::Topology& t, bool exchange, std::int32_t comm_ranks) {
  ir::Header h = testing::header_for(t, comm_ranks);
  if (comm_ranks == 2) {
    h.placement[1] = 8;  // rank 1 on node 1
  } else {
    std::swap(h.placement[1], h.placement[8]);
  }
  ir::ProgramBuilder b(h, comm_ranks);
  std::vector<ir::Rank> members;
  for (ir::Rank r = 0; r < comm_ranks; ++r)
    members.push_back(r);
  const ir::CommId comm = b.communicator("pair", members);
  const Bytes gib = Bytes::gib(1);
  for (ir::Rank r = 0; r < 2; ++r) {
    const ir::BufferId s = b.buffer(r, "s", gib, ir::BufferRole::workspace, true);
    const ir::BufferId d = b.buffer(r, "d", gib, ir::BufferRole::workspace, true);
    if (r == 0) {
      b.send(r, 0, 1, comm, gib, s);
      if (exchange) b.recv(r, 0, 1, comm, gib, d);
    } else {
      b.recv(r, 0, 0, comm, gib, d);
      if (exchange) b.send(r, 0, 0, comm, gib, s);
    }
  }
  return std::move(b).finish();
}

TEST(Nccl, SendRecvOnATwoRankPairCommunicatorAcrossNodesUsesTwoSockets) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const double one = (1ull << 30) / 5e9;
  auto r = simulate(cross_node_pair(t, false, 2), t, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_GT(r->iteration_time.seconds(), one + 14e-6);
  EXPECT_LT(r->iteration_time.seconds(), one + 1e-3);
  auto x = simulate(cross_node_pair(t, true, 2), t, SimOptions{});
  ASSERT_TRUE(x.ok()) << x.error().to_string();
  EXPECT_GT(x->iteration_time.seconds(), 2 * one + 28e-6);
  EXPECT_LT(x->iteration_time.seconds(), 2 * one + 2e-3);
  auto w = simulate(cross_node_pair(t, false, 24), t, SimOptions{});
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  EXPECT_GT(w->iteration_time.seconds(), 2 * one + 14e-6);  // one socket: 1 GiB / 2.5 GB/s
  EXPECT_LT(w->iteration_time.seconds(), 2 * one + 1e-3);
}

// Tree on 2 nodes x 2 GPUs (4 ranks), 1 GiB. Channels: 2 per NIC. Tree 0 is node 0 <- node 1,
// tree 1 its mirror; each carries D = S/2 up and down. Node 0's NIC sends D down in tree 0 and D
// up in tree 1: 2 D = S per direction, so D moves at C / 2 = 12 GB/s, and the tree's bus
// bandwidth (algbw / (1/2), algbw = S / (D / 12 GB/s)) is 4 x 12 = 48 GB/s. NCCL: Simple tree
// bus min(48 x 0.92, 2 x 23.6) = 44.16 GB/s, algbw 22.08 GB/s; latency 2 ((2/2 - 1)... with
// ranks/node = 2: 2 (1 x 28 + log2(2) x 28) = 112 us. t = 112 us + S / 22.08 GB/s = 48.74 ms.
// The ring over 4 ranks: each NIC carries one edge of 2 (3/4) S = 1.5 S at 24 GB/s, algbw 16
// GB/s; latency (8.4 + (6 - 4) x max(3.4, 3 x 1) + 4 x 14) x 1.4 = 99.68 us: 67.21 ms. The tree
// wins: each NIC carries S instead of 1.5 S (the tree's real per-NIC traffic on 2 nodes), and
// its bus bandwidth (1.5 S / t = 33 GB/s) exceeds the NIC's 24 GB/s.
TEST(Nccl, TreeOnTwoNodes) {
  const topo::Topology t = two_gpu_nodes(2);
  const CollectiveRow tree = row_of(t, "all_reduce", 1ull << 30);
  EXPECT_EQ(tree.algo, AllReduceAlgo::tree);
  EXPECT_EQ(tree.proto, nccl::Proto::simple);
  EXPECT_EQ(tree.channels, 2);
  EXPECT_NEAR(tree.time.seconds(), 112e-6 + kGiB / 22.08e9, 1e-11);
  EXPECT_GT(tree.busbw_gb_per_s, 24.0 * 1.3);
  const CollectiveRow ring = row_of(t, "all_reduce", 1ull << 30, 0, AllReduceAlgo::ring);
  EXPECT_EQ(ring.algo, AllReduceAlgo::ring);
  EXPECT_NEAR(ring.time.seconds(), 99.68e-6 + 1.5 * kGiB / 24e9, 1e-11);
}

// Tree on 4 nodes x 2 GPUs (8 ranks), 1 GiB. Tree 0 over the nodes: 0 <- 2 <- {1, 3}; tree 1
// its mirror 3 <- 1 <- {2, 0}. Node 2's NIC sends 3 D in tree 0 (up to 0, down to 1 and 3) and
// D in tree 1 (a leaf): 4 D per direction = 2 S, more than the ring's 2 (7/8) S = 1.75 S. D
// moves at 24 / 4 = 6 GB/s; tree bus 4 x 6 = 24 GB/s; NCCL Simple tree bus min(24 x 0.92, 2 x
// 17.8) = 22.08 GB/s, algbw 11.04 GB/s, latency 2 (1 x 28 + log2(4) x 28) = 168 us:
// t_tree = 168 us + S / 11.04 GB/s = 97.43 ms. Ring: bus 24 GB/s, algbw 24 x 8/14 = 13.71
// GB/s, latency (8.4 + (14 - 8) x 3.4 + 8 x 14) x 1.4 = 197.12 us: t = 78.49 ms -> the tuner
// picks the ring from 4 nodes on for large messages.
TEST(Nccl, TreeOnFourNodes) {
  const topo::Topology t = two_gpu_nodes(4);
  const CollectiveRow tuned = row_of(t, "all_reduce", 1ull << 30);
  EXPECT_EQ(tuned.algo, AllReduceAlgo::ring);
  EXPECT_NEAR(tuned.time.seconds(), 197.12e-6 + 1.75 * kGiB / 24e9, 1e-11);
  const CollectiveRow tree = row_of(t, "all_reduce", 1ull << 30, 0, AllReduceAlgo::tree);
  EXPECT_EQ(tree.algo, AllReduceAlgo::tree);
  EXPECT_NEAR(tree.time.seconds(), 168e-6 + kGiB / 11.04e9, 1e-11);
}

// The tuner's pieces, against the same constants.
TEST(Nccl, TunerPieces) {
  EXPECT_EQ(nccl::nvlink_channels(12), 24);  // DGX A100: "Channel 00/24" (nccl-tests #100)
  EXPECT_EQ(nccl::nvlink_channels(18), 32);  // H100: capped at MAXCHANNELS
  // enqueue.cc: Simple keeps a channel per 512 threads x 64 B = 32 KiB.
  EXPECT_EQ(nccl::channels_for_size(16 * 1024, 24, nccl::Algo::ring, nccl::Proto::simple, 8), 1);
  EXPECT_EQ(nccl::channels_for_size(64 * 1024, 24, nccl::Algo::ring, nccl::Proto::simple, 8), 2);
  EXPECT_EQ(nccl::channels_for_size(96 * 1024, 24, nccl::Algo::ring, nccl::Proto::simple, 8), 3);
  EXPECT_EQ(nccl::channels_for_size(1 << 20, 24, nccl::Algo::ring, nccl::Proto::simple, 8), 24);
  nccl::ProtoSet set;
  EXPECT_TRUE(nccl::parse_protos("^LL", &set));
  EXPECT_FALSE(set.has(nccl::Proto::ll));
  EXPECT_TRUE(set.has(nccl::Proto::ll128));
  EXPECT_TRUE(nccl::parse_protos("simple", &set));
  EXPECT_EQ(set.bits, 0b100);
  EXPECT_FALSE(nccl::parse_protos("LL256", &set));
}

// NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS: forcing Simple on 4 channels at 64 MiB gives bus
// 240 x 4/24 = 40 GB/s, time 56 us + 64 MiB x 14/8 / 40 GB/s.
TEST(Nccl, ProtocolAndChannelOverrides) {
  CollectiveTableRequest req;
  req.op = "all_reduce";
  req.min_bytes = req.max_bytes = 64ull << 20;
  ASSERT_TRUE(nccl::parse_protos("Simple", &req.nccl.tuner.protos));
  req.nccl.tuner.min_channels = req.nccl.tuner.max_channels = 4;
  auto rows = collectives_table(testing::shipped("dgx-a100"), req);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->front().proto, nccl::Proto::simple);
  EXPECT_EQ(rows->front().channels, 4);
  EXPECT_NEAR(rows->front().time.seconds(), 56e-6 + 64 * kMiB * 14.0 / 8.0 / 40e9, 2e-12);
}

// A profile's communication curve replaces the model inside its size range: 8 MiB between the
// measured 1 MiB (31 us) and 64 MiB (3181 us), linearly in size: t = 31 + 3150 x 7 / 63 = 381 us.
// Outside (1 GiB) the model applies: 56 us + 1 GiB x 14/8 / 240 GB/s.
TEST(Nccl, ProfileCommunicationReplacesModel) {
  profile::Profile prof;
  profile::CommMeasurement m;
  m.op = profile::CommOp::all_reduce;
  m.scope = profile::CommScope::intra_node;
  m.ranks = 8;
  m.points = {{Bytes(1u << 20), SimTime::us(31)}, {Bytes(64u << 20), SimTime::us(3181)}};
  prof.communication.push_back(m);
  const topo::Topology t = testing::shipped("dgx-a100");
  CollectiveTableRequest req;
  req.op = "all_reduce";
  req.min_bytes = req.max_bytes = 8u << 20;
  auto rows = collectives_table(t, req, &prof);
  ASSERT_TRUE(rows.ok());
  EXPECT_NEAR(rows->front().time.seconds(), 381e-6, 1e-10);
  const CollectiveRow model = row_of(t, "all_reduce", 8u << 20);
  EXPECT_LT(model.time.seconds(), 150e-6);
  req.min_bytes = req.max_bytes = 1ull << 30;
  rows = collectives_table(t, req, &prof);
  ASSERT_TRUE(rows.ok());
  EXPECT_NEAR(rows->front().time.seconds(), 56e-6 + kGiB * 14.0 / 8.0 / 240e9, 2e-12);
  // Another rank count has no curve: the model.
  req.min_bytes = req.max_bytes = 8u << 20;
  req.ranks = 4;
  rows = collectives_table(t, req, &prof);
  ASSERT_TRUE(rows.ok());
  EXPECT_LT(rows->front().time.seconds(), 150e-6);
  // A measured sendrecv curve replaces the P2P model the same way.
  profile::CommMeasurement sr = m;
  sr.op = profile::CommOp::sendrecv;
  prof.communication = {sr};
  req.op = "sendrecv";
  req.ranks = 8;
  rows = collectives_table(t, req, &prof);
  ASSERT_TRUE(rows.ok());
  EXPECT_NEAR(rows->front().time.seconds(), 381e-6, 1e-10);
}

}  // namespace
}  // namespace tawpipe::sim
