// The shift by whole replicas on communicators (replicas.h).
#include "common/ir/replicas.h"

#include <algorithm>
#include <map>

namespace tawpipe::ir {

bool map_replica_communicators(const Program& program, std::int32_t replica_ranks,
                               std::vector<CommId>& image, std::string& why) {
  const std::int32_t n = program.num_ranks();
  const std::int32_t R = replica_ranks;
  // The i-th communicator with a member list maps to the i-th with the shifted list.
  std::map<std::vector<Rank>, std::vector<CommId>> by_members;
  for (std::size_t c = 0; c < program.communicators.size(); ++c)
    by_members[program.communicators[c].members].push_back(static_cast<CommId>(c));
  std::map<std::vector<Rank>, std::size_t> used;
  image.assign(program.communicators.size(), kNone);
  for (std::size_t c = 0; c < program.communicators.size(); ++c) {
    const auto& members = program.communicators[c].members;
    if (members.empty()) {
      image[c] = static_cast<CommId>(c);
      continue;
    }
    std::vector<Rank> shifted(members.size());
    bool local = true;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (members[i] < 0 || members[i] >= n) {
        why = "communicator member out of range";
        return false;
      }
      shifted[i] = (members[i] + R) % n;
      local = local && members[i] / R == members[0] / R;
    }
    if (local) {
      const auto it = by_members.find(shifted);
      std::size_t& k = used[shifted];
      if (it == by_members.end() || k >= it->second.size()) {
        why =
            "communicator '" + program.communicators[c].name + "' has no image in the next replica";
        return false;
      }
      image[c] = it->second[k++];
      continue;
    }
    std::vector<Rank> a = members, b = shifted;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) {
      why = "communicator '" + program.communicators[c].name + "' spans only some replicas";
      return false;
    }
    image[c] = static_cast<CommId>(c);
  }
  return true;
}

}  // namespace tawpipe::ir
