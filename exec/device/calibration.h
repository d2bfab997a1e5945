/// \file
/// The CUDA-free half of `tawexec calibrate --backend cuda`: what every rank measured becomes one
/// profile (common/profile/profile.h). exec/cuda/cuda_calibrate.cpp measures through the
/// DeviceApi and gathers the figures over MPI; the functions here combine them, so that the
/// combination, the spread and the outlier rule are tested on CPU (tests/unit/exec_cuda).
///
/// Combination: each figure of the profile is the median over the ranks (one slow GPU does not
/// move it); a rank's score is the geometric mean, over its figures, of its figure relative to
/// that median (rates and bandwidths as measured, overheads inverted: higher is better); the
/// spread is (max score - min score) / median score, and a rank whose score falls below
/// (1 - outlier_fraction) of the median is an outlier (a slow GPU; for NICs the same rule runs
/// on each rank's inter-node bandwidth, slow_ranks()).
#pragma once

#include <span>
#include <vector>

#include "common/profile/profile.h"

namespace tawpipe::exec::device {

/// The measured figures of `d` in a fixed order: every kernel point's rate or bandwidth (kernel
/// classes in map order, points in order), then the launch and op overheads (seconds), then the
/// memory bandwidth (bytes/s); absent ones are skipped. Every rank measures the same shapes, so the
/// vectors of all ranks line up.
std::vector<double> device_figures(const profile::DeviceProfile& d);

/// Writes `figures` (device_figures' order) back into `d`.
void set_device_figures(profile::DeviceProfile& d, std::span<const double> figures);

/// One device profile from every rank's figures (`figures[rank]`), shaped like `shape` (rank 0's
/// measurement): medians, plus `ranks` = {count, spread, outliers} as the file comment says.
/// Needs at least one rank, all with figures of `shape`'s length.
profile::DeviceProfile combine_ranks(const profile::DeviceProfile& shape,
                                     const std::vector<std::vector<double>>& figures,
                                     double outlier_fraction = 0.1);

/// Ranks whose `value` (higher is better) lies below (1 - fraction) x the median.
std::vector<int> slow_ranks(std::span<const double> values, double fraction = 0.1);

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

}  // namespace tawpipe::exec::device
