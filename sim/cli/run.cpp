#include "sim/cli/run.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/io.h"
#include "common/ir/json.h"
#include "common/ir/verifier.h"
#include "common/report/trace.h"
#include "common/strings.h"

namespace tawpipe::cli {
namespace {

std::string expand(const std::string& pattern, const std::string& label) {
  std::string out = pattern;
  if (auto pos = out.find("{}"); pos != std::string::npos) out.replace(pos, 2, label);
  return out;
}

// Per-link utilisation counter tracks from the network's usage samples (links that carried
// traffic only, in link order).
std::vector<report::CounterTrack> link_tracks(const sim::SimOutput& o, const topo::Topology& t) {
  std::map<topo::LinkId, report::CounterTrack> tracks;
  for (const auto& s : o.link_usage) {
    const topo::Link& l = t.link(s.link);
    auto& track = tracks[s.link];
    if (track.name.empty()) {
      track.name = l.name;
      track.unit = "utilisation";
    }
    const double cap = l.capacity.bytes_per_second();
    track.points.emplace_back(s.time, cap > 0.0 ? s.bytes_per_second / cap : 0.0);
  }
  std::vector<report::CounterTrack> out;
  out.reserve(tracks.size());
  for (auto& [id, track] : tracks)
    out.push_back(std::move(track));
  return out;
}

}  // namespace

sim::SimOptions default_sim_options() {
  sim::SimOptions options;
  options.verify = true;
  if (const char* fault = std::getenv("TAWSIM_TEST_FAULT")) options.test_fault = fault;
  return options;
}

Expected<std::vector<ir::Program>> generate_verified(
    const schedules::Workload& workload, const std::vector<schedules::ScheduleVariant>& variants) {
  std::vector<ir::Program> programs;
  programs.reserve(variants.size());
  for (const auto& v : variants) {
    auto program = schedules::build_program(workload, v);
    if (!program.ok()) return program.error().at("--schedule " + v.label, 0, 0, "");
    const ir::VerifyResult r = ir::verify(*program);
    if (!r.ok) {
      return make_error(v.label + ": program fails verification (" + ir::name(r.stage) +
                        "): " + r.message);
    }
    programs.push_back(std::move(*program));
  }
  return programs;
}

std::string workload_title(const schedules::Workload& w) {
  const auto& t = w.topology;
  return fmt::format("tawsim: {} ({} GPUs in {} nodes) | model {} | {} | dp {}", t.name(),
                     t.num_gpus(), t.num_nodes(), w.model.name, model::summary(w.train), w.dp);
}

Expected<std::vector<MethodResult>> run_methods(const schedules::Workload& w,
                                                const std::vector<schedules::ScheduleVariant>& vs,
                                                const sim::SimOptions& base,
                                                const RunOutputs& outputs, bool fold) {
  const bool files =
      !outputs.report_file.empty() || !outputs.trace_file.empty() || !outputs.ir_file.empty();
  if (vs.size() > 1) {
    for (const std::string* f : {&outputs.report_file, &outputs.trace_file, &outputs.ir_file}) {
      if (!f->empty() && f->find("{}") == std::string::npos) {
        return make_error("output file '" + *f + "' is written once per method: put '{}' in " +
                          "its name (replaced by the method), e.g. run.{}.json");
      }
    }
  }
  sim::SimOptions options = base;
  options.model = w.model;
  options.record_ops = options.record_ops || !outputs.trace_file.empty();
  options.record_ranks = outputs.trace_ranks;
  options.record_link_usage = !outputs.trace_file.empty();

  std::vector<MethodResult> results;
  struct Pending {
    std::string label;
    ir::Program program;
    sim::SimOutput output;
  };
  std::vector<Pending> pending;
  for (const auto& v : vs) {
    MethodResult r;
    r.label = v.label;
    if (!files) {
      auto out = sim::simulate_workload(w, v, options, fold);
      if (!out.ok() && sim::is_invalid_program(out.error()))
        return out.error().at("", 0, 0, v.label);  // "LABEL: program fails verification ..."
      if (!out.ok()) {
        r.error = out.error().message;
      } else {
        r.report = std::move(out->output.report);
        r.fold = std::move(out->fold);
        if (w.programs) {  // a shared program names the topology of the point that made it
          r.report->header.topology = w.topology.name();
          r.report->header.topology_hash = w.topology.content_hash();
        }
      }
      results.push_back(std::move(r));
      continue;
    }
    auto program = schedules::build_program(w, v);
    if (!program.ok()) {
      r.error = program.error().message;
      results.push_back(std::move(r));
      continue;
    }
    auto out = sim::run_simulation(*program, w.topology, options);
    if (!out.ok() && sim::is_invalid_program(out.error()))
      return out.error().at("", 0, 0, v.label);  // "LABEL: program fails verification ..."
    if (!out.ok()) {
      r.error = out.error().message;
      results.push_back(std::move(r));
      continue;
    }
    r.report = out->report;
    r.fold.noise_iterations = out->noise_iterations;
    r.fold.noise_replicate = out->noise_replicate;
    results.push_back(std::move(r));
    if (files) pending.push_back({v.label, std::move(*program), std::move(*out)});
  }
  for (const auto& p : pending) {
    if (!outputs.ir_file.empty()) {
      TAWPIPE_TRY(write_file_with(expand(outputs.ir_file, p.label), [&](std::ostream& os) {
        ir::write_program_json(p.program, os);
        return Status::success();
      }));
    }
    if (!outputs.report_file.empty()) {
      TAWPIPE_TRY(write_file_with(expand(outputs.report_file, p.label), [&](std::ostream& os) {
        // Per-op records belong to the trace; the report keeps the summaries (compare reads
        // those), which keeps it small for large runs.
        report::Report summary = p.output.report;
        summary.ops.clear();
        report::write_report_json(summary, os);
        return Status::success();
      }));
    }
    if (!outputs.trace_file.empty()) {
      TAWPIPE_TRY(write_file_with(expand(outputs.trace_file, p.label), [&](std::ostream& os) {
        report::TraceOptions topts;
        topts.ranks = outputs.trace_ranks;
        auto counters = link_tracks(p.output, w.topology);
        for (auto& t : sim::memory_counter_tracks(p.output.memory_samples))
          counters.push_back(std::move(t));
        report::write_chrome_trace(p.program, p.output.report, counters, topts, os);
        return Status::success();
      }));
    }
  }
  return results;
}

Expected<Shard> parse_shard(std::string_view text) {
  const auto bad = [&] {
    return make_error("--shard expects K/N with 1 <= K <= N (e.g. 3/16), got '" +
                      std::string(text) + "'");
  };
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return bad();
  Shard s;
  try {
    std::size_t used = 0;
    const std::string k(text.substr(0, slash)), n(text.substr(slash + 1));
    s.index = std::stoll(k, &used);
    if (used != k.size()) return bad();
    s.count = std::stoll(n, &used);
    if (used != n.size()) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (s.count < 1 || s.index < 1 || s.index > s.count) return bad();
  return s;
}

std::string shard_marker(Format format, const Shard& shard, std::int64_t first, std::int64_t points,
                         std::int64_t total) {
  if (format == Format::json)
    return fmt::format(
        "{{\"tawsim_shard\": \"{}/{}\", \"first_point\": {}, \"points\": {}, "
        "\"total_points\": {}, \"slice\": [\n",
        shard.index, shard.count, first, points, total);
  return fmt::format("# tawsim shard {}/{} first_point={} points={} total_points={}\n", shard.index,
                     shard.count, first, points, total);
}

Expected<Sweep> parse_sweep(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return make_error("--sweep expects KEY=V1,V2,..., got '" + std::string(text) + "'");
  }
  Sweep s{std::string(text.substr(0, eq)), split(text.substr(eq + 1), ',')};
  if (s.values.size() == 1 && s.values.front().empty()) {
    return make_error("--sweep " + s.key + " has no values (expected " + s.key + "=V1,V2,...)");
  }
  for (const auto& v : s.values) {
    if (v.empty()) return make_error("--sweep " + s.key + " has an empty value");
  }
  return s;
}

Expected<double> run_sweep(const schedules::WorkloadSpec& base, const std::vector<Sweep>& sweeps,
                           const std::vector<schedules::ScheduleVariant>& variants,
                           const sim::SimOptions& base_options, Format format, int jobs,
                           std::ostream& out,
                           const std::function<void(std::size_t, std::size_t)>& progress, bool fold,
                           const Shard& shard) {
  const auto start = std::chrono::steady_clock::now();
  // Every program is verified before it is simulated; points that share a program (the
  // ProgramCache below hands out one program object for equal generator inputs) verify it once,
  // by the identity of that live object (common/ir/verify_cache.h). With several jobs the points
  // keep the cores busy.
  sim::SimOptions options = base_options;
  if (!options.verified) options.verified = std::make_shared<ir::VerifiedPrograms>();
  if (jobs > 1) options.verify_threads = 1;
  // The cartesian product, first sweep slowest; every point resolved before simulating.
  std::vector<SweepPoint> points(1);
  for (const Sweep& s : sweeps) {
    std::vector<SweepPoint> next;
    for (const auto& p : points) {
      for (const auto& v : s.values) {
        SweepPoint q = p;
        q.emplace_back(s.key, v);
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  const SweepPoint sweep_keys = points.front();  // the header's columns (values unused)
  // A shard keeps its contiguous slice; every point of the whole sweep is still resolved below
  // only for that slice, so each slice validates what it runs.
  const auto total = static_cast<std::int64_t>(points.size());
  std::int64_t first = 0;
  if (shard.count > 0) {
    if (format == Format::table) return make_error("--shard needs --format csv or json");
    first = (shard.index - 1) * total / shard.count;
    const std::int64_t last = shard.index * total / shard.count;
    points = std::vector<SweepPoint>(points.begin() + first, points.begin() + last);
  }
  // Points that differ only in network or compute parameters generate equal programs (every
  // fold probe too): generate each once (schedules/program_cache.h).
  const auto programs = std::make_shared<schedules::ProgramCache>();
  // Resolved (loading and parsing the topology and model files: ~4 ms a point) by `jobs`
  // threads; the first bad point in point order is reported.
  std::vector<std::optional<Expected<schedules::Workload>>> resolved(points.size());
  {
    std::atomic<std::size_t> next{0};
    const auto resolve = [&] {
      for (std::size_t i = next++; i < points.size(); i = next++) {
        schedules::WorkloadSpec spec = base;
        for (const auto& [k, v] : points[i])
          spec.sets.push_back(k + "=" + v);
        resolved[i] = schedules::resolve_workload(spec);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < std::min<int>(jobs, static_cast<int>(points.size())); ++t)
      pool.emplace_back(resolve);
    resolve();
    for (auto& t : pool)
      t.join();
  }
  std::vector<schedules::Workload> workloads;
  workloads.reserve(points.size());
  for (auto& w : resolved) {
    if (!w->ok()) return std::move(*w).error();
    if (jobs > 1) (*w)->threads = 1;  // the points already keep the cores busy
    (*w)->programs = programs;
    workloads.push_back(std::move(**w));
  }
  resolved.clear();

  // Workers simulate points in any order; the caller's thread prints them in point order.
  std::vector<std::optional<std::string>> rendered(points.size());
  std::mutex mutex;
  std::condition_variable ready;
  std::atomic<std::size_t> next_task{0};
  // Work is handed out per (point, method), not per point: methods differ several-fold in cost,
  // and with whole points the last one keeps one worker busy while the others idle. The worker
  // that finishes a point's last method renders the point.
  const std::size_t methods = variants.size();
  std::vector<std::vector<std::optional<Expected<std::vector<MethodResult>>>>> done(points.size());
  for (auto& d : done)
    d.resize(methods);
  std::vector<std::size_t> left(points.size(), methods);
  // A program that fails verification ends the sweep: the error is reported and nothing is
  // written (the output is kept until every point is done); the remaining tasks are skipped.
  std::optional<Error> invalid;
  std::size_t invalid_point = 0;
  std::atomic<bool> stop{false};
  auto render = [&](std::size_t i) {
    std::vector<MethodResult> results;
    std::optional<Error> error;
    for (auto& r : done[i]) {
      if (!r->ok() && sim::is_invalid_program(r->error())) {
        std::string where = "point " + std::to_string(first + static_cast<std::int64_t>(i));
        for (const auto& [k, v] : points[i])
          where += " " + k + "=" + v;
        std::lock_guard lock(mutex);
        if (!invalid || i < invalid_point) {  // the first in point order among those that ran
          invalid = make_error(where + ": " + r->error().to_string());
          invalid_point = i;
        }
        stop = true;
        return std::string();
      }
      if (!r->ok()) {
        if (!error) error = r->error();
        continue;
      }
      for (auto& m : **r)
        results.push_back(std::move(m));
    }
    done[i].clear();
    std::ostringstream os;
    if (error) {
      os << "point " << i << ": " << error->to_string() << "\n";
    } else if (format == Format::csv) {
      write_csv_rows(os, points[i], results);
    } else if (format == Format::json) {
      os << (i > 0             ? ",\n"
             : shard.count > 0 ? ""
                               : "[\n")
         << point_json(workload_title(workloads[i]), points[i], results);
    } else {
      std::string title = workload_title(workloads[i]);
      for (const auto& [k, v] : points[i])
        title += " | " + k + "=" + v;
      write_table(os, title, results);
      os << "\n";
    }
    return os.str();
  };
  auto worker = [&] {
    const std::size_t tasks = points.size() * methods;
    for (std::size_t t = next_task++; t < tasks; t = next_task++) {
      const std::size_t i = t / methods;
      auto result = stop ? Expected<std::vector<MethodResult>>(std::vector<MethodResult>{})
                         : run_methods(workloads[i], {variants[t % methods]}, options, {}, fold);
      std::unique_lock lock(mutex);
      done[i][t % methods] = std::move(result);
      if (--left[i] > 0) continue;
      lock.unlock();
      std::string text = render(i);  // every method of the point is in: no one else touches it
      lock.lock();
      rendered[i] = std::move(text);
      ready.notify_all();
    }
  };
  if (methods == 0) {  // nothing to simulate: every point renders empty
    for (std::size_t i = 0; i < points.size(); ++i)
      rendered[i] = render(i);
  }
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(points.size() * methods)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(worker);

  std::ostringstream text;
  if (shard.count > 0)
    text << shard_marker(format, shard, first, static_cast<std::int64_t>(points.size()), total);
  if (format == Format::csv) write_csv_header(text, sweep_keys);
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::unique_lock lock(mutex);
    ready.wait(lock, [&] { return rendered[i].has_value(); });
    text << *rendered[i];
    rendered[i]->clear();
    lock.unlock();
    if (progress) progress(i + 1, points.size());
  }
  for (auto& t : pool)
    t.join();
  if (invalid) return *invalid;
  if (format == Format::json) {
    if (shard.count == 0) {
      text << "\n]\n";
    } else {
      text << (points.empty() ? "]}\n" : "\n]}\n");
    }
  }
  out << text.str() << std::flush;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tawpipe::cli
