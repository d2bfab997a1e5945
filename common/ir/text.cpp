#include "common/ir/text.h"

#include <cstdio>
#include <string_view>

namespace tawpipe::ir {
namespace {

std::string num(std::int64_t v) {
  return std::to_string(v);
}

std::string exact_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string rank_name(const Program& p, Rank r) {
  if (r == kNone) return "none";
  if (r < 0 || r >= p.num_ranks()) return "r?" + num(r);
  return "r" + num(r);
}

std::string buffer_name(const RankProgram& rp, BufferId b) {
  if (b < 0 || static_cast<std::size_t>(b) >= rp.buffers.size()) return "?" + num(b);
  return rp.buffers[static_cast<std::size_t>(b)].name;
}

std::string comm_name(const Program& p, CommId c) {
  if (c < 0 || static_cast<std::size_t>(c) >= p.communicators.size()) return "?" + num(c);
  return p.communicators[static_cast<std::size_t>(c)].name;
}

std::string stream_name(const Program& p, StreamId s) {
  if (s >= p.streams.size()) return "?" + num(s);
  return p.streams[s];
}

// A buffer list from the pool; tolerates out-of-range offsets (prints `?`).
std::string buffer_list(const RankProgram& rp, std::uint32_t offset, std::uint32_t count) {
  std::string out = "[";
  if (static_cast<std::uint64_t>(offset) + count > rp.buffer_pool.size()) return "[?]";
  for (std::uint32_t i = 0; i < count; ++i) {
    if (i > 0) out += ',';
    out += buffer_name(rp, rp.buffer_pool[offset + i]);
  }
  return out + "]";
}

std::string layers(std::int32_t b, std::int32_t e) {
  return "[" + num(b) + "," + num(e) + ")";
}

}  // namespace

std::string describe_bytes(std::uint64_t bytes) {
  if (bytes < 1000) return std::to_string(bytes);
  static constexpr const char* kUnits[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes) / 1000.0;
  std::size_t u = 0;
  while (v >= 1000.0 && u + 1 < std::size(kUnits)) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::string(buf) + kUnits[u] + "(" + std::to_string(bytes) + ")";
}

std::string describe_tensor(const TensorRef& t) {
  std::string out;
  switch (t.kind) {
    case TensorKind::none:
      return "none";
    case TensorKind::weights:
    case TensorKind::gradient:
      out = std::string(name(t.kind)) + layers(t.layer_begin, t.layer_end);
      if (t.pieces != 1 || t.piece != 0) out += "p" + num(t.piece) + "/" + num(t.pieces);
      return out;
    case TensorKind::activation:
      return "act(s" + num(t.sample) + "@" + num(t.layer_begin) + ")";
    case TensorKind::activation_grad:
      return "actgrad(s" + num(t.sample) + "@" + num(t.layer_begin) + ")";
  }
  return "?tensor";
}

std::string describe_op(const Program& p, Rank rank, OpIndex index, bool with_deps) {
  std::string out = rank_name(p, rank) + " #" + num(index);
  if (rank < 0 || rank >= p.num_ranks()) return out + " ?";
  const RankProgram& rp = p.ranks[static_cast<std::size_t>(rank)];
  if (index < 0 || static_cast<std::size_t>(index) >= rp.ops.size()) return out + " ?";
  const Op& op = rp.ops[static_cast<std::size_t>(index)];
  out += " " + stream_name(p, op.stream) + " ";
  const auto buf = [&](std::uint32_t i) {
    if (static_cast<std::uint64_t>(op.buffers_offset) + i >= rp.buffer_pool.size())
      return std::string("?");
    return buffer_name(rp, rp.buffer_pool[op.buffers_offset + i]);
  };
  switch (op.kind) {
    case OpKind::compute:
      out += name(op.compute);
      out += " layers=" + layers(op.layer_begin, op.layer_end);
      if (op.sample != kNone) out += " sample=" + num(op.sample);
      out += " cost=" + (op.cost == kNone ? std::string("none") : num(op.cost));
      out += " reads=" + buffer_list(rp, op.buffers_offset, op.reads_count);
      out += " writes=" + buffer_list(rp, op.buffers_offset + op.reads_count, op.writes_count);
      break;
    case OpKind::send:
    case OpKind::recv:
      out += name(op.kind);
      out += (op.kind == OpKind::send ? " to=" : " from=") + rank_name(p, op.peer);
      out += " comm=" + comm_name(p, op.comm) + " bytes=" + describe_bytes(op.bytes);
      out += " buf=" + (op.reads_count + op.writes_count == 1 ? buf(0) : std::string("?"));
      break;
    case OpKind::collective:
      out += name(op.collective);
      out += " comm=" + comm_name(p, op.comm);
      if (op.peer != kNone) out += " root=" + rank_name(p, op.peer);
      out += " bytes=" + describe_bytes(op.bytes);
      if (op.reads_count == 1 && op.writes_count == 1) {
        out += " send=" + buf(0) + " recv=" + buf(1);
      } else {
        out += " reads=" + buffer_list(rp, op.buffers_offset, op.reads_count) +
               " writes=" + buffer_list(rp, op.buffers_offset + op.reads_count, op.writes_count);
      }
      break;
    case OpKind::copy:
      out += "copy bytes=" + describe_bytes(op.bytes);
      if (op.reads_count == 1 && op.writes_count == 1) {
        out += " src=" + buf(0) + " dst=" + buf(1);
      } else {
        out += " reads=" + buffer_list(rp, op.buffers_offset, op.reads_count) +
               " writes=" + buffer_list(rp, op.buffers_offset + op.reads_count, op.writes_count);
      }
      break;
    case OpKind::alloc:
    case OpKind::free:
      out += name(op.kind);
      out += " buf=" + buffer_list(rp, op.buffers_offset + op.reads_count, op.writes_count);
      break;
    default:
      out += "?kind" + num(static_cast<int>(op.kind));
  }
  if (op.group != kNone) out += " group=" + num(op.group);
  if (with_deps) {
    out += " deps=[";
    if (static_cast<std::uint64_t>(op.deps_offset) + op.deps_count > rp.dep_pool.size()) {
      out += "?";
    } else {
      for (std::uint32_t i = 0; i < op.deps_count; ++i) {
        if (i > 0) out += ',';
        out += num(rp.dep_pool[op.deps_offset + i]);
      }
    }
    out += "]";
  }
  return out;
}

std::string dump_text(const Program& p) {
  const Header& h = p.header;
  std::string out;
  const auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  line("tawpipe-ir " + num(h.format_version));
  std::string sched = "schedule " + h.schedule;
  for (const auto& [key, value] : h.options)
    sched += " " + key + "=" + value;
  line(sched);
  line("model " + h.model + " layers=" + num(h.layers) +
       " params=" + std::to_string(h.model_params));
  line("train seq_len=" + num(h.seq_len) + " micro_batch_size=" + num(h.micro_batch_size) +
       " micro_batches=" + num(h.micro_batches) + " global_batch=" + num(h.global_batch) +
       " dtype=" + h.dtype + " recompute=" + h.recompute);
  std::string topo = "topology " + h.topology + " hash=" + h.topology_hash + " placement=[";
  for (std::size_t i = 0; i < h.placement.size(); ++i)
    topo += (i > 0 ? " " : "") + num(h.placement[i]);
  line(topo + "]");
  line("ranks " + num(p.num_ranks()) + " streams " +
       num(static_cast<std::int64_t>(p.streams.size())) + " communicators " +
       num(static_cast<std::int64_t>(p.communicators.size())) + " costs " +
       num(static_cast<std::int64_t>(p.costs.size())));
  for (std::size_t i = 0; i < p.streams.size(); ++i)
    line("stream " + num(static_cast<std::int64_t>(i)) + " " + p.streams[i]);
  for (std::size_t i = 0; i < p.communicators.size(); ++i) {
    std::string c =
        "comm " + num(static_cast<std::int64_t>(i)) + " " + p.communicators[i].name + " members=[";
    for (std::size_t m = 0; m < p.communicators[i].members.size(); ++m)
      c += (m > 0 ? " " : "") + num(p.communicators[i].members[m]);
    line(c + "]");
  }
  static constexpr const char* kClass[] = {"gemm", "attention", "elementwise"};
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    const Cost& c = p.costs[i];
    std::string s = "cost " + num(static_cast<std::int64_t>(i));
    for (std::size_t k = 0; k < kOpClassCount; ++k)
      s += std::string(" ") + kClass[k] + "=" + exact_double(c.flops[k]) + "/" +
           exact_double(c.bytes[k]);
    s += " recompute=" + exact_double(c.recompute_flops) +
         " workspace=" + describe_bytes(c.workspace_bytes);
    line(s);
    for (const model::Kernel& k : c.kernels) {
      std::string ks = "  kernel " + k.name + " " + std::string(model::to_string(k.cls)) + " x" +
                       num(k.count) + " [";
      for (std::size_t d = 0; d < k.shape.size(); ++d)
        ks += (d > 0 ? " " : "") + num(k.shape[d]);
      ks += "]";
      if (k.causal) ks += " causal";
      if (k.fused) ks += " fused";
      if (k.recompute) ks += " recompute";
      line(ks + " flops=" + exact_double(k.flops) + " bytes=" + exact_double(k.bytes));
    }
  }
  for (Rank r = 0; r < p.num_ranks(); ++r) {
    const RankProgram& rp = p.ranks[static_cast<std::size_t>(r)];
    line("rank " + num(r) + " buffers " + num(static_cast<std::int64_t>(rp.buffers.size())) +
         " ops " + num(static_cast<std::int64_t>(rp.ops.size())));
    for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
      const Buffer& buf = rp.buffers[b];
      std::string s = "r" + num(r) + " buf " + num(static_cast<std::int64_t>(b)) + " " + buf.name +
                      " " + name(buf.role) + " " + (buf.persistent ? "persistent " : "transient ") +
                      describe_bytes(buf.size.count());
      if (buf.initial != TensorRef{}) s += " init=" + describe_tensor(buf.initial);
      line(s);
    }
    for (std::size_t i = 0; i < rp.ops.size(); ++i)
      line(describe_op(p, r, static_cast<OpIndex>(i), true));
  }
  return out;
}

}  // namespace tawpipe::ir
