// The doorbell slot a host-backend send or receive rings (exec/host/host_backend.h
// peer_streams_of_p2p): the IR stream of the peer's matching op, the k-th recv (send) from (to)
// this rank on the communicator, whatever stream this rank's own op is on.
#include <vector>

#include <gtest/gtest.h>

#include "common/ir/builder.h"
#include "exec/host/host_backend.h"

namespace tawpipe::exec::host {
namespace {

TEST(PeerStreams, TheMatchingOpsStreamPerSendAndReceive) {
  ir::ProgramBuilder b(ir::Header{}, 3);
  const ir::StreamId fwd = b.stream("fwd");      // 1 (0 is compute)
  const ir::StreamId bwd = b.stream("bwd");      // 2
  const ir::StreamId grads = b.stream("grads");  // 3
  const ir::CommId world = b.communicator("world", {0, 1, 2});
  const ir::CommId pair = b.communicator("pair", {0, 1});
  std::vector<ir::BufferId> buf;
  for (ir::Rank r = 0; r < 3; ++r)
    buf.push_back(b.buffer(r, "x", Bytes(64), ir::BufferRole::activation, true));
  // Rank 0 sends twice to rank 1 on `world` from one stream; rank 1 receives the first on bwd
  // and the second on grads. On `pair` (another communicator, its own sequence) rank 1 sends on
  // fwd and rank 0 receives on compute. Rank 2 receives from rank 0 on bwd.
  const ir::OpIndex s0 = b.send(0, fwd, 1, world, Bytes(64), buf[0]);
  const ir::OpIndex s1 = b.send(0, fwd, 1, world, Bytes(64), buf[0]);
  const ir::OpIndex s2 = b.send(0, fwd, 2, world, Bytes(64), buf[0]);
  const ir::OpIndex r3 = b.recv(0, 0, 1, pair, Bytes(64), buf[0]);
  const ir::OpIndex a = b.recv(1, bwd, 0, world, Bytes(64), buf[1]);
  const ir::OpIndex c = b.recv(1, grads, 0, world, Bytes(64), buf[1]);
  const ir::OpIndex d = b.send(1, fwd, 0, pair, Bytes(64), buf[1]);
  const ir::OpIndex e = b.recv(2, bwd, 0, world, Bytes(64), buf[2]);
  const ir::Program p = std::move(b).finish();

  const std::vector<int> zero = peer_streams_of_p2p(p, 0);
  ASSERT_EQ(zero.size(), p.ranks[0].ops.size());
  EXPECT_EQ(zero[static_cast<std::size_t>(s0)], bwd);
  EXPECT_EQ(zero[static_cast<std::size_t>(s1)], grads);
  EXPECT_EQ(zero[static_cast<std::size_t>(s2)], bwd);
  EXPECT_EQ(zero[static_cast<std::size_t>(r3)], fwd);
  const std::vector<int> one = peer_streams_of_p2p(p, 1);
  EXPECT_EQ(one[static_cast<std::size_t>(a)], fwd);
  EXPECT_EQ(one[static_cast<std::size_t>(c)], fwd);
  EXPECT_EQ(one[static_cast<std::size_t>(d)], 0);
  EXPECT_EQ(peer_streams_of_p2p(p, 2)[static_cast<std::size_t>(e)], fwd);
}

}  // namespace
}  // namespace tawpipe::exec::host
