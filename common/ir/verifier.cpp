#include "common/ir/verifier.h"

#include <algorithm>
#include <thread>

#include "common/ir/text.h"
#include "common/ir/verify_internal.h"
#include "common/parallel.h"

namespace tawpipe::ir {
namespace detail {

Failure fail_at(const Program& program, Rank rank, OpIndex op, const std::string& what) {
  return Failure{describe_op(program, rank, op, false) + ": " + what, rank, op, {}};
}

OpNumbering::OpNumbering(const Program& program) {
  // check_structure has bounded the total by kMaxOps.
  first.reserve(program.ranks.size() + 1);
  GlobalOp n = 0;
  for (const RankProgram& rp : program.ranks) {
    first.push_back(n);
    n += static_cast<GlobalOp>(rp.ops.size());
  }
  first.push_back(n);
}

std::pair<Rank, OpIndex> OpNumbering::local(GlobalOp global_index) const {
  const auto it = std::upper_bound(first.begin(), first.end() - 1, global_index);
  const auto rank = static_cast<Rank>(it - first.begin() - 1);
  return {rank, global_index - first[static_cast<std::size_t>(rank)]};
}

}  // namespace detail

namespace {

// Counts and program-order peak memory, ranks in parallel (integer sums: the result does not
// depend on the thread count). Precondition: the structure check passed.
// Compact form: replica 0's ranks are counted, and every replica has as many.
VerifyStats statistics(const Program& program, const detail::Replicas& replicas, int threads) {
  const auto ranks = static_cast<std::size_t>(program.num_ranks());
  const Rank stored = replicas.stored_end(program);
  const int workers = std::min(threads, stored);
  std::vector<VerifyStats> partial(static_cast<std::size_t>(workers));
  VerifyStats out;
  out.persistent_bytes.resize(ranks);
  out.peak_live_bytes.resize(ranks);
  parallel_for(0, stored, workers, [&](std::int64_t r, int w) {
    VerifyStats& s = partial[static_cast<std::size_t>(w)];
    const RankProgram& rp = program.ranks[static_cast<std::size_t>(r)];
    std::uint64_t live = 0;
    for (const Buffer& b : rp.buffers)
      if (b.persistent) live += b.size.count();
    out.persistent_bytes[static_cast<std::size_t>(r)] = Bytes(live);
    std::uint64_t peak = live;
    std::vector<bool> allocated(rp.buffers.size(), false);
    for (const Op& op : rp.ops) {
      ++s.total_ops;
      ++s.ops_by_kind[static_cast<std::size_t>(op.kind)];
      s.bytes_by_kind[static_cast<std::size_t>(op.kind)] += op.bytes;
      if (op.kind == OpKind::collective)
        s.collective_bytes[static_cast<std::size_t>(op.collective)] += op.bytes;
      if (op.kind == OpKind::alloc || op.kind == OpKind::free) {
        const bool alloc = op.kind == OpKind::alloc;
        for (BufferId id : writes(rp, op)) {
          const auto b = static_cast<std::size_t>(id);
          if (allocated[b] == alloc) continue;  // double alloc/free is the dataflow stage's error
          allocated[b] = alloc;
          if (alloc) {
            live += rp.buffers[b].size.count();
          } else {
            live -= rp.buffers[b].size.count();
          }
        }
      }
      std::uint64_t workspace = 0;
      if (op.kind == OpKind::compute && op.cost != kNone)
        workspace = program.costs[static_cast<std::size_t>(op.cost)].workspace_bytes;
      peak = std::max(peak, live + workspace);
    }
    out.peak_live_bytes[static_cast<std::size_t>(r)] = Bytes(peak);
  });
  for (std::size_t r = static_cast<std::size_t>(stored); r < ranks; ++r) {
    out.persistent_bytes[r] = out.persistent_bytes[r % static_cast<std::size_t>(stored)];
    out.peak_live_bytes[r] = out.peak_live_bytes[r % static_cast<std::size_t>(stored)];
  }
  const auto copies = static_cast<std::uint64_t>(replicas.count);
  for (VerifyStats& s : partial) {
    s.total_ops *= copies;
    for (std::size_t i = 0; i < s.ops_by_kind.size(); ++i) {
      s.ops_by_kind[i] *= copies;
      s.bytes_by_kind[i] *= copies;
    }
    for (std::uint64_t& b : s.collective_bytes)
      b *= copies;
  }
  for (const VerifyStats& s : partial) {
    out.total_ops += s.total_ops;
    for (std::size_t k = 0; k < out.ops_by_kind.size(); ++k) {
      out.ops_by_kind[k] += s.ops_by_kind[k];
      out.bytes_by_kind[k] += s.bytes_by_kind[k];
    }
    for (std::size_t k = 0; k < out.collective_bytes.size(); ++k)
      out.collective_bytes[k] += s.collective_bytes[k];
  }
  return out;
}

VerifyResult failed(VerifyResult result, VerifyStage stage, detail::Failure f) {
  result.ok = false;
  result.stage = stage;
  result.message = std::move(f.message);
  result.rank = f.rank;
  result.op = f.op;
  result.details = std::move(f.details);
  return result;
}

}  // namespace

const char* name(VerifyStage stage) {
  switch (stage) {
    case VerifyStage::none:
      return "none";
    case VerifyStage::structure:
      return "structure";
    case VerifyStage::matching:
      return "matching";
    case VerifyStage::deadlock:
      return "deadlock";
    case VerifyStage::dataflow:
      return "dataflow";
  }
  return "?";
}

VerifyResult verify(const Program& program, const VerifyOptions& options) {
  VerifyResult result;
  const int threads = resolve_threads(options.threads);
  if (detail::Check c = detail::check_structure(program, threads))
    return failed(std::move(result), VerifyStage::structure, std::move(*c));
  detail::Replicas replicas;
  std::string why;
  if (detail::Check c = detail::replica_form(program, &replicas, &result.whole_form_needed, &why))
    return failed(std::move(result), VerifyStage::structure, std::move(*c));
  if (result.whole_form_needed) {
    result.ok = false;
    result.message = "the compact form cannot be verified, its whole form must be: " + why;
    return result;
  }
  if (options.statistics) result.stats = statistics(program, replicas, threads);
  const detail::OpNumbering numbering(program);
  // Matching and the dataflow's set-up are independent: with two or more threads they run
  // side by side. A matching failure is still reported first.
  detail::Matching matching;
  detail::Check unmatched;
  std::optional<detail::Dataflow> dataflow;
  detail::Check prepared;  // samples are checked first, but reported after a deadlock
  const auto set_up_dataflow = [&](int dataflow_threads) {
    if (options.skip_dataflow) return;
    dataflow.emplace(program, replicas, dataflow_threads);
    prepared = dataflow->prepare();
  };
  if (threads > 1) {
    std::thread matcher(
        [&] { unmatched = detail::match(program, replicas, numbering, &matching); });
    set_up_dataflow(threads - 1);
    matcher.join();
  } else {
    unmatched = detail::match(program, replicas, numbering, &matching);
    if (!unmatched) set_up_dataflow(1);
  }
  if (unmatched) return failed(std::move(result), VerifyStage::matching, std::move(*unmatched));
  bool deadlock = false;
  detail::Check c =
      detail::execute(program, numbering, matching, prepared || !dataflow ? nullptr : &*dataflow,
                      &deadlock, threads);
  if (c) {
    return failed(std::move(result), deadlock ? VerifyStage::deadlock : VerifyStage::dataflow,
                  std::move(*c));
  }
  if (prepared) return failed(std::move(result), VerifyStage::dataflow, std::move(*prepared));
  if (dataflow) {
    if (detail::Check f = dataflow->finish())
      return failed(std::move(result), VerifyStage::dataflow, std::move(*f));
  }
  return result;
}

}  // namespace tawpipe::ir
