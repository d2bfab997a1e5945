// Verifying a replica-compact program (Program::stored_ranks = R) in its compact form, without
// ever building the other replicas' ranks.
//
// The whole form W of a compact program P has N = k R ranks; rank r >= R runs the image of rank
// r mod R under the shift s(r) = (r + R) mod N by whole replicas (program.h): the same ops,
// buffers and dependencies, peers mapped by s, communicators by the map c -> s(c) induced on
// them (replicas.h), and micro-batch ids renamed by a bijection that gives every replica its
// own samples (the generators' sample ids are unique over ranks and replicas). The verifier
// checks P instead of W. Claim: W passes the four checks (verifier.h) iff P passes them as
// done here, under premises (b) and (b') below, which are checked; where one does not hold the
// caller must verify W itself (VerifyResult::whole_form_needed).
//
// Premises (replica_form below, before matching):
//  (b)  every communicator has an image under s (map_replica_communicators): a replica-local
//       one maps onto the next replica's with the shifted member list in the same order, a
//       cross-replica one (e.g. a data-parallel all-reduce group) onto itself;
//  (b') replica 0's point-to-point transfers stay in replica 0, and its collectives on
//       cross-replica communicators are all_reduce (the one kind whose result does not depend on
//       the members' positions: a cross-replica reduce_scatter/all_gather hands the images
//       other pieces than replica 0, a broadcast/reduce has a root that s moves).
//
// (a) Structure. Every check of stage 1 is about one rank's own ops and buffers, plus
//     communicator membership and peers; s preserves both (an op of r on c with peer q becomes
//     an op of s(r) on s(c) with peer s(q), and s(r) in s(c) iff r in c). So the images pass iff
//     replica 0 passes; stage 1 runs on P as it is (the other ranks are empty).
// (b) Matching. The k-th send from a to b on c in W (a, b in replica d, by (b')) is the image of
//     the k-th send from a - dR to b - dR on s^-d(c): channels of replica d are images of
//     replica 0's, so they pair up iff replica 0's do, with equal bytes. Collectives: on a
//     replica-local communicator the members are images of replica 0's members on s^-d(c). On a
//     cross-replica c every member m of c runs the program of m mod R, and m mod R is a member of
//     c (s^-d(c) = c); its collectives on c are those of m mod R on c, in the same order. So the
//     members' k-th collectives agree in kind, bytes and root iff those of c's members in
//     replica 0 do, and the counts agree iff replica 0's members' counts do. Matching runs over
//     replica 0's ranks with each cross-replica instance listing only its members in replica 0.
// (c) Deadlock freedom. The logical execution completes exactly the least set F of ops closed
//     under its rules (an op completes once its stream predecessor and deps completed and its
//     partner / every member of its instance is posted); F does not depend on the order. Let C0
//     be the set the execution of P completes, counting a cross-replica instance complete when
//     its members in replica 0 have arrived, and C = union of s^d(C0) over d. C is closed under
//     W's rules: an op x of replica d that W could complete from C is the image of one that P
//     could complete from C0 (same stream, deps, partner in replica d; a cross-replica instance's
//     members are images of the replica-0 members, all posted in C0 iff posted in C), so x is in
//     C. Conversely every step of P's execution, applied to all images at once, is a step of W's
//     (the same argument as sim/symmetry/symmetry.h for the simulation: every image reaches the
//     image state at the same logical step). So F = C: W completes every op iff P does, and a
//     deadlock of W contains the image of one of P's.
// (d) Dataflow, evaluated in that order (all images at once: a legal completion order of W). By
//     induction over the steps, the content of rank s^d(r)'s buffer is the image of rank r's: a
//     local op, a transfer inside a replica and a replica-local collective act on the images
//     alike; tensor references carry no rank (activation sample ids are renamed alike and only
//     ever compared with the op's own sample, which is renamed the same way). Gradient
//     fingerprints are the only contents that replicas change: write N = sum over d of s^d
//     (in the group ring of the shift acting on contribution multisets). Every gradient content
//     of rank r < R in W has the form A + N B, with A and B multisets of contributions by
//     replica 0's samples (nonnegative): compute adds to A; a copy, transfer or replica-local
//     sum copies or adds (A, B) pairs; a cross-replica all_reduce over c gives every member
//     sum over m in c of s^(m / R)(A_m' + N B_m') (m' = m mod R) = N sum over replica-0
//     members x of (A_x + N B_x) = N sum_x (A_x + k B_x), since s^d N = N and N N = k N: the
//     new A is empty and the new B is sum_x (A_x + k B_x). The form is unique (A has no term of
//     another replica while N B has every replica's, k >= 2), so tracking the fingerprints and
//     counts of A and B is exact. The complete gradient of a block in W is the sum over every
//     sample of every replica, N S with S replica 0's samples' contributions: an optimizer's
//     gradient is complete iff A is empty and B = S; its contribution count in W is
//     |A| + k |B| (what the messages report). Samples are unique in W iff they are unique in
//     replica 0 (the renaming gives every replica its own). Every owned weight is updated by
//     exactly one optimizer in W iff in replica 0 (images have the same buffers and ops).
// Fingerprints are hashes in both forms: "iff" holds up to their collisions (2^-64 per check).
// Where the program races (two unordered ops write one buffer), contents depend on the order of
// completion in either form, and the compact form's order is one of W's legal orders.
#include <string>

#include "common/ir/replicas.h"
#include "common/ir/verify_internal.h"

namespace tawpipe::ir::detail {

Check replica_form(const Program& program, Replicas* replicas, bool* whole_form_needed,
                   std::string* why) {
  *replicas = Replicas{};
  *whole_form_needed = false;
  if (!program.compact()) return std::nullopt;
  const std::int32_t n = program.num_ranks();
  const std::int32_t R = program.stored_ranks;
  const auto malformed = [](const std::string& what) {
    return Failure{"replica-compact program: " + what, kNone, kNone, {}};
  };
  if (n % R != 0 || n / R < 2)
    return malformed(std::to_string(R) + " stored ranks do not make 2 or more replicas of " +
                     std::to_string(n) + " ranks");
  for (Rank r = R; r < n; ++r) {
    const RankProgram& rp = program.ranks[static_cast<std::size_t>(r)];
    if (!rp.ops.empty() || !rp.buffers.empty() || !rp.dep_pool.empty() || !rp.buffer_pool.empty())
      return malformed("rank " + std::to_string(r) + " is stored beyond replica 0 (" +
                       std::to_string(R) + " stored ranks)");
  }
  const auto fallback = [&](std::string reason) {
    *whole_form_needed = true;
    *why = std::move(reason);
    return std::nullopt;
  };
  // Premise (b).
  std::vector<CommId> image;
  std::string reason;
  if (!map_replica_communicators(program, R, image, reason)) return fallback(reason);
  replicas->stored = R;
  replicas->count = n / R;
  replicas->cross.resize(image.size());
  for (std::size_t c = 0; c < image.size(); ++c)
    replicas->cross[c] = image[c] == static_cast<CommId>(c) ? 1 : 0;
  // Premise (b'): ids are in range (structure passed).
  for (Rank r = 0; r < R; ++r) {
    for (const Op& op : program.ranks[static_cast<std::size_t>(r)].ops) {
      if ((op.kind == OpKind::send || op.kind == OpKind::recv) && op.peer >= R)
        return fallback("a point-to-point transfer between replicas (r" + std::to_string(r) +
                        " and r" + std::to_string(op.peer) + ")");
      if (op.kind == OpKind::collective && op.collective != CollectiveKind::all_reduce &&
          replicas->cross_replica(op.comm))
        return fallback(std::string("a ") + name(op.collective) + " across replicas on '" +
                        program.communicators[static_cast<std::size_t>(op.comm)].name + "'");
    }
  }
  return std::nullopt;
}

}  // namespace tawpipe::ir::detail
