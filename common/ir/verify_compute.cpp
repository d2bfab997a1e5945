// Stage 4 of the verifier, continued: what each compute kind reads, writes and adds (program.h,
// "Exact content rules"). Operands are found by buffer role.
#include <algorithm>
#include <array>

#include "common/ir/text.h"
#include "common/ir/verify_internal.h"

namespace tawpipe::ir::detail {
namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

enum Slot : std::size_t { kWeight, kAct, kActGrad, kGrad, kSlots };
constexpr const char* kSlotNames[] = {"weight", "activation", "activation_grad", "gradient"};

std::size_t slot_of(BufferRole role) {
  switch (role) {
    case BufferRole::weights:
    case BufferRole::weight_staging:
    case BufferRole::master_weights:
      return kWeight;
    case BufferRole::activation:
      return kAct;
    case BufferRole::activation_grad:
      return kActGrad;
    case BufferRole::gradient:
    case BufferRole::gradient_staging:
      return kGrad;
    default:
      return kSlots;  // not checked
  }
}

// Operand counts per compute kind: reads then writes, per slot. -1 means "0 or 1".
struct Shape {
  std::array<int, kSlots> reads;
  std::array<int, kSlots> writes;
};
Shape shape_of(ComputeKind k) {
  switch (k) {
    case ComputeKind::embedding_forward:
      return {{1, 0, 0, 0}, {0, 1, 0, 0}};
    case ComputeKind::forward:
      return {{1, 1, 0, 0}, {0, 1, 0, 0}};
    case ComputeKind::backward:
      return {{1, 1, 1, 0}, {0, 0, 1, 1}};
    case ComputeKind::backward_input:
      return {{1, 1, 1, 0}, {0, 0, 1, 0}};
    case ComputeKind::backward_weight:
      return {{1, 1, 1, 0}, {0, 0, 0, 1}};
    case ComputeKind::head:
      return {{1, 1, 0, 0}, {0, 0, 1, 1}};
    case ComputeKind::embedding_backward:
      return {{-1, 0, 1, 0}, {0, 0, 0, 1}};
    default:
      return {{0, 0, 0, 0}, {0, 0, 0, 0}};
  }
}

bool is_whole_weights(const TensorRef& t, std::int32_t begin, std::int32_t end) {
  return t.kind == TensorKind::weights && t.layer_begin == begin && t.layer_end == end &&
         t.piece == 0 && t.pieces == 1;
}

bool is_boundary(const TensorRef& t, TensorKind kind, std::int32_t sample, std::int32_t at) {
  return t.kind == kind && t.sample == sample && t.layer_begin == at;
}

TensorRef boundary(TensorKind kind, std::int32_t sample, std::int32_t at) {
  TensorRef t;
  t.kind = kind;
  t.sample = sample;
  t.layer_begin = at;
  return t;
}

TensorRef block(TensorKind kind, std::int32_t begin, std::int32_t end) {
  TensorRef t;
  t.kind = kind;
  t.layer_begin = begin;
  t.layer_end = end;
  return t;
}

// Operands of one slot: the count, and the first few ids (the shape check allows at most 1).
struct Operands {
  std::array<BufferId, 4> ids{};
  std::size_t count = 0;
  void push_back(BufferId b) {
    if (count < ids.size()) ids[count] = b;
    ++count;
  }
  std::size_t size() const { return count; }
  const BufferId* begin() const { return ids.data(); }
  const BufferId* end() const { return ids.data() + std::min(count, ids.size()); }
};

}  // namespace

Check Dataflow::compute(Rank rank, OpIndex index) {
  const RankProgram& rp = program_.ranks[static_cast<std::size_t>(rank)];
  const Op& op = rp.ops[static_cast<std::size_t>(index)];
  const auto fail = [&](const std::string& what) { return fail_at(program_, rank, index, what); };
  const auto bname = [&](BufferId b) {
    return "'" + rp.buffers[static_cast<std::size_t>(b)].name + "'";
  };
  // Liveness of every operand (reads first, then writes: the first dead one is reported),
  // and the operands by slot for the checks below, in one pass over each list.
  const std::vector<Hot>& hots = hot_[static_cast<std::size_t>(rank)];
  std::array<Operands, kSlots> in, out;
  for (BufferId b : reads(rp, op)) {
    const Hot& h = hots[static_cast<std::size_t>(b)];
    if (!h.live) return dead_buffer(rank, index, b, "reads");
    const std::size_t s = slot_of(h.role);
    if (s < kSlots) in[s].push_back(b);
  }
  for (BufferId b : writes(rp, op)) {
    const Hot& h = hots[static_cast<std::size_t>(b)];
    if (!h.live) return dead_buffer(rank, index, b, "writes");
    const std::size_t s = slot_of(h.role);
    if (s < kSlots) out[s].push_back(b);
  }

  if (op.compute == ComputeKind::optimizer) return optimizer(rank, index);
  if (op.compute == ComputeKind::accumulate) {
    const BufferId src = reads(rp, op)[0];
    const BufferId dst = writes(rp, op)[0];
    const Content add = state(rank, src).content;
    if (add.ref.kind != TensorKind::gradient)
      return fail("accumulate reads " + describe_tensor(add.ref) + " from " + bname(src) +
                  ", expected a gradient");
    Content& into = state(rank, dst).content;
    if (into.ref.kind == TensorKind::none) {
      into = add;
      return std::nullopt;
    }
    if (into.ref.kind != TensorKind::gradient || into.ref.layer_begin != add.ref.layer_begin ||
        into.ref.layer_end != add.ref.layer_end || into.ref.piece != add.ref.piece ||
        into.ref.pieces != add.ref.pieces)
      return fail("accumulates " + describe_tensor(add.ref) + " into " + bname(dst) +
                  ", which holds " + describe_tensor(into.ref));
    into.fingerprint += add.fingerprint;
    into.count += add.count;
    into.replicated_fingerprint += add.replicated_fingerprint;
    into.replicated_count += add.replicated_count;
    return std::nullopt;
  }

  // Check the operand counts by slot.
  const Shape shape = shape_of(op.compute);
  for (std::size_t s = 0; s < kSlots; ++s) {
    for (int pass = 0; pass < 2; ++pass) {
      const int want = pass == 0 ? shape.reads[s] : shape.writes[s];
      const auto have = static_cast<int>((pass == 0 ? in : out)[s].size());
      if (want == have || (want == -1 && have <= 1)) continue;
      return fail(std::string(name(op.compute)) + (pass == 0 ? " reads " : " writes ") + str(have) +
                  " " + kSlotNames[s] + " operand(s), expected " +
                  (want == -1 ? std::string("at most 1") : str(want)));
    }
  }

  const bool embedding = op.compute == ComputeKind::embedding_forward ||
                         op.compute == ComputeKind::head ||
                         op.compute == ComputeKind::embedding_backward;
  const std::int32_t begin = embedding ? kEmbeddingLayer : op.layer_begin;
  const std::int32_t end = embedding ? 0 : op.layer_end;
  const std::int32_t s = op.sample;
  const std::int32_t layers = program_.header.layers;

  // Reads.
  for (BufferId b : in[kWeight]) {
    const TensorRef& t = state(rank, b).content.ref;
    if (!is_whole_weights(t, begin, end))
      return fail(std::string(name(op.compute)) + " reads " + describe_tensor(t) + " from " +
                  bname(b) + ", expected " +
                  describe_tensor(block(TensorKind::weights, begin, end)));
  }
  const auto check_read = [&](std::size_t slot, TensorKind kind, std::int32_t at) -> Check {
    for (BufferId b : in[slot]) {
      const TensorRef& t = state(rank, b).content.ref;
      if (!is_boundary(t, kind, s, at))
        return fail(std::string(name(op.compute)) + " reads " + describe_tensor(t) + " from " +
                    bname(b) + ", expected " + describe_tensor(boundary(kind, s, at)));
    }
    return std::nullopt;
  };
  switch (op.compute) {
    case ComputeKind::forward:
      if (Check c = check_read(kAct, TensorKind::activation, begin)) return c;
      break;
    case ComputeKind::backward:
    case ComputeKind::backward_input:
    case ComputeKind::backward_weight:
      if (Check c = check_read(kAct, TensorKind::activation, begin)) return c;
      if (Check c = check_read(kActGrad, TensorKind::activation_grad, end)) return c;
      break;
    case ComputeKind::head:
      if (Check c = check_read(kAct, TensorKind::activation, layers)) return c;
      break;
    case ComputeKind::embedding_backward:
      if (Check c = check_read(kActGrad, TensorKind::activation_grad, 0)) return c;
      break;
    default:
      break;
  }

  // Writes.
  for (BufferId b : out[kAct])
    state(rank, b).content = Content{
        boundary(TensorKind::activation, s, op.compute == ComputeKind::forward ? end : 0), 0, 0};
  for (BufferId b : out[kActGrad])
    state(rank, b).content = Content{
        boundary(TensorKind::activation_grad, s, op.compute == ComputeKind::head ? layers : begin),
        0, 0};
  for (BufferId b : out[kGrad]) {
    Content& g = state(rank, b).content;
    const TensorRef want = block(TensorKind::gradient, begin, end);
    if (g.ref.kind == TensorKind::none) {
      g = Content{want, 0, 0};
    } else if (g.ref != want) {
      return fail(std::string(name(op.compute)) + " adds a gradient of " +
                  describe_tensor(block(TensorKind::weights, begin, end)) + " into " + bname(b) +
                  ", which holds " + describe_tensor(g.ref) +
                  " (free and re-alloc a gradient buffer before reusing it)");
    }
    if (op.compute == ComputeKind::backward || op.compute == ComputeKind::backward_weight) {
      for (std::int32_t l = begin; l < end; ++l)
        g.fingerprint += contribution_key(s, l, 0);
      g.count += static_cast<std::uint64_t>(end - begin);
    } else {
      g.fingerprint +=
          contribution_key(s, kEmbeddingLayer, op.compute == ComputeKind::head ? 1 : 2);
      g.count += 1;
    }
  }
  return std::nullopt;
}

Check Dataflow::optimizer(Rank rank, OpIndex index) {
  const RankProgram& rp = program_.ranks[static_cast<std::size_t>(rank)];
  const Op& op = rp.ops[static_cast<std::size_t>(index)];
  const auto fail = [&](const std::string& what) { return fail_at(program_, rank, index, what); };
  const auto bname = [&](BufferId b) {
    return "'" + rp.buffers[static_cast<std::size_t>(b)].name + "'";
  };
  const std::int32_t begin = op.layer_begin;
  const std::int32_t end = op.layer_end;
  const TensorRef grad_block = block(TensorKind::gradient, begin, end);
  BufferId grad = kNone;
  for (BufferId b : reads(rp, op)) {
    if (slot_of(rp.buffers[static_cast<std::size_t>(b)].role) != kGrad) continue;
    if (grad != kNone) return fail("optimizer reads two gradient operands");
    grad = b;
  }
  if (grad == kNone) return fail("optimizer reads no gradient operand");
  const Content& g = state(rank, grad).content;
  if (g.ref.kind != TensorKind::gradient || g.ref.layer_begin != begin || g.ref.layer_end != end)
    return fail("optimizer reads " + describe_tensor(g.ref) + " from " + bname(grad) +
                ", expected " + describe_tensor(grad_block));
  const std::uint64_t want_count = expected_count(begin, end);
  // The whole form's contribution count; compact form: |A| + k |B| (verify_replicas.cpp (d)).
  const std::uint64_t count =
      g.count + static_cast<std::uint64_t>(replicas_.count) * g.replicated_count;
  const auto what = [&] { return describe_tensor(g.ref) + " in " + bname(grad); };
  if (count < want_count)
    return fail("incomplete " + what() + ": " + str(static_cast<std::int64_t>(count)) + " of " +
                str(static_cast<std::int64_t>(want_count)) + " contributions");
  if (count > want_count)
    return fail("duplicated contributions in " + what() + ": " +
                str(static_cast<std::int64_t>(count)) + " of " +
                str(static_cast<std::int64_t>(want_count)) + " contributions");
  // Complete: the sum over every sample (whole form: A; compact form: A empty, B = S).
  const bool complete = replicas_.compact() ? g.count == 0 && g.replicated_fingerprint ==
                                                                  expected_fingerprint(begin, end)
                                            : g.fingerprint == expected_fingerprint(begin, end);
  if (!complete)
    return fail("wrong contributions in " + what() + ": the right number (" +
                str(static_cast<std::int64_t>(want_count)) +
                ") but not the right ones (some counted twice, others missing)");
  TensorRef want = block(TensorKind::weights, begin, end);
  want.piece = g.ref.piece;
  want.pieces = g.ref.pieces;
  const auto matches = [&](const TensorRef& t) {
    return t.kind == TensorKind::weights && t.layer_begin == begin && t.layer_end == end &&
           t.piece == want.piece && t.pieces == want.pieces;
  };
  for (BufferId b : reads(rp, op)) {
    if (slot_of(rp.buffers[static_cast<std::size_t>(b)].role) != kWeight) continue;
    if (!matches(state(rank, b).content.ref))
      return fail("optimizer reads " + describe_tensor(state(rank, b).content.ref) + " from " +
                  bname(b) + ", expected " + describe_tensor(want));
  }
  int targets = 0;
  for (BufferId b : writes(rp, op)) {
    const Buffer& buf = rp.buffers[static_cast<std::size_t>(b)];
    if (slot_of(buf.role) != kWeight) continue;
    BufferState& st = state(rank, b);
    if (!matches(st.content.ref))
      return fail("optimizer updates " + describe_tensor(st.content.ref) + " in " + bname(b) +
                  " with " + describe_tensor(g.ref) + ", expected it to hold " +
                  describe_tensor(want));
    if (st.updated_by != kNone && buf.role == BufferRole::weights)
      return fail("updates " + bname(b) + " a second time (first by #" + str(st.updated_by) + ")");
    st.updated_by = index;
    ++targets;
  }
  if (targets == 0) return fail("optimizer writes no weight operand");
  return std::nullopt;
}

}  // namespace tawpipe::ir::detail
