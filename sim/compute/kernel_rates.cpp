// Rates by shape (kernel_rates.h states the model and its sources).
#include "sim/compute/kernel_rates.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace tawpipe::sim {
namespace {

using model::KernelClass;

std::size_t idx(KernelClass c) {
  return static_cast<std::size_t>(c);
}

// Log-linear interpolation of y over x in sorted (x, y) points; clamped to the end points.
double interpolate_log(const std::vector<std::pair<double, double>>& pts, double x) {
  if (pts.empty()) return 0.0;
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (x <= pts[i].first) {
      const auto& [x0, y0] = pts[i - 1];
      const auto& [x1, y1] = pts[i];
      const double t = std::log(x / x0) / std::log(x1 / x0);
      return y0 + t * (y1 - y0);
    }
  }
  return pts.back().second;
}

// Rate of one attention table at `seq` (clamped to its measured range).
double table_rate(const topo::AttentionRateTable& t, std::int64_t seq) {
  std::vector<std::pair<double, double>> pts;
  for (std::size_t i = 0; i < t.seq.size(); ++i)
    pts.emplace_back(static_cast<double>(t.seq[i]), t.rate[i].flops_per_second());
  return interpolate_log(pts, static_cast<double>(seq));
}

// The work a profile point and a kernel are compared by: FLOPs for the FLOP classes, bytes for
// the memory-bound ones.
double point_work(const profile::KernelPoint& p, KernelClass cls) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  if (cls == KernelClass::gemm)
    return 2.0 * d(p.m) * d(p.n) * d(p.k) * d(std::max<std::int64_t>(p.batch, 1));
  if (model::is_flop_bound(cls)) {
    const double full = 4.0 * d(p.batch) * d(p.heads) * d(p.seq) * d(p.seq) * d(p.head_dim);
    const double fwd = p.causal.value_or(false) ? full / 2.0 : full;
    return cls == KernelClass::attention_bwd ? 2.5 * fwd : fwd;
  }
  return p.bytes ? p.bytes->as_double() : 0.0;
}

double point_value(const profile::KernelPoint& p) {
  if (p.rate) return p.rate->flops_per_second();
  if (p.bandwidth) return p.bandwidth->bytes_per_second();
  return 0.0;
}

// The profile's rate for a kernel of class `cls` and work `work`, or nullopt when the profile
// has no point for the class. Outside the measured range the built-in `model_rate` is scaled to
// meet the nearest measured point (so the model's shape dependence continues the measurement).
std::optional<double> measured_rate(const std::vector<profile::KernelPoint>& points,
                                    KernelClass cls, double work, double model_rate,
                                    const std::function<double(double)>& model_rate_at) {
  if (points.empty()) return std::nullopt;
  std::vector<std::pair<double, double>> shaped;
  std::optional<double> flat;
  for (const profile::KernelPoint& p : points) {
    if (p.flat()) {
      flat = point_value(p);
    } else if (point_work(p, cls) > 0.0) {
      shaped.emplace_back(point_work(p, cls), point_value(p));
    }
  }
  if (shaped.empty()) return flat;
  std::sort(shaped.begin(), shaped.end());
  if (work >= shaped.front().first && work <= shaped.back().first)
    return interpolate_log(shaped, work);
  const auto& edge = work < shaped.front().first ? shaped.front() : shaped.back();
  const double model_at_edge = model_rate_at(edge.first);
  if (!(model_at_edge > 0.0)) return edge.second;
  return model_rate * edge.second / model_at_edge;
}

}  // namespace

const std::vector<GemmTile>& gemm_tiles() {
  static const std::vector<GemmTile> kTiles = {
      {256, 128, 1.0}, {128, 256, 1.0}, {128, 128, 0.95}, {128, 64, 0.6}, {64, 128, 0.6}};
  return kTiles;
}

Expected<KernelRates> kernel_rates(const topo::DeviceKind& kind, std::string_view dtype,
                                   const profile::Profile* profile) {
  KernelRates r;
  if (dtype == "bf16") {
    r.peak_flops_per_second = kind.peak_bf16.flops_per_second();
  } else if (dtype == "fp16") {
    r.peak_flops_per_second = kind.peak_fp16.flops_per_second();
  } else if (dtype == "fp32") {
    r.peak_flops_per_second = kind.peak_fp32.flops_per_second();
  } else {
    return make_error("unknown compute dtype '" + std::string(dtype) +
                      "' in the program header (expected bf16, fp16 or fp32)");
  }
  const topo::OpClassEfficiency& eff = kind.efficiency;
  r.hbm_bytes_per_second = kind.memory_bandwidth.bytes_per_second();
  r.stream_bytes_per_second = r.hbm_bytes_per_second * eff.memory;
  r.launch_seconds = kind.launch_overhead.seconds();
  r.gemm_best_flops_per_second = r.peak_flops_per_second * eff.gemm;
  r.attention_fwd_fallback = r.peak_flops_per_second * eff.attention_fwd;
  r.attention_bwd_fallback = r.peak_flops_per_second * eff.attention_bwd;
  r.elementwise_fallback_fraction = eff.elementwise;
  r.copy_fallback_fraction = eff.memory;
  if (kind.kernels) {
    const topo::KernelTables& t = *kind.kernels;
    r.sm_count = kind.sm_count;
    // The tables are measured at 16-bit; an fp32 run keeps the efficiency relative to its peak.
    const double scale = r.peak_flops_per_second / kind.peak_bf16.flops_per_second();
    r.gemm_best_flops_per_second = t.gemm_best.flops_per_second() * scale;
    r.gemm_k_overhead = static_cast<double>(t.gemm_k_overhead);
    r.gemm_overhead_seconds = t.gemm_overhead.seconds();
    r.attention = t.attention;
    for (topo::AttentionRateTable& a : r.attention)
      for (FlopRate& x : a.rate)
        x = FlopRate::flops_per_second(x.flops_per_second() * scale);
    for (KernelClass c : model::kAllKernelClasses)
      r.bandwidth[idx(c)] = t.bandwidth[idx(c)];
  }
  if (profile != nullptr) {
    const auto it = profile->devices.find(kind.name);
    if (it != profile->devices.end()) {
      const profile::DeviceProfile& p = it->second;
      for (const auto& [cls, points] : p.kernels)
        r.measured[idx(cls)] = points;
      if (p.memory_bandwidth) r.stream_bytes_per_second = p.memory_bandwidth->bytes_per_second();
      if (p.launch_overhead) r.launch_seconds = p.launch_overhead->seconds();
    }
  }
  for (double v :
       {r.peak_flops_per_second, r.hbm_bytes_per_second, r.stream_bytes_per_second,
        r.gemm_best_flops_per_second, r.attention_fwd_fallback, r.attention_bwd_fallback}) {
    if (!(v > 0.0) || !std::isfinite(v))
      return make_error("device kind '" + kind.name + "' has a zero or invalid rate at dtype " +
                        std::string(dtype));
  }
  return r;
}

double gemm_seconds(const KernelRates& r, std::int64_t m, std::int64_t n, std::int64_t k,
                    std::int64_t batch, double bytes) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double b = d(std::max<std::int64_t>(batch, 1));
  const double flops = 2.0 * d(m) * d(n) * d(k) * b;
  double compute = flops / r.gemm_best_flops_per_second;
  if (r.sm_count > 0) {
    const double per_sm = r.gemm_best_flops_per_second / r.sm_count;
    compute = std::numeric_limits<double>::infinity();
    for (const GemmTile& t : gemm_tiles()) {
      const double tiles = std::ceil(d(m) / d(t.m)) * std::ceil(d(n) / d(t.n)) * b;
      const double waves = std::ceil(tiles / r.sm_count);
      const double tile_seconds =
          2.0 * d(t.m) * d(t.n) * (d(k) + r.gemm_k_overhead) / per_sm / t.efficiency;
      compute = std::min(compute, waves * tile_seconds);
    }
    compute += r.gemm_overhead_seconds;
  }
  return std::max(compute, bytes / r.stream_bytes_per_second);
}

double attention_flops_per_second(const KernelRates& r, bool backward, std::int64_t head_dim,
                                  std::int64_t seq, bool causal) {
  // Tables of this pass, preferring the kernel's mask.
  std::vector<const topo::AttentionRateTable*> tables;
  for (bool want_mask : {true, false}) {
    for (const topo::AttentionRateTable& t : r.attention) {
      if (t.backward == backward && (t.causal == causal) == want_mask) tables.push_back(&t);
    }
    if (!tables.empty()) break;
  }
  if (tables.empty()) return backward ? r.attention_bwd_fallback : r.attention_fwd_fallback;
  std::sort(tables.begin(), tables.end(),
            [](const auto* a, const auto* b) { return a->head_dim < b->head_dim; });
  if (tables.size() == 1) return table_rate(*tables.front(), seq);
  // Bracketing (or the two nearest) head dimensions; log-linear in the head dimension, so the
  // trend continues beyond the measured ones.
  std::size_t hi = 1;
  while (hi + 1 < tables.size() && tables[hi]->head_dim < head_dim)
    ++hi;
  const topo::AttentionRateTable& a = *tables[hi - 1];
  const topo::AttentionRateTable& b = *tables[hi];
  const double ra = table_rate(a, seq), rb = table_rate(b, seq);
  const double t = std::log(static_cast<double>(head_dim) / static_cast<double>(a.head_dim)) /
                   std::log(static_cast<double>(b.head_dim) / static_cast<double>(a.head_dim));
  // Interpolate the logarithm of the rate so an extrapolation never goes negative.
  const double rate = std::exp(std::log(ra) + t * (std::log(rb) - std::log(ra)));
  // Never above the best measured rate of the pass.
  return std::min(rate, std::max(ra, rb));
}

double memory_bytes_per_second(const KernelRates& r, KernelClass cls, std::int64_t width) {
  const std::vector<topo::WidthFraction>& table = r.bandwidth[idx(cls)];
  if (table.empty()) {
    const double f =
        cls == KernelClass::copy ? r.copy_fallback_fraction : r.elementwise_fallback_fraction;
    return f * r.hbm_bytes_per_second;
  }
  std::vector<std::pair<double, double>> pts;
  for (const topo::WidthFraction& w : table)
    pts.emplace_back(static_cast<double>(std::max<std::int64_t>(w.width, 1)), w.fraction);
  return interpolate_log(pts, static_cast<double>(std::max<std::int64_t>(width, 1))) *
         r.hbm_bytes_per_second;
}

double kernel_seconds(const model::Kernel& k, const KernelRates& r) {
  if (k.fused) return 0.0;
  const std::vector<profile::KernelPoint>& points = r.measured[idx(k.cls)];
  double seconds = 0.0;
  if (k.cls == KernelClass::gemm) {
    const auto& s = k.shape;
    const double model_s = gemm_seconds(r, s[0], s[1], s[2], s[3], k.bytes);
    const double model_rate = k.flops / model_s;
    // Model rate of a cube with the same FLOPs (how the model scales between sizes).
    const auto at = [&](double work) {
      const auto side = static_cast<std::int64_t>(std::cbrt(work / 2.0));
      const double f = 2.0 * std::pow(static_cast<double>(side), 3.0);
      return f / gemm_seconds(r, side, side, side, 1, 0.0);
    };
    const auto measured = measured_rate(points, k.cls, k.flops, model_rate, at);
    seconds =
        measured ? std::max(k.flops / *measured, k.bytes / r.stream_bytes_per_second) : model_s;
  } else if (model::is_flop_bound(k.cls)) {
    const bool bwd = k.cls == KernelClass::attention_bwd;
    const double model_rate = attention_flops_per_second(r, bwd, k.shape[3], k.shape[2], k.causal);
    const auto at = [&](double) { return model_rate; };
    const double rate = measured_rate(points, k.cls, k.flops, model_rate, at).value_or(model_rate);
    seconds = std::max(k.flops / rate, k.bytes / r.stream_bytes_per_second);
  } else {
    const double model_bw = memory_bytes_per_second(r, k.cls, k.shape[1]);
    const auto at = [&](double) { return model_bw; };
    const double bw = measured_rate(points, k.cls, k.bytes, model_bw, at).value_or(model_bw);
    seconds = k.bytes / bw;
  }
  return seconds + r.launch_seconds;
}

}  // namespace tawpipe::sim
