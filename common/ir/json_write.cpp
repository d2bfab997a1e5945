// JSON writer (format: FORMAT.md). Streams text directly (no DOM), one line per op, so a
// 1024-rank program costs a few tens of bytes per op and no intermediate memory.
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "common/ir/json.h"

namespace tawpipe::ir {
namespace {

// Appends JSON tokens to a string, flushed to the stream in large chunks (no per-token
// ostream overhead).
class Writer {
 public:
  explicit Writer(std::ostream* out = nullptr) : out_(out) {}
  ~Writer() { flush(); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void flush() {
    if (out_ && !buf_.empty()) out_->write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    if (out_) buf_.clear();
  }
  const std::string& text() const { return buf_; }

  void raw(std::string_view s) {
    buf_ += s;
    if (out_ && buf_.size() > (1u << 20)) flush();
  }
  void str(std::string_view s) {
    buf_ += '"';
    for (const char c : s) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        buf_ += '\\';
        buf_ += c;
      } else if (u < 0x20) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\u%04x", u);
        buf_ += esc;
      } else {
        buf_ += c;
      }
    }
    buf_ += '"';
  }
  template <class Int>
  void integer(Int v) {
    char tmp[24];
    const auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, res.ptr);
  }
  void num(std::int64_t v) { integer(v); }
  void unum(std::uint64_t v) { integer(v); }
  // Shortest text that reads back to the same double, always with a '.' or exponent so that
  // readers see a float (and -0.0 keeps its sign).
  void dbl(double v) {
    char tmp[64];
    const auto res = std::to_chars(tmp, tmp + sizeof tmp, v);
    const std::string_view t(tmp, static_cast<std::size_t>(res.ptr - tmp));
    buf_ += t;
    if (t.find_first_of(".en") == std::string_view::npos) buf_ += ".0";
  }
  void key(std::string_view k) {
    str(k);
    buf_ += ':';
  }

 private:
  std::ostream* out_;
  std::string buf_;
};

void write_tensor(Writer& w, const TensorRef& t) {
  w.raw("[");
  w.str(name(t.kind));
  for (std::int32_t v : {t.layer_begin, t.layer_end, t.sample, t.piece, t.pieces}) {
    w.raw(",");
    w.num(v);
  }
  w.raw("]");
}

void write_list(Writer& w, std::span<const std::int32_t> v) {
  w.raw("[");
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) w.raw(",");
    w.num(v[i]);
  }
  w.raw("]");
}

// The canonical (reads, writes) shape of non-compute kinds.
bool canonical_shape(const Op& op) {
  switch (op.kind) {
    case OpKind::send:
      return op.reads_count == 1 && op.writes_count == 0;
    case OpKind::recv:
      return op.reads_count == 0 && op.writes_count == 1;
    case OpKind::alloc:
    case OpKind::free:
      return op.reads_count == 0 && op.writes_count >= 1;
    case OpKind::collective:
    case OpKind::copy:
      return op.reads_count == 1 && op.writes_count == 1;
    case OpKind::compute:
      return true;
  }
  return true;
}

void write_op(Writer& w, const RankProgram& rp, const Op& op) {
  const auto rd = reads(rp, op);
  const auto wr = writes(rp, op);
  const bool shaped = canonical_shape(op);
  const auto buf = [&](std::size_t i) -> std::int32_t {
    if (!shaped) return kNone;
    return i < rd.size() ? rd[i] : wr[i - rd.size()];
  };
  w.raw("[");
  switch (op.kind) {
    case OpKind::compute:
      w.str(name(op.compute));
      break;
    case OpKind::collective:
      w.str(name(op.collective));
      break;
    default:
      w.str(name(op.kind));
  }
  w.raw(",");
  w.num(op.stream);
  w.raw(",");
  write_list(w, deps(rp, op));
  // Fields that the row carries, per kind; others must be default or go to the overrides.
  bool row_group = false, row_peer = false, row_comm = false, row_layers = false, row_bytes = false;
  const auto sep = [&w] { w.raw(","); };
  switch (op.kind) {
    case OpKind::compute:
      row_layers = true;
      for (std::int32_t v : {op.layer_begin, op.layer_end, op.sample, op.cost}) {
        sep();
        w.num(v);
      }
      sep();
      write_list(w, rd);
      sep();
      write_list(w, wr);
      break;
    case OpKind::send:
    case OpKind::recv:
      row_group = row_peer = row_comm = row_bytes = true;
      for (std::int64_t v : {std::int64_t{op.peer}, std::int64_t{op.comm}}) {
        sep();
        w.num(v);
      }
      sep();
      w.unum(op.bytes);
      sep();
      w.num(buf(0));
      sep();
      w.num(op.group);
      break;
    case OpKind::collective:
      row_group = row_peer = row_comm = row_bytes = true;
      sep();
      w.num(op.comm);
      sep();
      w.num(op.peer);
      sep();
      w.unum(op.bytes);
      sep();
      w.num(buf(0));
      sep();
      w.num(buf(1));
      sep();
      w.num(op.group);
      break;
    case OpKind::copy:
      row_bytes = true;
      sep();
      w.unum(op.bytes);
      sep();
      w.num(buf(0));
      sep();
      w.num(buf(1));
      break;
    case OpKind::alloc:
    case OpKind::free:
      sep();
      if (shaped && wr.size() > 1) {
        write_list(w, wr);  // several buffers: a list in the buffer field
      } else {
        w.num(buf(0));
      }
      break;
  }
  // Overrides: non-default values of fields the row does not carry (exact round trip).
  const Op dflt;
  Writer x;
  bool any = false;
  const auto field = [&](const char* k) {
    x.raw(any ? "," : "{");
    any = true;
    x.key(k);
  };
  if (!row_group && op.group != dflt.group) field("group"), x.num(op.group);
  if (!row_peer && op.peer != dflt.peer) field("peer"), x.num(op.peer);
  if (!row_comm && op.comm != dflt.comm) field("comm"), x.num(op.comm);
  if (!row_layers) {
    if (op.layer_begin != dflt.layer_begin) field("layer_begin"), x.num(op.layer_begin);
    if (op.layer_end != dflt.layer_end) field("layer_end"), x.num(op.layer_end);
    if (op.sample != dflt.sample) field("sample"), x.num(op.sample);
    if (op.cost != dflt.cost) field("cost"), x.num(op.cost);
  }
  if (!row_bytes && op.bytes != dflt.bytes) field("bytes"), x.unum(op.bytes);
  if (op.kind != OpKind::compute && op.compute != dflt.compute)
    field("compute"), x.str(name(op.compute));
  if (op.kind != OpKind::collective && op.collective != dflt.collective)
    field("collective"), x.str(name(op.collective));
  if (!shaped) {
    field("reads");
    write_list(x, rd);
    field("writes");
    write_list(x, wr);
  }
  if (any) {
    x.raw("}");
    w.raw(",");
    w.raw(x.text());
  }
  w.raw("]");
}

}  // namespace

void write_program_json(const Program& p, std::ostream& out) {
  assert(!p.compact() && "a replica-compact program is the simulator's internal form");
  Writer w(&out);
  const Header& h = p.header;
  w.raw("{\"format\":\"tawpipe-ir\",\"format_version\":");
  w.num(h.format_version);
  w.raw(",\n\"header\":{");
  w.key("schedule");
  w.str(h.schedule);
  w.raw(",");
  w.key("options");
  w.raw("{");
  bool first = true;
  for (const auto& [k, v] : h.options) {
    if (!first) w.raw(",");
    first = false;
    w.key(k);
    w.str(v);
  }
  w.raw("},");
  w.key("model");
  w.str(h.model);
  w.raw(",");
  w.key("layers");
  w.num(h.layers);
  w.raw(",");
  w.key("model_params");
  w.unum(h.model_params);
  w.raw(",");
  w.key("seq_len");
  w.num(h.seq_len);
  w.raw(",");
  w.key("micro_batch_size");
  w.num(h.micro_batch_size);
  w.raw(",");
  w.key("micro_batches");
  w.num(h.micro_batches);
  w.raw(",");
  w.key("global_batch");
  w.num(h.global_batch);
  w.raw(",");
  w.key("dtype");
  w.str(h.dtype);
  w.raw(",");
  w.key("recompute");
  w.str(h.recompute);
  w.raw(",");
  w.key("topology");
  w.str(h.topology);
  w.raw(",");
  w.key("topology_hash");
  w.str(h.topology_hash);
  w.raw(",");
  w.key("placement");
  write_list(w, h.placement);
  w.raw("},\n\"streams\":[");
  for (std::size_t i = 0; i < p.streams.size(); ++i) {
    if (i > 0) w.raw(",");
    w.str(p.streams[i]);
  }
  w.raw("],\n\"communicators\":[");
  for (std::size_t i = 0; i < p.communicators.size(); ++i) {
    w.raw(i > 0 ? ",\n[" : "\n[");
    w.str(p.communicators[i].name);
    w.raw(",");
    write_list(w, p.communicators[i].members);
    w.raw("]");
  }
  w.raw("],\n\"costs\":[");
  for (std::size_t i = 0; i < p.costs.size(); ++i) {
    const Cost& c = p.costs[i];
    w.raw(i > 0 ? ",\n[" : "\n[");
    for (const auto* arr : {&c.flops, &c.bytes}) {
      w.raw("[");
      for (std::size_t k = 0; k < kOpClassCount; ++k) {
        if (k > 0) w.raw(",");
        w.dbl((*arr)[k]);
      }
      w.raw("],");
    }
    w.dbl(c.recompute_flops);
    w.raw(",");
    w.unum(c.workspace_bytes);
    if (!c.kernels.empty()) {
      w.raw(",[");
      for (std::size_t k = 0; k < c.kernels.size(); ++k) {
        const model::Kernel& kn = c.kernels[k];
        w.raw(k > 0 ? ",\n [" : "\n [");
        w.str(kn.name);
        w.raw(",");
        w.str(std::string(model::to_string(kn.cls)));
        w.raw(",");
        w.unum(static_cast<std::uint64_t>(kn.count));
        w.raw(",[");
        for (std::size_t d = 0; d < kn.shape.size(); ++d) {
          if (d > 0) w.raw(",");
          w.unum(static_cast<std::uint64_t>(kn.shape[d]));
        }
        w.raw("],");
        w.unum((kn.causal ? 1u : 0u) | (kn.fused ? 2u : 0u) | (kn.recompute ? 4u : 0u));
        w.raw(",");
        w.dbl(kn.flops);
        w.raw(",");
        w.dbl(kn.bytes);
        w.raw("]");
      }
      w.raw("]");
    }
    w.raw("]");
  }
  w.raw("],\n\"ranks\":[");
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    const RankProgram& rp = p.ranks[r];
    w.raw(r > 0 ? ",\n{\"buffers\":[" : "\n{\"buffers\":[");
    for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
      const Buffer& buf = rp.buffers[b];
      w.raw(b > 0 ? ",\n[" : "\n[");
      w.str(buf.name);
      w.raw(",");
      w.unum(buf.size.count());
      w.raw(",");
      w.str(name(buf.role));
      w.raw(buf.persistent ? ",true" : ",false");
      if (buf.initial != TensorRef{}) {
        w.raw(",");
        write_tensor(w, buf.initial);
      }
      w.raw("]");
    }
    w.raw("],\n\"ops\":[");
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      w.raw(i > 0 ? ",\n" : "\n");
      write_op(w, rp, rp.ops[i]);
    }
    w.raw("]}");
  }
  w.raw("]}\n");
}

std::string program_to_json(const Program& program) {
  std::ostringstream out;
  write_program_json(program, out);
  return out.str();
}

}  // namespace tawpipe::ir
