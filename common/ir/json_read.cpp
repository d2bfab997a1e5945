// JSON reader (format: FORMAT.md). Parses with nlohmann-json, then walks the DOM with a key
// path; every error is located in the source text by json_scan (error path only).
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/ir/json.h"
#include "common/ir/json_scan.h"
#include "common/strings.h"

namespace tawpipe::ir {
namespace {

using detail::PathStep;
using nlohmann::json;

// Thrown inside the reader only; read_program_json turns it into an Error value.
struct ReadFailure {
  Error error;
};

constexpr std::int64_t kI32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kI32Max = std::numeric_limits<std::int32_t>::max();

// Row layouts, by kind (see FORMAT.md).
constexpr const char* kComputeFields[] = {"kind",   "stream", "deps",  "layer_begin", "layer_end",
                                          "sample", "cost",   "reads", "writes"};
constexpr const char* kP2PFields[] = {"kind", "stream", "deps",   "peer",
                                      "comm", "bytes",  "buffer", "group"};
constexpr const char* kCollectiveFields[] = {"kind",  "stream",      "deps",        "comm", "root",
                                             "bytes", "send_buffer", "recv_buffer", "group"};
constexpr const char* kCopyFields[] = {"kind", "stream", "deps", "bytes", "src", "dst"};
constexpr const char* kAllocFields[] = {"kind", "stream", "deps", "buffer"};

class Reader {
 public:
  Reader(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  [[noreturn]] void fail(const std::string& message) const {
    Error e;
    e.message = message;
    e.file = file_;
    detail::line_column(text_, detail::locate(text_, path_), &e.line, &e.column);
    e.key_path = detail::path_string(path_);
    throw ReadFailure{std::move(e)};
  }

  // RAII path step.
  class Step {
   public:
    Step(Reader& r, PathStep s) : r_(r) { r_.path_.push_back(std::move(s)); }
    ~Step() { r_.path_.pop_back(); }
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    Reader& r_;
  };
  Step key(const char* k) { return Step(*this, PathStep{k, 0, false, nullptr}); }
  Step index(std::size_t i, const char* display = nullptr) {
    return Step(*this, PathStep{{}, i, true, display});
  }

  static std::string type_of(const json& v) {
    if (v.is_number_float()) return "a floating-point number";
    if (v.is_number()) return "an integer";
    if (v.is_string()) return "a string";
    if (v.is_boolean()) return "a boolean";
    if (v.is_null()) return "null";
    if (v.is_array()) return "an array";
    return "an object";
  }

  const json& object(const json& v) {
    if (!v.is_object()) fail("expected an object, got " + type_of(v));
    return v;
  }
  const json& array(const json& v) {
    if (!v.is_array()) fail("expected an array, got " + type_of(v));
    return v;
  }
  // Member `k` of object `obj` (the path must point at obj).
  const json& member(const json& obj, const char* k) {
    object(obj);
    const auto it = obj.find(k);
    if (it == obj.end()) fail(std::string("missing key '") + k + "'");
    return *it;
  }
  void known_keys(const json& obj, std::initializer_list<const char*> keys) {
    std::vector<std::string> names(keys.begin(), keys.end());
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(names.begin(), names.end(), it.key()) != names.end()) continue;
      auto s = Step(*this, PathStep{it.key(), 0, false, nullptr});
      fail("unknown key '" + it.key() + "'" + did_you_mean(it.key(), names));
    }
  }
  std::int64_t integer(const json& v, std::int64_t lo, std::int64_t hi,
                       const char* what = "value") {
    if (!v.is_number_integer()) fail("expected an integer, got " + type_of(v));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      fail(std::string(what) + " " + std::to_string(v.get<std::uint64_t>()) + " out of range [" +
           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi)
      fail(std::string(what) + " " + std::to_string(x) + " out of range [" + std::to_string(lo) +
           ", " + std::to_string(hi) + "]");
    return x;
  }
  std::int32_t i32(const json& v, std::int64_t lo = kI32Min, std::int64_t hi = kI32Max,
                   const char* what = "value") {
    return static_cast<std::int32_t>(integer(v, lo, hi, what));
  }
  std::uint64_t u64(const json& v) {
    if (!v.is_number_integer()) fail("expected a non-negative integer, got " + type_of(v));
    if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0)
      fail("expected a non-negative integer, got " + std::to_string(v.get<std::int64_t>()));
    return v.get<std::uint64_t>();
  }
  double real(const json& v) {
    if (!v.is_number()) fail("expected a number, got " + type_of(v));
    return v.get<double>();
  }
  std::string string(const json& v) {
    if (!v.is_string()) fail("expected a string, got " + type_of(v));
    return v.get<std::string>();
  }
  bool boolean(const json& v) {
    if (!v.is_boolean()) fail("expected true or false, got " + type_of(v));
    return v.get<bool>();
  }
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
  // An array of ids in [lo, hi).
  std::vector<std::int32_t> id_list(const json& v, std::int64_t lo, std::int64_t hi,
                                    const char* what) {
    array(v);
    std::vector<std::int32_t> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto s = index(i);
      out.push_back(i32(v[i], lo, hi - 1, what));
    }
    return out;
  }

  Program program();

 private:
  Header header(const json& h);
  void rank(const json& v, const Program& p, RankProgram* rp);
  void op(const json& row, const Program& p, RankProgram* rp, std::size_t num_ops);

  std::string_view text_;
  std::string file_;
  std::vector<PathStep> path_;
};

Header Reader::header(const json& h) {
  object(h);
  known_keys(h, {"schedule", "options", "model", "layers", "model_params", "seq_len",
                 "micro_batch_size", "micro_batches", "global_batch", "dtype", "recompute",
                 "topology", "topology_hash", "placement"});
  Header out;
  const auto str_field = [&](const char* k, std::string* into) {
    const json& v = member(h, k);
    auto s = key(k);
    *into = string(v);
  };
  const auto int_field = [&](const char* k, auto* into, std::int64_t lo, std::int64_t hi) {
    const json& v = member(h, k);
    auto s = key(k);
    *into = static_cast<std::remove_pointer_t<decltype(into)>>(integer(v, lo, hi));
  };
  str_field("schedule", &out.schedule);
  {
    const json& o = member(h, "options");
    auto s = key("options");
    object(o);
    for (auto it = o.begin(); it != o.end(); ++it) {
      auto s2 = Step(*this, PathStep{it.key(), 0, false, nullptr});
      out.options[it.key()] = string(it.value());
    }
  }
  str_field("model", &out.model);
  int_field("layers", &out.layers, 0, kI32Max);
  {
    const json& v = member(h, "model_params");
    auto s = key("model_params");
    out.model_params = u64(v);
  }
  int_field("seq_len", &out.seq_len, kI32Min, kI32Max);
  int_field("micro_batch_size", &out.micro_batch_size, kI32Min, kI32Max);
  int_field("micro_batches", &out.micro_batches, kI32Min, kI32Max);
  int_field("global_batch", &out.global_batch, std::numeric_limits<std::int64_t>::min(),
            std::numeric_limits<std::int64_t>::max());
  str_field("dtype", &out.dtype);
  str_field("recompute", &out.recompute);
  str_field("topology", &out.topology);
  str_field("topology_hash", &out.topology_hash);
  {
    const json& v = member(h, "placement");
    auto s = key("placement");
    out.placement = id_list(v, kI32Min, kI32Max, "placement");
  }
  return out;
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
    for (std::size_t i = 0; i <= static_cast<std::size_t>(ComputeKind::optimizer); ++i)
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
                                              static_cast<std::size_t>(ComputeKind::optimizer) + 1);
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
  json root;
  try {
    root = json::parse(text_.begin(), text_.end());
  } catch (const json::parse_error& e) {
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    const auto pos = what.find("column ");
    const auto colon = what.find(": ", pos == std::string::npos ? 0 : pos);
    if (colon != std::string::npos) what = what.substr(colon + 2);
    Error err;
    err.message = "invalid JSON: " + what;
    err.file = file_;
    detail::line_column(text_, offset, &err.line, &err.column);
    err.key_path = detail::path_at(text_, offset);
    throw ReadFailure{std::move(err)};
  } catch (const json::exception& e) {
    // Number overflow ("number overflow parsing '1e999'") carries no position: find the literal.
    std::string what = e.what();
    std::size_t offset = text_.size();
    const auto q = what.find("parsing '");
    if (q != std::string::npos) {
      const std::string literal = what.substr(q + 9, what.rfind('\'') - (q + 9));
      const auto at = literal.empty() ? std::string_view::npos : text_.find(literal);
      if (at != std::string_view::npos) offset = at;
    }
    const auto b = what.find("] ");
    Error err;
    err.message = "invalid JSON: " + (b == std::string::npos ? what : what.substr(b + 2));
    err.file = file_;
    detail::line_column(text_, offset, &err.line, &err.column);
    err.key_path = detail::path_at(text_, offset);
    throw ReadFailure{std::move(err)};
  }
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
      if (row.size() != 4)
        fail("a cost row has 4 fields (flops[3], bytes[3], recompute_flops, workspace_bytes)");
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
      auto f = index(3, "workspace_bytes");
      c.workspace_bytes = u64(row[3]);
      p.costs.push_back(c);
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
