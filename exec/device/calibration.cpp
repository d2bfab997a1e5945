#include "exec/device/calibration.h"

#include <algorithm>
#include <cmath>

namespace tawpipe::exec::device {
namespace {

/// Calls fn(value&, higher_is_better) for every figure of `d` in device_figures' order.
template <class D, class Fn>
void for_each_figure(D& d, Fn&& fn) {
  for (auto& [cls, points] : d.kernels) {
    for (auto& p : points) {
      if (p.rate) fn(*p.rate, true);
      if (p.bandwidth) fn(*p.bandwidth, true);
    }
  }
  if (d.launch_overhead) fn(*d.launch_overhead, false);
  if (d.op_overhead) fn(*d.op_overhead, false);
  if (d.memory_bandwidth) fn(*d.memory_bandwidth, true);
}

double as_double(const FlopRate& r) {
  return r.flops_per_second();
}
double as_double(const Bandwidth& b) {
  return b.bytes_per_second();
}
double as_double(const SimTime& t) {
  return t.seconds();
}
void assign(FlopRate& r, double v) {
  r = FlopRate::flops_per_second(v);
}
void assign(Bandwidth& b, double v) {
  b = Bandwidth::bytes_per_second(v);
}
void assign(SimTime& t, double v) {
  t = SimTime::from_seconds(v);
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<double> device_figures(const profile::DeviceProfile& d) {
  std::vector<double> out;
  for_each_figure(d, [&](const auto& v, bool) { out.push_back(as_double(v)); });
  return out;
}

void set_device_figures(profile::DeviceProfile& d, std::span<const double> figures) {
  std::size_t i = 0;
  for_each_figure(d, [&](auto& v, bool) {
    if (i < figures.size()) assign(v, figures[i++]);
  });
}

std::vector<int> slow_ranks(std::span<const double> values, double fraction) {
  const double mid = median(std::vector<double>(values.begin(), values.end()));
  std::vector<int> out;
  for (std::size_t r = 0; r < values.size(); ++r)
    if (values[r] < (1.0 - fraction) * mid) out.push_back(static_cast<int>(r));
  return out;
}

profile::DeviceProfile combine_ranks(const profile::DeviceProfile& shape,
                                     const std::vector<std::vector<double>>& figures,
                                     double outlier_fraction) {
  profile::DeviceProfile out = shape;
  const std::size_t ranks = figures.size();
  if (ranks == 0) return out;
  const std::size_t n = figures[0].size();
  std::vector<bool> higher;
  for_each_figure(shape, [&](const auto&, bool h) { higher.push_back(h); });
  std::vector<double> mid(n), column(ranks);
  for (std::size_t f = 0; f < n; ++f) {
    for (std::size_t r = 0; r < ranks; ++r)
      column[r] = figures[r][f];
    mid[f] = median(column);
  }
  set_device_figures(out, mid);
  // Score: geometric mean of (figure / median), inverted where lower is better.
  std::vector<double> score(ranks, 1.0);
  for (std::size_t r = 0; r < ranks; ++r) {
    double log_sum = 0.0;
    std::size_t used = 0;
    for (std::size_t f = 0; f < n; ++f) {
      if (!(mid[f] > 0.0) || !(figures[r][f] > 0.0)) continue;
      const double rel = figures[r][f] / mid[f];
      log_sum += std::log(f < higher.size() && !higher[f] ? 1.0 / rel : rel);
      ++used;
    }
    score[r] = used ? std::exp(log_sum / static_cast<double>(used)) : 1.0;
  }
  const auto [lo, hi] = std::minmax_element(score.begin(), score.end());
  const double mid_score = median(score);
  profile::RankSpread spread;
  spread.count = static_cast<int>(ranks);
  spread.spread = mid_score > 0.0 ? (*hi - *lo) / mid_score : 0.0;
  spread.outliers = slow_ranks(score, outlier_fraction);
  out.ranks = spread;
  return out;
}

}  // namespace tawpipe::exec::device
