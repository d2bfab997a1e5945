#include "exec/host/cpu_account.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <cstdarg>
#include <cstdio>

namespace tawpipe::exec::host {
namespace {

std::string format(const char* f, ...) {
  char buf[256];
  va_list args;
  va_start(args, f);
  std::vsnprintf(buf, sizeof buf, f, args);
  va_end(args);
  return buf;
}

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
  ThreadUse& sum = out.threads[name];
  sum.cpu_ns += use.cpu_ns;
  sum.queue_ns += use.queue_ns;
  sum.voluntary += use.voluntary;
  sum.involuntary += use.involuntary;
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
  // The first line of /proc/stat sums every CPU: user nice system idle iowait irq softirq
  // steal guest guest_nice (guest time is counted in user already).
  std::istringstream s(read_first_line("/proc/stat"));
  std::string cpu;
  s >> cpu;
  std::uint64_t v[8] = {};
  for (std::uint64_t& x : v)
    s >> x;
  snap.idle_ticks = v[3] + v[4];
  snap.steal_ticks = v[7];
  for (std::uint64_t x : v)
    snap.ticks += x;
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
  d.idle_ticks = minus(after.idle_ticks, before.idle_ticks);
  d.steal_ticks = minus(after.steal_ticks, before.steal_ticks);
  d.ticks = minus(after.ticks, before.ticks);
  return d;
}

std::string describe_threads(const CpuSnapshot& diff, double steps) {
  std::string out;
  for (const auto& [name, u] : diff.threads) {
    if (u.cpu_ns == 0 && u.voluntary == 0 && u.involuntary == 0) continue;
    if (!out.empty()) out += ", ";
    out += format("%s %.1f cpu %.1f queue %.0f/%.0f cs", name.c_str(),
                  1e-6 * static_cast<double>(u.cpu_ns) / steps,
                  1e-6 * static_cast<double>(u.queue_ns) / steps,
                  static_cast<double>(u.voluntary) / steps,
                  static_cast<double>(u.involuntary) / steps);
  }
  return out;
}

std::string describe_machine(const CpuSnapshot& diff, double steps) {
  const double ms_per_tick = 1e3 / static_cast<double>(sysconf(_SC_CLK_TCK));
  return format("idle %.1f steal %.1f of %.1f",
                static_cast<double>(diff.idle_ticks) * ms_per_tick / steps,
                static_cast<double>(diff.steal_ticks) * ms_per_tick / steps,
                static_cast<double>(diff.ticks) * ms_per_tick / steps);
}

}  // namespace tawpipe::exec::host
