// Steady-state folding (fold.h): the probe driver, which runs probes at small micro-batch counts
// and asks repeat.h whether they repeat and what the whole iteration extrapolates to.
#include "sim/fold/fold.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/model/cost.h"
#include "sim/fold/repeat.h"

namespace tawpipe::sim {
namespace {

using fold_detail::agrees;
using fold_detail::extrapolate;
using fold_detail::Miss;
using fold_detail::miss_reason;
using fold_detail::repeats;

// Generates and simulates `v` on `w`. Under replica symmetry only replica 0's ranks are
// generated (ScheduleInput::replica_only); run_simulation falls back to the whole program where
// the symmetry does not hold (sim/symmetry/symmetry.h).
Expected<SimOutput> generate_and_run(const schedules::Workload& w,
                                     const schedules::ScheduleVariant& v,
                                     const SimOptions& options) {
  const bool compact = options.symmetry && !options.record_ops && !options.record_link_usage;
  auto program = schedules::shared_program(w, v, compact);
  if (!program.ok()) return program.error();
  return run_simulation(*program, w.topology, options,
                        [&] { return schedules::shared_program(w, v, false); });
}

// Largest round length (in micro-batches) looked for: 1F1B's increments alternate with period 2
// on 3x8-a100 (two kinds of rounds), the other methods repeat every micro-batch.
constexpr std::int64_t kMaxStep = 2;
// Probe bases tried, smallest first: a schedule whose warm-up is longer than a probe fails the
// check (or the validation probe) and moves on to the next base. 1F1B keeps up to one
// micro-batch per stage in flight, so its peak memory only stops growing once the probes exceed
// the pipeline depth (24 stages on 3x8-a100; with NCCL's P2P channels holding SMs under the
// contention model its link busy times settle only by the base 64). TawPipe and FSDP repeat from
// the base 2 on 3x8-a100. A failed base costs little: its probes are small and the next base reuses
// the counts they share (base 16's validation probe 34 is base 32's third probe). zb2 keeps
// deferring weight-gradient passes, so its first stage's activations keep growing for about 70
// micro-batches on 3x8-a100 (24 stages): it repeats from the base 128.
constexpr std::int64_t kBases[] = {2, 4, 16, 32, 64, 128, 256};

// Micro-batches some rank holds at once in program order: on each rank, a micro-batch is held
// from its first compute op to its last (forward to backward, or to the deferred weight
// gradient of a zero-bubble schedule); the most held at one op, over the (stored) ranks.
std::int64_t held_at_once(const ir::Program& program) {
  std::vector<std::int32_t> first, last;  // by sample: op index on the current rank, -1: none
  std::vector<std::int32_t> delta;        // by op index: +1 where a sample starts, -1 after its end
  std::vector<std::int32_t> seen;         // samples of the current rank
  std::int64_t most = 0;
  const std::size_t ranks =
      program.compact() ? static_cast<std::size_t>(program.stored_ranks) : program.ranks.size();
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto& ops = program.ranks[r].ops;
    seen.clear();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const ir::Op& op = ops[i];
      if (op.kind != ir::OpKind::compute || op.sample < 0) continue;
      const auto s = static_cast<std::size_t>(op.sample);
      if (s >= first.size()) {
        first.resize(s + 1, -1);
        last.resize(s + 1, -1);
      }
      if (first[s] < 0) {
        first[s] = static_cast<std::int32_t>(i);
        seen.push_back(op.sample);
      }
      last[s] = static_cast<std::int32_t>(i);
    }
    delta.assign(ops.size() + 1, 0);
    for (const std::int32_t s : seen) {
      ++delta[static_cast<std::size_t>(first[static_cast<std::size_t>(s)])];
      --delta[static_cast<std::size_t>(last[static_cast<std::size_t>(s)]) + 1];
      first[static_cast<std::size_t>(s)] = -1;
    }
    std::int64_t held = 0;
    for (const std::int32_t d : delta) {
      held += d;
      most = std::max(most, held);
    }
  }
  return most;
}

Expected<FoldedOutput> simulate_whole(const schedules::Workload& w,
                                      const schedules::ScheduleVariant& v,
                                      const SimOptions& options, std::string reason,
                                      std::int64_t rounds) {
  auto out = generate_and_run(w, v, options);
  if (!out.ok()) return out.error();
  FoldedOutput f{std::move(*out), {}};
  f.fold.rounds = rounds > 0 ? rounds : f.output.report.header.micro_batches;
  f.fold.rounds_simulated = f.fold.rounds;
  f.fold.reason = std::move(reason);
  return f;
}

Expected<FoldedOutput> simulate_folded(const schedules::Workload& workload,
                                       const schedules::ScheduleVariant& variant,
                                       const SimOptions& options, bool fold) {
  if (!fold) return simulate_whole(workload, variant, options, "--no-fold", 0);
  if (options.record_ops || options.record_link_usage)
    return simulate_whole(workload, variant, options, "per-op records requested", 0);

  std::map<std::int64_t, SimOutput> probes;
  // Programs generated ahead of their simulation (the first base's, for the worker count).
  // Replica-compact where replica symmetry may apply (per-op records went to simulate_whole).
  const bool compact = options.symmetry;
  std::map<std::int64_t, std::shared_ptr<const ir::Program>> generated;
  // The program of `m` micro-batches per worker; `threads` > 0 caps the generator's threads.
  const auto workload_of = [&](std::int64_t m, int threads) {
    schedules::Workload w = workload;
    w.train.micro_batches = m;
    w.train.global_batch = 0;
    if (threads > 0) w.threads = threads;
    return w;
  };
  const auto program_of = [&](std::int64_t m,
                              int threads) -> Expected<std::shared_ptr<const ir::Program>> {
    if (auto it = generated.find(m); it != generated.end()) return it->second;
    return schedules::shared_program(workload_of(m, threads), variant, compact);
  };
  // Simulates the program of `m` micro-batches per worker; the whole program is generated only
  // where replica symmetry does not hold (run_simulation's fallback).
  // Probes that run side by side (threads == 1) are verified on their own thread too: the probes
  // already keep the cores busy, and each verification would otherwise start helper threads
  // (about 3 per program: 45 thread starts in the 24-GPU 1F1B run) that only compete with the
  // other probe. Measured on 3x8-a100, whole process: 1F1B 69 -> 58 ms median wall.
  SimOptions side_options = options;
  side_options.verify_threads = 1;
  const auto run = [&](std::int64_t m, const std::shared_ptr<const ir::Program>& program,
                       int threads) {
    return run_simulation(
        program, workload.topology, threads == 1 ? side_options : options, [&, m, threads] {
          return schedules::shared_program(workload_of(m, threads), variant, false);
        });
  };
  // The pipeline fill (held_at_once): while the largest probe so far holds all its micro-batches
  // at once, the last probe of the next base is generated first and its base skipped when it
  // does too. `fill_probe` is the count whose held micro-batches a probe run records (0: none).
  std::int64_t fill_probe = 0;
  std::atomic<std::int64_t> fill_held{-1};
  const auto note_fill = [&](std::int64_t c, const ir::Program& program) {
    if (c == fill_probe) fill_held = held_at_once(program);
  };
  // Simulates `m` micro-batches per worker (cached).
  const auto probe = [&](std::int64_t m) -> Expected<const SimOutput*> {
    if (auto it = probes.find(m); it != probes.end()) return &it->second;
    auto program = program_of(m, 0);
    if (!program.ok()) return program.error();
    note_fill(m, **program);
    auto out = run(m, *program, 0);
    if (!out.ok()) return out.error();
    return &probes.emplace(m, std::move(*out)).first->second;
  };

  // Probes are independent simulations (no shared state): with threads to spare (not inside a
  // parallel sweep, which sets Workload::threads = 1) the ones a base needs run side by side,
  // the largest first (the two threads then finish together). `speculative` probes run beside
  // them: they may turn out unused (CPU time an idle core would not have spent), and the checks
  // read the same probes whether they ran here or later, so the result does not depend on them.
  const unsigned threads = workload.threads > 0 ? static_cast<unsigned>(workload.threads)
                                                : std::max(1u, std::thread::hardware_concurrency());
  std::int64_t m = 0;  // the workload's micro-batches per worker
  // A probe that failed: an invalid program is reported; anything else falls back to the whole
  // iteration.
  const auto probe_failed = [&](const Error& e) -> Expected<FoldedOutput> {
    if (is_invalid_program(e)) return e;
    return simulate_whole(workload, variant, options, "probe failed", m);
  };
  const auto prefetch = [&](std::vector<std::int64_t> counts,
                            std::vector<std::int64_t> speculative) {
    const auto known = [&](std::int64_t c) { return probes.count(c) > 0; };
    std::erase_if(counts, known);
    std::erase_if(speculative, [&](std::int64_t c) {
      return known(c) || std::find(counts.begin(), counts.end(), c) != counts.end();
    });
    if (threads < 2) return;
    for (const std::int64_t c : speculative)
      if (c < m) counts.push_back(c);
    if (counts.size() < 2) return;
    std::sort(counts.begin(), counts.end(), std::greater<>());
    std::vector<std::optional<Expected<SimOutput>>> results(counts.size());
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
      for (std::size_t i = next++; i < counts.size(); i = next++) {
        auto program = program_of(counts[i], 1);
        if (!program.ok()) {
          results[i] = program.error();
          continue;
        }
        note_fill(counts[i], **program);
        results[i] = run(counts[i], *program, 1);
      }
    };
    // The calling thread is one of the workers: it runs at once, while a new thread first waits
    // to be scheduled (measured ~0.45 ms on this VM, whose idle vCPU must be woken up).
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::min<std::size_t>(threads, counts.size()); ++t)
      pool.emplace_back(work);
    work();
    for (auto& t : pool)
      t.join();
    for (std::size_t i = 0; i < counts.size(); ++i)
      if (results[i] && results[i]->ok()) probes.emplace(counts[i], std::move(**results[i]));
  };

  // Generates the programs of `counts` (side by side with threads to spare, the largest first)
  // and records the micro-batches each holds at once.
  std::map<std::int64_t, std::int64_t> held_of;
  const auto generate_fill = [&](std::vector<std::int64_t> counts) -> Status {
    std::sort(counts.begin(), counts.end(), std::greater<>());
    std::vector<std::optional<Expected<std::shared_ptr<const ir::Program>>>> made(counts.size());
    std::vector<std::int64_t> held(counts.size(), 0);
    std::atomic<std::size_t> next{0};
    const auto work = [&] {
      for (std::size_t i = next++; i < counts.size(); i = next++) {
        made[i] = program_of(counts[i], 1);
        if (made[i]->ok()) held[i] = held_at_once(***made[i]);
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::min<std::size_t>(threads, counts.size()); ++t)
      pool.emplace_back(work);
    work();
    for (auto& t : pool)
      t.join();
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (!made[i]->ok()) return made[i]->error();
      held_of[counts[i]] = held[i];
      generated.emplace(counts[i], std::move(**made[i]));
    }
    return Status::success();
  };
  // A base's probes are worth it only when they (3 + validation, step 1) cost less than the
  // iteration; the base is moved to the count's parity, so that every step length up to
  // kMaxStep lands on it.
  const auto aligned = [](std::int64_t base0, std::int64_t count) {
    return base0 + ((count - base0) % kMaxStep + kMaxStep) % kMaxStep;
  };
  const auto too_few = [](std::int64_t base, std::int64_t count) { return 5 * base + 5 >= count; };
  const auto too_few_reason = [](std::int64_t count) {
    return "too few micro-batches to fold (" + std::to_string(count) + ")";
  };
  // Micro-batches given per worker and no global batch: m is known without the first probe's
  // program, and a workload too small to fold does not generate one (at 1024 GPUs with 8
  // micro-batches that probe cost a quarter of TawPipe's instructions).
  if (const std::int64_t given = workload.train.micro_batches;
      given > 0 && workload.train.global_batch == 0 && too_few(aligned(kBases[0], given), given))
    return simulate_whole(workload, variant, options, too_few_reason(given), given);

  // CPU topologies: the cores' EEVDF state (each compute thread's virtual runtime, lag and
  // request, sim/run/core_sharing.h) carries from round to round, so where a slice ends relative
  // to the ops drifts: the iteration time repeats, but which op absorbs a wait for the core (the
  // per-rank compute time) does not (1F1B on 2x2-cpu with the tiny model, 72 micro-batches, dp
  // 2: rank 0's compute 0.853 s folded from probes that agreed, 0.806 s simulated whole).
  if (workload.topology.host_cpu())
    return simulate_whole(workload, variant, options,
                          "CPU cores are shared by EEVDF, whose state is not periodic in rounds",
                          0);
  // The workload's own micro-batch count, from the worker count of the first probe's program
  // (generated here, simulated with the first base's other probes).
  auto first = program_of(kBases[0], 0);
  if (!first.ok()) return simulate_whole(workload, variant, options, "probe failed", 0);
  std::int64_t workers = 0;
  if (const ir::Header& h = (*first)->header; h.micro_batches > 0 && h.micro_batch_size > 0)
    workers = h.global_batch / (static_cast<std::int64_t>(h.micro_batches) * h.micro_batch_size);
  if (workers <= 0) return simulate_whole(workload, variant, options, "no workers", 0);
  auto batch = model::resolve_batch(workload.train, workers);
  if (!batch.ok()) return batch.error();
  m = batch->micro_batches;
  // Only a schedule whose first probe holds all its micro-batches at once can have a fill longer
  // than the first base (1F1B and the zero-bubble pipelines; WeiPipe holds two).
  if (held_at_once(**first) >= kBases[0]) {
    const std::int64_t first_base = aligned(kBases[0], m);
    fill_probe = 2 * first_base + 2;  // the first base's largest probe
  }
  generated.emplace(kBases[0], std::move(*first));

  std::string reason = "the rounds did not repeat within the probes";
  int split_bases = 0;        // consecutive bases that missed only on the compute / exposed split
  int drift_bases = 0;        // consecutive bases whose iteration time missed at every step length
  bool memory_missed = true;  // the last base tried missed on peak memory at some step length
  for (const std::int64_t base0 : kBases) {
    const std::int64_t base = aligned(base0, m);
    if (too_few(base, m)) {
      if (base0 == kBases[0]) reason = too_few_reason(m);
      break;
    }
    // A base whose probes all lie in the pipeline fill cannot repeat: some rank holds every
    // micro-batch of its last probe at once, so that rank's peak memory grows with each one
    // (1F1B on 3x8-a100, 24 stages: the bases 4 and 16 after the base 2). Its probes are not run;
    // the checks of the bases that do run decide, as before, whether the rounds repeat. The
    // last probe's program is kept for the base that runs.
    if (base0 != kBases[0] && fill_held.load() >= fill_probe && fill_probe > 0) {
      const std::int64_t last = base + 2 * kMaxStep;
      if (held_of.count(last) == 0) {
        // With threads to spare, the next two bases' last probes are generated beside this one:
        // needed to skip them too, or by the probes of a base that runs (1F1B: 8, 20 and 36).
        std::vector<std::int64_t> lasts{last};
        for (const std::int64_t b0 : kBases) {
          const std::int64_t c = aligned(b0, m) + 2 * kMaxStep;
          if (threads > 1 && b0 > base0 && lasts.size() < 3 && c < m && !too_few(aligned(b0, m), m))
            lasts.push_back(c);
        }
        if (auto status = generate_fill(lasts); !status.ok())
          return simulate_whole(workload, variant, options, "probe failed", m);
      }
      const std::int64_t held = held_of.at(last);
      if (held >= last) {
        reason = "the pipeline fill is longer than the probes: a rank holds all " +
                 std::to_string(last) + " micro-batches of a probe at once";
        memory_missed = true;
        fill_probe = last;
        fill_held = held;
        continue;
      }
      fill_probe = 0;
    }
    // The first base's validation probe is prefetched too (most methods fold there, and it is
    // small); a later base's only once its probes repeat, so that a method that does not fold
    // (WeiPipe under contention) does not pay for it.
    // The probes most likely needed next run beside them: the validation probe of step 1 after
    // a base that missed only on the split (WeiPipe: ops, bytes and memory already repeat, the
    // next base usually folds at step 1); else the last probe of step 2, and once the peak
    // memory repeated at the base before, the validation probe of step 2 too (1F1B: its link
    // times and period-2 rounds settle a base or two after its memory).
    if (base0 == kBases[0]) {
      prefetch({base, base + 1, base + 2, 2 * base + 2}, {});
    } else if (split_bases > 0) {
      prefetch({base, base + 1, base + 2}, {2 * base + 2});
    } else if (memory_missed) {
      prefetch({base, base + 1, base + 2}, {base + 2 * kMaxStep});
    } else {
      prefetch({base, base + 1, base + 2},
               {base + 2 * kMaxStep, base + 2 * kMaxStep + kMaxStep * ((base + 1) / kMaxStep)});
    }
    memory_missed = false;
    // Only the compute / exposed-communication split missed at every step length, at this base
    // and the one before: ops, bytes and memory already repeat, and the split drifts with the
    // micro-batch count (fold.h: ranks running ahead of WeiPipe's ring under the contention
    // model). Larger probes would cost more than they can save, so the search stops. One such
    // base is not enough: WeiPipe with llama-h1024-l48 on 3x8-a100 misses only on the split at
    // the base 2 and repeats exactly from the base 4.
    bool split_only = true;
    bool drift = true;
    for (std::int64_t step = 1; step <= kMaxStep; ++step) {
      auto a = probe(base);
      auto b = probe(base + step);
      auto c = probe(base + 2 * step);
      if (!a.ok() || !b.ok() || !c.ok()) {
        // A probe program that fails verification is the generator's fault at every count:
        // reported, never simulated whole instead.
        for (const auto* p : {&a, &b, &c})
          if (!p->ok() && is_invalid_program(p->error())) return p->error();
        return simulate_whole(workload, variant, options, "probe failed", m);
      }
      // Validation probe well past the first ones: a warm-up longer than `base`, or a regime
      // that changes with the micro-batch count, shows up as a miss here.
      const std::int64_t last = base + 2 * step;
      const std::int64_t v = last + step * std::max<std::int64_t>(1, (base + step - 1) / step);
      const bool v_fits = v < m && (m - v) % step == 0;
      // The remaining rounds, extrapolated from the validation probe along b -> c.
      const auto fold_from = [&](const SimOutput& vo, const SimOutput& bo, const SimOutput& co) {
        FoldedOutput f;
        f.output = extrapolate(vo, bo, co, (m - v) / step, *batch);
        f.output.events = 0;
        for (const auto& [count, o] : probes)
          f.output.events += o.events;
        f.fold.folded = true;
        f.fold.rounds = m;
        f.fold.rounds_simulated = v;
        f.fold.rounds_folded = m - v;
        return f;
      };
      if (const Miss miss = repeats((*a)->report, (*b)->report, (*c)->report); miss != Miss::none) {
        reason = miss_reason(miss, base + 2 * step);
        split_only = split_only && miss == Miss::split;
        drift = drift && miss == Miss::iteration;
        memory_missed = memory_missed || miss == Miss::memory;
        // The warm-up may end between a and b: when the validation probe has run (the first
        // base; a thread to spare; or it is the next step length's last probe, needed anyway),
        // b, c and it are a probe set too, k steps apart.
        if (v_fits && (probes.count(v) > 0 || (step < kMaxStep && v == base + 2 * kMaxStep))) {
          auto vo = probe(v);
          if (!vo.ok()) return probe_failed(vo.error());
          const Miss shifted =
              repeats((*b)->report, (*c)->report, (*vo)->report, (v - last) / step);
          if (shifted == Miss::none) return fold_from(**vo, **b, **c);
        }
        continue;
      }
      split_only = false;
      drift = false;
      if (!v_fits) continue;
      auto vo = probe(v);
      if (!vo.ok()) return probe_failed(vo.error());
      const SimOutput predicted = extrapolate(**c, **b, **c, (v - last) / step, *batch);
      if (!agrees(predicted.report, (*vo)->report)) {
        reason = "the extrapolation missed the validation probe at " + std::to_string(v) +
                 " micro-batches per worker";
        continue;
      }
      return fold_from(**vo, **b, **c);
    }
    split_bases = split_only ? split_bases + 1 : 0;
    if (split_bases == 2) break;
    // The iteration time itself did not grow by one step per round at any step length, at this
    // base and the one before (bases of 16 and more that ran: bases in the pipeline fill are
    // skipped above, so 1F1B over 24 stages counts the bases 32 and 64).
    // Measured: 1F1B on 3x8-a100 with a NIC of 8-24 Gb/s is network-bound, and its period-2
    // round times drift by ~1 ms a round and never settle (0.8293, 0.7449, 0.8282, 0.7460 s at
    // 61-65 micro-batches, 8 Gb/s); larger bases missed the same way up to 256, and probing them
    // cost more than the whole iteration. A method that folds after such misses is simulated
    // whole: the same figures, exactly.
    drift_bases = drift && base0 >= 16 ? drift_bases + 1 : 0;
    if (drift_bases == 2) {
      reason =
          "the iteration time did not grow by one step per round at two probe sets in a row "
          "(up to " +
          std::to_string(base + 2 * kMaxStep) + " micro-batches per worker): the rounds drift";
      break;
    }
  }
  return simulate_whole(workload, variant, options, reason, m);
}

}  // namespace

Expected<FoldedOutput> simulate_workload(const schedules::Workload& workload,
                                         const schedules::ScheduleVariant& variant,
                                         const SimOptions& options, bool fold) {
  auto f = simulate_folded(workload, variant, options, fold);
  if (!f.ok()) return f;
  f->fold.replicas_collapsed = f->output.replicas_collapsed;
  f->fold.replica_ranks = f->output.replica_ranks;
  f->fold.symmetry_note = f->output.symmetry_note;
  f->fold.noise_iterations = f->output.noise_iterations;
  f->fold.noise_replicate = f->output.noise_replicate;
  return f;
}

}  // namespace tawpipe::sim
