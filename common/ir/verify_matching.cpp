// Stage 2 of the verifier: matching. Point-to-point: the k-th send from a to b on a
// communicator (in a's program order) matches the k-th recv at b from a on it. Collectives: the
// k-th collective on a communicator is one instance on all members, which must agree in kind,
// bytes and root. O(ops + sum of communicator sizes), hash maps keyed by packed ids.
#include <algorithm>
#include <unordered_map>

#include "common/ir/text.h"
#include "common/ir/verify_internal.h"
#include "common/memory.h"

namespace tawpipe::ir::detail {
namespace {

std::string str(std::int64_t v) {
  return std::to_string(v);
}

// Structure guarantees ranks < 2^21 and communicators < 2^22.
std::uint64_t channel_key(CommId comm, Rank src, Rank dst) {
  return (static_cast<std::uint64_t>(comm) << 42) | (static_cast<std::uint64_t>(src) << 21) |
         static_cast<std::uint64_t>(dst);
}

struct Channel {
  std::vector<GlobalOp> sends;  // global op indices in the sender's program order
  std::vector<GlobalOp> recvs;  // global op indices in the receiver's program order
};

bool same_collective(const Op& a, const Op& b) {
  return a.collective == b.collective && a.bytes == b.bytes && a.peer == b.peer;
}

std::string collective_difference(const Op& got, const Op& want) {
  if (got.collective != want.collective)
    return std::string("kind ") + name(got.collective) + " vs " + name(want.collective);
  if (got.bytes != want.bytes)
    return "bytes " + str(static_cast<std::int64_t>(got.bytes)) + " vs " +
           str(static_cast<std::int64_t>(want.bytes));
  return "root r" + str(got.peer) + " vs r" + str(want.peer);
}

}  // namespace

Check match(const Program& p, const Replicas& replicas, const OpNumbering& numbering, Matching* m) {
  const Rank stored = replicas.stored_end(p);
  reserve_prefaulted(m->link, static_cast<std::size_t>(numbering.total()));
  m->link.assign(static_cast<std::size_t>(numbering.total()), -1);
  std::unordered_map<std::uint64_t, Channel> channels;
  // Collective lists per (communicator, member index): the member's op indices.
  std::vector<std::vector<std::vector<OpIndex>>> colls(p.communicators.size());
  std::vector<std::vector<std::pair<CommId, std::int32_t>>> positions(p.ranks.size());
  for (std::size_t c = 0; c < p.communicators.size(); ++c) {
    const auto& members = p.communicators[c].members;
    colls[c].resize(members.size());
    for (std::size_t i = 0; i < members.size(); ++i)
      if (members[i] < stored)
        positions[static_cast<std::size_t>(members[i])].emplace_back(static_cast<CommId>(c),
                                                                     static_cast<std::int32_t>(i));
  }
  std::vector<std::int32_t> position(p.communicators.size(), -1);  // of the current rank
  for (Rank r = 0; r < stored; ++r) {
    const RankProgram& rp = p.ranks[static_cast<std::size_t>(r)];
    for (const auto& [c, i] : positions[static_cast<std::size_t>(r)])
      position[static_cast<std::size_t>(c)] = i;
    for (std::size_t i = 0; i < rp.ops.size(); ++i) {
      const Op& op = rp.ops[i];
      const GlobalOp g = numbering.global(r, static_cast<OpIndex>(i));
      if (op.kind == OpKind::send) {
        channels[channel_key(op.comm, r, op.peer)].sends.push_back(g);
      } else if (op.kind == OpKind::recv) {
        channels[channel_key(op.comm, op.peer, r)].recvs.push_back(g);
      } else if (op.kind == OpKind::collective) {  // structure: r is a member
        const std::int32_t mi = position[static_cast<std::size_t>(op.comm)];
        colls[static_cast<std::size_t>(op.comm)][static_cast<std::size_t>(mi)].push_back(
            static_cast<OpIndex>(i));
      }
    }
  }
  const auto op_at = [&](GlobalOp g) -> const Op& {
    const auto [r, i] = numbering.local(g);
    return p.ranks[static_cast<std::size_t>(r)].ops[static_cast<std::size_t>(i)];
  };
  const auto describe = [&](GlobalOp g) {
    const auto [r, i] = numbering.local(g);
    return describe_op(p, r, i, false);
  };
  // Point-to-point: the k-th send of a channel pairs with its k-th recv. Of all ops that fail
  // (unmatched, or bytes differing from the partner), the first in (rank, op) order is reported.
  GlobalOp worst = -1;
  const Channel* worst_channel = nullptr;
  std::size_t worst_k = 0;
  const auto candidate = [&](GlobalOp g, const Channel& ch, std::size_t k) {
    if (worst < 0 || g < worst) {
      worst = g;
      worst_channel = &ch;
      worst_k = k;
    }
  };
  for (const auto& [key, ch] : channels) {
    const std::size_t paired = std::min(ch.sends.size(), ch.recvs.size());
    for (std::size_t k = 0; k < paired; ++k) {
      const GlobalOp s = ch.sends[k];
      const GlobalOp r = ch.recvs[k];
      if (op_at(s).bytes != op_at(r).bytes) {
        candidate(std::min(s, r), ch, k);
        continue;
      }
      m->link[static_cast<std::size_t>(s)] = r;
      m->link[static_cast<std::size_t>(r)] = s;
    }
    for (std::size_t k = paired; k < ch.sends.size(); ++k)
      candidate(ch.sends[k], ch, k);
    for (std::size_t k = paired; k < ch.recvs.size(); ++k)
      candidate(ch.recvs[k], ch, k);
  }
  if (worst >= 0) {
    const auto [r, i] = numbering.local(worst);
    const Op& op = op_at(worst);
    const bool is_send = op.kind == OpKind::send;
    const auto& others = is_send ? worst_channel->recvs : worst_channel->sends;
    const std::string comm = p.communicators[static_cast<std::size_t>(op.comm)].name;
    if (worst_k >= others.size()) {
      return fail_at(p, r, i,
                     std::string(is_send ? "no matching recv" : "no matching send") + ": it is " +
                         (is_send ? "send" : "recv") + " number " +
                         str(static_cast<std::int64_t>(worst_k) + 1) + " between r" +
                         str(is_send ? r : op.peer) + " -> r" + str(is_send ? op.peer : r) +
                         " on '" + comm + "', but r" + str(op.peer) + " posts only " +
                         str(static_cast<std::int64_t>(others.size())) +
                         (is_send ? " recvs" : " sends"));
    }
    const GlobalOp partner = others[worst_k];
    return fail_at(p, r, i,
                   "bytes differ from the matching " + describe(partner) + " (" +
                       str(static_cast<std::int64_t>(op.bytes)) + " vs " +
                       str(static_cast<std::int64_t>(op_at(partner).bytes)) + ")");
  }
  // Collectives, per communicator and instance.
  m->instance_first.clear();
  m->instance_ops.clear();
  std::size_t collective_ops = 0;
  for (const auto& lists : colls)
    for (const auto& l : lists)
      collective_ops += l.size();
  reserve_prefaulted(m->instance_ops, collective_ops);
  // The members that take part: all, or in compact form those in replica 0 (the others run
  // their images' collectives, verify_replicas.cpp (b)).
  std::vector<std::size_t> taking;
  for (std::size_t c = 0; c < p.communicators.size(); ++c) {
    auto& all_lists = colls[c];
    const auto& all_members = p.communicators[c].members;
    taking.clear();
    for (std::size_t mi = 0; mi < all_members.size(); ++mi)
      if (all_members[mi] < stored) taking.push_back(mi);
    if (taking.empty()) continue;  // a replica-local communicator of another replica
    const bool every = taking.size() == all_members.size();
    std::vector<std::vector<OpIndex>> some_lists;
    std::vector<Rank> some_members;
    if (!every) {
      for (const std::size_t mi : taking) {
        some_lists.push_back(std::move(all_lists[mi]));
        some_members.push_back(all_members[mi]);
      }
    }
    const auto& lists = every ? all_lists : some_lists;
    const auto& members = every ? all_members : some_members;
    // The k-th collective of member mi.
    const auto coll = [&](std::size_t mi, std::size_t k) -> const Op& {
      return p.ranks[static_cast<std::size_t>(members[mi])]
          .ops[static_cast<std::size_t>(lists[mi][k])];
    };
    const auto coll_global = [&](std::size_t mi, std::size_t k) {
      return numbering.global(members[mi], lists[mi][k]);
    };
    std::size_t fewest = lists[0].size();
    for (const auto& l : lists)
      fewest = std::min(fewest, l.size());
    for (std::size_t k = 0; k < fewest; ++k) {
      // Reference: member 0, unless members 1 and 2 agree with each other against it.
      std::size_t ref = 0;
      if (lists.size() >= 3 && !same_collective(coll(0, k), coll(1, k)) &&
          same_collective(coll(1, k), coll(2, k)))
        ref = 1;
      const Op& want = coll(ref, k);
      for (std::size_t mi = 0; mi < lists.size(); ++mi) {
        const Op& got = coll(mi, k);
        if (!same_collective(got, want)) {
          return fail_at(p, members[mi], lists[mi][k],
                         "collective number " + str(static_cast<std::int64_t>(k) + 1) + " on '" +
                             p.communicators[c].name + "' disagrees with " +
                             describe(coll_global(ref, k)) + ": " +
                             collective_difference(got, want));
        }
      }
      const auto instance = static_cast<GlobalOp>(m->instance_first.size());
      m->instance_first.push_back(static_cast<std::int32_t>(m->instance_ops.size()));
      for (std::size_t mi = 0; mi < lists.size(); ++mi) {
        m->instance_ops.emplace_back(members[mi], lists[mi][k]);
        m->link[static_cast<std::size_t>(coll_global(mi, k))] = instance;
      }
    }
    for (std::size_t mi = 0; mi < lists.size(); ++mi) {
      if (lists[mi].size() == fewest) continue;
      std::size_t short_member = 0;
      while (lists[short_member].size() != fewest)
        ++short_member;
      return fail_at(p, members[mi], lists[mi][fewest],
                     "collective number " + str(static_cast<std::int64_t>(fewest) + 1) + " on '" +
                         p.communicators[c].name + "' has no counterpart on r" +
                         str(members[short_member]) + ", which issues only " +
                         str(static_cast<std::int64_t>(fewest)) + " collectives on it");
    }
  }
  m->instance_first.push_back(static_cast<std::int32_t>(m->instance_ops.size()));
  return std::nullopt;
}

}  // namespace tawpipe::ir::detail
