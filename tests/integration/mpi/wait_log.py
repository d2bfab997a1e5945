#!/usr/bin/env python3
"""Reads the host backend's wait log (TAWPIPE_WAIT_LOG=PREFIX, exec/host/wait_log.h): one
PREFIX.<rank>.tsv per rank. Prints, per rank, the sleeps of the waits by how they ended (bell,
timeout, timer) and whether the test right after them completed an op, and classifies every
doorbell timeout whose next test completed an op (a missed bell is one of them):
  - "rung during the sleep": a ring to the thread's slot came before the timeout, yet the futex
    did not wake it (a doorbell defect);
  - "timed out, then rung": the ring came after the timer fired, while the woken thread waited
    for its core (a race, no delay);
  - "rung only after": the op completed before its bell (e.g. the peer's test copied several
    messages and rang when all were done): the timeout ended the wait early;
  - "no ring": nothing rang the slot, before or after (a missed bell).
For timeouts whose next test completed nothing, it counts whether the peer had posted the
matching op before the timeout (a receive whose sender had posted: suspicious) or not (the
thread waited for a peer that was not there yet: the safety net's normal case).
Matching: the k-th send from rank a to rank b with (tag, bytes) to b's thread (slot) is the k-th
such receive on b (MPI's order within a communicator; the log names threads, which the backend
gives one communicator per stream, not communicators).

--check: also verifies the files' structure (every line's fields, every posted op completed,
every send with its receive) and exits 1 on a violation (tests/integration/mpi).
"""
import collections
import glob
import sys

FIELDS = {"P": 10, "R": 6, "S": 12, "C": 4, "W": 9, "B": 8, "I": 4, "D": 3}


def load(prefix):
    ranks = {}
    for path in sorted(glob.glob(prefix + ".*.tsv")):
        rank = path[len(prefix) + 1:-len(".tsv")]
        ranks[int(rank) if rank.isdigit() else rank] = [
            line.rstrip("\n").split("\t") for line in open(path)
        ]
    return ranks


def check(ranks):
    errors = []
    sends, recvs = collections.Counter(), collections.Counter()
    for rank, lines in ranks.items():
        posted, done = set(), set()
        for n, x in enumerate(lines, 1):
            kind = x[0]
            if kind not in FIELDS or len(x) != FIELDS[kind]:
                errors.append(f"rank {rank} line {n}: {len(x)} fields for '{kind}'")
                continue
            if kind == "P":
                posted.add(int(x[3]))
                key = (int(x[5]), int(x[6]), int(x[7]), int(x[8]))  # self, peer, tag, bytes
                if x[4] == "send":
                    sends[key] += 1
                else:
                    recvs[(key[1], key[0], key[2], key[3])] += 1
            elif kind == "C":
                done.add(int(x[3]))
            elif kind == "S" and x[4] not in ("bell", "timeout", "timer"):
                errors.append(f"rank {rank} line {n}: sleep ended by '{x[4]}'")
        if posted - done:
            errors.append(f"rank {rank}: {len(posted - done)} posted ops never completed")
        if not posted:
            errors.append(f"rank {rank}: no posted op")
    if sends != recvs:
        errors.append(f"sends without their receive: {sum((sends - recvs).values())}, "
                      f"receives without their send: {sum((recvs - sends).values())}")
    return errors


def analyse(ranks):
    posts, completed, rings = {}, {}, collections.defaultdict(list)
    order = collections.defaultdict(list)  # (self, peer, kind, tag, bytes) -> [(t, rank, op)]
    for rank, lines in ranks.items():
        for x in lines:
            if x[0] == "P":
                p = dict(t=int(x[1]), slot=int(x[2]), kind=x[4], self=int(x[5]), peer=int(x[6]),
                         tag=int(x[7]), bytes=int(x[8]))
                posts[(rank, int(x[3]))] = p
                # The receiver's slot: the stream of the receive (a send names it as peer_slot).
                stream = int(x[9]) if p["kind"] == "send" else p["slot"]
                order[(p["self"], p["peer"], p["kind"], p["tag"], p["bytes"], stream)].append(
                    (p["t"], rank, int(x[3])))
            elif x[0] == "C":
                completed[(rank, int(x[3]))] = int(x[1])
            elif x[0] == "R":
                rings[(int(x[3]), int(x[4]))].append(int(x[1]))
    for v in rings.values():
        v.sort()
    match = {}
    for (a, b, kind, tag, size, stream), mine in order.items():
        if kind != "send":
            continue
        theirs = order.get((b, a, "recv", tag, size, stream), [])
        for (_, ra, oa), (_, rb, ob) in zip(sorted(mine), sorted(theirs)):
            match[(ra, oa)] = (rb, ob)
            match[(rb, ob)] = (ra, oa)
    for rank, lines in sorted(ranks.items(), key=lambda kv: str(kv[0])):
        ends = collections.Counter()
        missed = collections.Counter()
        idle = collections.Counter()
        for x in lines:
            if x[0] != "S":
                continue
            how, next_done = x[4], int(x[8])
            ends[(how, "completed" if next_done > 0 else "nothing" if next_done == 0 else
                  "returned")] += 1
            if how != "timeout":
                continue
            t0, t1, slot, req = int(x[1]), int(x[2]), int(x[3]), int(x[5])
            ring_times = rings.get((rank if isinstance(rank, int) else -1, slot), [])
            if next_done > 0:
                during = [t for t in ring_times if t0 <= t < t0 + req]
                late = [t for t in ring_times if t0 + req <= t <= t1]
                after = [t for t in ring_times if t1 < t <= t1 + 100_000_000]
                missed["rung during the sleep" if during else "timed out, then rung" if late
                       else "rung only after" if after else "no ring"] += 1
                continue
            op = posts.get((rank, int(x[7])))
            peer = match.get((rank, int(x[7])))
            if op is None or peer is None:
                idle["no matched op"] += 1
                continue
            peer_post = posts[peer]["t"]
            if peer_post > t1:
                idle[f"{op['kind']}: peer posted after the timeout"] += 1
            elif op["kind"] == "recv":
                idle["recv: peer had posted (suspicious)"] += 1
            else:
                idle["send: peer had posted, its receive not done"] += 1
        print(f"rank {rank}:")
        for (how, what), n in sorted(ends.items()):
            print(f"  sleeps ended by {how:8s} {n:7d}, next test {what}")
        for what, n in sorted(missed.items()):
            print(f"  doorbell timeouts, an op completed at the next test: {what}: {n}")
        for what, n in sorted(idle.items()):
            print(f"  doorbell timeouts, nothing completed: {what}: {n}")


def main():
    args = sys.argv[1:]
    strict = "--check" in args
    args = [a for a in args if a != "--check"]
    if len(args) != 1:
        print("usage: wait_log.py [--check] PREFIX", file=sys.stderr)
        return 2
    ranks = load(args[0])
    if not ranks:
        print(f"wait_log.py: no {args[0]}.<rank>.tsv", file=sys.stderr)
        return 1
    analyse(ranks)
    if strict:
        errors = check(ranks)
        for e in errors:
            print("wait_log.py: " + e, file=sys.stderr)
        print("check: " + ("FAILED" if errors else f"PASSED ({len(ranks)} ranks)"))
        return 1 if errors else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
