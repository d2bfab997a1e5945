// JSON reader (format: FORMAT.md). Parses with nlohmann-json, then walks the DOM with a key
// path; every error is located in the source text by json_scan (error path only).
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/ir/json.h"
#include "common/ir/json_reader.h"
#include "common/strings.h"

namespace tawpipe::ir {
namespace {

using detail::PathStep;
using nlohmann::json;

using detail::ReadFailure;

// Row layouts, by kind (see FORMAT.md).
constexpr const char* kComputeFields[] = {"kind",   "stream", "deps",  "layer_begin", "layer_end",
                                          "sample", "cost",   "reads", "writes"};
constexpr const char* kP2PFields[] = {"kind", "stream", "deps",   "peer",
                                      "comm", "bytes",  "buffer", "group"};
constexpr const char* kCollectiveFields[] = {"kind",  "stream",      "deps",        "comm", "root",
                                             "bytes", "send_buffer", "recv_buffer", "group"};
constexpr const char* kCopyFields[] = {"kind", "stream", "deps", "bytes", "src", "dst"};
constexpr const char* kAllocFields[] = {"kind", "stream", "deps", "buffer"};

class Reader : public detail::JsonReader {
 public:
  using JsonReader::JsonReader;

  template <class Enum>
  Enum enumeration(const json& v, const char* what, std::size_t count) {
    const std::string s = string(v);
    Enum e{};
    if (from_name(s, &e)) return e;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < count; ++i)
      names.emplace_back(name(static_cast<Enum>(i)));
    fail(std::string("unknown ") + what + " '" + s + "'" + did_you_mean(s, names));
  }
  Program program();

 private:
  model::Kernel kernel(const json& row);
  void rank(const json& v, const Program& p, RankProgram* rp);
  void op(const json& row, const Program& p, RankProgram* rp, std::size_t num_ops);
};

// [name, class, count, [d0, d1, d2, d3], flags (1 causal, 2 fused, 4 recompute), flops, bytes]
model::Kernel Reader::kernel(const json& row) {
  array(row);
  if (row.size() != 7)
    fail("a kernel row has 7 fields (name, class, count, shape[4], flags, flops, bytes)");
  model::Kernel k;
  {
    auto f = index(0, "name");
    k.name = string(row[0]);
  }
  {
    auto f = index(1, "class");
    const std::string cls = string(row[1]);
    auto parsed = model::parse_kernel_class(cls);
    if (!parsed.ok()) fail(parsed.error().message);
    k.cls = *parsed;
  }
  {
    auto f = index(2, "count");
    k.count = integer(row[2], 0, std::numeric_limits<std::int64_t>::max(), "kernel count");
  }
  {
    auto f = index(3, "shape");
    const json& shape = array(row[3]);
    if (shape.size() != k.shape.size()) fail("a kernel shape has 4 integers");
    for (std::size_t d = 0; d < k.shape.size(); ++d) {
      auto sd = index(d);
      k.shape[d] = integer(shape[d], 0, std::numeric_limits<std::int64_t>::max(), "dimension");
    }
  }
  {
    auto f = index(4, "flags");
    const std::int64_t flags = integer(row[4], 0, 7, "kernel flags");
    k.causal = (flags & 1) != 0;
    k.fused = (flags & 2) != 0;
    k.recompute = (flags & 4) != 0;
  }
  {
    auto f = index(5, "flops");
    k.flops = real(row[5]);
  }
  auto f = index(6, "bytes");
  k.bytes = real(row[6]);
  return k;
}

void Reader::op(const json& row, const Program& p, RankProgram* rp, std::size_t num_ops) {
  array(row);
  if (row.empty()) fail("empty op row");
  std::string kind_name;
  {
    auto s = index(0, "kind");
    kind_name = string(row[0]);
  }
  Op op;
  std::span<const char* const> fields;
  ComputeKind ck{};
  CollectiveKind col{};
  OpKind ok{};
  if (from_name(kind_name, &ck)) {
    op.kind = OpKind::compute;
    op.compute = ck;
    fields = kComputeFields;
  } else if (from_name(kind_name, &col)) {
    op.kind = OpKind::collective;
    op.collective = col;
    fields = kCollectiveFields;
  } else if (from_name(kind_name, &ok) && ok != OpKind::compute && ok != OpKind::collective) {
    op.kind = ok;
    fields = ok == OpKind::send || ok == OpKind::recv ? std::span<const char* const>(kP2PFields)
             : ok == OpKind::copy                     ? std::span<const char* const>(kCopyFields)
                                                      : std::span<const char* const>(kAllocFields);
  } else {
    std::vector<std::string> names;
    for (std::size_t i = 0; i <= static_cast<std::size_t>(kLastComputeKind); ++i)
      names.emplace_back(name(static_cast<ComputeKind>(i)));
    for (std::size_t i = 0; i <= static_cast<std::size_t>(CollectiveKind::reduce_scatter); ++i)
      names.emplace_back(name(static_cast<CollectiveKind>(i)));
    for (OpKind k : {OpKind::send, OpKind::recv, OpKind::copy, OpKind::alloc, OpKind::free})
      names.emplace_back(name(k));
    auto s = index(0, "kind");
    fail("unknown op kind '" + kind_name + "'" + did_you_mean(kind_name, names));
  }
  const std::size_t n = fields.size();
  const bool has_extra = row.size() == n + 1 && row[n].is_object();
  if (row.size() != n && !has_extra)
    fail("an op row of kind '" + kind_name + "' has " + std::to_string(n) +
         " fields (plus an optional overrides object), this one has " + std::to_string(row.size()));
  const auto nbuf = static_cast<std::int64_t>(rp->buffers.size());
  const auto ranks = static_cast<std::int64_t>(p.ranks.size());
  const auto comms = static_cast<std::int64_t>(p.communicators.size());
  const auto costs = static_cast<std::int64_t>(p.costs.size());
  std::vector<std::int32_t> dep_list, rd, wr;
  std::vector<std::pair<std::size_t, std::int32_t>> row_buffers;  // (field, id), may be -1
  for (std::size_t f = 1; f < n; ++f) {
    const std::string_view fname = fields[f];
    auto s = index(f, fields[f]);
    const json& v = row[f];
    if (fname == "stream") {
      op.stream = static_cast<StreamId>(
          integer(v, 0, static_cast<std::int64_t>(p.streams.size()) - 1, "stream"));
    } else if (fname == "deps") {
      dep_list = id_list(v, 0, static_cast<std::int64_t>(num_ops), "dependency");
    } else if (fname == "layer_begin") {
      op.layer_begin = i32(v);
    } else if (fname == "layer_end") {
      op.layer_end = i32(v);
    } else if (fname == "sample") {
      op.sample = i32(v);
    } else if (fname == "cost") {
      op.cost = i32(v, kNone, costs - 1, "cost id");
    } else if (fname == "reads") {
      rd = id_list(v, 0, nbuf, "buffer id");
    } else if (fname == "writes") {
      wr = id_list(v, 0, nbuf, "buffer id");
    } else if (fname == "peer") {
      op.peer = i32(v, 0, ranks - 1, "peer rank");
    } else if (fname == "root") {
      op.peer = i32(v, kNone, ranks - 1, "root rank");
    } else if (fname == "comm") {
      op.comm = i32(v, 0, comms - 1, "communicator id");
    } else if (fname == "bytes") {
      op.bytes = u64(v);
    } else if (fname == "group") {
      op.group = i32(v);
    } else if ((op.kind == OpKind::alloc || op.kind == OpKind::free) && v.is_array()) {
      wr = id_list(v, 0, nbuf, "buffer id");  // several buffers in one alloc/free
      if (wr.empty()) fail("an alloc/free buffer list needs at least one buffer id");
    } else {  // buffer, src, dst, send_buffer, recv_buffer
      row_buffers.emplace_back(f, i32(v, kNone, nbuf - 1, "buffer id"));
    }
  }
  bool explicit_lists = false;
  if (has_extra) {
    auto s = index(n, "overrides");
    const json& x = row[n];
    known_keys(x, {"group", "peer", "comm", "layer_begin", "layer_end", "sample", "cost", "bytes",
                   "compute", "collective", "reads", "writes"});
    for (auto it = x.begin(); it != x.end(); ++it) {
      const std::string& k = it.key();
      auto s2 = Step(*this, PathStep{k, 0, false, nullptr});
      const json& v = it.value();
      if (k == "group") op.group = i32(v);
      if (k == "peer") op.peer = i32(v, kNone, ranks - 1, "rank");
      if (k == "comm") op.comm = i32(v, kNone, comms - 1, "communicator id");
      if (k == "layer_begin") op.layer_begin = i32(v);
      if (k == "layer_end") op.layer_end = i32(v);
      if (k == "sample") op.sample = i32(v);
      if (k == "cost") op.cost = i32(v, kNone, costs - 1, "cost id");
      if (k == "bytes") op.bytes = u64(v);
      if (k == "compute")
        op.compute = enumeration<ComputeKind>(v, "compute kind",
                                              static_cast<std::size_t>(kLastComputeKind) + 1);
      if (k == "collective")
        op.collective = enumeration<CollectiveKind>(
            v, "collective kind", static_cast<std::size_t>(CollectiveKind::reduce_scatter) + 1);
      if (k == "reads" || k == "writes") {
        explicit_lists = true;
        (k == "reads" ? rd : wr) = id_list(v, 0, nbuf, "buffer id");
      }
    }
  }
  if (!explicit_lists && op.kind != OpKind::compute) {
    for (const auto& [f, id] : row_buffers) {
      auto s = index(f, fields[f]);
      if (id < 0) fail("buffer id -1 out of range [0, " + std::to_string(nbuf - 1) + "]");
      const bool is_read =
          op.kind == OpKind::send || ((op.kind == OpKind::collective || op.kind == OpKind::copy) &&
                                      f == row_buffers.front().first);
      (is_read ? rd : wr).push_back(id);
    }
  }
  if (rd.size() > 65535 || wr.size() > 65535) fail("too many buffers in one op");
  op.deps_offset = static_cast<std::uint32_t>(rp->dep_pool.size());
  op.deps_count = static_cast<std::uint32_t>(dep_list.size());
  rp->dep_pool.insert(rp->dep_pool.end(), dep_list.begin(), dep_list.end());
  op.buffers_offset = static_cast<std::uint32_t>(rp->buffer_pool.size());
  op.reads_count = static_cast<std::uint16_t>(rd.size());
  op.writes_count = static_cast<std::uint16_t>(wr.size());
  rp->buffer_pool.insert(rp->buffer_pool.end(), rd.begin(), rd.end());
  rp->buffer_pool.insert(rp->buffer_pool.end(), wr.begin(), wr.end());
  rp->ops.push_back(op);
}

void Reader::rank(const json& v, const Program& p, RankProgram* rp) {
  object(v);
  known_keys(v, {"buffers", "ops"});
  {
    const json& bufs = member(v, "buffers");
    auto s = key("buffers");
    array(bufs);
    for (std::size_t b = 0; b < bufs.size(); ++b) {
      auto sb = index(b);
      const json& row = array(bufs[b]);
      if (row.size() != 4 && row.size() != 5)
        fail(
            "a buffer row has 4 or 5 fields (name, size, role, persistent[, initial]), this one "
            "has " +
            std::to_string(row.size()));
      Buffer buf;
      {
        auto f = index(0, "name");
        buf.name = string(row[0]);
      }
      {
        auto f = index(1, "size");
        buf.size = Bytes(u64(row[1]));
      }
      {
        auto f = index(2, "role");
        buf.role = enumeration<BufferRole>(row[2], "buffer role",
                                           static_cast<std::size_t>(BufferRole::workspace) + 1);
      }
      {
        auto f = index(3, "persistent");
        buf.persistent = boolean(row[3]);
      }
      if (row.size() == 5) {
        auto f = index(4, "initial");
        const json& t = array(row[4]);
        if (t.size() != 6)
          fail("a tensor has 6 fields (kind, layer_begin, layer_end, sample, piece, pieces)");
        {
          auto k = index(0, "kind");
          buf.initial.kind = enumeration<TensorKind>(
              t[0], "tensor kind", static_cast<std::size_t>(TensorKind::activation_grad) + 1);
        }
        std::int32_t* fields[] = {&buf.initial.layer_begin, &buf.initial.layer_end,
                                  &buf.initial.sample, &buf.initial.piece, &buf.initial.pieces};
        static constexpr const char* kNames[] = {"layer_begin", "layer_end", "sample", "piece",
                                                 "pieces"};
        for (std::size_t i = 0; i < 5; ++i) {
          auto k = index(i + 1, kNames[i]);
          *fields[i] = i32(t[i + 1]);
        }
      }
      rp->buffers.push_back(std::move(buf));
    }
  }
  const json& ops = member(v, "ops");
  auto s = key("ops");
  array(ops);
  rp->ops.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto so = index(i);
    op(ops[i], p, rp, ops.size());
  }
}

Program Reader::program() {
  const json root = parse();
  object(root);
  {
    const json& v = member(root, "format_version");
    auto s = key("format_version");
    if (!v.is_number_integer() || v.get<std::int64_t>() != kFormatVersion)
      fail("unsupported format_version " + v.dump() + " (this build reads version " +
           std::to_string(kFormatVersion) + ")");
  }
  {
    const json& v = member(root, "format");
    auto s = key("format");
    if (string(v) != "tawpipe-ir") fail("not a tawpipe IR file (format is '" + string(v) + "')");
  }
  known_keys(root,
             {"format", "format_version", "header", "streams", "communicators", "costs", "ranks"});
  Program p;
  {
    const json& h = member(root, "header");
    auto s = key("header");
    p.header = header(h);
    p.header.format_version = kFormatVersion;
  }
  const json& ranks = member(root, "ranks");
  {
    auto s = key("ranks");
    array(ranks);
  }
  p.ranks.resize(ranks.size());
  {
    const json& v = member(root, "streams");
    auto s = key("streams");
    array(v);
    if (v.empty() || v.size() > 256) fail("a program has 1 to 256 streams");
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto si = index(i);
      p.streams.push_back(string(v[i]));
    }
  }
  {
    const json& v = member(root, "communicators");
    auto s = key("communicators");
    array(v);
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto si = index(i);
      const json& row = array(v[i]);
      if (row.size() != 2) fail("a communicator row has 2 fields (name, members)");
      Communicator c;
      {
        auto f = index(0, "name");
        c.name = string(row[0]);
      }
      auto f = index(1, "members");
      c.members = id_list(row[1], 0, static_cast<std::int64_t>(ranks.size()), "rank");
      p.communicators.push_back(std::move(c));
    }
  }
  {
    const json& v = member(root, "costs");
    auto s = key("costs");
    array(v);
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto si = index(i);
      const json& row = array(v[i]);
      if (row.size() != 4 && row.size() != 5)
        fail(
            "a cost row has 4 or 5 fields (flops[3], bytes[3], recompute_flops, workspace_bytes"
            "[, kernels])");
      Cost c;
      static constexpr const char* kNames[] = {"flops", "bytes"};
      for (std::size_t a = 0; a < 2; ++a) {
        auto f = index(a, kNames[a]);
        const json& arr = array(row[a]);
        if (arr.size() != kOpClassCount) fail("expected 3 numbers (gemm, attention, elementwise)");
        for (std::size_t k = 0; k < kOpClassCount; ++k) {
          auto sk = index(k);
          (a == 0 ? c.flops : c.bytes)[k] = real(arr[k]);
        }
      }
      {
        auto f = index(2, "recompute_flops");
        c.recompute_flops = real(row[2]);
      }
      {
        auto f = index(3, "workspace_bytes");
        c.workspace_bytes = u64(row[3]);
      }
      if (row.size() == 5) {
        auto f = index(4, "kernels");
        const json& list = array(row[4]);
        for (std::size_t k = 0; k < list.size(); ++k) {
          auto sk = index(k);
          c.kernels.push_back(kernel(list[k]));
        }
      }
      p.costs.push_back(std::move(c));
    }
  }
  auto s = key("ranks");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    auto sr = index(r);
    rank(ranks[r], p, &p.ranks[r]);
  }
  return p;
}

}  // namespace

Expected<Program> read_program_json(std::string_view text, std::string_view file_name) {
  try {
    Reader reader(text, file_name);
    return reader.program();
  } catch (const ReadFailure& f) {
    return f.error;
  } catch (const std::exception& e) {  // e.g. bad_alloc on absurd input: still a value
    Error err = make_error(std::string("cannot read IR: ") + e.what());
    err.file = std::string(file_name);
    return err;
  }
}

Expected<Program> read_program_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    Error e = make_error("cannot open file");
    e.file = path;
    return e;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    Error e = make_error("cannot read file");
    e.file = path;
    return e;
  }
  return read_program_json(buf.str(), path);
}

}  // namespace tawpipe::ir
