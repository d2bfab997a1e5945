// The `kernels:` block of a device kind (kernel_tables.h).
#include "common/topology/kernel_tables.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/strings.h"

namespace tawpipe::topo::detail {
namespace {

using yaml::Ctx;
using yaml::MapReader;

const std::vector<std::string> kKeys = {"gemm", "attention", "bandwidth"};
const std::vector<std::string> kGemmKeys = {"best", "k_overhead", "overhead"};
const std::vector<std::string> kAttentionKeys = {"pass", "head_dim", "causal", "seq", "rate"};
const std::vector<std::string> kWidthKeys = {"width", "fraction"};

std::vector<std::string> memory_bound_classes() {
  std::vector<std::string> names;
  for (model::KernelClass k : model::kAllKernelClasses)
    if (!model::is_flop_bound(k)) names.emplace_back(model::to_string(k));
  return names;
}

bool read_bool(const Ctx& c, std::string_view what) {
  const std::string s = yaml::read_string(c, what);
  if (s == "true") return true;
  if (s == "false") return false;
  yaml::fail(c, "expected true or false for " + std::string(what) + ", got '" + s + "'");
}

AttentionRateTable parse_attention(const Ctx& c) {
  const MapReader m(c, kAttentionKeys, "an attention rate table");
  AttentionRateTable t;
  const std::string pass = yaml::read_string(m.at("pass"), "a pass (fwd or bwd)");
  if (pass != "fwd" && pass != "bwd")
    yaml::fail(m.at("pass"), "expected fwd or bwd, got '" + pass + "'");
  t.backward = pass == "bwd";
  t.head_dim = yaml::read_int(m.at("head_dim"), 1, 4096, "a head dimension");
  t.causal = read_bool(m.at("causal"), "causal");
  for (const Ctx& v : yaml::seq_items(m.at("seq"), "sequence lengths")) {
    const std::int64_t s = yaml::read_int(v, 1, 1 << 30, "a sequence length");
    if (!t.seq.empty() && s <= t.seq.back()) yaml::fail(v, "sequence lengths must increase");
    t.seq.push_back(s);
  }
  for (const Ctx& v : yaml::seq_items(m.at("rate"), "rates"))
    t.rate.push_back(yaml::read_flop_rate(v));
  if (t.seq.empty() || t.seq.size() != t.rate.size())
    yaml::fail(m.at("rate"), "expected one rate per sequence length (" +
                                 std::to_string(t.seq.size()) + "), got " +
                                 std::to_string(t.rate.size()));
  return t;
}

std::vector<WidthFraction> parse_fractions(const Ctx& c) {
  if (c.node.IsScalar()) return {WidthFraction{0, yaml::read_efficiency(c)}};
  std::vector<WidthFraction> out;
  for (const Ctx& item : yaml::seq_items(c, "width fractions")) {
    const MapReader m(item, kWidthKeys, "a width fraction {width, fraction}");
    WidthFraction w{yaml::read_int(m.at("width"), 1, 1 << 30, "a width"),
                    yaml::read_efficiency(m.at("fraction"))};
    if (!out.empty() && w.width <= out.back().width) yaml::fail(item, "widths must increase");
    out.push_back(w);
  }
  if (out.empty()) yaml::fail(c, "expected a fraction or a list of {width, fraction}");
  return out;
}

}  // namespace

void key(YAML::Emitter& out, const char* k) {
  out << YAML::Key << k << YAML::Value;
}

KernelTables parse_kernel_tables(const Ctx& c) {
  const MapReader m(c, kKeys, "kernel tables");
  KernelTables t;
  const MapReader g(m.at("gemm"), kGemmKeys, "the GEMM model {best, k_overhead, overhead}");
  t.gemm_best = yaml::read_flop_rate(g.at("best"));
  if (auto v = g.opt("k_overhead")) t.gemm_k_overhead = yaml::read_int(*v, 0, 1 << 20, "K-steps");
  if (auto v = g.opt("overhead")) t.gemm_overhead = yaml::read_time(*v);
  if (auto v = m.opt("attention")) {
    for (const Ctx& item : yaml::seq_items(*v, "attention rate tables"))
      t.attention.push_back(parse_attention(item));
  }
  if (auto v = m.opt("bandwidth")) {
    const MapReader b(*v, memory_bound_classes(), "bandwidth fractions by memory-bound class");
    for (const std::string& k : b.keys())
      t.bandwidth[static_cast<std::size_t>(*model::parse_kernel_class(k))] =
          parse_fractions(b.at(k));
  }
  return t;
}

bool is_kernel_table_key(std::string_view key) {
  for (const auto* table : {&kKeys, &kGemmKeys, &kAttentionKeys, &kWidthKeys})
    if (std::find(table->begin(), table->end(), key) != table->end()) return true;
  const std::vector<std::string> classes = memory_bound_classes();
  return std::find(classes.begin(), classes.end(), key) != classes.end();
}

void emit_kernel_tables(YAML::Emitter& out, const KernelTables& t) {
  out << YAML::BeginMap;
  key(out, "gemm");
  out << YAML::Flow << YAML::BeginMap;
  key(out, "best");
  out << to_string(t.gemm_best);
  key(out, "k_overhead");
  out << t.gemm_k_overhead;
  key(out, "overhead");
  out << to_string(t.gemm_overhead) << YAML::EndMap;
  if (!t.attention.empty()) {
    key(out, "attention");
    out << YAML::BeginSeq;
    for (const AttentionRateTable& a : t.attention) {
      out << YAML::Flow << YAML::BeginMap;
      key(out, "pass");
      out << (a.backward ? "bwd" : "fwd");
      key(out, "head_dim");
      out << a.head_dim;
      key(out, "causal");
      out << (a.causal ? "true" : "false");
      key(out, "seq");
      out << YAML::Flow << YAML::BeginSeq;
      for (std::int64_t s : a.seq)
        out << s;
      out << YAML::EndSeq;
      key(out, "rate");
      out << YAML::Flow << YAML::BeginSeq;
      for (FlopRate r : a.rate)
        out << to_string(r);
      out << YAML::EndSeq << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  bool any = false;
  for (const auto& b : t.bandwidth)
    any = any || !b.empty();
  if (any) {
    key(out, "bandwidth");
    out << YAML::BeginMap;
    for (model::KernelClass k : model::kAllKernelClasses) {
      const auto& b = t.bandwidth[static_cast<std::size_t>(k)];
      if (b.empty()) continue;
      key(out, std::string(model::to_string(k)).c_str());
      if (b.size() == 1 && b[0].width == 0) {
        out << shortest_number(b[0].fraction);
        continue;
      }
      out << YAML::Flow << YAML::BeginSeq;
      for (const WidthFraction& w : b) {
        out << YAML::Flow << YAML::BeginMap;
        key(out, "width");
        out << w.width;
        key(out, "fraction");
        out << shortest_number(w.fraction) << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace tawpipe::topo::detail
