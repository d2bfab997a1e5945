// Stage 1 of the verifier: structure. Establishes everything the later stages index with
// without checking again: ids, pool offsets and enum values in range, dependencies backwards,
// groups consecutive on one stream, membership, and buffer sizes against op bytes.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ir/text.h"
#include "common/ir/verify_internal.h"
#include "common/parallel.h"

namespace tawpipe::ir::detail {
namespace {

constexpr std::int32_t kMaxRanks = 1 << 21;  // the matching stage packs ranks into 21 bits
constexpr std::int64_t kMaxComms = 1 << 22;

std::string str(std::int64_t v) {
  return std::to_string(v);
}

// Why a cost's kernels do not add up to its per-op-class totals (empty when they do): each
// kernel finite and non-negative; count x FLOPs and bytes summed by op class (gemm; attention
// forward and backward; every other class element-wise) and the recompute-flagged FLOPs equal
// the cost's figures to a relative 1e-9.
std::string kernels_disagree(const Cost& c) {
  std::array<double, kOpClassCount> flops{}, bytes{};
  double recompute = 0.0;
  for (const model::Kernel& k : c.kernels) {
    if (!(std::isfinite(k.flops) && k.flops >= 0 && std::isfinite(k.bytes) && k.bytes >= 0))
      return "kernel '" + k.name + "' has a negative or non-finite value";
    const std::size_t cls = k.cls == model::KernelClass::gemm ? 0
                            : model::is_flop_bound(k.cls)     ? 1
                                                              : 2;
    const double n = static_cast<double>(k.count);
    flops[cls] += n * k.flops;
    bytes[cls] += n * k.bytes;
    if (k.recompute) recompute += n * (k.flops);
  }
  static constexpr const char* kClass[] = {"gemm", "attention", "elementwise"};
  const auto differ = [](double a, double b) {
    return std::abs(a - b) > 1e-9 * std::max({std::abs(a), std::abs(b), 1.0});
  };
  for (std::size_t k = 0; k < kOpClassCount; ++k) {
    if (differ(flops[k], c.flops[k]) || differ(bytes[k], c.bytes[k]))
      return std::string("its kernels sum to ") + kClass[k] + " " + std::to_string(flops[k]) +
             " FLOPs / " + std::to_string(bytes[k]) + " bytes, the cost says " +
             std::to_string(c.flops[k]) + " / " + std::to_string(c.bytes[k]);
  }
  if (differ(recompute, c.recompute_flops))
    return "its recompute kernels sum to " + std::to_string(recompute) + " FLOPs, the cost says " +
           std::to_string(c.recompute_flops);
  return "";
}

bool tensor_ok(const TensorRef& t) {
  return static_cast<unsigned>(t.kind) <= static_cast<unsigned>(TensorKind::activation_grad) &&
         t.pieces >= 1 && t.piece >= 0 && t.piece < t.pieces;
}

// Open-addressing hash set of small keys, for the per-rank checks: no node per entry, no
// rehash during the rank (sized for `n` keys up front).
class FlatSet {
 public:
  explicit FlatSet(std::size_t n) {
    std::size_t size = 16;
    while (size < 2 * n)
      size *= 2;
    slots_.assign(size, kEmpty);
    mask_ = size - 1;
  }
  // The slot of `key` (probing from `hash`): kEmpty there when the key is absent.
  template <class Equal>
  std::uint32_t* find(std::uint64_t hash, const Equal& equal) {
    for (std::size_t i = mix(hash) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == kEmpty || equal(slots_[i])) return &slots_[i];
    }
  }
  static constexpr std::uint32_t kEmpty = 0xffffffffu;

 private:
  static std::size_t mix(std::uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return static_cast<std::size_t>(h ^ (h >> 33));
  }
  std::vector<std::uint32_t> slots_;
  std::size_t mask_ = 0;
};

// FNV-1a over 8-byte words: buffer names are short ("act.0.3", "grad.shard").
std::uint64_t name_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  std::size_t k = 0;
  for (; k + 8 <= s.size(); k += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, s.data() + k, 8);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  std::uint64_t w = 0;
  std::memcpy(&w, s.data() + k, s.size() - k);
  return (h ^ w) * 0x100000001b3ULL;
}

bool is_embedding_kind(ComputeKind k) {
  return k == ComputeKind::embedding_forward || k == ComputeKind::head ||
         k == ComputeKind::embedding_backward;
}

class StructureChecker {
 public:
  StructureChecker(const Program& p, int threads) : p_(p), threads_(threads) {}

  Check run() {
    if (p_.num_ranks() <= 0) return Failure{"program has no ranks", kNone, kNone, {}};
    if (p_.num_ranks() > kMaxRanks)
      return Failure{"program has more than " + str(kMaxRanks) + " ranks", kNone, kNone, {}};
    if (p_.streams.empty() || p_.streams.size() > 256)
      return Failure{"program needs 1 to 256 streams, has " +
                         str(static_cast<std::int64_t>(p_.streams.size())),
                     kNone,
                     kNone,
                     {}};
    if (p_.header.layers < 0) return Failure{"header: negative layer count", kNone, kNone, {}};
    if (static_cast<std::int64_t>(p_.communicators.size()) > kMaxComms)
      return Failure{"too many communicators", kNone, kNone, {}};
    std::int64_t total_ops = 0;
    for (const RankProgram& rp : p_.ranks)
      total_ops += static_cast<std::int64_t>(rp.ops.size());
    if (total_ops > kMaxOps)
      return Failure{
          "program has " + str(total_ops) + " ops; the verifier handles at most " + str(kMaxOps),
          kNone,
          kNone,
          {}};
    if (Check c = communicators()) return c;
    for (std::size_t i = 0; i < p_.costs.size(); ++i) {
      const Cost& c = p_.costs[i];
      bool ok = std::isfinite(c.recompute_flops) && c.recompute_flops >= 0;
      for (std::size_t k = 0; k < kOpClassCount; ++k)
        ok = ok && std::isfinite(c.flops[k]) && c.flops[k] >= 0 && std::isfinite(c.bytes[k]) &&
             c.bytes[k] >= 0;
      if (!ok)
        return Failure{
            "cost " + str(static_cast<std::int64_t>(i)) + ": negative or non-finite value",
            kNone,
            kNone,
            {}};
      if (!c.kernels.empty()) {
        if (std::string why = kernels_disagree(c); !why.empty())
          return Failure{
              "cost " + str(static_cast<std::int64_t>(i)) + ": " + why, kNone, kNone, {}};
      }
    }
    // Ranks are independent here: check them in parallel; report the first failing rank's
    // first failure, as a serial check would.
    const int workers = std::min(threads_, p_.num_ranks());
    std::vector<std::vector<char>> own(static_cast<std::size_t>(workers),
                                       std::vector<char>(p_.communicators.size(), 0));
    std::vector<Check> failure(static_cast<std::size_t>(p_.num_ranks()));
    std::atomic<Rank> first_failed{p_.num_ranks()};
    parallel_for(0, p_.num_ranks(), workers, [&](std::int64_t i, int w) {
      const auto r = static_cast<Rank>(i);
      if (r > first_failed.load(std::memory_order_relaxed)) return;  // cannot be reported
      Check c = rank(r, own[static_cast<std::size_t>(w)]);
      if (!c) return;
      failure[static_cast<std::size_t>(r)] = std::move(c);
      Rank seen = first_failed.load(std::memory_order_relaxed);
      while (r < seen && !first_failed.compare_exchange_weak(seen, r, std::memory_order_relaxed)) {
      }
    });
    const Rank r = first_failed.load();
    if (r < p_.num_ranks()) return std::move(failure[static_cast<std::size_t>(r)]);
    return std::nullopt;
  }

 private:
  Check communicators() {
    std::vector<std::int64_t> seen(static_cast<std::size_t>(p_.num_ranks()), -1);
    comms_of_.resize(static_cast<std::size_t>(p_.num_ranks()));
    sorted_members_.resize(p_.communicators.size());
    for (std::size_t c = 0; c < p_.communicators.size(); ++c) {
      const Communicator& comm = p_.communicators[c];
      const std::string where =
          "communicator " + str(static_cast<std::int64_t>(c)) + " '" + comm.name + "': ";
      if (comm.members.empty()) return Failure{where + "no members", kNone, kNone, {}};
      for (Rank m : comm.members) {
        if (m < 0 || m >= p_.num_ranks())
          return Failure{where + "member " + str(m) + " is not a rank", kNone, kNone, {}};
        auto& s = seen[static_cast<std::size_t>(m)];
        if (s == static_cast<std::int64_t>(c))
          return Failure{where + "rank " + str(m) + " listed twice", kNone, kNone, {}};
        s = static_cast<std::int64_t>(c);
        comms_of_[static_cast<std::size_t>(m)].push_back(static_cast<CommId>(c));
      }
      std::vector<Rank>& sorted = sorted_members_[c];
      sorted = comm.members;
      std::sort(sorted.begin(), sorted.end());
    }
    return std::nullopt;
  }

  bool is_member(CommId c, Rank r) const {
    const std::vector<Rank>& m = sorted_members_[static_cast<std::size_t>(c)];
    return std::binary_search(m.begin(), m.end(), r);
  }

  // Marks the communicators rank `r` belongs to in `table` (one per worker, indexed by
  // communicator) while its ops are checked.
  struct OwnComms {
    const std::vector<CommId>& comms;
    std::vector<char>& table;
    OwnComms(const std::vector<CommId>& c, std::vector<char>& t) : comms(c), table(t) { set(1); }
    ~OwnComms() { set(0); }
    OwnComms(const OwnComms&) = delete;
    OwnComms& operator=(const OwnComms&) = delete;
    void set(char v) {
      for (CommId id : comms)
        table[static_cast<std::size_t>(id)] = v;
    }
  };

  Check rank(Rank r, std::vector<char>& own_table) {
    const OwnComms own(comms_of_[static_cast<std::size_t>(r)], own_table);
    const RankProgram& rp = p_.ranks[static_cast<std::size_t>(r)];
    FlatSet names(rp.buffers.size());  // buffer indices, by name
    for (std::size_t b = 0; b < rp.buffers.size(); ++b) {
      const Buffer& buf = rp.buffers[b];
      const auto fail_buffer = [&](const char* what) {
        return Failure{"r" + str(r) + ": buffer " + str(static_cast<std::int64_t>(b)) + " '" +
                           buf.name + "': " + what,
                       r,
                       kNone,
                       {}};
      };
      std::uint32_t* slot = names.find(name_hash(buf.name), [&](std::uint32_t other) {
        return rp.buffers[other].name == buf.name;
      });
      if (*slot != FlatSet::kEmpty) return fail_buffer("name not unique on this rank");
      *slot = static_cast<std::uint32_t>(b);
      if (static_cast<unsigned>(buf.role) > static_cast<unsigned>(BufferRole::workspace))
        return fail_buffer("unknown role");
      if (!tensor_ok(buf.initial)) return fail_buffer("bad initial tensor");
    }
    // Groups closed so far on this rank (their ids as uint32; a group id is never kEmpty's
    // value, which is kNone's and is not a group). Created at the first group: most ranks of
    // the pipeline schedules have none.
    std::optional<FlatSet> closed_groups;
    const auto closed = [&](std::int32_t group) {
      if (!closed_groups) closed_groups.emplace(rp.ops.size());
      const auto key = static_cast<std::uint32_t>(group);
      return closed_groups->find(key, [&](std::uint32_t other) { return other == key; });
    };
    std::int32_t open_group = kNone;
    // The checks every op gets, in the order they are reported.
    const auto generic = [&](OpIndex index, const Op& op) -> Check {
      const auto i = static_cast<std::size_t>(index);
      const auto fail = [&](const std::string& what) { return fail_at(p_, r, index, what); };
      if (static_cast<unsigned>(op.kind) > static_cast<unsigned>(OpKind::free))
        return fail("unknown op kind " + str(static_cast<int>(op.kind)));
      if (op.stream >= p_.streams.size()) return fail("unknown stream " + str(op.stream));
      if (static_cast<std::uint64_t>(op.deps_offset) + op.deps_count > rp.dep_pool.size())
        return fail("dependency list outside the rank's dep_pool");
      if (static_cast<std::uint64_t>(op.buffers_offset) + op.reads_count + op.writes_count >
          rp.buffer_pool.size())
        return fail("buffer list outside the rank's buffer_pool");
      for (std::uint32_t k = 0; k < op.reads_count + op.writes_count; ++k) {
        const BufferId b = rp.buffer_pool[op.buffers_offset + k];
        if (b < 0 || static_cast<std::size_t>(b) >= rp.buffers.size())
          return fail("buffer id " + str(b) + " out of range (rank has " +
                      str(static_cast<std::int64_t>(rp.buffers.size())) + " buffers)");
      }
      // Groups: consecutive in program order, one stream, communication ops only.
      if (op.group != open_group) {
        if (open_group != kNone) *closed(open_group) = static_cast<std::uint32_t>(open_group);
        if (op.group != kNone && *closed(op.group) != FlatSet::kEmpty)
          return fail("group " + str(op.group) + " is not consecutive on this rank");
        open_group = op.group;
      } else if (op.group != kNone && rp.ops[i - 1].stream != op.stream) {
        return fail("group " + str(op.group) + " spans two streams");
      }
      if (op.group != kNone && op.kind != OpKind::send && op.kind != OpKind::recv &&
          op.kind != OpKind::collective)
        return fail("only send, recv and collective ops can be grouped");
      for (std::uint32_t k = 0; k < op.deps_count; ++k) {
        const OpIndex d = rp.dep_pool[op.deps_offset + k];
        if (d < 0 || d >= index)
          return fail("dependency on #" + str(d) + ", which is not an earlier op");
        if (op.group != kNone && rp.ops[static_cast<std::size_t>(d)].group == op.group)
          return fail("dependency on #" + str(d) + " of its own group");
      }
      return std::nullopt;
    };
    // The same checks for the common case of an op outside any group after an op outside any
    // group (then the group checks have nothing to do), without messages and with the tables'
    // sizes in registers: true exactly when generic() would find nothing. Any other op, or one
    // this doubts, goes through generic().
    const std::size_t streams = p_.streams.size();
    const std::uint64_t dep_pool_size = rp.dep_pool.size();
    const std::uint64_t buffer_pool_size = rp.buffer_pool.size();
    const auto buffers = static_cast<std::uint64_t>(rp.buffers.size());
    const OpIndex* dep_pool = rp.dep_pool.data();
    const BufferId* buffer_pool = rp.buffer_pool.data();
    const auto plain_ok = [&](OpIndex index, const Op& op) {
      if (static_cast<unsigned>(op.kind) > static_cast<unsigned>(OpKind::free) ||
          op.stream >= streams ||
          static_cast<std::uint64_t>(op.deps_offset) + op.deps_count > dep_pool_size)
        return false;
      const std::uint32_t listed = op.reads_count + op.writes_count;
      if (static_cast<std::uint64_t>(op.buffers_offset) + listed > buffer_pool_size) return false;
      bool ok = true;
      for (std::uint32_t k = 0; k < listed; ++k)  // as unsigned, negative ids are huge
        ok &= static_cast<std::uint64_t>(
                  static_cast<std::int64_t>(buffer_pool[op.buffers_offset + k])) < buffers;
      for (std::uint32_t k = 0; k < op.deps_count; ++k)
        ok &= static_cast<std::uint32_t>(dep_pool[op.deps_offset + k]) <
              static_cast<std::uint32_t>(index);
      return ok;
    };
    const auto op_count = static_cast<OpIndex>(rp.ops.size());
    for (OpIndex index = 0; index < op_count; ++index) {
      const Op& op = rp.ops[static_cast<std::size_t>(index)];
      if (op.group != kNone || open_group != kNone || !plain_ok(index, op)) {
        if (Check c = generic(index, op)) return c;
      }
      // The detailed check (which builds the message) runs only for an op the fast one
      // doubts; op_ok() holds exactly when kind_specific() finds nothing.
      if (!op_ok(r, op, own_table)) {
        const auto fail = [&](const std::string& what) { return fail_at(p_, r, index, what); };
        if (Check c = kind_specific(r, index, op, own_table, fail)) return c;
      }
    }
    return std::nullopt;
  }

  // kind_specific() without messages: true exactly when it would find nothing (same
  // conditions, in an order that never indexes out of range).
  bool op_ok(Rank r, const Op& op, const std::vector<char>& own_comm) const {
    const RankProgram& rp = p_.ranks[static_cast<std::size_t>(r)];
    const auto fits = [&](std::uint32_t k, std::uint64_t bytes) {
      return bytes <= rp.buffers[static_cast<std::size_t>(rp.buffer_pool[op.buffers_offset + k])]
                          .size.count();
    };
    const auto comm_ok = [&] {
      return op.comm >= 0 && static_cast<std::size_t>(op.comm) < p_.communicators.size() &&
             own_comm[static_cast<std::size_t>(op.comm)];
    };
    const auto peer_ok = [&] {  // after comm_ok()
      return op.peer >= 0 && op.peer < p_.num_ranks() && is_member(op.comm, op.peer);
    };
    switch (op.kind) {
      case OpKind::compute: {
        if (static_cast<unsigned>(op.compute) > static_cast<unsigned>(kLastComputeKind))
          return false;
        if (op.cost != kNone &&
            (op.cost < 0 || static_cast<std::size_t>(op.cost) >= p_.costs.size()))
          return false;
        const ComputeKind k = op.compute;
        const bool embedding_block = op.layer_begin == kEmbeddingLayer && op.layer_end == 0;
        const bool decoder_block = op.layer_begin >= 0 && op.layer_begin < op.layer_end &&
                                   op.layer_end <= p_.header.layers;
        if (is_embedding_kind(k) && !embedding_block) return false;
        if ((k == ComputeKind::forward || k == ComputeKind::backward ||
             k == ComputeKind::backward_input || k == ComputeKind::backward_weight) &&
            !decoder_block)
          return false;
        if (k == ComputeKind::optimizer && !embedding_block && !decoder_block) return false;
        if (k != ComputeKind::accumulate && k != ComputeKind::optimizer && op.sample < 0)
          return false;
        if (k == ComputeKind::accumulate && (op.reads_count < 1 || op.writes_count < 1))
          return false;
        return true;
      }
      case OpKind::send:
        return op.reads_count == 1 && op.writes_count == 0 && comm_ok() && op.peer != r &&
               peer_ok() && fits(0, op.bytes);
      case OpKind::recv:
        return op.reads_count == 0 && op.writes_count == 1 && comm_ok() && op.peer != r &&
               peer_ok() && fits(0, op.bytes);
      case OpKind::collective: {
        if (static_cast<unsigned>(op.collective) >
                static_cast<unsigned>(CollectiveKind::reduce_scatter) ||
            op.reads_count != 1 || op.writes_count != 1 || !comm_ok())
          return false;
        const auto m = static_cast<std::uint64_t>(
            p_.communicators[static_cast<std::size_t>(op.comm)].members.size());
        switch (op.collective) {
          case CollectiveKind::broadcast:
          case CollectiveKind::reduce:
            return peer_ok() && fits(0, op.bytes) && fits(1, op.bytes);
          case CollectiveKind::all_reduce:
            return op.peer == kNone && fits(0, op.bytes) && fits(1, op.bytes);
          case CollectiveKind::all_gather:
            return op.peer == kNone && op.bytes % m == 0 && fits(0, op.bytes / m) &&
                   fits(1, op.bytes);
          case CollectiveKind::reduce_scatter:
            return op.peer == kNone && op.bytes % m == 0 && fits(0, op.bytes) &&
                   fits(1, op.bytes / m);
        }
        return true;
      }
      case OpKind::copy:
        return op.reads_count == 1 && op.writes_count == 1 && fits(0, op.bytes) &&
               fits(1, op.bytes);
      case OpKind::alloc:
      case OpKind::free: {
        if (op.reads_count != 0 || op.writes_count == 0) return false;
        for (BufferId id : writes(rp, op))
          if (rp.buffers[static_cast<std::size_t>(id)].persistent) return false;
        return true;
      }
    }
    return true;
  }

  template <class Fail>
  Check kind_specific(Rank r, OpIndex index, const Op& op, const std::vector<char>& own_comm,
                      const Fail& fail) {
    const RankProgram& rp = p_.ranks[static_cast<std::size_t>(r)];
    const auto buffer_size = [&](std::uint32_t k) {
      return rp.buffers[static_cast<std::size_t>(rp.buffer_pool[op.buffers_offset + k])]
          .size.count();
    };
    const auto counts = [&](std::uint16_t nr, std::uint16_t nw) -> Check {
      if (op.reads_count != nr || op.writes_count != nw)
        return fail(std::string(name(op.kind)) + " needs " + str(nr) + " read and " + str(nw) +
                    " written buffers, has " + str(op.reads_count) + " and " +
                    str(op.writes_count));
      return std::nullopt;
    };
    const auto comm_ok = [&]() -> Check {
      if (op.comm < 0 || static_cast<std::size_t>(op.comm) >= p_.communicators.size())
        return fail("communicator " + str(op.comm) + " out of range");
      if (!own_comm[static_cast<std::size_t>(op.comm)])  // r is the rank being checked
        return fail("r" + str(r) + " is not a member of communicator '" +
                    p_.communicators[static_cast<std::size_t>(op.comm)].name + "'");
      return std::nullopt;
    };
    const auto peer_ok = [&](const char* what) -> Check {
      if (op.peer < 0 || op.peer >= p_.num_ranks())
        return fail(std::string(what) + " " + str(op.peer) + " is not a rank");
      if (!is_member(op.comm, op.peer))
        return fail(std::string(what) + " r" + str(op.peer) + " is not a member of communicator '" +
                    p_.communicators[static_cast<std::size_t>(op.comm)].name + "'");
      return std::nullopt;
    };
    const auto fits = [&](std::uint32_t k, std::uint64_t bytes, const char* what) -> Check {
      if (bytes > buffer_size(k))
        return fail(
            std::string(what) + " buffer '" +
            rp.buffers[static_cast<std::size_t>(rp.buffer_pool[op.buffers_offset + k])].name +
            "' holds " + str(static_cast<std::int64_t>(buffer_size(k))) + " bytes, op moves " +
            str(static_cast<std::int64_t>(bytes)));
      return std::nullopt;
    };
    switch (op.kind) {
      case OpKind::compute: {
        if (static_cast<unsigned>(op.compute) > static_cast<unsigned>(kLastComputeKind))
          return fail("unknown compute kind " + str(static_cast<int>(op.compute)));
        if (op.cost != kNone &&
            (op.cost < 0 || static_cast<std::size_t>(op.cost) >= p_.costs.size()))
          return fail("cost " + str(op.cost) + " out of range");
        const ComputeKind k = op.compute;
        const bool embedding_block = op.layer_begin == kEmbeddingLayer && op.layer_end == 0;
        const bool decoder_block = op.layer_begin >= 0 && op.layer_begin < op.layer_end &&
                                   op.layer_end <= p_.header.layers;
        if (is_embedding_kind(k) && !embedding_block)
          return fail("layers must be [-1,0) (the embedding block)");
        if ((k == ComputeKind::forward || k == ComputeKind::backward ||
             k == ComputeKind::backward_input || k == ComputeKind::backward_weight) &&
            !decoder_block)
          return fail("layers must satisfy 0 <= begin < end <= " + str(p_.header.layers));
        if (k == ComputeKind::optimizer && !embedding_block && !decoder_block)
          return fail("optimizer block must be [-1,0) or a decoder block");
        if (k != ComputeKind::accumulate && k != ComputeKind::optimizer && op.sample < 0)
          return fail("compute op needs a sample");
        if (k == ComputeKind::accumulate && (op.reads_count < 1 || op.writes_count < 1))
          return fail("accumulate needs reads[0] and writes[0]");
        return std::nullopt;
      }
      case OpKind::send:
      case OpKind::recv: {
        if (Check c = op.kind == OpKind::send ? counts(1, 0) : counts(0, 1)) return c;
        if (Check c = comm_ok()) return c;
        if (op.peer == r) return fail("peer is the rank itself");
        if (Check c = peer_ok("peer")) return c;
        return fits(0, op.bytes, op.kind == OpKind::send ? "send" : "recv");
      }
      case OpKind::collective: {
        if (static_cast<unsigned>(op.collective) >
            static_cast<unsigned>(CollectiveKind::reduce_scatter))
          return fail("unknown collective kind " + str(static_cast<int>(op.collective)));
        if (Check c = counts(1, 1)) return c;
        if (Check c = comm_ok()) return c;
        const auto m = static_cast<std::uint64_t>(
            p_.communicators[static_cast<std::size_t>(op.comm)].members.size());
        switch (op.collective) {
          case CollectiveKind::broadcast:
          case CollectiveKind::reduce:
            if (Check c = peer_ok("root")) return c;
            if (Check c = fits(0, op.bytes, "send")) return c;
            return fits(1, op.bytes, "receive");
          case CollectiveKind::all_reduce:
            if (op.peer != kNone) return fail("all_reduce takes no root");
            if (Check c = fits(0, op.bytes, "send")) return c;
            return fits(1, op.bytes, "receive");
          case CollectiveKind::all_gather:
          case CollectiveKind::reduce_scatter: {
            if (op.peer != kNone) return fail(std::string(name(op.collective)) + " takes no root");
            if (op.bytes % m != 0)
              return fail("bytes " + str(static_cast<std::int64_t>(op.bytes)) +
                          " not divisible by the " + str(static_cast<std::int64_t>(m)) +
                          " members");
            const bool gather = op.collective == CollectiveKind::all_gather;
            if (Check c = fits(0, gather ? op.bytes / m : op.bytes, "send")) return c;
            return fits(1, gather ? op.bytes : op.bytes / m, "receive");
          }
        }
        return std::nullopt;
      }
      case OpKind::copy:
        if (Check c = counts(1, 1)) return c;
        if (Check c = fits(0, op.bytes, "source")) return c;
        return fits(1, op.bytes, "destination");
      case OpKind::alloc:
      case OpKind::free: {
        if (op.reads_count != 0 || op.writes_count == 0)
          return fail(std::string(name(op.kind)) +
                      " needs 0 read and at least 1 written buffers, has " + str(op.reads_count) +
                      " and " + str(op.writes_count));
        for (BufferId id : writes(rp, op)) {
          const Buffer& b = rp.buffers[static_cast<std::size_t>(id)];
          if (b.persistent)
            return fail(std::string(name(op.kind)) + " of persistent buffer '" + b.name + "'");
        }
        return std::nullopt;
      }
    }
    (void)index;
    return std::nullopt;
  }

  const Program& p_;
  std::vector<std::vector<Rank>> sorted_members_;  ///< per communicator: its members, sorted
  std::vector<std::vector<CommId>> comms_of_;      ///< per rank: its communicators
  int threads_ = 1;
};

}  // namespace

Check check_structure(const Program& program, int threads) {
  // A replica-compact program (Program::stored_ranks) is checked as it is: the ranks not stored
  // are empty, and the images of the stored ones pass iff they do (verify_replicas.cpp (a)).
  return StructureChecker(program, threads).run();
}

}  // namespace tawpipe::ir::detail
