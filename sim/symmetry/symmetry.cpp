// Replica symmetry of a program (symmetry.h): the exact check that the rank shift by R maps the
// program onto itself.
#include "sim/symmetry/symmetry.h"

#include <algorithm>

#include "common/ir/replicas.h"

namespace tawpipe::sim {

namespace {

template <class T>
std::size_t idx(T v) {
  return static_cast<std::size_t>(v);
}

bool same_buffer(const ir::Buffer& a, const ir::Buffer& b) {
  // Names and micro-batch ids differ between replicas; nothing the simulator reads does.
  ir::TensorRef ia = a.initial, ib = b.initial;
  ia.sample = ib.sample = ir::kNone;
  return a.size == b.size && a.role == b.role && a.persistent == b.persistent && ia == ib;
}

/// Op `a` of rank r and op `b` of rank s(r): equal up to the shift (peers, communicators);
/// micro-batch ids and group ids are not compared (the group structure is, by the caller).
bool same_op(const ir::Op& a, const ir::Op& b, const ReplicaSymmetry& sym, std::int32_t n,
             std::int32_t r, std::string& why) {
  if (a.kind != b.kind || a.stream != b.stream || a.compute != b.compute ||
      a.collective != b.collective || a.layer_begin != b.layer_begin ||
      a.layer_end != b.layer_end || a.cost != b.cost || a.bytes != b.bytes ||
      a.deps_offset != b.deps_offset || a.deps_count != b.deps_count ||
      a.buffers_offset != b.buffers_offset || a.reads_count != b.reads_count ||
      a.writes_count != b.writes_count || (a.group == ir::kNone) != (b.group == ir::kNone)) {
    why = "ranks differ from their images";
    return false;
  }
  if ((a.comm == ir::kNone) != (b.comm == ir::kNone) ||
      (a.comm != ir::kNone && sym.comm_image[idx(a.comm)] != b.comm)) {
    why = "communicators do not map between replicas";
    return false;
  }
  if ((a.peer == ir::kNone) != (b.peer == ir::kNone) ||
      (a.peer != ir::kNone && (a.peer + sym.replica_ranks) % n != b.peer)) {
    why = a.kind == ir::OpKind::collective ? "a collective's root does not map between replicas"
                                           : "peers do not map between replicas";
    return false;
  }
  if ((a.kind == ir::OpKind::send || a.kind == ir::OpKind::recv) &&
      a.peer / sym.replica_ranks != r / sym.replica_ranks) {
    why = "point-to-point transfers between replicas";
    return false;
  }
  return true;
}

/// The communicator map c -> s(c) for period R, or false with `why`.
bool map_communicators(const ir::Program& program, ReplicaSymmetry& sym, std::string& why) {
  return ir::map_replica_communicators(program, sym.replica_ranks, sym.comm_image, why);
}

bool check_period(const ir::Program& program, const topo::Topology& topology, ReplicaSymmetry& sym,
                  std::string& why) {
  const std::int32_t n = program.num_ranks();
  const std::int32_t R = sym.replica_ranks;
  const auto& placement = program.header.placement;
  for (std::int32_t r = 0; r < n; ++r) {  // cheap first: sizes and devices
    const std::int32_t s = (r + R) % n;
    const ir::RankProgram& a = program.ranks[idx(r)];
    const ir::RankProgram& b = program.ranks[idx(s)];
    if (a.ops.size() != b.ops.size() || a.buffers.size() != b.buffers.size() ||
        a.dep_pool != b.dep_pool || a.buffer_pool.size() != b.buffer_pool.size()) {
      why = "ranks differ from their images";
      return false;
    }
    if (topology.device(placement[idx(r)]).name != topology.device(placement[idx(s)]).name) {
      why = "replicas run on different device kinds";
      return false;
    }
  }
  if (!map_communicators(program, sym, why)) return false;
  std::vector<std::int32_t> last_a(program.streams.size()), last_b(program.streams.size());
  for (std::int32_t r = 0; r < n; ++r) {
    const std::int32_t s = (r + R) % n;
    const ir::RankProgram& a = program.ranks[idx(r)];
    const ir::RankProgram& b = program.ranks[idx(s)];
    if (a.buffer_pool != b.buffer_pool) {
      why = "ranks differ from their images";
      return false;
    }
    for (std::size_t i = 0; i < a.buffers.size(); ++i) {
      if (!same_buffer(a.buffers[i], b.buffers[i])) {
        why = "ranks differ from their images";
        return false;
      }
    }
    // NCCL groups: an op joins the previous unit of its stream exactly when its image does
    // (sim/run/tables.cpp build_units).
    std::fill(last_a.begin(), last_a.end(), ir::kNone);
    std::fill(last_b.begin(), last_b.end(), ir::kNone);
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
      const ir::Op& x = a.ops[i];
      const ir::Op& y = b.ops[i];
      if (!same_op(x, y, sym, n, r, why)) return false;
      if (x.stream >= last_a.size()) {
        why = "stream id out of range";
        return false;
      }
      const bool join_a = x.group != ir::kNone && last_a[x.stream] == x.group;
      const bool join_b = y.group != ir::kNone && last_b[y.stream] == y.group;
      if (join_a != join_b) {
        why = "NCCL groups differ between replicas";
        return false;
      }
      if (!join_a) {
        last_a[x.stream] = x.group;
        last_b[y.stream] = y.group;
      }
    }
  }
  return true;
}

/// Replica 0's ops of a compact program: peers in replica 0, rooted collectives replica-local,
/// ids in range (what same_op checks that is not about the images).
bool check_stored_replica(const ir::Program& program, const ReplicaSymmetry& sym,
                          std::string& why) {
  const std::int32_t R = sym.replica_ranks;
  for (std::int32_t r = 0; r < R; ++r) {
    for (const ir::Op& op : program.ranks[idx(r)].ops) {
      if (op.stream >= program.streams.size() ||
          (op.comm != ir::kNone && (op.comm < 0 || idx(op.comm) >= sym.comm_image.size()))) {
        why = "stream or communicator id out of range";
        return false;
      }
      if ((op.kind == ir::OpKind::send || op.kind == ir::OpKind::recv) &&
          (op.peer < 0 || op.peer >= R)) {
        why = "point-to-point transfers between replicas";
        return false;
      }
      if (op.kind == ir::OpKind::collective && op.peer != ir::kNone &&
          (op.comm == ir::kNone || sym.cross_replica(op.comm))) {
        why = "a collective's root does not map between replicas";
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::optional<ReplicaSymmetry> compact_replica_symmetry(const ir::Program& program,
                                                        const topo::Topology& topology,
                                                        std::string& why) {
  const std::int32_t n = program.num_ranks();
  const std::int32_t R = program.stored_ranks;
  const auto& placement = program.header.placement;
  why = "a single replica";
  if (R <= 0 || n % R != 0 || n / R < 2 || topology.host_cpu() || placement.size() != idx(n))
    return {};
  for (std::int32_t r = R; r < n; ++r) {
    if (topology.device(placement[idx(r)]).name != topology.device(placement[idx(r % R)]).name) {
      why = "replicas run on different device kinds";
      return {};
    }
  }
  ReplicaSymmetry sym;
  sym.replica_ranks = R;
  sym.replicas = n / R;
  if (!map_communicators(program, sym, why) || !check_stored_replica(program, sym, why)) return {};
  why.clear();
  return sym;
}

std::optional<ReplicaSymmetry> find_replica_symmetry(const ir::Program& program,
                                                     const topo::Topology& topology,
                                                     std::string& why) {
  const std::int32_t n = program.num_ranks();
  why = "a single replica";
  if (n < 2 || topology.host_cpu() || program.header.placement.size() != idx(n)) return {};
  for (std::int32_t R = 1; R < n; ++R) {
    if (n % R != 0) continue;
    ReplicaSymmetry sym;
    sym.replica_ranks = R;
    sym.replicas = n / R;
    std::string reason;
    if (check_period(program, topology, sym, reason)) {
      why.clear();
      return sym;
    }
    why = reason;
  }
  return {};
}

}  // namespace tawpipe::sim
