// Analytical tests of the program executor with the compute, network and memory models, on
// hand-built IR programs (builder.h). Compute rates: A100 fp16 peak 312 TFLOP/s x GEMM
// efficiency 0.86 = R = 268.32 TFLOP/s, launch overhead 2 us (shipped topologies; hand-built
// costs carry no kernels, so the op-class model applies with one launch per op).
#include <optional>

#include <gtest/gtest.h>

#include "common/host_wait.h"

#include "sim/run/executor.h"
#include "sim/simulator.h"
#include "tests/unit/simulator/fixtures.h"

namespace tawpipe::sim {
namespace {

constexpr double kGemmRate = 312e12 * 0.86;
const SimTime kLaunch = SimTime::us(2);

SimTime gemm_time(double flops) {
  return SimTime::ps(testing::ceil_ps(flops / kGemmRate)) + kLaunch;
}

// The first op record of `rank` whose IR op is of `kind`.
report::OpRecord first_op(const ir::Program& p, const report::Report& r, ir::Rank rank,
                          ir::OpKind kind) {
  for (const report::OpRecord& rec : r.ops)
    if (rec.rank == rank &&
        p.ranks[static_cast<std::size_t>(rank)].ops[static_cast<std::size_t>(rec.op)].kind == kind)
      return rec;
  ADD_FAILURE() << "no such op";
  return report::OpRecord{};
}

// A host profile of 2 cores, one rank each, whose wait wake-ups cost `wakeup_cost`.
profile::Profile one_rank_per_core(SimTime wakeup_cost) {
  profile::Profile prof;
  prof.host = profile::HostProfile{};
  prof.host->cores_per_host = 2;
  prof.host->ranks_per_core = 1;
  prof.host->wakeup_cost = wakeup_cost;
  return prof;
}

// Two compute ops on one stream run back to back; a dependency across streams is honoured.
TEST(Executor, StreamFifoAndDependencies) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 1), 1);
  const ir::CostId c = b.cost(testing::gemm_cost(1e12));
  const ir::StreamId side = b.stream("side");
  const ir::OpIndex a = b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, c, {}, {});
  b.compute(0, 0, ir::ComputeKind::forward, 1, 2, 0, c, {}, {});
  const ir::OpIndex d[] = {a};
  b.compute(0, side, ir::ComputeKind::forward, 2, 3, 0, c, {}, {}, d);
  const ir::Program p = std::move(b).finish();
  auto r = simulate(p, t, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // Op 1 and op 2 both start when op 0 ends, in parallel: iteration = 2 x op time.
  EXPECT_EQ(r->iteration_time, gemm_time(1e12) * 2);
  // The compute stream is busy all along (both ops count as compute; overlap counted once).
  EXPECT_EQ(r->rank_stats[0].compute, gemm_time(1e12) * 2);
  EXPECT_EQ(r->rank_stats[0].idle, SimTime());
}

// Rank 0 computes a 1e13-FLOP shard while its prefetch stream receives the next 10 MB shard
// from rank 8 (another node); the next compute depends on the receive.
ir::Program tawpipe_slot_program(const topo::Topology& t) {
  ir::ProgramBuilder b(testing::header_for(t, 9), 9);
  const ir::StreamId prefetch = b.stream("prefetch");
  const ir::CommId pair = b.communicator("pair0-8", {0, 8});
  const ir::CostId c = b.cost(testing::gemm_cost(1e13));
  const Bytes shard(10'000'000);
  const ir::BufferId w0 = b.buffer(0, "w.k", shard, ir::BufferRole::weight_staging, true);
  const ir::BufferId w1 = b.buffer(0, "w.k1", shard, ir::BufferRole::weight_staging, true);
  const ir::BufferId own = b.buffer(8, "w.own", shard, ir::BufferRole::weights, true);
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, c, {w0}, {});
  const ir::OpIndex rcv = b.recv(0, prefetch, 8, pair, shard, w1);
  const ir::OpIndex deps[] = {rcv};
  b.compute(0, 0, ir::ComputeKind::forward, 1, 2, 0, c, {w1}, {}, deps);
  b.send(8, prefetch, 0, pair, shard, own);
  return std::move(b).finish();
}

// A TawPipe-style slot (algorithms.md §2.9): rank 0 computes shard k while its prefetch stream
// receives shard k+1 from rank 8 on another node; compute of k+1 depends on the receive. On
// 3x8-a100 the inter-node path is the 100 GbE NIC with NCCL's socket transport: a pair
// communicator opens 2 P2P channels to a network peer (10 MB > 4 x 128 KiB per channel), each one
// TCP connection of ~2.5 GB/s: 5 GB/s, under the line's 12.5 x 0.54. A 10 MB shard then takes
// ~2 ms + latency, less than the ~37 ms slot (1e13 FLOP at R), so the prefetch is hidden:
// iteration = 2 x slot time exactly and rank 0 has no exposed comm. (Contention of the P2P
// kernel with the compute is turned off here; ContentionFromChannels below prices it.)
TEST(Executor, TawPipeSlotPrefetchHiddenBehindCompute) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const ir::Program p = tawpipe_slot_program(t);
  SimOptions no_contention;
  no_contention.sm_contention = 0.0;
  auto r = simulate(p, t, no_contention);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->iteration_time, gemm_time(1e13) * 2);
  EXPECT_EQ(r->rank_stats[0].exposed_comm, SimTime());
  EXPECT_GT(r->rank_stats[0].comm_sum, SimTime::us(2000));
  EXPECT_LT(r->rank_stats[0].comm_sum, SimTime::us(2100));
  // The sender has nothing else to do: its whole transfer is exposed.
  EXPECT_EQ(r->rank_stats[8].exposed_comm, r->rank_stats[8].comm_sum);
  EXPECT_DOUBLE_EQ(r->rank_stats[8].inter_node_bytes_sent, 1e7);
  // Slow the network 100x (1 Gb/s x 0.54: the same shard now takes ~148 ms): the prefetch is
  // exposed.
  auto slow = topo::load_topology_file(topo::topology_dir() / "3x8-a100.yaml",
                                       {{"inter_node.nic.bandwidth", "1Gb/s"}});
  ASSERT_TRUE(slow.ok()) << slow.error().to_string();
  auto r2 = simulate(p, *slow, no_contention);
  ASSERT_TRUE(r2.ok());
  EXPECT_GT(r2->iteration_time, gemm_time(1e13) * 2);
  EXPECT_GT(r2->rank_stats[0].exposed_comm, SimTime::ms(50));
}

// The program's own bytes, without the runtime's (context, fragmentation; these programs have
// no NCCL connections): the peak is exactly what the IR allocates.
SimOptions program_bytes_only() {
  SimOptions o;
  o.memory.context_bytes = 0;
  o.memory.fragmentation = 0.0;
  return o;
}

// Memory: persistent 1 GiB; alloc 2 GiB, a compute op with 512 MiB workspace, free: peak
// 3.5 GiB. A 100 GiB allocation on an 80 GiB device is flagged OOM; the capacity reported is the
// device's (the runtime's reserve is part of the peak, not subtracted from the capacity).
TEST(Executor, MemoryPeakAndOom) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  ir::Cost cost = testing::gemm_cost(1e9);
  cost.workspace_bytes = 512ull << 20;
  const ir::CostId c = b.cost(cost);
  b.buffer(0, "persist", Bytes::gib(1), ir::BufferRole::weights, true);
  const ir::BufferId act = b.buffer(0, "act", Bytes::gib(2), ir::BufferRole::activation, false);
  b.alloc(0, 0, act);
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, c, {}, {});
  b.free(0, 0, act);
  const ir::BufferId huge = b.buffer(1, "huge", Bytes::gib(100), ir::BufferRole::activation, false);
  b.alloc(1, 0, huge);
  b.free(1, 0, huge);
  const ir::Program p = std::move(b).finish();
  auto r = simulate(p, t, program_bytes_only());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->rank_stats[0].peak_memory_bytes, (1ull << 30) + (2ull << 30) + (512ull << 20));
  EXPECT_FALSE(r->rank_stats[0].oom);
  EXPECT_EQ(r->rank_stats[0].memory_capacity_bytes, 80ull << 30);
  EXPECT_TRUE(r->rank_stats[1].oom);
}

// The breakdown at the peak, with the default runtime reserve. Rank 0 holds persistent weights
// 1 GiB, gradients 1 GiB, optimizer state (master + moments) 2 GiB; allocates a gathered-weight
// staging buffer 1 GiB and an activation 2 GiB, runs a compute op with 512 MiB workspace, and
// sends to rank 1. Expected at the peak (during the compute op):
//   weights 1, gradients 1, optimizer 2, buffers 1, activations 2, workspace 0.5 GiB;
//   transient (alloc/free + workspace) = 3.5 GiB, reserved as 3.5 GiB / (1 - 0.15), so
//   reserve = 512 MiB context + (floor(3.5 GiB / 0.85) - 3.5 GiB);
//   nccl = 1 p2p peer x 2 channels x (4 MiB + 4915200 B + 512 KiB) = 19267584 B.
// The eight fields sum to the peak exactly.
TEST(Executor, MemoryBreakdownSumsToPeak) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  ir::Cost cost = testing::gemm_cost(1e9);
  cost.workspace_bytes = 512ull << 20;
  const ir::CostId c = b.cost(cost);
  const ir::CommId pair = b.communicator("pair", {0, 1});
  b.buffer(0, "w", Bytes::gib(1), ir::BufferRole::weights, true);
  b.buffer(0, "g", Bytes::gib(1), ir::BufferRole::gradient, true);
  b.buffer(0, "master", Bytes::gib(1), ir::BufferRole::master_weights, true);
  b.buffer(0, "adam", Bytes::gib(1), ir::BufferRole::optimizer_state, true);
  const ir::BufferId full =
      b.buffer(0, "full", Bytes::gib(1), ir::BufferRole::weight_staging, false);
  const ir::BufferId act = b.buffer(0, "act", Bytes::gib(2), ir::BufferRole::activation, false);
  const ir::BufferId in = b.buffer(1, "in", Bytes(1 << 20), ir::BufferRole::activation, true);
  b.alloc(0, 0, full);
  b.alloc(0, 0, act);
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, c, {full}, {act});
  b.send(0, 0, 1, pair, Bytes(1 << 20), act);
  b.free(0, 0, full);
  b.free(0, 0, act);
  b.recv(1, 0, 0, pair, Bytes(1 << 20), in);
  const ir::Program p = std::move(b).finish();
  auto r = simulate(p, t, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const report::RankStats& s = r->rank_stats[0];
  const std::uint64_t gib = 1ull << 30;
  EXPECT_EQ(s.peak_memory.weights, gib);
  EXPECT_EQ(s.peak_memory.gradients, gib);
  EXPECT_EQ(s.peak_memory.optimizer, 2 * gib);
  EXPECT_EQ(s.peak_memory.buffers, gib);
  EXPECT_EQ(s.peak_memory.activations, 2 * gib);
  EXPECT_EQ(s.peak_memory.workspace, gib / 2);
  EXPECT_EQ(s.peak_memory.nccl, 19267584u);
  const std::uint64_t transient = 3 * gib + gib / 2;
  const auto reserved = static_cast<std::uint64_t>(static_cast<double>(transient) / 0.85);
  EXPECT_NEAR(static_cast<double>(s.peak_memory.reserve),
              static_cast<double>((512ull << 20) + reserved - transient), 2.0);
  EXPECT_EQ(s.peak_memory.total(), s.peak_memory_bytes);
  EXPECT_EQ(r->rank_stats[1].peak_memory.total(), r->rank_stats[1].peak_memory_bytes);
}

// NCCL's connections belong to a communicator (comm->channels[c].peers[peer], src/transport.cc),
// so a peer reached on two communicators -- TawPipe's pair communicators of two process groups --
// holds two sets of receive buffers, and a second transfer on the same communicator none more.
// Rank 0 sends twice to rank 1 on "pg0" and once on "pg1"; rank 1 receives all three:
//   nccl = 2 (communicator, peer) pairs x 2 channels x (4 MiB + 4915200 B + 512 KiB)
//        = 2 x 19267584 B = 38535168 B on each rank.
TEST(Executor, NcclBuffersArePerCommunicatorAndPeer) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  const ir::CommId pg0 = b.distinct_communicator("pg0.0-1", {0, 1});
  const ir::CommId pg1 = b.distinct_communicator("pg1.0-1", {0, 1});
  const ir::BufferId out = b.buffer(0, "out", Bytes(1 << 20), ir::BufferRole::activation, true);
  const ir::BufferId in = b.buffer(1, "in", Bytes(1 << 20), ir::BufferRole::activation, true);
  b.send(0, 0, 1, pg0, Bytes(1 << 20), out);
  b.send(0, 0, 1, pg0, Bytes(1 << 20), out);
  b.send(0, 0, 1, pg1, Bytes(1 << 20), out);
  b.recv(1, 0, 0, pg0, Bytes(1 << 20), in);
  b.recv(1, 0, 0, pg0, Bytes(1 << 20), in);
  b.recv(1, 0, 0, pg1, Bytes(1 << 20), in);
  const ir::Program p = std::move(b).finish();
  auto r = simulate(p, t, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->rank_stats[0].peak_memory.nccl, 38535168u);
  EXPECT_EQ(r->rank_stats[1].peak_memory.nccl, 38535168u);
}

// One alloc and one free may list several buffers (IR: every buffer in `writes`). Persistent
// 1 GiB; one alloc of a (2 GiB) and b (3 GiB), a compute op with 512 MiB workspace, one free of
// both, then c (5 GiB) allocated and freed. Peak = 1 + 2 + 3 GiB + 512 MiB = 6.5 GiB, as if a
// and b had been allocated by two ops; the free released both, so c brings the use to 1 + 5 =
// 6 GiB only (had it released a alone: 1 + 3 + 5 = 9 GiB). The builder emits one buffer per
// alloc/free, so the test rewrites those two ops to list both buffers.
TEST(Executor, AllocAndFreeOfSeveralBuffers) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 1), 1);
  ir::Cost cost = testing::gemm_cost(1e9);
  cost.workspace_bytes = 512ull << 20;
  const ir::CostId c = b.cost(cost);
  b.buffer(0, "persist", Bytes::gib(1), ir::BufferRole::weights, true);
  const ir::BufferId a = b.buffer(0, "a", Bytes::gib(2), ir::BufferRole::activation, false);
  const ir::BufferId bb = b.buffer(0, "b", Bytes::gib(3), ir::BufferRole::activation, false);
  const ir::BufferId cc = b.buffer(0, "c", Bytes::gib(5), ir::BufferRole::activation, false);
  const ir::OpIndex alloc = b.alloc(0, 0, a);
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, c, {}, {});
  const ir::OpIndex free = b.free(0, 0, a);
  b.alloc(0, 0, cc);
  b.free(0, 0, cc);
  ir::Program p = std::move(b).finish();
  ir::RankProgram& rp = p.ranks[0];
  for (const ir::OpIndex i : {alloc, free}) {
    ir::Op& op = rp.ops[static_cast<std::size_t>(i)];
    ASSERT_EQ(op.reads_count, 0u);
    ASSERT_EQ(op.writes_count, 1u);
    op.buffers_offset = static_cast<std::uint32_t>(rp.buffer_pool.size());
    op.writes_count = 2;
    rp.buffer_pool.push_back(a);
    rp.buffer_pool.push_back(bb);
  }
  auto r = simulate(p, t, program_bytes_only());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->rank_stats[0].peak_memory_bytes,
            (1ull << 30) + (2ull << 30) + (3ull << 30) + (512ull << 20));
  EXPECT_EQ(r->iteration_time, gemm_time(1e9));  // alloc and free take no time
}

// A pairwise exchange in one NCCL group does not deadlock: both ranks post send+recv together.
TEST(Executor, GroupedExchange) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  const ir::CommId pair = b.communicator("pair", {0, 1});
  for (ir::Rank r = 0; r < 2; ++r) {
    const ir::BufferId s = b.buffer(r, "s", Bytes(1 << 20), ir::BufferRole::workspace, true);
    const ir::BufferId d = b.buffer(r, "d", Bytes(1 << 20), ir::BufferRole::workspace, true);
    const std::int32_t g = b.new_group();
    if (r == 0) {
      b.send(r, 0, 1, pair, Bytes(1 << 20), s, {}, g);
      b.recv(r, 0, 1, pair, Bytes(1 << 20), d, {}, g);
    } else {
      b.recv(r, 0, 0, pair, Bytes(1 << 20), d, {}, g);
      b.send(r, 0, 0, pair, Bytes(1 << 20), s, {}, g);
    }
  }
  const ir::Program p = std::move(b).finish();
  auto r = simulate(p, t, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // Opposite directions use different links: each flow alone at NCCL's P2P rate. Two ranks on
  // 12 NVLink3 links: 2 x 12 -> 32 channels per peer; at least 16 (32 x 2 > 32); 1 MiB / 16 <
  // 4 x 512 KiB, so 16 channels x 9 GB/s = 144 GB/s (below the 12 x 20 GB/s SM-copy limit).
  // Latency: route h = 1 us + one Simple step 3.4 us.
  EXPECT_NEAR(r->iteration_time.seconds(), 1e-6 + 3.4e-6 + (1 << 20) / 144e9, 1e-12);
}

// An unmatched send is an error naming the op, not a hang.
TEST(Executor, UnmatchedSendIsAnError) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  const ir::CommId pair = b.communicator("pair", {0, 1});
  const ir::BufferId s = b.buffer(0, "s", Bytes(64), ir::BufferRole::workspace, true);
  b.send(0, 0, 1, pair, Bytes(64), s);
  const ir::Program p = std::move(b).finish();
  auto r = simulate(p, t, SimOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("send without a matching receive"), std::string::npos);
}

// SM contention: a compute op starting while a transfer of its rank is in flight is slowed.
TEST(Executor, SmContentionSlowsOverlappedCompute) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  const ir::StreamId comm = b.stream("comm");
  const ir::CommId pair = b.communicator("pair", {0, 1});
  const ir::CostId c = b.cost(testing::gemm_cost(1e12));
  const ir::BufferId s = b.buffer(0, "s", Bytes::gib(4), ir::BufferRole::workspace, true);
  const ir::BufferId d = b.buffer(1, "d", Bytes::gib(4), ir::BufferRole::workspace, true);
  b.send(0, comm, 1, pair, Bytes::gib(4), s);
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, c, {}, {});
  b.recv(1, comm, 0, pair, Bytes::gib(4), d);
  const ir::Program p = std::move(b).finish();
  SimOptions o;
  o.record_ops = true;
  o.sm_contention = 0.5;
  auto r = simulate(p, t, o);
  ASSERT_TRUE(r.ok());
  const report::OpRecord& compute = r->ops[1];
  EXPECT_EQ(compute.end - compute.start,
            SimTime::ps(static_cast<std::int64_t>(
                std::ceil(static_cast<double>(gemm_time(1e12).picoseconds()) * 1.5))));
}

// The modelled contention (sim/run/contention.cpp), derived by hand. The same slot as above: the
// socket P2P runs on 2 NCCL channels, i.e. 2 of the A100's 108 SMs, for d = its duration (rank
// 0's comm_sum) from t = 0, while compute op 1 -- a pure GEMM cost, no memory-bound kernels, so
// no HBM term -- runs at (108 - 2) / 108 of its rate. After d it runs alone again:
//     op 1 ends at d + (W - d x 106/108),  op 2 then takes W:
//     iteration = 2 W + d x (1 - 106/108),  W = gemm_time(1e13).
// The sender (rank 8) computes nothing, so only rank 0 slows.
TEST(Executor, ContentionFromChannels) {
  const topo::Topology t = testing::shipped("3x8-a100");
  const ir::Program p = tawpipe_slot_program(t);
  auto r = simulate(p, t, SimOptions{});  // default: modelled contention
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const double d = static_cast<double>(r->rank_stats[0].comm_sum.picoseconds());
  const double want =
      2.0 * static_cast<double>(gemm_time(1e13).picoseconds()) + d * (1.0 - 106.0 / 108.0);
  EXPECT_NEAR(static_cast<double>(r->iteration_time.picoseconds()), want, 4.0);
  EXPECT_GT(r->iteration_time, gemm_time(1e13) * 2);
  // Off (0) and a flat override leave the modelled path.
  SimOptions off;
  off.sm_contention = 0.0;
  auto r0 = simulate(p, t, off);
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ(r0->iteration_time, gemm_time(1e13) * 2);
}

// NCCL runs one communicator's kernels one at a time on a GPU (sim/run/tables.cpp
// build_comm_order). Rank 0 sends 64 MiB to rank 1 on stream a and 64 MiB to rank 2 on stream b,
// both on one 3-rank communicator of dgx-a100. NCCL 2.28.9's P2P channels: p2pnChannels 32, per
// peer 32, an operation starts from 32 halved while x 3 ranks > 32 -> 8; 64 MiB / 8 = 8 MiB per
// channel, not above 16 MiB: 8 channels x 9 GB/s = 72 GB/s, far below rank 0's NVSwitch port.
// Latency: route 2 x 500 ns + one Simple step 3.4 us = 4.4 us.
//   in order (default):   the second starts when the first ends: 2 x (4.4 us + 64 MiB / 72 GB/s)
//   --comm-overlap:       both at once:                              4.4 us + 64 MiB / 72 GB/s
// On two communicators the two sends overlap in both modes.
TEST(Executor, OneCommunicatorRunsItsOperationsInOrder) {
  const topo::Topology t = testing::shipped("dgx-a100");
  const auto program = [&](bool two_comms) {
    ir::ProgramBuilder b(testing::header_for(t, 3), 3);
    const ir::StreamId sa = b.stream("a");
    const ir::StreamId sb = b.stream("b");
    const ir::CommId c = b.communicator("c", {0, 1, 2});
    const ir::CommId c2 = two_comms ? b.distinct_communicator("c2", {0, 1, 2}) : c;
    const Bytes n = Bytes::mib(64);
    const ir::BufferId x = b.buffer(0, "x", n, ir::BufferRole::workspace, true);
    const ir::BufferId y = b.buffer(0, "y", n, ir::BufferRole::workspace, true);
    const ir::BufferId d1 = b.buffer(1, "d", n, ir::BufferRole::workspace, true);
    const ir::BufferId d2 = b.buffer(2, "d", n, ir::BufferRole::workspace, true);
    b.send(0, sa, 1, c, n, x);
    b.send(0, sb, 2, c2, n, y);
    b.recv(1, sa, 0, c, n, d1);
    b.recv(2, sb, 0, c2, n, d2);
    return std::move(b).finish();
  };
  const double one = 4.4e-6 + 64.0 * 1024 * 1024 / 72e9;
  SimOptions in_order;
  SimOptions overlap;
  overlap.comm_order = false;
  auto r = simulate(program(false), t, in_order);
  auto o = simulate(program(false), t, overlap);
  auto two = simulate(program(true), t, in_order);
  ASSERT_TRUE(r.ok() && o.ok() && two.ok());
  EXPECT_NEAR(r->iteration_time.seconds(), 2 * one, 1e-11);
  EXPECT_NEAR(o->iteration_time.seconds(), one, 1e-11);
  EXPECT_NEAR(two->iteration_time.seconds(), one, 1e-11);
}

// Two 64 MiB sends from rank 0 to rank 1 in ONE NCCL group on one communicator of dgx-a100: one
// kernel, and both go through the channels NCCL gives that peer (enqueue.cc: every task to a
// peer starts at the peer's channel base, and a channel runs its tasks one after another), so
// they share that peer's rate C. Both end together at 4.4 us + 2 x 64 MiB / C.
TEST(Executor, SendsOfOneGroupToOnePeerShareItsChannels) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  const ir::StreamId s = b.stream("p2p");
  const ir::CommId c = b.communicator("c", {0, 1});
  const Bytes n = Bytes::mib(64);
  const std::int32_t g0 = b.new_group();
  const std::int32_t g1 = b.new_group();
  const ir::BufferId x = b.buffer(0, "x", n, ir::BufferRole::workspace, true);
  const ir::BufferId y = b.buffer(0, "y", n, ir::BufferRole::workspace, true);
  const ir::BufferId u = b.buffer(1, "u", n, ir::BufferRole::workspace, true);
  const ir::BufferId v = b.buffer(1, "v", n, ir::BufferRole::workspace, true);
  b.send(0, s, 1, c, n, x, {}, g0);
  b.send(0, s, 1, c, n, y, {}, g0);
  b.recv(1, s, 0, c, n, u, {}, g1);
  b.recv(1, s, 0, c, n, v, {}, g1);
  const ir::Program p = std::move(b).finish();
  // 2 ranks on one node: p2pnChannels 32, per peer 32, an operation starts from 32 halved while
  // x 2 > 32 -> 16 channels; 64 MiB / 16 = 4 MiB, not above 16 MiB: 16 x 9 GB/s = 144 GB/s.
  const double c_rate = 144e9;
  auto r = simulate(p, t, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_NEAR(r->iteration_time.seconds(), 4.4e-6 + 2 * 64.0 * 1024 * 1024 / c_rate, 1e-11);
}

// The HBM term of the contention model, derived by hand: on dgx-a100 a 4 GiB P2P from rank 0
// to rank 1 forced onto 4 channels (NCCL_MIN/MAX_NCHANNELS = 4) is bounded at 4 x 9 GB/s per
// channel = 36 GB/s and, as a copy, moves 2 HBM bytes per bus byte: u = 72e9 / 2039e9 (the A100's
// HBM). A local copy op of rank 0 (all memory-bound) running inside that transfer takes
// W / (1 - u); its 4 SMs do not matter to it.
TEST(Executor, ContentionHbmTermSlowsMemoryBoundOps) {
  const topo::Topology t = testing::shipped("dgx-a100");
  ir::ProgramBuilder b(testing::header_for(t, 2), 2);
  const ir::StreamId comm = b.stream("comm");
  const ir::CommId pair = b.communicator("pair", {0, 1});
  const ir::BufferId s = b.buffer(0, "s", Bytes::gib(4), ir::BufferRole::workspace, true);
  const ir::BufferId d = b.buffer(1, "d", Bytes::gib(4), ir::BufferRole::workspace, true);
  const ir::BufferId x = b.buffer(0, "x", Bytes::gib(1), ir::BufferRole::workspace, true);
  const ir::BufferId y = b.buffer(0, "y", Bytes::gib(1), ir::BufferRole::workspace, true);
  b.send(0, comm, 1, pair, Bytes::gib(4), s);
  b.copy(0, 0, x, y, Bytes::gib(1));
  b.recv(1, comm, 0, pair, Bytes::gib(4), d);
  const ir::Program p = std::move(b).finish();
  SimOptions o;
  o.record_ops = true;
  o.nccl.tuner.min_channels = 4;
  o.nccl.tuner.max_channels = 4;
  SimOptions off = o;
  off.sm_contention = 0.0;
  auto alone = simulate(p, t, off);
  auto r = simulate(p, t, o);
  ASSERT_TRUE(alone.ok() && r.ok());
  const double w = static_cast<double>((alone->ops[1].end - alone->ops[1].start).picoseconds());
  const double u = 2.0 * 4.0 * 9e9 / 2039e9;
  const double got = static_cast<double>((r->ops[1].end - r->ops[1].start).picoseconds());
  EXPECT_NEAR(got, std::ceil(w / (1.0 - u)), 1.0);
  EXPECT_GT(got, w * 1.03);  // u = 3.5 %: a visible slow-down, not rounding
}

// MPI's shared-memory copies run on the receiving side (CMA), so on a CPU topology a reduce's
// copy work shares the root's core only and a broadcast's the non-roots' (sim/run/host_cpu.cpp).
// localhost-cpu: ranks 0 and 1 on cores 0 and 1. Rank 1 computes (GEMM of 2 GFLOP, ~20 ms at
// the topology's CPU rate) while a 64 MiB collective rooted at `root` runs on the side stream
// (fallback model, ~13 ms of copy at 5 GB/s). The compute op of a rank that does not copy takes
// exactly its time alone; the one of a rank that copies is slowed (both share its core).
TEST(Executor, HostCollectiveCopiesOnTheReceivingCores) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  auto compute_end = [&](ir::CollectiveKind kind, ir::Rank root, bool with_collective) {
    ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
    const ir::StreamId side = b.stream("side");
    const ir::CommId pair = b.communicator("pair", {0, 1});
    const ir::CostId c = b.cost(testing::gemm_cost(2e9));
    for (ir::Rank r = 0; r < 2; ++r) {
      const ir::BufferId buf = b.buffer(r, "buf", Bytes::mib(64), ir::BufferRole::gradient, true);
      if (with_collective) b.collective(r, side, kind, pair, root, Bytes::mib(64), buf, buf);
    }
    b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, c, {}, {});
    const ir::Program p = std::move(b).finish();
    SimOptions o;
    o.record_ops = true;
    auto r = simulate(p, t, o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    for (const report::OpRecord& rec : r->ops)
      if (rec.rank == 1 &&
          p.ranks[1].ops[static_cast<std::size_t>(rec.op)].kind == ir::OpKind::compute)
        return rec.end - rec.start;
    ADD_FAILURE() << "no compute op on rank 1";
    return SimTime();
  };
  const SimTime alone = compute_end(ir::CollectiveKind::reduce, 0, false);
  EXPECT_EQ(compute_end(ir::CollectiveKind::reduce, 0, true), alone);     // rank 1 only sends
  EXPECT_GT(compute_end(ir::CollectiveKind::reduce, 1, true), alone);     // rank 1 receives, sums
  EXPECT_GT(compute_end(ir::CollectiveKind::broadcast, 0, true), alone);  // rank 1 receives
  EXPECT_EQ(compute_end(ir::CollectiveKind::broadcast, 1, true), alone);  // rank 1 only sends
  EXPECT_GT(compute_end(ir::CollectiveKind::all_reduce, ir::kNone, true), alone);  // rootless
}

// A waiting communication thread wakes up to test MPI (common/host_wait.h), and each wake-up
// costs the compute thread of its core progress (profile host.wakeup_cost). localhost-cpu, one
// rank per core: rank 1 posts a receive on a side stream at once and computes W1 on its compute
// stream; rank 0 computes W0 < W1, then sends 4 bytes. The receive waits about W0 on its
// doorbell (exec/host/doorbell.h: a wake-up per timeout, then the bell), and its
// wake-ups n = doorbell_wakeups(wait) are charged to rank 1's core when it ends, while rank 1
// still computes, and so is the interpreter's wake-up for the receive's completion
// (charge_handoff_wakeup): its compute op ends (n + 1) x cost later than alone (processor
// sharing conserves the core's work). Without the figures in the profile nothing is charged.
TEST(Executor, HostWaitWakeupsSlowTheComputeOfTheirCore) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
  const ir::StreamId side = b.stream("side");
  const ir::CommId pair = b.communicator("pair", {0, 1});
  const ir::BufferId x = b.buffer(0, "x", Bytes(4), ir::BufferRole::activation, true);
  const ir::BufferId y = b.buffer(1, "y", Bytes(4), ir::BufferRole::activation, true);
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(16e9)), {}, {});
  b.send(0, 0, 1, pair, Bytes(4), x);  // after the compute (stream order)
  b.recv(1, side, 0, pair, Bytes(4), y);
  b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(64e9)), {}, {});
  const ir::Program p = std::move(b).finish();
  profile::Profile prof = one_rank_per_core(SimTime::us(50));
  prof.host->wakeup_latency = SimTime::us(100);
  auto op = [&](const report::Report& r, ir::Rank rank, ir::OpKind kind) {
    return first_op(p, r, rank, kind);
  };
  SimOptions o;
  o.record_ops = true;
  auto alone = simulate(p, t, o);
  o.profile = prof;
  auto r = simulate(p, t, o);
  ASSERT_TRUE(alone.ok() && r.ok());
  const report::OpRecord recv = op(*r, 1, ir::OpKind::recv);
  const double n = host_wait::doorbell_wakeups((recv.end - recv.start).picoseconds() / 1000);
  EXPECT_GT(n, 5.0);
  EXPECT_LT(n, host_wait::wakeups((recv.end - recv.start).picoseconds() / 1000, 100'000));
  const report::OpRecord mine = op(*r, 1, ir::OpKind::compute);
  const report::OpRecord base = op(*alone, 1, ir::OpKind::compute);
  EXPECT_NEAR(static_cast<double>((mine.end - mine.start).picoseconds()),
              static_cast<double>((base.end - base.start).picoseconds()) + (n + 1) * 50e6, 2.0);
  EXPECT_EQ(op(*r, 0, ir::OpKind::compute).end, op(*alone, 0, ir::OpKind::compute).end);
  // A measured long-wait cost of 0 is a figure, not an absence (which would charge every sleep
  // the short figure, as above): the doorbell's 200 ms timeouts then cost nothing.
  o.profile->host->wakeup_cost_long = SimTime();
  auto zero = simulate(p, t, o);
  ASSERT_TRUE(zero.ok());
  EXPECT_LT(op(*zero, 1, ir::OpKind::compute).end, mine.end);
}

// While another rank of the core computes too, a wake-up costs the shared figure (profile
// host.wakeup_cost_shared, measured with the core's other ranks computing). 2x2-cpu, ranks 0 and
// 1 on core 0: rank 1 posts a receive from rank 2 (core 1) at once and computes W1 on its compute
// stream, rank 0 computes W0 beside it (or nothing), rank 2 computes W2 < W0, W1, then sends. The
// receive's n wake-ups are charged to core 0 when it ends, while both ranks there still compute,
// with rank 1's interpreter's wake-up for the receive's completion and, when rank 0 computes, rank
// 0's interpreter's for its compute's (charge_handoff_wakeup; it ends before rank 1's, which the
// wake-ups delay): core 0, busy throughout, finishes its work (n + 1 or 2) x cost later
// (processor sharing conserves it), at the shared cost when rank 0 computes and at the lone one
// when it does not.
TEST(Executor, HostWakeupsWhileTheCoresOtherRankComputesCostTheSharedFigure) {
  const topo::Topology t = testing::shipped("2x2-cpu");
  auto program = [&](bool rank0_computes) {
    ir::ProgramBuilder b(testing::header_for(t, 4, "fp32"), 4);
    const ir::StreamId side = b.stream("side");
    const ir::CommId pair = b.communicator("pair", {1, 2});
    const ir::BufferId x = b.buffer(2, "x", Bytes(4), ir::BufferRole::activation, true);
    const ir::BufferId y = b.buffer(1, "y", Bytes(4), ir::BufferRole::activation, true);
    if (rank0_computes)
      b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(64e9)), {}, {});
    b.recv(1, side, 2, pair, Bytes(4), y);
    b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(64e9)), {}, {});
    b.compute(2, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(16e9)), {}, {});
    b.send(2, 0, 1, pair, Bytes(4), x);
    return std::move(b).finish();
  };
  profile::Profile prof;
  prof.host = profile::HostProfile{};
  prof.host->cores_per_host = 2;
  prof.host->ranks_per_core = 2;
  prof.host->wakeup_cost = SimTime::us(50);
  // Core 0's last compute end, and the receive's wake-ups.
  auto run = [&](const ir::Program& p, const std::optional<profile::Profile>& pr) {
    SimOptions o;
    o.record_ops = true;
    o.profile = pr;
    auto r = simulate(p, t, o);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    SimTime end;
    for (const report::OpRecord& rec : r->ops)
      if (rec.rank <= 1) end = std::max(end, rec.end);
    const report::OpRecord recv = first_op(p, *r, 1, ir::OpKind::recv);
    return std::pair{end,
                     host_wait::doorbell_wakeups((recv.end - recv.start).picoseconds() / 1000)};
  };
  auto shared = prof;
  shared.host->wakeup_cost_shared = SimTime::us(80);
  for (const bool rank0_computes : {true, false}) {
    const ir::Program p = program(rank0_computes);
    const auto [alone, n0] = run(p, std::nullopt);
    const auto [lone_figure, n] = run(p, prof);
    const auto [shared_figure, n2] = run(p, shared);
    EXPECT_GT(n, 5.0);
    EXPECT_EQ(n, n2);
    const double interpreter = rank0_computes ? 2.0 : 1.0;
    EXPECT_NEAR(static_cast<double>((lone_figure - alone).picoseconds()), (n + interpreter) * 50e6,
                2.0)
        << rank0_computes;
    EXPECT_NEAR(static_cast<double>((shared_figure - alone).picoseconds()),
                (n + interpreter) * (rank0_computes ? 80e6 : 50e6), 2.0)
        << rank0_computes;
  }
}

// Besides a wait's own wake-ups, the backend's threads sleep when idle and wake when work
// arrives (sim/run/host_cpu.cpp charge_handoff_wakeup): the interpreter for every completion of
// a unit a stream thread ran, a stream thread when it is handed a unit after its last one had
// completed. localhost-cpu, one rank per core, each wake-up at 50 us. Rank 1 computes X (4
// GFLOP), then Y (64 GFLOP); beside them it receives A from rank 0 at once and then B, either
// right after A (its thread never idles) or only once X is done (`after_x`: the thread slept
// since A completed, one hand-off more). Rank 1's core pays the interpreter's wake-ups for A's,
// X's and B's completions, B's hand-off when `after_x`, and the waits' n_A + n_B wake-ups, all
// while X or Y runs: Y ends that many times 50 us later than without the figures.
TEST(Executor, HostHandOffWakeupsCostTheirCore) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  auto program = [&](bool after_x) {
    ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
    const ir::StreamId side = b.stream("side");
    const ir::CommId pair = b.communicator("pair", {0, 1});
    const ir::BufferId x = b.buffer(0, "x", Bytes(4), ir::BufferRole::activation, true);
    const ir::BufferId y = b.buffer(1, "y", Bytes(4), ir::BufferRole::activation, true);
    b.send(0, 0, 1, pair, Bytes(4), x);
    b.send(0, 0, 1, pair, Bytes(4), x);
    const ir::OpIndex op_x =
        b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(4e9)), {}, {});
    b.compute(1, 0, ir::ComputeKind::forward, 1, 2, 0, b.cost(testing::gemm_cost(64e9)), {}, {});
    b.recv(1, side, 0, pair, Bytes(4), y);
    if (after_x) {
      b.recv(1, side, 0, pair, Bytes(4), y, std::span<const ir::OpIndex>(&op_x, 1));
    } else {
      b.recv(1, side, 0, pair, Bytes(4), y);
    }
    return std::move(b).finish();
  };
  for (const bool after_x : {false, true}) {
    const ir::Program p = program(after_x);
    SimOptions o;
    o.record_ops = true;
    auto alone = simulate(p, t, o);
    o.profile = one_rank_per_core(SimTime::us(50));
    auto r = simulate(p, t, o);
    ASSERT_TRUE(alone.ok() && r.ok());
    // Rank 1's ops in program order: X, Y, A, B.
    std::vector<report::OpRecord> ops(4);
    for (const report::OpRecord& rec : r->ops)
      if (rec.rank == 1) ops[static_cast<std::size_t>(rec.op)] = rec;
    const report::OpRecord& op_y = ops[1];
    const report::OpRecord& a = ops[2];
    const report::OpRecord& bb = ops[3];
    ASSERT_LT(a.end, ops[0].end) << after_x;  // A completes while X runs
    ASSERT_LT(bb.end, op_y.end) << after_x;   // B completes while Y runs
    EXPECT_EQ(bb.start == ops[0].end, after_x);
    const double waits = host_wait::doorbell_wakeups((a.end - a.start).picoseconds() / 1000) +
                         host_wait::doorbell_wakeups((bb.end - bb.start).picoseconds() / 1000);
    const double handoffs = after_x ? 4.0 : 3.0;
    SimTime base_y;
    for (const report::OpRecord& rec : alone->ops)
      if (rec.rank == 1 && rec.op == 1) base_y = rec.end;
    EXPECT_NEAR(static_cast<double>((op_y.end - base_y).picoseconds()), (waits + handoffs) * 50e6,
                2.0)
        << after_x;
  }
}

// A direct collective (exec/host/mpi_ops.h run_direct) is a message to and from every other
// member, and each member's post rings the others' doorbells: a member that posts first sleeps
// until each later member's post (its message has arrived to be copied) and then until the end,
// one bell-ended sleep more per later member than a point-to-point wait of the same length.
// localhost-cpu, one rank per core: rank 1 posts a 2-member all-gather on a side stream at once
// and computes on its compute stream throughout; rank 0 computes, then posts. Rank 1's wake-ups
// are those of [its post, rank 0's post] and [rank 0's post, the end], each charged to its busy
// core (50 us each).
TEST(Executor, HostDirectCollectiveWakesAtEveryLaterPost) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
  const ir::StreamId side = b.stream("side");
  const ir::CommId pair = b.communicator("pair", {0, 1});
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(4e9)), {}, {});
  for (ir::Rank r = 0; r < 2; ++r) {
    const ir::BufferId buf = b.buffer(r, "buf", Bytes(64), ir::BufferRole::weights, true);
    b.collective(r, r == 0 ? 0 : side, ir::CollectiveKind::all_gather, pair, ir::kNone, Bytes(64),
                 buf, buf);
  }
  b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(16e9)), {}, {});
  const ir::Program p = std::move(b).finish();
  profile::Profile prof = one_rank_per_core(SimTime::us(50));
  auto op = [&](const report::Report& r, ir::Rank rank, ir::OpKind kind) {
    return first_op(p, r, rank, kind);
  };
  SimOptions o;
  o.record_ops = true;
  auto alone = simulate(p, t, o);
  o.profile = prof;
  auto r = simulate(p, t, o);
  ASSERT_TRUE(alone.ok() && r.ok());
  const report::OpRecord mine = op(*r, 1, ir::OpKind::collective);
  const SimTime later = op(*r, 0, ir::OpKind::collective).start;
  ASSERT_GT(later, mine.start);
  const double n = host_wait::doorbell_wakeups((later - mine.start).picoseconds() / 1000) +
                   host_wait::doorbell_wakeups((mine.end - later).picoseconds() / 1000);
  EXPECT_EQ(n, host_wait::doorbell_wakeups((mine.end - mine.start).picoseconds() / 1000) + 1);
  const report::OpRecord c = op(*r, 1, ir::OpKind::compute);
  const report::OpRecord base = op(*alone, 1, ir::OpKind::compute);
  ASSERT_GT(c.end, mine.end);  // the core was busy throughout the wait
  // Besides the wait's n wake-ups, rank 1's interpreter wakes for the collective's completion
  // (charge_handoff_wakeup). Rank 0's interpreter wakes for its compute's completion just as it
  // posts, and that wake-up shares core 0 with the collective's copy, a job on both cores: the
  // collective ends (and holds core 1) that much later (8 ns here).
  const SimTime copy_later = mine.end - op(*alone, 1, ir::OpKind::collective).end;
  EXPECT_GT(copy_later, SimTime());
  EXPECT_LT(copy_later, SimTime::ns(100));
  EXPECT_NEAR(static_cast<double>((c.end - c.start).picoseconds()),
              static_cast<double>((base.end - base.start).picoseconds()) + (n + 1) * 50e6 +
                  static_cast<double>(copy_later.picoseconds()),
              2.0);
}

// A host profile of `cores` cores with `per_core` ranks each and one-point shared-memory curves
// (every size costs the point's figures): a message of 0.5 ms (0.4 ms of it CPU), a broadcast
// and a reduce on 4 ranks of 3 ms (1 ms and 2 ms of one member's CPU). Without `cpu` the curves
// carry no CPU times.
profile::Profile host_curves(int cores, int per_core, bool cpu) {
  profile::Profile prof;
  prof.host = profile::HostProfile{};
  prof.host->cores_per_host = cores;
  prof.host->ranks_per_core = per_core;
  auto curve = [&](profile::CommOp op, int ranks, double time_ms, double cpu_ms) {
    profile::CommMeasurement m;
    m.op = op;
    m.scope = profile::CommScope::shared_memory;
    m.ranks = ranks;
    profile::CommPoint pt;
    pt.size = Bytes::mib(1);
    pt.time = SimTime::ps(testing::ceil_ps(time_ms * 1e-3));
    if (cpu) pt.cpu = SimTime::ps(testing::ceil_ps(cpu_ms * 1e-3));
    m.points.push_back(pt);
    prof.communication.push_back(m);
  };
  curve(profile::CommOp::sendrecv, 2, 0.5, 0.4);
  curve(profile::CommOp::broadcast, 4, 3.0, 1.0);
  curve(profile::CommOp::reduce, 4, 3.0, 2.0);
  return prof;
}

// A one-point broadcast curve of 1 MiB on `ranks` ranks (every size costs the point's figures):
// its time, the busiest member's CPU time and, with roles, the root's and a member's thread CPU
// time (profile root_cpu, member_cpu).
profile::CommMeasurement broadcast_curve(int ranks, profile::CommScope scope, SimTime time,
                                         SimTime cpu, std::optional<SimTime> root_cpu = {},
                                         std::optional<SimTime> member_cpu = {}) {
  profile::CommMeasurement m;
  m.op = profile::CommOp::broadcast;
  m.scope = scope;
  m.ranks = ranks;
  profile::CommPoint pt;
  pt.size = Bytes::mib(1);
  pt.time = time;
  pt.cpu = cpu;
  pt.root_cpu = root_cpu;
  pt.member_cpu = member_cpu;
  m.points.push_back(pt);
  return m;
}

// `p` on `t` with `prof`, every op recorded.
auto simulate_recorded(const ir::Program& p, const topo::Topology& t,
                       const profile::Profile& prof) {
  SimOptions o;
  o.record_ops = true;
  o.profile = prof;
  auto r = simulate(p, t, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r;
}

// MPI moves a rooted collective's data between the root and each other member once both have
// posted, not when the last member posts (sim/run/host_cpu.cpp member_start_mode): libnbc's
// linear broadcast on at most 4 ranks, and the host backend's direct reduce. On `t`, every rank
// posts a 1 MiB collective rooted at rank 0 on stream 0 at once, except the last rank, which first
// computes a GEMM of 0.24 GFLOP (~20 ms). Returns each rank's collective op record.
std::vector<report::OpRecord> rooted_with_a_late_member(const topo::Topology& t, int ranks,
                                                        ir::CollectiveKind kind,
                                                        const profile::Profile& prof) {
  ir::ProgramBuilder b(testing::header_for(t, ranks, "fp32"), ranks);
  std::vector<ir::Rank> all(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    all[static_cast<std::size_t>(r)] = r;
  const ir::CommId world = b.communicator("world", all);
  b.compute(ranks - 1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(0.24e9)), {},
            {});
  for (ir::Rank r = 0; r < ranks; ++r) {
    const ir::BufferId buf = b.buffer(r, "buf", Bytes::mib(1), ir::BufferRole::gradient, true);
    b.collective(r, 0, kind, world, 0, Bytes::mib(1), buf, buf);
  }
  const ir::Program p = std::move(b).finish();
  auto r = simulate_recorded(p, t, prof);
  std::vector<report::OpRecord> out;
  if (!r.ok()) return out;
  for (ir::Rank rank = 0; rank < ranks; ++rank)
    out.push_back(first_op(p, *r, rank, ir::OpKind::collective));
  return out;
}

// 2x2-cpu (ranks 0, 1 on core 0; 2, 3 on core 1), broadcast from rank 0, rank 3 late. The curve
// was measured with 2 members per core: latency 3 - 2 x 1 = 1 ms, then 1 ms of copy on the
// receiver's core. Rank 1 receives alone on core 0 as soon as it and the root posted: done at
// 2 ms; rank 2 before rank 3 posts; rank 3 takes 1 + 1 ms after its post, and the root ends with
// it. Without CPU times in the curve the whole call starts at the last post, as before.
TEST(Executor, HostLinearBroadcastCopiesAsMembersPost) {
  const topo::Topology t = testing::shipped("2x2-cpu");
  const auto ops =
      rooted_with_a_late_member(t, 4, ir::CollectiveKind::broadcast, host_curves(2, 2, true));
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[1].start, SimTime());
  EXPECT_EQ(ops[1].end, SimTime::ms(2));
  EXPECT_LT(ops[2].end, ops[3].start);
  EXPECT_GT(ops[3].start, SimTime::ms(15));
  EXPECT_EQ(ops[3].end - ops[3].start, SimTime::ms(2));
  EXPECT_EQ(ops[0].end, ops[3].end);
  const auto whole =
      rooted_with_a_late_member(t, 4, ir::CollectiveKind::broadcast, host_curves(2, 2, false));
  ASSERT_EQ(whole.size(), 4u);
  for (const report::OpRecord& rec : whole) {
    EXPECT_EQ(rec.end, whole[0].end);
    EXPECT_GT(rec.end, whole[3].start);
  }
}

// A linear broadcast's member copy costs the 2-rank curve's member when no other member of the
// instance copies, and for each other member copy running when it starts its share of the way to
// the instance's own curve (calibration's members all copy at once; sim/run/host_cpu.cpp
// start_member_copy). 2x2-cpu, rank 0 broadcasts 1 MiB to ranks 1 (its core), 2 and 3 (core 1);
// rank 3 posts ~20 ms late. Curves: 4 ranks, member 2 ms; 2 ranks across cores, member 1 ms; 2
// ranks on one core, member 0.5 ms. Rank 1 copies first (alone, the one-core figure, 0.5 ms), rank
// 2 beside it (one of the two others: 1 + (2 - 1) / 2 = 1.5 ms), rank 3 alone (1 ms). Without the
// 2-rank curves every member costs the 4-rank curve's 2 ms.
TEST(Executor, HostBroadcastMemberCopyAloneCostsTheTwoRankFigure) {
  const topo::Topology t = testing::shipped("2x2-cpu");
  auto member_cpu = [&](bool two_rank_curves) {
    profile::Profile prof;
    prof.host = profile::HostProfile{};
    prof.host->cores_per_host = 2;
    prof.host->ranks_per_core = 2;
    auto curve = [&](int ranks, profile::CommScope scope, double member_ms) {
      const SimTime member = SimTime::ps(testing::ceil_ps(member_ms * 1e-3));
      prof.communication.push_back(
          broadcast_curve(ranks, scope, SimTime::ms(6), member, SimTime::ms(1), member));
    };
    curve(4, profile::CommScope::shared_memory, 2.0);
    if (two_rank_curves) {
      curve(2, profile::CommScope::shared_memory, 1.0);
      curve(2, profile::CommScope::shared_core, 0.5);
    }
    const auto ops = rooted_with_a_late_member(t, 4, ir::CollectiveKind::broadcast, prof);
    std::vector<double> out;
    for (const report::OpRecord& rec : ops)
      out.push_back(rec.cpu.value_or(SimTime()).seconds() * 1e3);
    return out;
  };
  const std::vector<double> with = member_cpu(true);
  ASSERT_EQ(with.size(), 4u);
  EXPECT_NEAR(with[1], 0.5, 1e-9);
  EXPECT_NEAR(with[2], 1.5, 1e-9);
  EXPECT_NEAR(with[3], 1.0, 1e-9);
  const std::vector<double> without = member_cpu(false);
  ASSERT_EQ(without.size(), 4u);
  for (std::size_t r = 1; r < 4; ++r)
    EXPECT_NEAR(without[r], 2.0, 1e-9) << r;
}

// A waiting thread sleeps only between its tests, and the test that copies a broadcast member's
// message runs as long as the copy: the timer-driven sleeps (host_wait::for_each_sleep) fill the
// wait less the op's charged work (sim/run/host_cpu.cpp charge_wakeups). localhost-cpu: rank 1
// posts a 2-rank broadcast from rank 0 on a side stream at once and computes ~0.7 s beside it;
// rank 0 computes ~330 ms first. The curve: 8 ms, the member's copy 6 ms. Rank 1's core pays the
// wait's n wake-ups, n those of its length less 6 ms, and its interpreter's wake-up for the
// completion, 50 us each.
TEST(Executor, HostTimerWaitSleepsOnlyOutsideItsCopy) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
  const ir::StreamId side = b.stream("side");
  const ir::CommId pair = b.communicator("pair", {0, 1});
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(4e9)), {}, {});
  for (ir::Rank r : {0, 1}) {
    const ir::BufferId buf = b.buffer(r, "buf", Bytes::mib(1), ir::BufferRole::weights, true);
    b.collective(r, r == 0 ? 0 : side, ir::CollectiveKind::broadcast, pair, 0, Bytes::mib(1), buf,
                 buf);
  }
  b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(8e9)), {}, {});
  const ir::Program p = std::move(b).finish();
  profile::Profile prof = one_rank_per_core(SimTime::us(50));
  prof.communication.push_back(broadcast_curve(2, profile::CommScope::shared_memory, SimTime::ms(8),
                                               SimTime::ms(6), SimTime(), SimTime::ms(6)));
  auto with = simulate_recorded(p, t, prof);
  auto zero = simulate_recorded(p, t, [&] {
    profile::Profile z = prof;
    z.host->wakeup_cost = SimTime();
    return z;
  }());
  ASSERT_TRUE(with.ok() && zero.ok());
  const report::OpRecord bc = first_op(p, *with, 1, ir::OpKind::collective);
  const std::int64_t wait_ns = (bc.end - bc.start).picoseconds() / 1000;
  const double n = host_wait::wakeups(wait_ns - 6'000'000, 0);
  EXPECT_GT(host_wait::wakeups(wait_ns, 0), n + 2.0);  // the copy's 6 ms hold 3 long sleeps
  const report::OpRecord c = first_op(p, *with, 1, ir::OpKind::compute);
  const report::OpRecord c0 = first_op(p, *zero, 1, ir::OpKind::compute);
  ASSERT_GT(c.end, bc.end);
  EXPECT_NEAR(static_cast<double>((c.end - c0.end).picoseconds()), (n + 1.0) * 50e6, 2.0);
}

// A broadcast's root spends CPU time on its own core while the members copy (profile root_cpu,
// sim/run/host_cpu.cpp charge_broadcast_root). 2x2-cpu: rank 0 broadcasts 1 MiB to rank 2 (core
// 1) while rank 1 computes ~20 ms on rank 0's core 0. The 2-rank curve: 3 ms, the root's thread 2
// ms of CPU time, the member's 1 ms. With the roles, rank 1's GEMM shares core 0 with the root's 2
// ms and ends 2 ms later (processor sharing: 4 ms at half speed); rank 2's copy costs the member's
// 1 ms. Without them (cpu only, the busiest member's 2 ms, as before) the root costs its core
// nothing and rank 2's copy costs 2 ms.
TEST(Executor, HostBroadcastRootCpuIsChargedOnTheRootsCore) {
  const topo::Topology t = testing::shipped("2x2-cpu");
  auto run = [&](bool roles) {
    profile::Profile prof;
    prof.host = profile::HostProfile{};
    prof.host->cores_per_host = 2;
    prof.host->ranks_per_core = 2;
    prof.communication.push_back(roles ? broadcast_curve(2, profile::CommScope::shared_memory,
                                                         SimTime::ms(3), SimTime::ms(2),
                                                         SimTime::ms(2), SimTime::ms(1))
                                       : broadcast_curve(2, profile::CommScope::shared_memory,
                                                         SimTime::ms(3), SimTime::ms(2)));
    ir::ProgramBuilder b(testing::header_for(t, 4, "fp32"), 4);
    const ir::CommId pair = b.communicator("pair", {0, 2});
    b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(0.24e9)), {}, {});
    for (ir::Rank r : {0, 2}) {
      const ir::BufferId buf = b.buffer(r, "buf", Bytes::mib(1), ir::BufferRole::weights, true);
      b.collective(r, 0, ir::CollectiveKind::broadcast, pair, 0, Bytes::mib(1), buf, buf);
    }
    const ir::Program p = std::move(b).finish();
    auto r = simulate_recorded(p, t, prof);
    if (!r.ok()) return std::pair<report::OpRecord, report::OpRecord>{};
    return std::pair{first_op(p, *r, 1, ir::OpKind::compute),
                     first_op(p, *r, 2, ir::OpKind::collective)};
  };
  const auto [gemm, copy] = run(true);
  const auto [gemm_before, copy_before] = run(false);
  EXPECT_EQ(gemm.end - gemm_before.end, SimTime::ms(2));
  EXPECT_EQ(copy_before.end - copy.end, SimTime::ms(1));
}

// On CPU topologies a compute op's record carries the core work the simulator gave it (the
// measured report's counterpart is its thread's CPU time), which sharing the core does not
// change. 2x2-cpu, ranks 0 and 1 on core 0 each run the same GEMM at once, rank 2 runs it alone
// on core 1: all three carry the same work, equal to the lone op's duration, while the shared
// ones take longer; the forward class sums it. Communication ops carry the work charged on their
// threads; ops on a device topology carry none.
TEST(Executor, HostComputeOpsCarryTheirCoreWork) {
  const topo::Topology t = testing::shipped("2x2-cpu");
  ir::ProgramBuilder b(testing::header_for(t, 4, "fp32"), 4);
  const ir::CommId pair = b.communicator("pair", {2, 3});
  const ir::BufferId x = b.buffer(2, "x", Bytes(4), ir::BufferRole::activation, true);
  const ir::BufferId y = b.buffer(3, "y", Bytes(4), ir::BufferRole::activation, true);
  for (ir::Rank r = 0; r < 3; ++r)
    b.compute(r, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(4e9)), {}, {});
  b.send(2, 0, 3, pair, Bytes(4), x);
  b.recv(3, 0, 2, pair, Bytes(4), y);
  const ir::Program p = std::move(b).finish();
  SimOptions o;
  o.record_ops = true;
  auto r = simulate(p, t, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const report::OpRecord alone = first_op(p, *r, 2, ir::OpKind::compute);
  ASSERT_TRUE(alone.cpu.has_value());
  EXPECT_GT(*alone.cpu, SimTime());
  EXPECT_EQ(*alone.cpu, alone.end - alone.start);
  for (ir::Rank shared : {0, 1}) {
    const report::OpRecord c = first_op(p, *r, shared, ir::OpKind::compute);
    ASSERT_TRUE(c.cpu.has_value());
    EXPECT_EQ(*c.cpu, *alone.cpu);
    EXPECT_GT((c.end - c.start).seconds(), 1.25 * c.cpu->seconds()) << "rank " << shared;
  }
  // The transfers carry the work charged on their threads (tawexec measures a transfer's thread
  // CPU time too): the receiver copies (CMA), the sender's thread only waits.
  const report::OpRecord send = first_op(p, *r, 2, ir::OpKind::send);
  const report::OpRecord recv = first_op(p, *r, 3, ir::OpKind::recv);
  ASSERT_TRUE(send.cpu.has_value() && recv.cpu.has_value());
  EXPECT_GT(*recv.cpu, SimTime());
  EXPECT_LE(*recv.cpu, recv.end - recv.start);
  bool found = false;
  for (const report::OpClassTotals& c : r->op_classes) {
    ASSERT_TRUE(c.cpu.has_value()) << c.name;
    if (c.name == "forward") {
      found = true;
      EXPECT_EQ(*c.cpu, *alone.cpu * 3);
    }
  }
  EXPECT_TRUE(found);
  // A device topology: no core work.
  const topo::Topology gpu = testing::shipped("dgx-a100");
  ir::ProgramBuilder g(testing::header_for(gpu, 1), 1);
  g.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, g.cost(testing::gemm_cost(1e9)), {}, {});
  auto d = simulate(std::move(g).finish(), gpu, o);
  ASSERT_TRUE(d.ok());
  ASSERT_FALSE(d->ops.empty());
  EXPECT_FALSE(d->ops[0].cpu.has_value());
}

// The same with a reduce to rank 0, alone in its unit (the host backend's direct reduce): the
// root copies each member's message on its own core (0.1 ms latency, 0.4 ms of copy) as the
// member posts, and sums when all are in (the reduce curve's 2 ms of root CPU less 3 messages'
// 1.2 ms: 0.8 ms). Ranks 1 and 2 post at once: their two copies share core 0, both done at
// 0.1 + 2 x 0.4 = 0.9 ms, and their sends complete then. Rank 3's copy takes 0.5 ms after its
// post, the root's sums 0.8 ms more.
TEST(Executor, HostDirectReduceCopiesAsMembersPostThenSums) {
  const topo::Topology t = testing::shipped("2x2-cpu");
  const auto ops =
      rooted_with_a_late_member(t, 4, ir::CollectiveKind::reduce, host_curves(2, 2, true));
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[1].end, SimTime::us(900));
  EXPECT_EQ(ops[2].end, SimTime::us(900));
  EXPECT_GT(ops[3].start, SimTime::ms(15));
  EXPECT_EQ(ops[3].end - ops[3].start, SimTime::us(500));
  EXPECT_EQ(ops[0].end - ops[3].end, SimTime::us(800));
}

// The host backend zeroes a buffer an alloc hands out when its first use can read it
// (common/ir/zeroing.h), on the interpreter's thread, before it issues anything else: with the
// profile's host.zero_bandwidth the alloc takes its bytes at that rate on its rank's core and the
// op after it on its stream starts then. localhost-cpu, rank 0: a 10 MB gradient buffer is
// allocated and accumulated from (the accumulate reads it): 10 MB at 10 GB/s = 1 ms. A buffer
// first filled whole by a receive is not zeroed; without the figure no alloc takes time.
TEST(Executor, HostAllocZeroesWhatItsFirstUseReads) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  auto compute_start = [&](bool read_first, bool with_figure) {
    ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
    const ir::CommId pair = b.communicator("pair", {0, 1});
    const ir::BufferId g =
        b.buffer(0, "g", Bytes(10'000'000), ir::BufferRole::gradient_staging, false);
    const ir::BufferId acc = b.buffer(0, "acc", Bytes(10'000'000), ir::BufferRole::gradient, true);
    const ir::BufferId src = b.buffer(1, "src", Bytes(10'000'000), ir::BufferRole::weights, true);
    b.alloc(0, 0, g);
    if (!read_first) {
      b.recv(0, 0, 1, pair, Bytes(10'000'000), g);
      b.send(1, 0, 0, pair, Bytes(10'000'000), src);
    }
    b.compute(0, 0, ir::ComputeKind::accumulate, 0, 1, 0, b.cost(testing::gemm_cost(1e6)), {g},
              {acc});
    const ir::Program p = std::move(b).finish();
    profile::Profile prof = one_rank_per_core(SimTime());
    if (with_figure) prof.host->zero_bandwidth = Bandwidth::bytes_per_second(10e9);
    SimOptions o;
    o.record_ops = true;
    o.profile = prof;
    auto r = simulate(p, t, o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    const report::OpRecord alloc = first_op(p, *r, 0, ir::OpKind::alloc);
    const report::OpRecord c = first_op(p, *r, 0, ir::OpKind::compute);
    return std::make_pair(alloc.end - alloc.start, c.start);
  };
  const auto [zeroing, after] = compute_start(true, true);
  EXPECT_EQ(zeroing, SimTime::ms(1));
  EXPECT_EQ(after, SimTime::ms(1));
  EXPECT_EQ(compute_start(true, false).first, SimTime());
  EXPECT_EQ(compute_start(false, true).first, SimTime());
}

// The interpreter is awake while it fills an alloc's buffer (exec/host/host_backend.cpp issue), so
// completions meanwhile cost no wake-up of it. localhost-cpu, rank 1: a GEMM Y on its compute
// stream throughout; two 4-byte receives from rank 0, one after the other on a side stream, both
// done within ~a microsecond; on a third stream an alloc of 10 MB that its first use (an
// accumulate there) reads, so zeroed at 10 GB/s (1 ms) when `fill`. With wake-ups at 50 us, Y
// ends later than with them at 0 by the receives' wait wake-ups n, the interpreter's wake-up for
// the accumulate's completion and: with the fill, the accumulate's thread's hand-off (it waited
// for the fill); without, the interpreter's wake-ups for the two receives' completions.
TEST(Executor, HostInterpreterFillingDoesNotWakeForACompletion) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  auto y_later = [&](bool fill) {
    ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
    const ir::StreamId side = b.stream("side");
    const ir::StreamId third = b.stream("third");
    const ir::CommId pair = b.communicator("pair", {0, 1});
    const ir::BufferId x = b.buffer(0, "x", Bytes(4), ir::BufferRole::activation, true);
    const ir::BufferId y = b.buffer(1, "y", Bytes(4), ir::BufferRole::activation, true);
    const ir::BufferId g =
        b.buffer(1, "g", Bytes(10'000'000), ir::BufferRole::gradient_staging, false);
    const ir::BufferId acc = b.buffer(1, "acc", Bytes(10'000'000), ir::BufferRole::gradient, true);
    b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, b.cost(testing::gemm_cost(64e9)), {}, {});
    for (int i = 0; i < 2; ++i) {
      b.send(0, 0, 1, pair, Bytes(4), x);
      b.recv(1, side, 0, pair, Bytes(4), y);
    }
    b.alloc(1, third, g);
    b.compute(1, third, ir::ComputeKind::accumulate, 0, 1, 0, b.cost(testing::gemm_cost(1e6)), {g},
              {acc});
    const ir::Program p = std::move(b).finish();
    auto y_end = [&](SimTime cost, double* waits) {
      profile::Profile prof = one_rank_per_core(cost);
      if (fill) prof.host->zero_bandwidth = Bandwidth::bytes_per_second(10e9);
      SimOptions o;
      o.record_ops = true;
      o.profile = prof;
      auto r = simulate(p, t, o);
      EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
      SimTime end, last_recv;
      double n = 0.0;
      for (const report::OpRecord& rec : r->ops) {
        if (rec.rank != 1) continue;
        const ir::OpKind kind = p.ranks[1].ops[static_cast<std::size_t>(rec.op)].kind;
        if (kind == ir::OpKind::compute && rec.op == 0) end = rec.end;
        if (kind == ir::OpKind::recv) {
          n += host_wait::doorbell_wakeups((rec.end - rec.start).picoseconds() / 1000);
          last_recv = std::max(last_recv, rec.end);
        }
      }
      EXPECT_LT(last_recv, SimTime::us(100));  // within the fill
      if (waits != nullptr) *waits = n;
      return end;
    };
    double waits = 0.0;
    const SimTime with = y_end(SimTime::us(50), &waits);
    return std::make_pair(static_cast<double>((with - y_end(SimTime(), nullptr)).picoseconds()),
                          waits);
  };
  const auto [filling, n] = y_later(true);
  EXPECT_NEAR(filling, (n + 2.0) * 50e6, 2.0);
  const auto [idle, n2] = y_later(false);
  EXPECT_NEAR(idle, (n2 + 3.0) * 50e6, 2.0);
}

// The time of a 4 MiB message from rank 1 to rank 0 of localhost-cpu with the hot sendrecv curve
// (1 ms at 4 MiB) and `extra` curves: rank 0 writes its receive buffer just before; rank 1 writes
// its send buffer, then, with `op_between`, runs one more compute op on another buffer (reading
// and writing 1 GB of it with `streaming`, else a GEMM of 10^12 flops: seconds of compute).
SimTime host_send_time(bool op_between, bool streaming,
                       const std::vector<profile::CommMeasurement>& extra) {
  const topo::Topology t = testing::shipped("localhost-cpu");
  constexpr std::uint64_t kMsg = 4 << 20;
  ir::ProgramBuilder b(testing::header_for(t, 2, "fp32"), 2);
  const ir::CommId pair = b.communicator("pair", {0, 1});
  const ir::BufferId w = b.buffer(1, "w", Bytes(kMsg), ir::BufferRole::weights, true);
  const ir::BufferId other = b.buffer(1, "x", Bytes(kMsg), ir::BufferRole::activation, true);
  const ir::BufferId r = b.buffer(0, "r", Bytes(kMsg), ir::BufferRole::weights, true);
  const ir::CostId flops_only = b.cost(testing::gemm_cost(1e6));
  ir::Cost streams = testing::gemm_cost(1e6);
  streams.bytes[static_cast<std::size_t>(ir::OpClass::elementwise)] = 1e9;
  const ir::CostId big = b.cost(streams);
  const ir::CostId long_gemm = b.cost(testing::gemm_cost(1e12));
  b.compute(0, 0, ir::ComputeKind::forward, 0, 1, 0, flops_only, {}, {r});
  b.recv(0, 0, 1, pair, Bytes(kMsg), r);
  b.compute(1, 0, ir::ComputeKind::forward, 0, 1, 0, flops_only, {}, {w});
  if (op_between)
    b.compute(1, 0, ir::ComputeKind::forward, 1, 2, 0, streaming ? big : long_gemm, {}, {other});
  b.send(1, 0, 0, pair, Bytes(kMsg), w);
  const ir::Program p = std::move(b).finish();
  profile::Profile prof = one_rank_per_core(SimTime());
  prof.communication.push_back({profile::CommOp::sendrecv,
                                profile::CommScope::shared_memory,
                                2,
                                {{Bytes(8), SimTime::us(10), SimTime::us(5)},
                                 {Bytes(kMsg), SimTime::ms(1), SimTime::us(500)}}});
  for (const profile::CommMeasurement& m : extra)
    prof.communication.push_back(m);
  SimOptions o;
  o.record_ops = true;
  o.profile = prof;
  auto res = simulate(p, t, o);
  EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().to_string());
  if (!res.ok()) return SimTime();
  const report::OpRecord send = first_op(p, *res, 1, ir::OpKind::send);
  return send.end - send.start;
}

// A message's cost lies between the hot and the cold curve by the bytes its host moved since its
// buffers were last used (sim/network/mpi_shm.h cold_fraction): sent right after the op that
// wrote it, it takes the hot curve's time; sent after an op that streams 1 GB, the cold one's.
TEST(Executor, HostMessageAfterALargeOpTakesTheColdCurve) {
  profile::CommMeasurement cold{profile::CommOp::sendrecv,
                                profile::CommScope::shared_memory,
                                2,
                                {{Bytes::mib(1), SimTime::us(800), SimTime::us(400)},
                                 {Bytes::mib(4), SimTime::ms(3), SimTime::us(1500)}}};
  cold.cold_pool = Bytes::mib(64);
  EXPECT_EQ(host_send_time(false, false, {cold}), SimTime::ms(1));
  EXPECT_EQ(host_send_time(true, true, {cold}), SimTime::ms(3));
  EXPECT_EQ(host_send_time(true, true, {}), SimTime::ms(1));
}

// With curves measured after compute (profile after_compute), a message whose buffers' core
// computed since their last use takes them, by the compute since (sim/network/mpi_shm.h): the
// receive buffer, written by its rank's last compute op, is hot; the send buffer, written before
// another compute op of its rank (longer than the curve's burst), is after compute, however few
// bytes that op moved. Without the curves, the reuse distance.
TEST(Executor, HostMessageAfterComputeTakesTheAfterComputeCurve) {
  profile::CommMeasurement after{profile::CommOp::sendrecv,
                                 profile::CommScope::shared_memory,
                                 2,
                                 {{Bytes::mib(1), SimTime::us(800), SimTime::us(400)},
                                  {Bytes::mib(4), SimTime::ms(3), SimTime::us(2500)}}};
  after.after_compute = SimTime::ms(4);
  // Half the message's buffers after compute: halfway between 1 ms and 3 ms (to a picosecond's
  // rounding).
  EXPECT_NEAR(host_send_time(true, false, {after}).seconds(), 2e-3, 1e-11);
  EXPECT_NEAR(host_send_time(false, false, {after}).seconds(), 1e-3, 1e-11);
  EXPECT_NEAR(host_send_time(true, false, {}).seconds(), 1e-3, 1e-11);
}

// libnbc pipelines a chain on more than 4 ranks: a broadcast on 3x2-cpu's 6 ranks starts as a
// whole at its last member's post, all members ending together.
TEST(Executor, HostBroadcastOnMoreThanFourRanksStartsWhole) {
  const topo::Topology t = testing::shipped("3x2-cpu");
  const auto ops =
      rooted_with_a_late_member(t, 6, ir::CollectiveKind::broadcast, host_curves(2, 3, true));
  ASSERT_EQ(ops.size(), 6u);
  for (const report::OpRecord& rec : ops) {
    EXPECT_EQ(rec.end, ops[0].end);
    EXPECT_GT(rec.end, ops[5].start);
  }
}

}  // namespace
}  // namespace tawpipe::sim
