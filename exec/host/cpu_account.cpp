#include "exec/host/cpu_account.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "exec/host/doorbell.h"

namespace tawpipe::exec::host {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

void read_thread(const std::string& dir, CpuSnapshot& out) {
  std::string name = read_first_line(dir + "/comm");
  if (name.empty()) return;  // ended meanwhile
  ThreadUse use;
  {
    std::istringstream s(read_first_line(dir + "/schedstat"));
    s >> use.cpu_ns >> use.queue_ns;
  }
  std::ifstream status(dir + "/status");
  for (std::string line; std::getline(status, line);) {
    std::istringstream s(line);
    std::string key;
    s >> key;
    if (key == "voluntary_ctxt_switches:") s >> use.voluntary;
    if (key == "nonvoluntary_ctxt_switches:") s >> use.involuntary;
  }
  out.threads[name] += use;
}

}  // namespace

CpuSnapshot take_cpu_snapshot() {
  CpuSnapshot snap;
  if (DIR* d = opendir("/proc/self/task"); d != nullptr) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      read_thread(std::string("/proc/self/task/") + e->d_name, snap);
    }
    closedir(d);
  }
  // /proc/stat: "cpu" sums every CPU, then "cpuN" each: user nice system idle iowait irq
  // softirq steal guest guest_nice (guest time is counted in user already).
  std::ifstream stat("/proc/stat");
  for (std::string line; std::getline(stat, line);) {
    if (line.rfind("cpu", 0) != 0) break;
    std::istringstream s(line);
    std::string cpu;
    s >> cpu;
    std::uint64_t v[8] = {};
    for (std::uint64_t& x : v)
      s >> x;
    const CpuTicks t{v[0] + v[1], v[2] + v[5] + v[6], v[3] + v[4], v[7]};
    if (cpu == "cpu") {
      snap.all = t;
    } else {
      snap.cpus.push_back(t);
    }
  }
  snap.doorbell_timeouts = doorbell_timeouts();
  return snap;
}

CpuSnapshot cpu_difference(const CpuSnapshot& before, const CpuSnapshot& after) {
  CpuSnapshot d;
  auto minus = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  for (const auto& [name, a] : after.threads) {
    const auto it = before.threads.find(name);
    const ThreadUse b = it == before.threads.end() ? ThreadUse{} : it->second;
    d.threads[name] = {minus(a.cpu_ns, b.cpu_ns), minus(a.queue_ns, b.queue_ns),
                       minus(a.voluntary, b.voluntary), minus(a.involuntary, b.involuntary)};
  }
  auto ticks = [&](const CpuTicks& a, const CpuTicks& b) {
    return CpuTicks{minus(a.user, b.user), minus(a.system, b.system), minus(a.idle, b.idle),
                    minus(a.steal, b.steal)};
  };
  d.all = ticks(after.all, before.all);
  for (std::size_t c = 0; c < after.cpus.size(); ++c)
    d.cpus.push_back(ticks(after.cpus[c], c < before.cpus.size() ? before.cpus[c] : CpuTicks{}));
  d.doorbell_timeouts = minus(after.doorbell_timeouts, before.doorbell_timeouts);
  return d;
}

void cpu_accumulate(CpuSnapshot& sum, const CpuSnapshot& diff) {
  for (const auto& [name, use] : diff.threads)
    sum.threads[name] += use;
  sum.all += diff.all;
  if (sum.cpus.size() < diff.cpus.size()) sum.cpus.resize(diff.cpus.size());
  for (std::size_t c = 0; c < diff.cpus.size(); ++c)
    sum.cpus[c] += diff.cpus[c];
  sum.doorbell_timeouts += diff.doorbell_timeouts;
}

std::string describe_threads(const CpuSnapshot& diff, double steps) {
  std::string out =
      fmt::format("doorbell timeouts {:.0f}", static_cast<double>(diff.doorbell_timeouts) / steps);
  for (const auto& [name, u] : diff.threads) {
    if (u.cpu_ns == 0 && u.voluntary == 0 && u.involuntary == 0) continue;
    out += ", ";
    out += fmt::format("{} {:.1f} cpu {:.1f} queue {:.0f}/{:.0f} cs", name,
                       1e-6 * static_cast<double>(u.cpu_ns) / steps,
                       1e-6 * static_cast<double>(u.queue_ns) / steps,
                       static_cast<double>(u.voluntary) / steps,
                       static_cast<double>(u.involuntary) / steps);
  }
  return out;
}

std::string describe_machine(const CpuSnapshot& diff, double steps) {
  const double ms = 1e3 / static_cast<double>(sysconf(_SC_CLK_TCK)) / steps;
  auto one = [&](const CpuTicks& t) {
    return fmt::format("user {:.0f} sys {:.0f} idle {:.0f} steal {:.0f} of {:.0f}",
                       static_cast<double>(t.user) * ms, static_cast<double>(t.system) * ms,
                       static_cast<double>(t.idle) * ms, static_cast<double>(t.steal) * ms,
                       static_cast<double>(t.total()) * ms);
  };
  std::string out = one(diff.all) + " (";
  for (std::size_t c = 0; c < diff.cpus.size(); ++c)
    out += (c ? "; cpu" : "cpu") + std::to_string(c) + " " + one(diff.cpus[c]);
  return out + ")";
}

}  // namespace tawpipe::exec::host
