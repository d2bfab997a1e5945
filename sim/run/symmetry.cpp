// The executor under replica symmetry (executor_impl.h; the argument is sim/symmetry/symmetry.h):
// only replica 0 runs; each of its transfers is one solver variable over image 0's links and the
// links its images share; the candidate symmetry groups of the replicas are built and checked as
// transfers start; the other replicas' figures are copied at the end.
#include <algorithm>
#include <map>

#include "sim/run/executor_impl.h"

namespace tawpipe::sim::detail {

std::vector<topo::LinkId> Executor::map_images(
    std::span<const std::span<const topo::LinkId>> images) {
  // Owners first: a link that images of two replicas use is shared (kShared).
  for (std::size_t d = 0; d < images.size(); ++d) {
    if (images[d].size() != images[0].size()) {
      broken("a transfer's images use different numbers of links");
      return {};
    }
    for (const topo::LinkId l : images[d]) {
      std::int32_t& owner = link_owner_[idx(l)];
      if (owner == kUnseen) {
        owner = static_cast<std::int32_t>(d);
      } else if (owner != static_cast<std::int32_t>(d)) {
        owner = kShared;
      }
    }
  }
  const auto same_rate = [&](topo::LinkId a, topo::LinkId b) {
    return network_.link_bytes_per_second(a) == network_.link_bytes_per_second(b) &&
           network_.link_latency(a) == network_.link_latency(b);
  };
  // A replica's own links: their counterparts in replica 0 (one each).
  for (std::size_t d = 0; d < images.size(); ++d) {
    for (std::size_t i = 0; i < images[d].size(); ++i) {
      const topo::LinkId a = images[d][i];
      const topo::LinkId r = images[0][i];
      const bool shared = link_owner_[idx(a)] == kShared;
      if (shared != (link_owner_[idx(r)] == kShared)) {
        broken("a link shared by replicas corresponds to one that is not (link " +
               topology_.link(a).name + ")");
        return {};
      }
      if (shared) continue;
      std::int32_t& rep = owned_rep_[idx(a)];
      if (rep < 0 && same_rate(a, r)) {
        rep = r;
      } else if (rep != r) {
        broken("replicas use their links in different patterns (link " + topology_.link(a).name +
               ")");
        return {};
      }
    }
  }
  // The candidate groups: each generator maps image d's links onto image g(d)'s.
  const std::int32_t k = sym_->replicas;
  bool any = false;
  for (LinkGroup& g : groups_) {
    for (std::int32_t j = 0; g.alive && j < g.generators(); ++j) {
      auto& image = g.image[idx(j)];
      auto& preimage = g.preimage[idx(j)];
      for (std::int32_t d = 0; g.alive && d < k; ++d) {
        const auto a = images[idx(d)];
        const auto b = images[idx(g.apply(j, d, k))];
        for (std::size_t i = 0; i < a.size(); ++i) {
          std::int32_t& x = image[idx(a[i])];
          std::int32_t& y = preimage[idx(b[i])];
          if (x < 0 && y < 0 && same_rate(a[i], b[i])) {
            x = b[i];
            y = a[i];
          } else if (x != b[i] || y != a[i]) {
            g.alive = false;
            break;
          }
        }
      }
    }
    any = any || g.alive;
  }
  if (!any) {
    broken("no symmetry of the replicas maps the links they use onto each other");
    return {};
  }
  // The solver variable: image 0's links, plus the shared links of the other images. A link
  // one replica d > 0 owns is left out: replica 0's counterpart stands for it (the same
  // coefficients, by the checks above; the quotient of symmetry.h).
  std::vector<topo::LinkId> links(images[0].begin(), images[0].end());
  for (std::size_t d = 1; d < images.size(); ++d) {
    for (const topo::LinkId l : images[d]) {
      if (link_owner_[idx(l)] == kShared) links.push_back(l);
    }
  }
  return links;
}

void Executor::start_collective_orbit(std::uint32_t inst) {
  Instance& in = instances_[inst];
  std::size_t first = 0;
  for (std::int32_t m = 0; m < in.members; ++m) {
    if (inst_ops_[in.ops_offset + idx(m)] >= 0) {
      first = idx(inst_ops_[in.ops_offset + idx(m)]);
      break;
    }
  }
  const ir::Op& op = op_at(first);
  const auto key =
      std::make_tuple(in.comm, static_cast<int>(op.collective), op.bytes, in.root_member);
  auto [it, fresh] = orbits_.try_emplace(key);
  Orbit& o = it->second;
  if (fresh) {
    std::vector<std::vector<topo::LinkId>> images(idx(sym_->replicas));
    ir::CommId c = in.comm;
    for (std::int32_t d = 0; d < sym_->replicas; ++d) {
      if (d > 0) c = sym_->comm_image[idx(c)];
      const CollectiveChoice choice = planner_.transfers(op, c, in.root_member, scratch_transfers_);
      const auto& members = program_.communicators[idx(c)].members;
      std::vector<topo::LinkId>& cur = images[idx(d)];
      SimTime latency;
      for (const CollectiveTransfer& t : scratch_transfers_) {
        for (std::size_t e = 0; e < t.edges.size(); ++e) {
          if (static_cast<std::int32_t>(e) == t.skipped_edge) continue;
          const std::int32_t r = members[idx(t.edges[e].src)];
          o.sent.emplace_back(t.edges[e].inter_node ? ~r : r, t.data_bytes);
        }
        cur.insert(cur.end(), t.links.begin(), t.links.end());
        latency = std::max(latency, t.latency);
      }
      const double bytes = scratch_transfers_.empty() ? 0.0 : scratch_transfers_.front().bytes;
      if (d == 0) {
        o.choice = choice;
        o.bytes = bytes;
        o.latency = latency;
        o.empty = scratch_transfers_.empty();
      } else if (res_.symmetry_broken.empty()) {
        if (choice.algo != o.choice.algo || choice.proto != o.choice.proto ||
            choice.channels != o.choice.channels || choice.bound != o.choice.bound ||
            bytes != o.bytes || latency != o.latency || scratch_transfers_.empty() != o.empty)
          broken("a collective's images differ in NCCL's choices or latency");
      }
    }
    std::vector<std::span<const topo::LinkId>> spans(images.begin(), images.end());
    o.links = map_images(spans);
  }
  const CollectiveChoice& choice = o.choice;
  const auto k = static_cast<std::uint64_t>(sym_->replicas);
  if (choice.algo == AllReduceAlgo::tree) res_.tree_all_reduces += k;
  if (choice.channels > 0) res_.protocol_counts[static_cast<std::size_t>(choice.proto)] += k;
  res_.last_channels = choice.channels;
  res_.last_protocol = choice.proto;
  if (contention_model_) {
    in.load = collective_load(choice, op.collective);
    if (in.load.sms > 0 || in.load.hbm > 0.0) {
      for (const ir::Rank m : program_.communicators[idx(in.comm)].members)
        shift_load(m, in.load, +1);
    }
  }
  for (const auto& [r, b] : o.sent)
    (r < 0 ? res_.inter_node_bytes_sent[idx(~r)] : res_.intra_node_bytes_sent[idx(r)]) += b;
  if (!o.empty) {
    in.outstanding = 1;
    network_.start(o.links, o.bytes, o.latency, kCollectiveToken | inst, choice.bound);
  } else {
    engine_.schedule_after(SimTime(), Event{handler_, kCollectiveDone, inst});
  }
}

bool Executor::asymmetric_bound() {
  for (const topo::LinkId l : asymmetric_) {
    if (network_.link_fixed_unmarked_beside_marked(l)) {
      broken(
          "a link that a collective across replicas loads unevenly limited a replica's own "
          "transfer while the collective ran (link " +
          topology_.link(l).name + ")");
      return true;
    }
    if (network_.link_fixed_beside_marked_pair(l)) {
      broken(
          "a link that a collective across replicas loads unevenly limited rates while two "
          "such collectives used it (link " +
          topology_.link(l).name + ")");
      return true;
    }
  }
  return false;
}

void Executor::check_symmetry() {
  if (!res_.symmetry_broken.empty()) return;
  // Every link replica 0 owns has exactly one counterpart in every replica (copies_).
  const std::int32_t k = sym_->replicas;
  std::vector<std::int32_t> slot(link_owner_.size(), -1);  // replica-0 link -> copies_ index
  copies_.clear();
  for (std::size_t l = 0; l < link_owner_.size(); ++l) {
    if (link_owner_[l] != 0) continue;
    if (owned_rep_[l] != static_cast<std::int32_t>(l)) {
      broken("a link of replica 0 stands for another (link " +
             topology_.link(static_cast<topo::LinkId>(l)).name + ")");
      return;
    }
    slot[l] = static_cast<std::int32_t>(copies_.size());
    copies_.emplace_back(idx(k), -1);
  }
  for (std::size_t l = 0; l < link_owner_.size(); ++l) {
    const std::int32_t owner = link_owner_[l];
    if (owner < 0) continue;
    const std::int32_t rep = owned_rep_[l];
    std::int32_t* copy =
        rep >= 0 && slot[idx(rep)] >= 0 ? &copies_[idx(slot[idx(rep)])][idx(owner)] : nullptr;
    if (copy == nullptr || *copy >= 0) {
      broken("a replica's link has no single counterpart in replica 0 (link " +
             topology_.link(static_cast<topo::LinkId>(l)).name + ")");
      return;
    }
    *copy = static_cast<std::int32_t>(l);
  }
  for (const auto& c : copies_) {
    if (std::find(c.begin(), c.end(), -1) != c.end()) {
      broken("a link of replica 0 has no counterpart in some replica");
      return;
    }
  }
  // Links that a cross-replica collective loads unevenly (symmetry.h, "Uneven loads"): exact
  // as long as none of them fixed a replica's own transfer while the collective used it, nor
  // rates while two such collectives used it.
  if (asymmetric_bound()) return;
  std::vector<topo::LinkId> uneven = asymmetric_;
  for (const topo::LinkId l : cross_unseen_) {
    if (link_owner_[idx(l)] >= 0) {
      broken("a collective across replicas used a link before replica-local transfers did (link " +
             topology_.link(l).name + ")");
      return;
    }
  }
  // Shared links: where a cross-replica collective does not load them as the symmetry maps
  // them, the same rule as above.
  const LinkGroup* group = nullptr;
  for (const LinkGroup& g : groups_) {
    if (g.alive && group == nullptr) group = &g;
  }
  if (group == nullptr) {
    broken("no symmetry of the replicas maps the links they use onto each other");
    return;
  }
  std::map<topo::LinkId, std::int32_t> count;
  for (const auto& entry : cross_) {
    count.clear();
    for (const topo::LinkId l : entry.second.links) {
      if (link_owner_[idx(l)] == kShared) ++count[l];
    }
    for (const auto& [l, n] : count) {
      for (std::int32_t j = 0; j < group->generators(); ++j) {
        const auto it = count.find(group->image[idx(j)][idx(l)]);
        if (it != count.end() && it->second == n) continue;
        uneven.push_back(l);
        if (network_.link_fixed_unmarked_beside_marked(l)) {
          broken(
              "a shared link that a collective across replicas loads unevenly limited a "
              "replica's own transfer while the collective ran (link " +
              topology_.link(l).name + ")");
          return;
        }
      }
    }
  }
  std::sort(uneven.begin(), uneven.end());
  res_.uneven_links =
      static_cast<std::int32_t>(std::unique(uneven.begin(), uneven.end()) - uneven.begin());
}

const std::vector<topo::LinkId>& Executor::cross_quotient(const ir::Op& op, const Instance& in,
                                                          std::span<const topo::LinkId> links,
                                                          double bytes) {
  const auto key =
      std::make_tuple(in.comm, static_cast<int>(op.collective), op.bytes, in.root_member);
  auto [it, fresh] = cross_.try_emplace(key);
  Cross& x = it->second;
  if (fresh) {
    std::map<topo::LinkId, std::int32_t> count;
    for (const topo::LinkId l : links)
      ++count[l];
    struct Load {
      std::int32_t most = 0;
      std::int32_t least = 0;
      std::int32_t seen = 0;  ///< counterparts the collective loads
    };
    std::map<topo::LinkId, Load> by_rep;  // replica 0's link -> its counterparts' loads
    for (const auto& [l, n] : count) {
      if (link_owner_[idx(l)] < 0) {  // unseen or shared: as it is
        if (link_owner_[idx(l)] == kUnseen) cross_unseen_.push_back(l);
        x.links.insert(x.links.end(), idx(n), l);
        continue;
      }
      x.actual.emplace_back(l, n);
      auto [r, first] = by_rep.try_emplace(owned_rep_[idx(l)], Load{n, n, 0});
      r->second.most = std::max(r->second.most, n);
      r->second.least = std::min(r->second.least, n);
      ++r->second.seen;
    }
    // Of each set of counterparts, replica 0's with the largest count. A set the collective
    // loads only in part would have differing busy times: not symmetric.
    for (const auto& [rep, load] : by_rep) {
      if (rep < 0 || load.seen != sym_->replicas) {
        broken("a collective across replicas loads a link but not its counterparts");
        return x.links;
      }
      x.links.insert(x.links.end(), idx(load.most), rep);
      x.quotient.emplace_back(rep, load.most);
      if (load.least != load.most) asymmetric_.push_back(rep);
    }
  }
  if (bytes > 0.0 && !links.empty()) {
    for (const auto& [l, n] : x.quotient)
      cross_quotient_bytes_[idx(l)] += bytes * n;
    for (const auto& [l, n] : x.actual)
      cross_actual_bytes_[idx(l)] += bytes * n;
  }
  return x.links;
}

void Executor::expand_replicas() {
  const std::size_t n = program_.ranks.size();
  const std::size_t R = active_ranks_;
  if (R == n) return;
  res_.replica_ranks = R;  // per-op times: replica 0's stand for every replica's
  for (std::size_t r = R; r < n; ++r) {
    const std::size_t rep = r % R;
    res_.rank_times[r] = res_.rank_times[rep];
    res_.peak_memory_bytes[r] = res_.peak_memory_bytes[rep];
    res_.peak_memory[r] = res_.peak_memory[rep];
    res_.memory_capacity_bytes[r] = res_.memory_capacity_bytes[rep];
    if (options_.record_memory) res_.memory_samples[r] = res_.memory_samples[rep];
  }
  // Links of the other replicas: the network loaded replica 0's only (the quotient). A link
  // carries what its counterpart in replica 0 carries from replica-local transfers, plus what
  // cross-replica collectives actually put on it.
  for (const auto& c : copies_) {
    const std::size_t l = idx(c[0]);
    const double local = res_.link_bytes[l] - cross_quotient_bytes_[l];
    const SimTime busy = res_.link_busy[l];
    for (const std::int32_t y : c) {
      res_.link_bytes[idx(y)] = local + cross_actual_bytes_[idx(y)];
      res_.link_busy[idx(y)] = busy;
    }
  }
}

}  // namespace tawpipe::sim::detail
