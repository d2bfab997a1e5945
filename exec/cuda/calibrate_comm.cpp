// The communication half of `tawexec calibrate --backend cuda` (calibrate_bench.h): NCCL
// collectives by size inside a node and across nodes, and send/recv exchanges, timed with CUDA
// events on every rank. Sizes count as nccl-tests does: the whole buffer of an all-reduce and
// broadcast, the gathered output of an all-gather, the input of a reduce-scatter, the message
// of a send/recv exchange (sent and received at once).
#include <algorithm>
#include <functional>

#include "exec/cuda/calibrate_bench.h"

namespace tawpipe::exec::cuda {

using device::CommHandle;
using device::DevicePtr;
using device::DType;
using profile::CommOp;
using profile::CommScope;

namespace {

constexpr std::uint64_t kSizes[] = {std::uint64_t{64} << 10, std::uint64_t{1} << 20,
                                    std::uint64_t{16} << 20, std::uint64_t{128} << 20};
constexpr std::uint64_t kLargest = std::uint64_t{128} << 20;

int reps_for(std::uint64_t bytes) {
  return bytes >= (std::uint64_t{16} << 20) ? 5 : 20;
}

/// Times the collectives of one scope on `comm` (of `n` ranks); appends one curve per op.
Status collectives(EventTimer& t, CommHandle comm, int n, CommScope scope, DevicePtr send,
                   DevicePtr recv, std::vector<profile::CommMeasurement>& out) {
  const auto un = static_cast<std::uint64_t>(n);
  for (CommOp op :
       {CommOp::all_reduce, CommOp::all_gather, CommOp::reduce_scatter, CommOp::broadcast}) {
    profile::CommMeasurement m;
    m.op = op;
    m.scope = scope;
    m.ranks = n;
    for (std::uint64_t size : kSizes) {
      const std::uint64_t elems = size / 2;  // bf16
      device::Collective kind = device::Collective::all_reduce;
      std::uint64_t count = elems;
      if (op == CommOp::all_gather || op == CommOp::reduce_scatter) count = elems / un;
      if (op == CommOp::all_gather) kind = device::Collective::all_gather;
      if (op == CommOp::reduce_scatter) kind = device::Collective::reduce_scatter;
      if (op == CommOp::broadcast) kind = device::Collective::broadcast;
      const int root = op == CommOp::broadcast ? 0 : -1;
      auto s = t.time(reps_for(size), [&] {
        return t.api.collective(kind, send, recv, count, DType::bf16, root, comm, t.stream);
      });
      if (!s.ok()) return s.error();
      m.points.push_back({Bytes(size), SimTime::from_seconds(*s)});
    }
    out.push_back(std::move(m));
  }
  return Status::success();
}

/// Exchanges (send + recv of `size` each way, one NCCL group) with `peer` on a pair
/// communicator; one curve, and the link figures: latency = an 8-byte exchange, bandwidth =
/// the largest size over (time - latency).
Status exchanges(EventTimer& t, CommHandle pair, int peer, CommScope scope, DevicePtr send,
                 DevicePtr recv, std::vector<profile::CommMeasurement>& out,
                 profile::LinkProfile& link) {
  auto exchange = [&](std::uint64_t bytes) {
    return t.time(reps_for(bytes), [&]() -> Status {
      TAWPIPE_TRY(t.api.group_start());
      TAWPIPE_TRY(t.api.send(send, bytes, DType::u8, peer, pair, t.stream));
      TAWPIPE_TRY(t.api.recv(recv, bytes, DType::u8, peer, pair, t.stream));
      return t.api.group_end();
    });
  };
  auto lat = exchange(8);
  if (!lat.ok()) return lat.error();
  profile::CommMeasurement m;
  m.op = CommOp::sendrecv;
  m.scope = scope;
  m.ranks = 2;
  double last = 0.0;
  for (std::uint64_t size : kSizes) {
    auto s = exchange(size);
    if (!s.ok()) return s.error();
    m.points.push_back({Bytes(size), SimTime::from_seconds(*s)});
    last = *s;
  }
  out.push_back(std::move(m));
  link.latency = SimTime::from_seconds(*lat);
  link.bandwidth =
      Bandwidth::bytes_per_second(static_cast<double>(kLargest) / std::max(last - *lat, 1e-9));
  return Status::success();
}

}  // namespace

Expected<CommResult> measure_comm(device::DeviceApi& api, CommHandle world, const Placement& at) {
  CommResult r;
  auto stream = api.stream_create();
  auto e0 = api.event_create();
  auto e1 = api.event_create();
  if (!stream.ok() || !e0.ok() || !e1.ok()) return make_error("cannot create stream or events");
  EventTimer t{api, *stream, *e0, *e1};
  auto buf = api.mem_alloc(2 * kLargest, *stream);
  if (!buf.ok()) return buf.error();
  TAWPIPE_TRY(api.mem_zero(*buf, 2 * kLargest, *stream));
  const DevicePtr send = *buf, recv = *buf + kLargest;
  const int nodes = at.nodes();
  // Every split is collective over the world: every rank makes each one, members or not.
  auto node = api.comm_split(world, at.node(), at.local());
  if (!node.ok()) return node.error();
  if (at.per_node >= 2)
    TAWPIPE_TRY(collectives(t, *node, at.per_node, CommScope::intra_node, send, recv, r.curves));
  auto rail = api.comm_split(world, at.local(), at.node());
  if (!rail.ok()) return rail.error();
  if (nodes >= 2)
    TAWPIPE_TRY(collectives(t, *rail, nodes, CommScope::inter_node, send, recv, r.curves));
  // Pairs inside a node: local ranks 0 and 1 of every node.
  const bool intra_member = at.per_node >= 2 && at.local() < 2;
  auto intra = api.comm_split(world, intra_member ? at.node() : -1, at.local());
  if (!intra.ok()) return intra.error();
  profile::LinkProfile link;
  if (intra_member) {
    TAWPIPE_TRY(
        exchanges(t, *intra, 1 - at.local(), CommScope::intra_node, send, recv, r.curves, link));
    r.links.push_back(link);
  }
  // Pairs across nodes: node 2k with node 2k + 1, same local rank, all at once.
  const bool inter_member = nodes >= 2 && (at.node() ^ 1) < nodes;
  auto inter =
      api.comm_split(world, inter_member ? at.local() * nodes + at.node() / 2 : -1, at.node() % 2);
  if (!inter.ok()) return inter.error();
  if (inter_member) {
    TAWPIPE_TRY(
        exchanges(t, *inter, 1 - at.node() % 2, CommScope::inter_node, send, recv, r.curves, link));
    r.links.push_back(link);
    r.nic_bandwidth = link.bandwidth->bytes_per_second();
  }
  TAWPIPE_TRY(api.mem_free(*buf, *stream));
  TAWPIPE_TRY(api.stream_synchronize(*stream));
  return r;
}

}  // namespace tawpipe::exec::cuda
