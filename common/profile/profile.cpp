// Calibration profile YAML I/O. Uses the checked yaml-cpp readers of the topology loader
// (common/yaml_read.h) so units, "did you mean" and file:line:col errors behave exactly as in
// topology files.
#include "common/profile/profile.h"

#include <yaml-cpp/yaml.h>

#include <sstream>
#include <vector>

#include "common/io.h"
#include "common/topology/topology.h"
#include "common/yaml_read.h"

namespace tawpipe::profile {
namespace {

using yaml::Ctx;
using yaml::MapReader;

const std::vector<std::string> kRootKeys = {"format_version", "producer", "devices", "links"};
const std::vector<std::string> kDeviceKeys = {"dtype",          "gemm",        "attention_fwd",
                                              "attention_bwd",  "elementwise", "memory_bandwidth",
                                              "launch_overhead"};
const std::vector<std::string> kLinkKeys = {"bandwidth", "latency"};

std::vector<std::string> link_class_names() {
  std::vector<std::string> names;
  for (int i = 0; i < topo::kNumLinkClasses; ++i)
    names.emplace_back(topo::to_string(static_cast<topo::LinkClass>(i)));
  return names;
}

DeviceProfile parse_device(const Ctx& c) {
  const MapReader m(c, kDeviceKeys, "a device profile");
  DeviceProfile d;
  if (auto v = m.opt("dtype")) d.dtype = yaml::read_string(*v, "a dtype name");
  if (auto v = m.opt("gemm")) d.gemm = yaml::read_flop_rate(*v);
  if (auto v = m.opt("attention_fwd")) d.attention_fwd = yaml::read_flop_rate(*v);
  if (auto v = m.opt("attention_bwd")) d.attention_bwd = yaml::read_flop_rate(*v);
  if (auto v = m.opt("elementwise")) d.elementwise = yaml::read_bandwidth(*v);
  if (auto v = m.opt("memory_bandwidth")) d.memory_bandwidth = yaml::read_bandwidth(*v);
  if (auto v = m.opt("launch_overhead")) d.launch_overhead = yaml::read_time(*v);
  return d;
}

LinkProfile parse_link(const Ctx& c) {
  const MapReader m(c, kLinkKeys, "a link profile");
  LinkProfile l;
  if (auto v = m.opt("bandwidth")) l.bandwidth = yaml::read_bandwidth(*v);
  if (auto v = m.opt("latency")) l.latency = yaml::read_time(*v);
  return l;
}

Profile parse_root(const Ctx& root) {
  const MapReader m(root, kRootKeys, "a calibration profile");
  Profile p;
  p.format_version = yaml::read_int(m.at("format_version"), 1, 1000, "a format version");
  if (p.format_version != kProfileFormatVersion)
    yaml::fail(m.at("format_version"),
               "unsupported profile format_version " + std::to_string(p.format_version) +
                   " (this tawpipe reads " + std::to_string(kProfileFormatVersion) + ")");
  if (auto v = m.opt("producer")) p.producer = yaml::read_string(*v, "a producer string");
  if (auto v = m.opt("devices")) {
    for (auto& [name, ctx] : yaml::dict_items(*v, "device profiles"))
      p.devices[name] = parse_device(ctx);
  }
  if (auto v = m.opt("links")) {
    const MapReader links(*v, link_class_names(), "link profiles by link class");
    for (const std::string& key : links.keys())
      p.links[key] = parse_link(links.at(key));
  }
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
      return Error{"empty profile (expected a mapping with format_version: 1, ...)", file, 1, 1,
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

std::string write_profile_yaml(const Profile& profile) {
  std::ostringstream out;
  out << "# tawpipe calibration profile (schema: common/profile/profile.h)\n";
  out << "format_version: " << profile.format_version << "\n";
  if (!profile.producer.empty()) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << profile.producer;
    out << "producer: " << e.c_str() << "\n";
  }
  if (!profile.devices.empty()) {
    out << "devices:\n";
    for (const auto& [name, d] : profile.devices) {
      out << "  " << name << ":";
      bool any = false;
      const auto field = [&](const char* key, const std::string& value) {
        out << "\n    " << key << ": " << value;
        any = true;
      };
      if (!d.dtype.empty()) field("dtype", d.dtype);
      if (d.gemm) field("gemm", to_string(*d.gemm));
      if (d.attention_fwd) field("attention_fwd", to_string(*d.attention_fwd));
      if (d.attention_bwd) field("attention_bwd", to_string(*d.attention_bwd));
      if (d.elementwise) field("elementwise", to_string(*d.elementwise));
      if (d.memory_bandwidth) field("memory_bandwidth", to_string(*d.memory_bandwidth));
      if (d.launch_overhead) field("launch_overhead", to_string(*d.launch_overhead));
      out << (any ? "\n" : " {}\n");
    }
  }
  if (!profile.links.empty()) {
    out << "links:\n";
    for (const auto& [cls, l] : profile.links) {
      out << "  " << cls << ":";
      bool any = false;
      if (l.bandwidth) {
        out << "\n    bandwidth: " << to_string(*l.bandwidth);
        any = true;
      }
      if (l.latency) {
        out << "\n    latency: " << to_string(*l.latency);
        any = true;
      }
      out << (any ? "\n" : " {}\n");
    }
  }
  return out.str();
}

}  // namespace tawpipe::profile
