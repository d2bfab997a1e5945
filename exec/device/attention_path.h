/// \file
/// Which attention implementation runs a launch, decided per graph key (sdpa_graph.h): cuDNN's
/// fused SDPA when it is built in, an engine takes the graph and the memory it needs fits in
/// what the caller lends, else our tiled online-softmax kernel (exec/cuda/attention.cu). Free of
/// cuDNN types so that the decision, the plan cache and the once-per-reason notices are tested
/// on CPU; exec/cuda/cudnn_sdpa.cpp supplies the plans.
///
/// Memory contract (what the IR sizes, common/model/memory.h attention_workspace_bytes): per
/// layer and micro-batch, besides Q, K, V and O, the attention owns the fp32 log-sum-exp (4*b*h*s
/// bytes; the forward's statistics output, kept for the backward), the backward's fp32
/// D = rowsum(dO * O) (4*b*h*s) and the backward's fp32 dQ accumulator (4*b*s*h*d), which
/// FlashAttention-2 and cuDNN's flash backward keep. exec/device/device_compute.cpp allocates
/// exactly these as two pieces: `lse`, and `delta` (D followed by the accumulator's room). The
/// tiled kernel uses `lse` and D. cuDNN writes its statistics into `lse` and computes D inside the
/// fused graph, so the whole `delta` piece is the workspace it is lent: its dQ accumulator plus the
/// plan's workspace must fit there, or that direction runs the tiled kernel and says why once.
/// So the memory a run allocates for attention never exceeds what the IR sized, on either path.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "common/error.h"
#include "exec/device/sdpa_graph.h"

namespace tawpipe::exec::device {

enum class AttentionPath : std::uint8_t { cudnn, tiled };
const char* name(AttentionPath p);

/// What is known about the cuDNN plan of one key when the path is chosen.
struct PlanFacts {
  bool cudnn_built = false;        ///< compiled with TAWPIPE_HAVE_CUDNN
  Status plan;                     ///< graph built, engine found, plan finalised (else why not)
  std::uint64_t needed_bytes = 0;  ///< sdpa_workspace_bytes: dQ accumulator + plan workspace
  std::uint64_t lent_bytes = 0;    ///< workspace the launch lends (the IR-sized `delta` piece)
};

/// The decision and, for the tiled path, the reason in one line (empty for cuDNN).
struct PathChoice {
  AttentionPath path = AttentionPath::tiled;
  std::string reason;
};

/// cuDNN iff built in, the plan exists and needed_bytes <= lent_bytes.
PathChoice choose_attention_path(const SdpaKey& key, const PlanFacts& facts);

/// One plan per key, built on first use and kept, failures included (a key no engine takes is
/// not rebuilt at every launch). `Plan` may be move-only.
template <class Plan>
class PlanCache {
 public:
  using Builder = std::function<Expected<Plan>(const SdpaKey&)>;
  explicit PlanCache(Builder build) : build_(std::move(build)) {}

  /// The cached result for `key`, building it the first time.
  const Expected<Plan>& get(const SdpaKey& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      ++builds_;
      it = entries_.emplace(key, std::make_unique<Expected<Plan>>(build_(key))).first;
    }
    return *it->second;
  }
  std::size_t builds() const { return builds_; }
  std::size_t size() const { return entries_.size(); }

 private:
  Builder build_;
  std::map<SdpaKey, std::unique_ptr<Expected<Plan>>> entries_;
  std::size_t builds_ = 0;
};

/// Says each distinct message once (to the sink given, stderr in tawexec) and remembers the
/// path taken per direction for the run summary and the calibration output.
class AttentionLog {
 public:
  using Sink = std::function<void(const std::string&)>;
  explicit AttentionLog(Sink sink) : sink_(std::move(sink)) {}

  /// Records that `key` ran on `choice.path`; a tiled choice's reason goes to the sink the first
  /// time that reason (with its key) is seen.
  void record(const SdpaKey& key, const PathChoice& choice);
  /// "forward: cuDNN fused SDPA; backward: tiled O(S) kernel (<first reason>)", or
  /// "none yet" before any launch; without the reasons when `reasons` is false (for the
  /// producer line of reports and profiles).
  std::string summary(bool reasons = true) const;

 private:
  Sink sink_;
  std::set<std::string> said_;
  std::map<SdpaDirection, std::set<AttentionPath>> paths_;
  std::map<SdpaDirection, std::string> first_reason_;
};

}  // namespace tawpipe::exec::device
