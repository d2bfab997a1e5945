// Model YAML files: one field table drives the loader, the CLI overrides and the emitter, so
// the three can never disagree about a key.
#include "common/model/loader.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/strings.h"

namespace tawpipe::model {
namespace {

Status parse_int(std::string_view text, std::int64_t& out) {
  std::int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && text.front() == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) {
    return make_error("integer out of range: '" + std::string(text) + "'");
  }
  if (ec != std::errc() || ptr != last || first == last) {
    return make_error("expected an integer, got '" + std::string(text) + "'");
  }
  if (value < 0) return make_error("must not be negative, got " + std::string(text));
  out = value;
  return Status::success();
}

Status parse_bool(std::string_view text, bool& out) {
  if (text == "true" || text == "True" || text == "TRUE") {
    out = true;
  } else if (text == "false" || text == "False" || text == "FALSE") {
    out = false;
  } else {
    return make_error("expected true or false, got '" + std::string(text) + "'");
  }
  return Status::success();
}

template <class Enum>
Status parse_enum(std::string_view text, Enum& out, Expected<Enum> (*parse)(std::string_view)) {
  auto parsed = parse(text);
  if (!parsed.ok()) return parsed.error();
  out = *parsed;
  return Status::success();
}

enum class ValueType { kString, kInteger, kBoolean, kName };

/// One YAML key: how to set it from text and how to write it back (nullopt = at its default,
/// left out of the canonical text).
struct Field {
  std::string_view key;
  ValueType type;
  bool required;
  std::function<Status(ModelConfig&, std::string_view)> set;
  std::function<std::optional<std::string>(const ModelConfig&)> get;
};

Field int_field(std::string_view key, bool required, std::int64_t ModelConfig::*member) {
  return Field{key, ValueType::kInteger, required,
               [member](ModelConfig& c, std::string_view t) { return parse_int(t, c.*member); },
               [member, required](const ModelConfig& c) -> std::optional<std::string> {
                 if (!required && c.*member == 0) return std::nullopt;
                 return std::to_string(c.*member);
               }};
}

Field bool_field(std::string_view key, bool ModelConfig::*member) {
  return Field{key, ValueType::kBoolean, false,
               [member](ModelConfig& c, std::string_view t) { return parse_bool(t, c.*member); },
               [member](const ModelConfig& c) -> std::optional<std::string> {
                 return std::string(c.*member ? "true" : "false");
               }};
}

Field string_field(std::string_view key, bool required, std::string ModelConfig::*member) {
  return Field{key, ValueType::kString, required,
               [member](ModelConfig& c, std::string_view t) {
                 c.*member = std::string(t);
                 return Status::success();
               },
               [member, required](const ModelConfig& c) -> std::optional<std::string> {
                 if (!required && (c.*member).empty()) return std::nullopt;
                 return c.*member;
               }};
}

template <class Enum>
Field enum_field(std::string_view key, Enum ModelConfig::*member,
                 Expected<Enum> (*parse)(std::string_view)) {
  return Field{key, ValueType::kName, false,
               [member, parse](ModelConfig& c, std::string_view t) {
                 return parse_enum(t, c.*member, parse);
               },
               [member](const ModelConfig& c) -> std::optional<std::string> {
                 return std::string(to_string(c.*member));
               }};
}

const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    std::vector<Field> f;
    f.push_back(string_field("name", true, &ModelConfig::name));
    f.push_back(string_field("description", false, &ModelConfig::description));
    f.push_back(string_field("reference", false, &ModelConfig::reference));
    f.push_back(int_field("layers", true, &ModelConfig::layers));
    f.push_back(int_field("hidden", true, &ModelConfig::hidden));
    f.push_back(int_field("ffn", false, &ModelConfig::ffn));
    f.push_back(int_field("heads", true, &ModelConfig::heads));
    f.push_back(int_field("kv_heads", false, &ModelConfig::kv_heads));
    f.push_back(int_field("head_dim", false, &ModelConfig::head_dim));
    f.push_back(int_field("vocab", true, &ModelConfig::vocab));
    f.push_back(bool_field("tied_embeddings", &ModelConfig::tied_embeddings));
    f.push_back(enum_field("mlp", &ModelConfig::mlp, &parse_mlp_kind));
    f.push_back(enum_field("norm", &ModelConfig::norm, &parse_norm_kind));
    f.push_back(enum_field("position", &ModelConfig::position, &parse_position_kind));
    f.push_back(bool_field("biases", &ModelConfig::biases));
    f.push_back(int_field("max_seq_len", false, &ModelConfig::max_seq_len));
    return f;
  }();
  return table;
}

const Field* find_field(std::string_view key) {
  for (const Field& f : fields()) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

Error unknown_key(std::string_view key) {
  Error e = make_error("unknown key '" + std::string(key) + "'" + did_you_mean(key, model_keys()) +
                       "; known: " + join(model_keys(), ", "));
  e.key_path = std::string(key);
  return e;
}

std::string_view type_name(ValueType t) {
  switch (t) {
    case ValueType::kString:
      return "a string";
    case ValueType::kInteger:
      return "an integer";
    case ValueType::kBoolean:
      return "true or false";
    case ValueType::kName:
      return "a name";
  }
  return "a scalar";
}

std::string_view node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "a scalar";
  }
}

// 1-based line and column of a node; yaml-cpp marks are 0-based, -1 when unknown.
std::pair<int, int> position(const YAML::Mark& m) {
  if (m.is_null()) return {0, 0};
  return {m.line + 1, m.column + 1};
}

Error located(const Error& e, const std::string& file, const YAML::Mark& mark,
              std::string_view key) {
  const auto [line, column] = position(mark);
  return e.at(file, line, column, std::string(key));
}

Expected<ModelConfig> parse_document(const YAML::Node& root, const std::string& file) {
  if (!root.IsDefined() || root.IsNull()) {
    return make_error("empty model file: expected a map of model fields").at(file, 1, 1, "");
  }
  if (!root.IsMap()) {
    return located(
        make_error("expected a map of model fields, got " + std::string(node_kind(root))), file,
        root.Mark(), "");
  }
  ModelConfig cfg;
  std::map<std::string, YAML::Mark> seen;  // key -> position of its value
  for (const auto& item : root) {
    const YAML::Node& key_node = item.first;
    const YAML::Node& value = item.second;
    if (!key_node.IsScalar()) {
      return located(make_error("keys must be plain names"), file, key_node.Mark(), "");
    }
    const std::string key = key_node.Scalar();
    const Field* field = find_field(key);
    if (field == nullptr) return located(unknown_key(key), file, key_node.Mark(), key);
    if (seen.count(key) != 0) {
      const auto [line, column] = position(seen[key]);
      return located(make_error("duplicate key (first given on line " + std::to_string(line) +
                                ", column " + std::to_string(column) + ")"),
                     file, key_node.Mark(), key);
    }
    seen[key] = value.Mark();
    if (!value.IsScalar()) {
      return located(make_error("expected " + std::string(type_name(field->type)) + ", got " +
                                std::string(node_kind(value))),
                     file, value.IsNull() ? key_node.Mark() : value.Mark(), key);
    }
    // A quoted "32" is a string, not an integer or boolean.
    if (value.Tag() == "!" && field->type != ValueType::kString &&
        field->type != ValueType::kName) {
      return located(make_error("expected " + std::string(type_name(field->type)) +
                                ", got the quoted string \"" + value.Scalar() + "\""),
                     file, value.Mark(), key);
    }
    if (Status s = field->set(cfg, value.Scalar()); !s.ok()) {
      return located(s.error(), file, value.Mark(), key);
    }
  }
  for (const Field& f : fields()) {
    if (f.required && seen.count(std::string(f.key)) == 0) {
      return located(make_error("missing required key '" + std::string(f.key) + "'"), file,
                     root.Mark(), f.key);
    }
  }
  if (Status s = validate(cfg); !s.ok()) {
    // Point at the offending key's value when the file gave it, else at the key it depends on
    // (a derived or missing field), else at the map.
    static const std::map<std::string, std::string> kDependsOn = {
        {"max_seq_len", "position"}, {"ffn", "hidden"},   {"kv_heads", "heads"},
        {"head_dim", "heads"},       {"heads", "hidden"},
    };
    auto it = seen.find(s.error().key_path);
    if (it == seen.end()) {
      const auto dep = kDependsOn.find(s.error().key_path);
      if (dep != kDependsOn.end()) it = seen.find(dep->second);
    }
    return located(s.error(), file, it != seen.end() ? it->second : root.Mark(), "");
  }
  return cfg;
}

}  // namespace

const std::vector<std::string>& model_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const Field& f : fields())
      k.emplace_back(f.key);
    return k;
  }();
  return keys;
}

Expected<ModelConfig> load_model_string(std::string_view text, std::string_view display_name) {
  const std::string file(display_name);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    const auto [line, column] = position(e.mark);
    return make_error("not valid YAML: " + e.msg).at(file, line, column, "");
  }
  try {
    return parse_document(root, file);
  } catch (const YAML::Exception& e) {  // defensive: yaml-cpp throws on some malformed nodes
    const auto [line, column] = position(e.mark);
    return make_error("malformed YAML: " + e.msg).at(file, line, column, "");
  }
}

Expected<ModelConfig> load_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open model file").at(path, 0, 0, "");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error("cannot read model file").at(path, 0, 0, "");
  return load_model_string(text.str(), path);
}

Status apply_override(ModelConfig& cfg, std::string_view key, std::string_view value) {
  const Field* field = find_field(key);
  if (field == nullptr) return unknown_key(key);
  ModelConfig updated = cfg;
  if (Status s = field->set(updated, value); !s.ok()) {
    return s.error().at("", 0, 0, std::string(key));
  }
  if (Status s = validate(updated); !s.ok()) return s;
  cfg = std::move(updated);
  return Status::success();
}

std::string to_yaml(const ModelConfig& cfg) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const Field& f : fields()) {
    const std::optional<std::string> text = f.get(cfg);
    if (!text) continue;
    out << YAML::Key << std::string(f.key) << YAML::Value;
    if (f.type == ValueType::kString) {
      out << YAML::DoubleQuoted << *text;
    } else {
      out << *text;
    }
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace tawpipe::model
