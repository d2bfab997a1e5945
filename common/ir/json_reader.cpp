#include "common/ir/json_reader.h"

#include <algorithm>

#include "common/strings.h"

namespace tawpipe::ir::detail {

JsonReader::json JsonReader::parse() const {
  try {
    return json::parse(text_.begin(), text_.end());
  } catch (const json::parse_error& e) {
    const std::size_t offset = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text_.size());
    std::string what = e.what();
    const auto pos = what.find("column ");
    const auto colon = what.find(": ", pos == std::string::npos ? 0 : pos);
    if (colon != std::string::npos) what = what.substr(colon + 2);
    Error err;
    err.message = "invalid JSON: " + what;
    err.file = file_;
    line_column(text_, offset, &err.line, &err.column);
    err.key_path = path_at(text_, offset);
    throw ReadFailure{std::move(err)};
  } catch (const json::exception& e) {
    // Number overflow ("number overflow parsing '1e999'") carries no position: find the literal.
    std::string what = e.what();
    std::size_t offset = text_.size();
    const auto q = what.find("parsing '");
    if (q != std::string::npos) {
      const std::string literal = what.substr(q + 9, what.rfind('\'') - (q + 9));
      const auto at = literal.empty() ? std::string_view::npos : text_.find(literal);
      if (at != std::string_view::npos) offset = at;
    }
    const auto b = what.find("] ");
    Error err;
    err.message = "invalid JSON: " + (b == std::string::npos ? what : what.substr(b + 2));
    err.file = file_;
    line_column(text_, offset, &err.line, &err.column);
    err.key_path = path_at(text_, offset);
    throw ReadFailure{std::move(err)};
  }
}

void JsonReader::fail(const std::string& message) const {
  Error e;
  e.message = message;
  e.file = file_;
  line_column(text_, locate(text_, path_), &e.line, &e.column);
  e.key_path = path_string(path_);
  throw ReadFailure{std::move(e)};
}

std::string JsonReader::type_of(const json& v) {
  if (v.is_number_float()) return "a floating-point number";
  if (v.is_number()) return "an integer";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  return "an object";
}

const JsonReader::json& JsonReader::object(const json& v) {
  if (!v.is_object()) fail("expected an object, got " + type_of(v));
  return v;
}

const JsonReader::json& JsonReader::array(const json& v) {
  if (!v.is_array()) fail("expected an array, got " + type_of(v));
  return v;
}

const JsonReader::json& JsonReader::member(const json& obj, const char* k) {
  object(obj);
  const auto it = obj.find(k);
  if (it == obj.end()) fail(std::string("missing key '") + k + "'");
  return *it;
}

void JsonReader::known_keys(const json& obj, std::initializer_list<const char*> keys) {
  std::vector<std::string> names(keys.begin(), keys.end());
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(names.begin(), names.end(), it.key()) != names.end()) continue;
    auto s = key(it.key());
    fail("unknown key '" + it.key() + "'" + did_you_mean(it.key(), names));
  }
}

void JsonReader::exact_keys(const json& obj, std::initializer_list<const char*> keys) {
  object(obj);
  known_keys(obj, keys);
  for (const char* k : keys)
    member(obj, k);
}

std::int64_t JsonReader::integer(const json& v, std::int64_t lo, std::int64_t hi,
                                 const char* what) {
  if (!v.is_number_integer()) fail("expected an integer, got " + type_of(v));
  const auto range = [&] {
    return " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  };
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
    fail(std::string(what) + " " + std::to_string(v.get<std::uint64_t>()) + range());
  }
  const auto x = v.get<std::int64_t>();
  if (x < lo || x > hi) fail(std::string(what) + " " + std::to_string(x) + range());
  return x;
}

std::uint64_t JsonReader::u64(const json& v) {
  if (!v.is_number_integer()) fail("expected a non-negative integer, got " + type_of(v));
  if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) {
    fail("expected a non-negative integer, got " + std::to_string(v.get<std::int64_t>()));
  }
  return v.get<std::uint64_t>();
}

double JsonReader::real(const json& v) {
  if (!v.is_number()) fail("expected a number, got " + type_of(v));
  return v.get<double>();
}

std::string JsonReader::string(const json& v) {
  if (!v.is_string()) fail("expected a string, got " + type_of(v));
  return v.get<std::string>();
}

bool JsonReader::boolean(const json& v) {
  if (!v.is_boolean()) fail("expected true or false, got " + type_of(v));
  return v.get<bool>();
}

Header JsonReader::header(const json& h) {
  object(h);
  known_keys(h, {"schedule", "options", "model", "layers", "model_params", "seq_len",
                 "micro_batch_size", "micro_batches", "global_batch", "dtype", "recompute",
                 "topology", "topology_hash", "placement"});
  Header out;
  const auto str_field = [&](const char* k, std::string* into) {
    const json& v = member(h, k);
    auto s = key(k);
    *into = string(v);
  };
  const auto int_field = [&](const char* k, auto* into, std::int64_t lo, std::int64_t hi) {
    const json& v = member(h, k);
    auto s = key(k);
    *into = static_cast<std::remove_pointer_t<decltype(into)>>(integer(v, lo, hi));
  };
  str_field("schedule", &out.schedule);
  {
    const json& o = member(h, "options");
    auto s = key("options");
    object(o);
    for (auto it = o.begin(); it != o.end(); ++it) {
      auto s2 = Step(*this, PathStep{it.key(), 0, false, nullptr});
      out.options[it.key()] = string(it.value());
    }
  }
  str_field("model", &out.model);
  int_field("layers", &out.layers, 0, kI32Max);
  {
    const json& v = member(h, "model_params");
    auto s = key("model_params");
    out.model_params = u64(v);
  }
  int_field("seq_len", &out.seq_len, kI32Min, kI32Max);
  int_field("micro_batch_size", &out.micro_batch_size, kI32Min, kI32Max);
  int_field("micro_batches", &out.micro_batches, kI32Min, kI32Max);
  int_field("global_batch", &out.global_batch, std::numeric_limits<std::int64_t>::min(),
            std::numeric_limits<std::int64_t>::max());
  str_field("dtype", &out.dtype);
  str_field("recompute", &out.recompute);
  str_field("topology", &out.topology);
  str_field("topology_hash", &out.topology_hash);
  {
    const json& v = member(h, "placement");
    auto s = key("placement");
    out.placement = id_list(v, kI32Min, kI32Max, "placement");
  }
  return out;
}

std::vector<std::int32_t> JsonReader::id_list(const json& v, std::int64_t lo, std::int64_t hi,
                                              const char* what) {
  array(v);
  std::vector<std::int32_t> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto s = index(i);
    out.push_back(i32(v[i], lo, hi - 1, what));
  }
  return out;
}

}  // namespace tawpipe::ir::detail
