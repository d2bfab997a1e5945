// Calibration profile YAML writer (always format_version 2; schema in profile.h). The output is
// canonical: read_profile_yaml(write_profile_yaml(p)) == p, and writing that again gives the same
// bytes. Units print with units.h's to_string, which parses back exactly.
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/profile/profile.h"
#include "common/strings.h"

namespace tawpipe::profile {
namespace {

// "{a: 1, b: 2}" from key/value pairs.
std::string flow(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string s = "{";
  for (std::size_t i = 0; i < fields.size(); ++i)
    s += (i ? ", " : "") + fields[i].first + ": " + fields[i].second;
  return s + "}";
}

std::string point_text(const KernelPoint& p) {
  std::vector<std::pair<std::string, std::string>> f;
  const auto dim = [&](const char* key, std::int64_t v) {
    if (v > 0) f.emplace_back(key, std::to_string(v));
  };
  dim("m", p.m);
  dim("n", p.n);
  dim("k", p.k);
  dim("batch", p.batch);
  dim("heads", p.heads);
  dim("seq", p.seq);
  dim("head_dim", p.head_dim);
  if (p.causal) f.emplace_back("causal", *p.causal ? "true" : "false");
  if (p.bytes) f.emplace_back("bytes", to_string(*p.bytes));
  if (p.rate) f.emplace_back("rate", to_string(*p.rate));
  if (p.bandwidth) f.emplace_back("bandwidth", to_string(*p.bandwidth));
  return flow(f);
}

void write_device(std::ostringstream& out, const std::string& name, const DeviceProfile& d) {
  out << "  " << name << ":";
  bool any = false;
  const auto field = [&](const char* key, const std::string& value) {
    out << "\n    " << key << ": " << value;
    any = true;
  };
  if (!d.dtype.empty()) field("dtype", d.dtype);
  if (d.launch_overhead) field("launch_overhead", to_string(*d.launch_overhead));
  if (d.op_overhead) field("op_overhead", to_string(*d.op_overhead));
  if (d.memory_bandwidth) field("memory_bandwidth", to_string(*d.memory_bandwidth));
  if (!d.kernels.empty()) {
    out << "\n    kernels:";
    any = true;
    for (const auto& [cls, points] : d.kernels) {
      out << "\n      " << model::to_string(cls) << ":";
      if (points.empty()) out << " []";
      for (const KernelPoint& p : points)
        out << "\n        - " << point_text(p);
    }
  }
  if (d.ranks) {
    std::string outliers = "[";
    for (std::size_t i = 0; i < d.ranks->outliers.size(); ++i)
      outliers += (i ? ", " : "") + std::to_string(d.ranks->outliers[i]);
    field("ranks", flow({{"count", std::to_string(d.ranks->count)},
                         {"spread", shortest_number(d.ranks->spread)},
                         {"outliers", outliers + "]"}}));
  }
  out << (any ? "\n" : " {}\n");
}

}  // namespace

bool KernelPoint::flat() const {
  return m == 0 && n == 0 && k == 0 && batch == 0 && heads == 0 && seq == 0 && head_dim == 0 &&
         !causal && !bytes;
}

KernelPoint KernelPoint::flat_rate(FlopRate r) {
  KernelPoint p;
  p.rate = r;
  return p;
}

KernelPoint KernelPoint::flat_bandwidth(Bandwidth b) {
  KernelPoint p;
  p.bandwidth = b;
  return p;
}

void set_flat_memory_bound(DeviceProfile& device, Bandwidth achieved) {
  for (model::KernelClass k : model::kAllKernelClasses)
    if (!model::is_flop_bound(k)) device.kernels[k] = {KernelPoint::flat_bandwidth(achieved)};
}

std::string write_profile_yaml(const Profile& profile) {
  std::ostringstream out;
  out << "# tawpipe calibration profile (schema: common/profile/profile.h)\n";
  out << "format_version: " << kProfileFormatVersion << "\n";
  if (!profile.producer.empty()) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << profile.producer;
    out << "producer: " << e.c_str() << "\n";
  }
  if (profile.backend) out << "backend: " << to_string(*profile.backend) << "\n";
  if (!profile.devices.empty()) {
    out << "devices:\n";
    for (const auto& [name, d] : profile.devices)
      write_device(out, name, d);
  }
  if (!profile.links.empty()) {
    out << "links:\n";
    for (const auto& [cls, l] : profile.links) {
      std::vector<std::pair<std::string, std::string>> f;
      if (l.bandwidth) f.emplace_back("bandwidth", to_string(*l.bandwidth));
      if (l.latency) f.emplace_back("latency", to_string(*l.latency));
      out << "  " << cls << ": " << flow(f) << "\n";
    }
  }
  if (!profile.communication.empty()) {
    out << "communication:\n";
    for (const CommMeasurement& c : profile.communication) {
      std::string points = "[";
      for (std::size_t i = 0; i < c.points.size(); ++i) {
        std::vector<std::pair<std::string, std::string>> f = {
            {"size", to_string(c.points[i].size)}, {"time", to_string(c.points[i].time)}};
        if (c.points[i].cpu) f.emplace_back("cpu", to_string(*c.points[i].cpu));
        if (c.points[i].root_cpu) f.emplace_back("root_cpu", to_string(*c.points[i].root_cpu));
        if (c.points[i].member_cpu)
          f.emplace_back("member_cpu", to_string(*c.points[i].member_cpu));
        points += (i ? ", " : "") + flow(f);
      }
      out << "  - {op: " << to_string(c.op) << ", scope: " << to_string(c.scope)
          << ", ranks: " << c.ranks;
      if (c.cold_pool) out << ", cold_pool: " << to_string(*c.cold_pool);
      if (c.after_compute) out << ", after_compute: " << to_string(*c.after_compute);
      out << ",\n     points: " << points << "]}\n";
    }
  }
  if (profile.host) {
    const HostProfile& h = *profile.host;
    out << "host:";
    bool any = false;
    // One "key: value" line per figure present, in the schema's order.
    auto field = [&](std::string_view key, const auto& value) {
      if (!value) return;
      out << "\n  " << key << ": ";
      if constexpr (std::is_same_v<std::decay_t<decltype(*value)>, int>)
        out << *value;
      else
        out << to_string(*value);
      any = true;
    };
    field("cores_per_host", h.cores_per_host);
    field("ranks_per_core", h.ranks_per_core);
    field("wakeup_cost", h.wakeup_cost);
    field("wakeup_latency", h.wakeup_latency);
    field("wakeup_cost_long", h.wakeup_cost_long);
    field("wakeup_cost_shared", h.wakeup_cost_shared);
    field("wakeup_cost_long_shared", h.wakeup_cost_long_shared);
    field("zero_bandwidth", h.zero_bandwidth);
    out << (any ? "\n" : " {}\n");
  }
  if (profile.noise) {
    const NoiseTrace& t = *profile.noise;
    out << "noise:\n";
    if (!t.work.empty()) {
      YAML::Emitter e;
      e << YAML::DoubleQuoted << t.work;
      out << "  work: " << e.c_str() << "\n";
    }
    out << "  quantum: " << to_string(t.quantum) << "\n  units:\n";
    for (const std::vector<double>& unit : t.units) {
      out << "    - [";
      for (std::size_t i = 0; i < unit.size(); ++i)
        out << (i == 0 ? "" : i % 16 == 0 ? ",\n       " : ", ") << shortest_number(unit[i]);
      out << "]\n";
    }
  }
  return out.str();
}

std::string describe_profile(const Profile* profile, std::string_view file_name) {
  if (profile == nullptr) return "built-in";
  std::string s(file_name.empty() ? "profile" : file_name);
  if (!profile->producer.empty()) s += " (" + profile->producer + ")";
  return s;
}

}  // namespace tawpipe::profile
