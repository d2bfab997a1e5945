// Calibration profile YAML reader (versions 1 and 2; schema in profile.h). Uses the checked
// yaml-cpp readers of common/yaml_read.h so units, "did you mean" and file:line:col errors behave
// exactly as in topology files.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/io.h"
#include "common/model/named_enum.h"
#include "common/profile/profile.h"
#include "common/topology/topology.h"
#include "common/yaml_read.h"

namespace tawpipe::profile {
namespace {

using yaml::Ctx;
using yaml::MapReader;

constexpr model::detail::NameTable<Backend, 3> kBackendNames = {{
    {"host", Backend::host},
    {"cuda", Backend::cuda},
    {"manual", Backend::manual},
}};
constexpr model::detail::NameTable<CommOp, 6> kCommOpNames = {{
    {"broadcast", CommOp::broadcast},
    {"reduce", CommOp::reduce},
    {"all_reduce", CommOp::all_reduce},
    {"all_gather", CommOp::all_gather},
    {"reduce_scatter", CommOp::reduce_scatter},
    {"sendrecv", CommOp::sendrecv},
}};
constexpr model::detail::NameTable<CommScope, 4> kCommScopeNames = {{
    {"intra_node", CommScope::intra_node},
    {"inter_node", CommScope::inter_node},
    {"shared_memory", CommScope::shared_memory},
    {"shared_core", CommScope::shared_core},
}};

constexpr int kMaxDim = 1 << 30;

const std::vector<std::string> kRootKeysV1 = {"format_version", "producer", "devices", "links"};
const std::vector<std::string> kRootKeys = {"format_version", "producer",      "backend", "devices",
                                            "links",          "communication", "host",    "noise"};
const std::vector<std::string> kDeviceKeysV1 = {"dtype",          "gemm",        "attention_fwd",
                                                "attention_bwd",  "elementwise", "memory_bandwidth",
                                                "launch_overhead"};
const std::vector<std::string> kDeviceKeys = {
    "dtype", "launch_overhead", "op_overhead", "memory_bandwidth", "kernels", "ranks"};
const std::vector<std::string> kGemmKeys = {"m", "n", "k", "batch", "rate"};
const std::vector<std::string> kAttentionKeys = {"batch",    "heads",  "seq",
                                                 "head_dim", "causal", "rate"};
const std::vector<std::string> kMemoryKeys = {"bytes", "bandwidth"};
const std::vector<std::string> kLinkKeys = {"bandwidth", "latency"};
const std::vector<std::string> kRankKeys = {"count", "spread", "outliers"};
const std::vector<std::string> kCommKeys = {"op",     "scope",     "ranks",
                                            "points", "cold_pool", "after_compute"};
const std::vector<std::string> kCommPointKeys = {"size", "time", "cpu", "root_cpu", "member_cpu"};
const std::vector<std::string> kNoiseKeys = {"work", "quantum", "units"};
const std::vector<std::string> kHostKeys = {
    "cores_per_host",          "ranks_per_core",   "wakeup_cost",
    "wakeup_latency",          "wakeup_cost_long", "wakeup_cost_shared",
    "wakeup_cost_long_shared", "zero_bandwidth"};

template <class Enum, std::size_t N>
Enum read_enum(const Ctx& c, std::string_view what,
               const model::detail::NameTable<Enum, N>& table) {
  auto v = model::detail::parse_named(yaml::read_string(c, what), what, table);
  if (!v.ok()) yaml::fail(c, v.error().message);
  return *v;
}

bool read_bool(const Ctx& c, std::string_view what) {
  const std::string s = yaml::read_string(c, what);
  if (s == "true") return true;
  if (s == "false") return false;
  yaml::fail(c, "expected true or false for " + std::string(what) + ", got '" + s + "'");
}

std::vector<std::string> link_class_names() {
  std::vector<std::string> names;
  for (int i = 0; i < topo::kNumLinkClasses; ++i)
    names.emplace_back(topo::to_string(static_cast<topo::LinkClass>(i)));
  return names;
}

std::vector<std::string> kernel_class_names() {
  std::vector<std::string> names;
  for (model::KernelClass k : model::kAllKernelClasses)
    names.emplace_back(model::to_string(k));
  return names;
}

// Shape keys are all-or-none: a partial shape is an error, no shape is a flat point.
void require_shape(const MapReader& m, const std::vector<std::string>& keys, std::string_view cls) {
  int given = 0;
  for (const std::string& k : keys)
    given += m.has(k) ? 1 : 0;
  if (given == 0 || given == static_cast<int>(keys.size())) return;
  std::string list;
  for (const std::string& k : keys)
    list += (list.empty() ? "" : ", ") + k;
  yaml::fail(m.self(), "a " + std::string(cls) + " point gives all of " + list +
                           " or none of them (a flat point)");
}

KernelPoint parse_point(const Ctx& c, model::KernelClass cls) {
  KernelPoint p;
  const auto dim = [](const Ctx& v, std::string_view what) {
    return static_cast<std::int64_t>(yaml::read_int(v, 1, kMaxDim, what));
  };
  if (cls == model::KernelClass::gemm) {
    const MapReader m(c, kGemmKeys, "a gemm point {m, n, k, rate}");
    require_shape(m, {"m", "n", "k"}, "gemm");
    if (auto v = m.opt("m")) p.m = dim(*v, "a GEMM dimension");
    if (auto v = m.opt("n")) p.n = dim(*v, "a GEMM dimension");
    if (auto v = m.opt("k")) p.k = dim(*v, "a GEMM dimension");
    if (auto v = m.opt("batch")) p.batch = dim(*v, "a batch count");
    p.rate = yaml::read_flop_rate(m.at("rate"));
  } else if (model::is_flop_bound(cls)) {
    const MapReader m(c, kAttentionKeys,
                      "an attention point {batch, heads, seq, head_dim, causal, rate}");
    require_shape(m, {"batch", "heads", "seq", "head_dim"}, "attention");
    if (auto v = m.opt("batch")) p.batch = dim(*v, "a batch size");
    if (auto v = m.opt("heads")) p.heads = dim(*v, "a head count");
    if (auto v = m.opt("seq")) p.seq = dim(*v, "a sequence length");
    if (auto v = m.opt("head_dim")) p.head_dim = dim(*v, "a head dimension");
    if (auto v = m.opt("causal")) p.causal = read_bool(*v, "causal");
    p.rate = yaml::read_flop_rate(m.at("rate"));
  } else {
    const MapReader m(c, kMemoryKeys, "a memory-bound point {bytes, bandwidth}");
    if (auto v = m.opt("bytes")) p.bytes = yaml::read_bytes(*v);
    p.bandwidth = yaml::read_bandwidth(m.at("bandwidth"));
  }
  return p;
}

RankSpread parse_ranks(const Ctx& c) {
  const MapReader m(c, kRankKeys, "a rank spread {count, spread, outliers}");
  RankSpread r;
  r.count = yaml::read_int(m.at("count"), 1, 1 << 24, "a rank count");
  if (auto v = m.opt("spread")) r.spread = yaml::read_number(*v, 0.0, 1e3, true, "a spread");
  if (auto v = m.opt("outliers")) {
    for (const Ctx& item : yaml::seq_items(*v, "outlier ranks"))
      r.outliers.push_back(yaml::read_int(item, 0, r.count - 1, "a rank"));
  }
  return r;
}

DeviceProfile parse_device_v1(const Ctx& c) {
  const MapReader m(c, kDeviceKeysV1, "a device profile");
  DeviceProfile d;
  if (auto v = m.opt("dtype")) d.dtype = yaml::read_string(*v, "a dtype name");
  using model::KernelClass;
  if (auto v = m.opt("gemm"))
    d.kernels[KernelClass::gemm] = {KernelPoint::flat_rate(yaml::read_flop_rate(*v))};
  if (auto v = m.opt("attention_fwd"))
    d.kernels[KernelClass::attention_fwd] = {KernelPoint::flat_rate(yaml::read_flop_rate(*v))};
  if (auto v = m.opt("attention_bwd"))
    d.kernels[KernelClass::attention_bwd] = {KernelPoint::flat_rate(yaml::read_flop_rate(*v))};
  if (auto v = m.opt("elementwise")) set_flat_memory_bound(d, yaml::read_bandwidth(*v));
  if (auto v = m.opt("memory_bandwidth")) d.memory_bandwidth = yaml::read_bandwidth(*v);
  if (auto v = m.opt("launch_overhead")) d.launch_overhead = yaml::read_time(*v);
  return d;
}

DeviceProfile parse_device(const Ctx& c) {
  const MapReader m(c, kDeviceKeys, "a device profile");
  DeviceProfile d;
  if (auto v = m.opt("dtype")) d.dtype = yaml::read_string(*v, "a dtype name");
  if (auto v = m.opt("launch_overhead")) d.launch_overhead = yaml::read_time(*v);
  if (auto v = m.opt("op_overhead")) d.op_overhead = yaml::read_time(*v);
  if (auto v = m.opt("memory_bandwidth")) d.memory_bandwidth = yaml::read_bandwidth(*v);
  if (auto v = m.opt("kernels")) {
    const MapReader classes(*v, kernel_class_names(), "kernel points by kernel class");
    for (const std::string& key : classes.keys()) {
      const model::KernelClass cls = *model::parse_kernel_class(key);
      std::vector<KernelPoint>& points = d.kernels[cls];
      for (const Ctx& item : yaml::seq_items(classes.at(key), "measured points"))
        points.push_back(parse_point(item, cls));
    }
  }
  if (auto v = m.opt("ranks")) d.ranks = parse_ranks(*v);
  return d;
}

LinkProfile parse_link(const Ctx& c) {
  const MapReader m(c, kLinkKeys, "a link profile");
  LinkProfile l;
  if (auto v = m.opt("bandwidth")) l.bandwidth = yaml::read_bandwidth(*v);
  if (auto v = m.opt("latency")) l.latency = yaml::read_time(*v);
  return l;
}

CommMeasurement parse_comm(const Ctx& c) {
  const MapReader m(c, kCommKeys,
                    "a communication measurement {op, scope, ranks, points[, cold_pool | "
                    "after_compute]}");
  CommMeasurement cm;
  cm.op = read_enum(m.at("op"), "collective op", kCommOpNames);
  cm.scope = read_enum(m.at("scope"), "communication scope", kCommScopeNames);
  cm.ranks = yaml::read_int(m.at("ranks"), 2, 1 << 24, "a rank count");
  if (auto v = m.opt("cold_pool")) cm.cold_pool = yaml::read_bytes(*v);  // positive
  if (auto v = m.opt("after_compute")) {
    if (cm.cold_pool) yaml::fail(*v, "a curve is measured cold or after compute, not both");
    cm.after_compute = yaml::read_time(*v);
  }
  for (const Ctx& item : yaml::seq_items(m.at("points"), "measured points")) {
    const MapReader pm(item, kCommPointKeys,
                       "a communication point {size, time[, cpu, root_cpu, member_cpu]}");
    CommPoint p{yaml::read_bytes(pm.at("size")), yaml::read_time(pm.at("time"))};
    if (auto v = pm.opt("cpu")) p.cpu = yaml::read_time(*v);
    if (auto v = pm.opt("root_cpu")) p.root_cpu = yaml::read_time(*v);
    if (auto v = pm.opt("member_cpu")) p.member_cpu = yaml::read_time(*v);
    if (!cm.points.empty() && !(cm.points.back().size < p.size))
      yaml::fail(item, "communication points must be in increasing size");
    cm.points.push_back(p);
  }
  return cm;
}

HostProfile parse_host(const Ctx& c) {
  const MapReader m(c, kHostKeys, "a host profile");
  HostProfile h;
  if (auto v = m.opt("cores_per_host"))
    h.cores_per_host = yaml::read_int(*v, 1, 1 << 20, "a core count");
  if (auto v = m.opt("ranks_per_core"))
    h.ranks_per_core = yaml::read_int(*v, 1, 1 << 20, "a rank count");
  if (auto v = m.opt("wakeup_cost")) h.wakeup_cost = yaml::read_time(*v);
  if (auto v = m.opt("wakeup_latency")) h.wakeup_latency = yaml::read_time(*v);
  if (auto v = m.opt("wakeup_cost_long")) h.wakeup_cost_long = yaml::read_time(*v);
  if (auto v = m.opt("wakeup_cost_shared")) h.wakeup_cost_shared = yaml::read_time(*v);
  if (auto v = m.opt("wakeup_cost_long_shared")) h.wakeup_cost_long_shared = yaml::read_time(*v);
  if (auto v = m.opt("zero_bandwidth")) h.zero_bandwidth = yaml::read_bandwidth(*v);
  return h;
}

NoiseTrace parse_noise(const Ctx& c) {
  const MapReader m(c, kNoiseKeys, "a noise trace {work, quantum, units}");
  NoiseTrace t;
  if (auto v = m.opt("work")) t.work = yaml::read_string(*v, "a description of the quantum");
  const Ctx q = m.at("quantum");
  t.quantum = yaml::read_time(q);
  if (t.quantum <= SimTime()) yaml::fail(q, "a noise quantum must be longer than 0");
  for (const Ctx& unit : yaml::seq_items(m.at("units"), "noise traces, one per unit")) {
    std::vector<double> trace;
    for (const Ctx& x : yaml::seq_items(unit, "a unit's quantum stretches", NoiseTrace::kMaxQuanta))
      trace.push_back(yaml::read_number(x, 0.0, 1e4, false, "a quantum's stretch"));
    if (trace.empty()) yaml::fail(unit, "a noise trace needs at least one quantum");
    t.units.push_back(std::move(trace));
  }
  if (t.units.empty()) yaml::fail(m.at("units"), "a noise trace needs at least one unit");
  return t;
}

Profile parse_root(const Ctx& root) {
  const MapReader m(root, kRootKeys, "a calibration profile");
  Profile p;
  const Ctx version = m.at("format_version");
  const int v = yaml::read_int(version, 1, 1000, "a format version");
  if (v != 1 && v != kProfileFormatVersion)
    yaml::fail(version, "unsupported profile format_version " + std::to_string(v) +
                            " (this tawpipe reads 1 and " + std::to_string(kProfileFormatVersion) +
                            ")");
  if (v == 1) {
    for (const std::string& key : m.keys()) {
      if (std::find(kRootKeysV1.begin(), kRootKeysV1.end(), key) == kRootKeysV1.end())
        yaml::fail(*m.opt(key), "'" + key + "' needs format_version: 2");
    }
  }
  if (auto x = m.opt("producer")) p.producer = yaml::read_string(*x, "a producer string");
  if (auto x = m.opt("backend")) p.backend = read_enum(*x, "backend", kBackendNames);
  if (auto x = m.opt("devices")) {
    for (auto& [name, ctx] : yaml::dict_items(*x, "device profiles"))
      p.devices[name] = v == 1 ? parse_device_v1(ctx) : parse_device(ctx);
  }
  if (auto x = m.opt("links")) {
    const MapReader links(*x, link_class_names(), "link profiles by link class");
    for (const std::string& key : links.keys())
      p.links[key] = parse_link(links.at(key));
  }
  if (auto x = m.opt("communication")) {
    for (const Ctx& item : yaml::seq_items(*x, "communication measurements"))
      p.communication.push_back(parse_comm(item));
  }
  if (auto x = m.opt("host")) p.host = parse_host(*x);
  if (auto x = m.opt("noise")) p.noise = parse_noise(*x);
  return p;
}

}  // namespace

Expected<Profile> read_profile_yaml(std::string_view text, std::string_view file_name) {
  const std::string file(file_name);
  try {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return Error{"not valid YAML: " + e.msg, file, e.mark.line >= 0 ? e.mark.line + 1 : 1,
                   e.mark.column >= 0 ? e.mark.column + 1 : 1, ""};
    }
    if (!root.IsDefined() || root.IsNull())
      return Error{"empty profile (expected a mapping with format_version: 2, ...)", file, 1, 1,
                   ""};
    return parse_root(yaml::root_ctx(root, file));
  } catch (const yaml::ReadError& e) {
    return e.error;
  } catch (const YAML::Exception& e) {
    return Error{"malformed profile: " + e.msg, file, e.mark.line >= 0 ? e.mark.line + 1 : 1,
                 e.mark.column >= 0 ? e.mark.column + 1 : 1, ""};
  }
}

Expected<Profile> read_profile_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return text.error();
  return read_profile_yaml(*text, path);
}

std::string_view to_string(Backend b) {
  return model::detail::name_of(b, kBackendNames);
}
std::string_view to_string(CommOp op) {
  return model::detail::name_of(op, kCommOpNames);
}
std::string_view to_string(CommScope s) {
  return model::detail::name_of(s, kCommScopeNames);
}

}  // namespace tawpipe::profile
