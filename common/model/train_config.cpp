#include "common/model/train_config.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <sstream>

#include "common/strings.h"

namespace tawpipe::model {
namespace {

Error field_error(std::string key, std::string message) {
  Error e = make_error(std::move(message));
  e.key_path = std::move(key);
  return e;
}

Status parse_int(std::string_view text, std::int64_t& out) {
  std::int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last || first == last) {
    return make_error("expected an integer, got '" + std::string(text) + "'");
  }
  if (value < 0) return make_error("must not be negative, got " + std::string(text));
  out = value;
  return Status::success();
}

Status parse_real(std::string_view text, double& out) {
  // std::from_chars for double is available in GCC 11+ and clang's libc++ 17+; strtod keeps us
  // portable. Requires the whole text to be consumed.
  const std::string s(text);
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value)) {
    return make_error("expected a finite number, got '" + s + "'");
  }
  out = value;
  return Status::success();
}

struct TrainField {
  std::string_view key;
  std::function<Status(TrainConfig&, std::string_view)> set;
};

template <class T>
Status assign(Expected<T> parsed, T& out) {
  if (!parsed.ok()) return parsed.error();
  out = *parsed;
  return Status::success();
}

const std::vector<TrainField>& train_fields() {
  static const std::vector<TrainField> table = {
      {"seq_len", [](TrainConfig& c, std::string_view t) { return parse_int(t, c.seq_len); }},
      {"micro_batch_size",
       [](TrainConfig& c, std::string_view t) { return parse_int(t, c.micro_batch_size); }},
      {"micro_batches",
       [](TrainConfig& c, std::string_view t) { return parse_int(t, c.micro_batches); }},
      {"global_batch",
       [](TrainConfig& c, std::string_view t) { return parse_int(t, c.global_batch); }},
      {"compute_dtype",
       [](TrainConfig& c, std::string_view t) { return assign(parse_dtype(t), c.compute_dtype); }},
      {"master_dtype",
       [](TrainConfig& c, std::string_view t) { return assign(parse_dtype(t), c.master_dtype); }},
      {"recompute",
       [](TrainConfig& c, std::string_view t) { return assign(parse_recompute(t), c.recompute); }},
      {"loss_kernel",
       [](TrainConfig& c, std::string_view t) {
         return assign(parse_loss_kernel(t), c.loss_kernel);
       }},
      {"seed",
       [](TrainConfig& c, std::string_view t) -> Status {
         std::int64_t v = 0;
         TAWPIPE_TRY(parse_int(t, v));
         c.seed = static_cast<std::uint64_t>(v);
         return Status::success();
       }},
      {"optimizer.lr",
       [](TrainConfig& c, std::string_view t) { return parse_real(t, c.optimizer.lr); }},
      {"optimizer.beta1",
       [](TrainConfig& c, std::string_view t) { return parse_real(t, c.optimizer.beta1); }},
      {"optimizer.beta2",
       [](TrainConfig& c, std::string_view t) { return parse_real(t, c.optimizer.beta2); }},
      {"optimizer.eps",
       [](TrainConfig& c, std::string_view t) { return parse_real(t, c.optimizer.eps); }},
      {"optimizer.weight_decay",
       [](TrainConfig& c, std::string_view t) { return parse_real(t, c.optimizer.weight_decay); }},
  };
  return table;
}

std::string str(std::int64_t v) {
  return std::to_string(v);
}

std::string format_real(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

Status validate(const TrainConfig& cfg) {
  constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 30;
  constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;
  if (cfg.seq_len <= 0 || cfg.seq_len > kMaxSeqLen) {
    return field_error("seq_len", "must be between 1 and " + str(kMaxSeqLen));
  }
  if (cfg.micro_batch_size <= 0 || cfg.micro_batch_size > kMaxCount) {
    return field_error("micro_batch_size", "must be between 1 and " + str(kMaxCount));
  }
  if (cfg.micro_batches < 0 || cfg.micro_batches > kMaxCount) {
    return field_error("micro_batches", "must be between 0 (derive) and " + str(kMaxCount));
  }
  if (cfg.global_batch < 0 || cfg.global_batch > kMaxCount) {
    return field_error("global_batch", "must be between 0 (derive) and " + str(kMaxCount));
  }
  if (cfg.micro_batches == 0 && cfg.global_batch == 0) {
    return field_error("global_batch", "give global_batch or micro_batches (both are 0)");
  }
  if (cfg.master_dtype != DType::kFp32) {
    return field_error("master_dtype", "only fp32 master weights are supported, got " +
                                           std::string(to_string(cfg.master_dtype)));
  }
  const AdamWConfig& o = cfg.optimizer;
  if (!(o.lr > 0.0)) return field_error("optimizer.lr", "must be > 0");
  if (!(o.beta1 >= 0.0 && o.beta1 < 1.0))
    return field_error("optimizer.beta1", "must be in [0, 1)");
  if (!(o.beta2 >= 0.0 && o.beta2 < 1.0))
    return field_error("optimizer.beta2", "must be in [0, 1)");
  if (!(o.eps > 0.0)) return field_error("optimizer.eps", "must be > 0");
  if (!(o.weight_decay >= 0.0)) return field_error("optimizer.weight_decay", "must be >= 0");
  return Status::success();
}

Expected<ResolvedBatch> resolve_batch(const TrainConfig& cfg, std::int64_t workers) {
  assert(workers > 0);
  TAWPIPE_TRY(validate(cfg));
  const std::int64_t per_round = workers * cfg.micro_batch_size;  // sequences per micro-batch round
  ResolvedBatch r{workers, cfg.micro_batch_size, cfg.micro_batches, cfg.global_batch};
  if (cfg.global_batch == 0) {
    r.global_batch = cfg.micro_batches * per_round;
    return r;
  }
  if (cfg.global_batch % per_round != 0) {
    const std::int64_t lower = cfg.global_batch / per_round;
    const std::int64_t upper = lower + 1;
    std::string hint =
        "use global_batch " +
        (lower > 0 ? str(lower * per_round) + " (" + str(lower) + " micro-batches per worker) or "
                   : std::string()) +
        str(upper * per_round) + " (" + str(upper) + " micro-batches per worker)";
    return field_error("global_batch",
                       "global batch " + str(cfg.global_batch) + " sequences is not divisible by " +
                           str(workers) + " workers x micro-batch size " +
                           str(cfg.micro_batch_size) + " = " + str(per_round) + "; " + hint +
                           ", or a worker count that divides " + str(cfg.global_batch));
  }
  const std::int64_t derived = cfg.global_batch / per_round;
  if (cfg.micro_batches != 0 && cfg.micro_batches != derived) {
    return field_error("micro_batches",
                       "micro_batches " + str(cfg.micro_batches) + " disagrees with global batch " +
                           str(cfg.global_batch) + " over " + str(workers) +
                           " workers x micro-batch size " + str(cfg.micro_batch_size) +
                           " (= " + str(derived) + " micro-batches); give only one of the two");
  }
  r.micro_batches = derived;
  return r;
}

Status apply_train_override(TrainConfig& cfg, std::string_view key, std::string_view value) {
  for (const TrainField& f : train_fields()) {
    if (f.key != key) continue;
    TrainConfig updated = cfg;
    if (Status s = f.set(updated, value); !s.ok()) {
      return s.error().at("", 0, 0, std::string(key));
    }
    TAWPIPE_TRY(validate(updated));
    cfg = updated;
    return Status::success();
  }
  Error e = make_error("unknown key '" + std::string(key) + "'" + did_you_mean(key, train_keys()) +
                       "; known: " + join(train_keys(), ", "));
  e.key_path = std::string(key);
  return e;
}

const std::vector<std::string>& train_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const TrainField& f : train_fields())
      k.emplace_back(f.key);
    return k;
  }();
  return keys;
}

std::string summary(const TrainConfig& cfg) {
  std::string out = "seq " + str(cfg.seq_len) + ", micro-batch " + str(cfg.micro_batch_size);
  if (cfg.micro_batches > 0) out += " x " + str(cfg.micro_batches);
  if (cfg.global_batch > 0) out += ", global " + str(cfg.global_batch);
  out += ", " + std::string(to_string(cfg.compute_dtype)) + "/" +
         std::string(to_string(cfg.master_dtype));
  out += ", recompute " + std::string(to_string(cfg.recompute));
  if (cfg.loss_kernel != LossKernel::kFusedFp32)
    out += ", loss " + std::string(to_string(cfg.loss_kernel));
  out += ", adamw lr " + format_real(cfg.optimizer.lr);
  return out;
}

}  // namespace tawpipe::model
