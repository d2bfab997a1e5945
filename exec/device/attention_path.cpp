#include "exec/device/attention_path.h"

namespace tawpipe::exec::device {
namespace {

std::string bytes_text(std::uint64_t b) {
  if (b >= (std::uint64_t{1} << 20))
    return std::to_string((b * 10 >> 20) / 10) + "." + std::to_string((b * 10 >> 20) % 10) + " MiB";
  if (b >= 1024) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

}  // namespace

const char* name(AttentionPath p) {
  return p == AttentionPath::cudnn ? "cuDNN fused SDPA" : "tiled O(S) kernel";
}

PathChoice choose_attention_path(const SdpaKey& key, const PlanFacts& facts) {
  PathChoice c;
  const std::string what = to_string(key) + ": ";
  if (!facts.cudnn_built) {
    c.reason = what + "built without cuDNN";
  } else if (!facts.plan.ok()) {
    c.reason = what + "no cuDNN plan (" + facts.plan.error().message + ")";
  } else if (facts.needed_bytes > facts.lent_bytes) {
    c.reason = what + "cuDNN needs " + bytes_text(facts.needed_bytes) +
               " of workspace, the IR sized " + bytes_text(facts.lent_bytes) +
               " (fp32 delta piece of the attention workspace)";
  } else {
    c.path = AttentionPath::cudnn;
  }
  return c;
}

void AttentionLog::record(const SdpaKey& key, const PathChoice& choice) {
  paths_[key.direction].insert(choice.path);
  if (choice.path == AttentionPath::cudnn) return;
  first_reason_.emplace(key.direction, choice.reason);
  if (said_.insert(choice.reason).second && sink_)
    sink_("attention falls back to the tiled O(S) kernel: " + choice.reason);
}

std::string AttentionLog::summary(bool reasons) const {
  if (paths_.empty()) return "none yet";
  std::string out;
  for (const auto& [dir, paths] : paths_) {
    if (!out.empty()) out += "; ";
    out += dir == SdpaDirection::forward ? "forward: " : "backward: ";
    bool first = true;
    for (AttentionPath p : paths) {
      out += first ? "" : " and ";
      out += name(p);
      first = false;
    }
    auto reason = first_reason_.find(dir);
    if (reasons && reason != first_reason_.end()) out += " (" + reason->second + ")";
  }
  return out;
}

}  // namespace tawpipe::exec::device
