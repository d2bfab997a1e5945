// The executor under replica symmetry (executor_impl.h; the argument is sim/symmetry/symmetry.h):
// only replica 0 runs; each of its transfers is one solver variable over the links of all its
// images; the link map p of the replica shift is built and checked as transfers start; the
// other replicas' figures are copied at the end.
#include <algorithm>
#include <map>

#include "sim/run/executor_impl.h"

namespace tawpipe::sim::detail {

std::vector<topo::LinkId> Executor::map_images(
    std::span<const std::span<const topo::LinkId>> images) {
  // Owners first: a link that images of two replicas use is shared (kShared).
  for (std::size_t d = 0; d < images.size(); ++d) {
    for (const topo::LinkId l : images[d]) {
      std::int32_t& owner = link_owner_[idx(l)];
      if (owner == kUnseen) {
        owner = static_cast<std::int32_t>(d);
      } else if (owner != static_cast<std::int32_t>(d)) {
        owner = kShared;
      }
    }
  }
  for (std::size_t d = 0; d < images.size(); ++d) {
    const auto a = images[d];
    const auto b = images[(d + 1) % images.size()];
    if (a.size() != b.size()) {
      broken("a transfer's images use different numbers of links");
      return {};
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      const bool shared_a = link_owner_[idx(a[i])] == kShared;
      if (shared_a != (link_owner_[idx(b[i])] == kShared)) {
        broken("a link shared by replicas maps onto one that is not (link " +
               topology_.link(a[i]).name + ")");
        return {};
      }
      if (shared_a) continue;  // must never be a bottleneck (check_symmetry)
      std::int32_t& image = link_image_[idx(a[i])];
      std::int32_t& preimage = link_preimage_[idx(b[i])];
      if (image < 0 && preimage < 0) {
        if (network_.link_bytes_per_second(a[i]) != network_.link_bytes_per_second(b[i]) ||
            network_.link_latency(a[i]) != network_.link_latency(b[i])) {
          broken("a link and its image in the next replica differ in rate or latency");
          return {};
        }
        image = b[i];
        preimage = a[i];
      } else if (image != b[i] || preimage != a[i]) {
        broken("replicas use links in different patterns (link " + topology_.link(a[i]).name + ")");
        return {};
      }
    }
  }
  // The solver variable: image 0's links, plus the shared links of the other images. A link
  // of replica d > 0 is left out: p maps it onto replica 0's link, whose constraint (the same
  // coefficients, by the checks above) stands for it (quotient by p; symmetry.h).
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

void Executor::check_symmetry() {
  if (!res_.symmetry_broken.empty()) return;
  const auto bottleneck = [&](std::size_t l, const char* what) {
    if (!network_.link_was_bottleneck(static_cast<topo::LinkId>(l))) return false;
    broken(std::string(what) + " was a bottleneck (link " +
           topology_.link(static_cast<topo::LinkId>(l)).name + ")");
    return true;
  };
  // The link map p must be a bijection on the links that one replica's transfers own.
  for (std::size_t l = 0; l < link_owner_.size(); ++l) {
    if (link_owner_[l] == kShared) {
      if (bottleneck(l, "a link that several replicas share")) return;
      continue;
    }
    if (link_owner_[l] < 0) continue;
    const std::int32_t image = link_image_[l];
    const std::int32_t preimage = link_preimage_[l];
    if (image < 0 || preimage < 0 ||
        link_owner_[idx(image)] != (link_owner_[l] + 1) % sym_->replicas ||
        link_owner_[idx(preimage)] < 0) {
      broken("a replica's link has no image in the next replica (link " +
             topology_.link(static_cast<topo::LinkId>(l)).name + ")");
      return;
    }
  }
  // p-orbits that a cross-replica collective loads unevenly: their constraint in the quotient
  // carried the largest load, so the others were slack; exact only if it never bound.
  for (const topo::LinkId l : asymmetric_) {
    if (bottleneck(idx(l), "a link that a collective across replicas loads unevenly")) return;
  }
  for (const topo::LinkId l : cross_unseen_) {
    if (link_owner_[idx(l)] >= 0) {
      broken("a collective across replicas used a link before replica-local transfers did (link " +
             topology_.link(l).name + ")");
      return;
    }
  }
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
    std::map<topo::LinkId, bool> done;  // p-orbit representatives handled
    for (const auto& [l, n] : count) {
      if (link_owner_[idx(l)] < 0) {  // unseen or shared: as it is
        if (link_owner_[idx(l)] == kUnseen) cross_unseen_.push_back(l);
        x.links.insert(x.links.end(), idx(n), l);
        continue;
      }
      x.actual.emplace_back(l, n);
      // The p-orbit of l: its representative (replica 0's) and the largest count on it.
      topo::LinkId rep = -1;
      std::int32_t most = 0, least = n;
      std::size_t y = idx(l);
      for (std::int32_t d = 0; d < sym_->replicas; ++d) {
        if (link_image_[y] < 0) {
          broken("a collective across replicas uses a link with no image (link " +
                 topology_.link(static_cast<topo::LinkId>(y)).name + ")");
          return x.links;
        }
        if (link_owner_[y] == 0) rep = static_cast<topo::LinkId>(y);
        const auto c = count.find(static_cast<topo::LinkId>(y));
        const std::int32_t m = c == count.end() ? 0 : c->second;
        most = std::max(most, m);
        least = std::min(least, m);
        y = idx(link_image_[y]);
      }
      if (rep < 0 || y != idx(l) || least == 0) {
        // Not a p-orbit of length k with a replica-0 link, or a member the collective does not
        // load at all (its busy time would differ from replica 0's).
        broken("a collective across replicas loads a link but not its image (link " +
               topology_.link(l).name + ")");
        return x.links;
      }
      if (done.try_emplace(rep, true).second) {
        x.links.insert(x.links.end(), idx(most), rep);
        x.quotient.emplace_back(rep, most);
        if (least != most) asymmetric_.push_back(rep);
      }
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
  res_.op_start.resize(res_.rank_offset[n]);
  res_.op_end.resize(res_.rank_offset[n]);
  for (std::size_t r = R; r < n; ++r) {
    const std::size_t rep = r % R;
    const std::size_t from = res_.rank_offset[rep];
    const std::size_t count = res_.rank_offset[rep + 1] - from;
    std::copy_n(res_.op_start.begin() + static_cast<std::ptrdiff_t>(from), count,
                res_.op_start.begin() + static_cast<std::ptrdiff_t>(res_.rank_offset[r]));
    std::copy_n(res_.op_end.begin() + static_cast<std::ptrdiff_t>(from), count,
                res_.op_end.begin() + static_cast<std::ptrdiff_t>(res_.rank_offset[r]));
    res_.rank_times[r] = res_.rank_times[rep];
    res_.peak_memory_bytes[r] = res_.peak_memory_bytes[rep];
    res_.peak_memory[r] = res_.peak_memory[rep];
    res_.memory_capacity_bytes[r] = res_.memory_capacity_bytes[rep];
    if (options_.record_memory) res_.memory_samples[r] = res_.memory_samples[rep];
  }
  // Links of the other replicas: the network only loaded replica 0's (the quotient by p). A
  // link carries what its replica-0 preimage carries from replica-local transfers, plus what
  // cross-replica collectives actually put on it.
  for (std::size_t l = 0; l < link_owner_.size(); ++l) {
    if (link_owner_[l] != 0) continue;
    const double local = res_.link_bytes[l] - cross_quotient_bytes_[l];
    const SimTime busy = res_.link_busy[l];
    std::size_t y = l;
    for (std::int32_t d = 0; d < sym_->replicas; ++d) {
      res_.link_bytes[y] = local + cross_actual_bytes_[y];
      res_.link_busy[y] = busy;
      y = idx(link_image_[y]);
    }
  }
}

}  // namespace tawpipe::sim::detail
