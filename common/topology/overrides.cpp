// `--set key.path=value`: edits the YAML tree before validation, so every field of the schema
// can be overridden and the result is checked exactly like a file.
#include <charconv>
#include <string>
#include <vector>

#include "common/strings.h"
#include "common/topology/loader.h"
#include "common/topology/overrides.h"
#include "common/topology/spec.h"

namespace tawpipe::topo {

Expected<Override> parse_override(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    return make_error("expected key.path=value after --set, got '" + std::string(text) + "'");
  }
  Override o{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  if (o.key_path.empty()) return make_error("empty key path in --set '" + std::string(text) + "'");
  return o;
}

namespace detail {
namespace {

struct Step {
  std::string key;  // mapping key (may be empty when the step is only an index)
  int index = -1;   // sequence index or -1
};

// "a.b[2].c" -> {a}, {b}, {"",2}... represented as key b with index 2.
Expected<std::vector<Step>> split_path(const std::string& path) {
  std::vector<Step> out;
  for (const std::string& part : split(path, '.')) {
    Step s;
    std::string_view p = part;
    const auto br = p.find('[');
    s.key = std::string(p.substr(0, br));
    if (s.key.empty()) return make_error("bad key path '" + path + "' (empty component)");
    if (br != std::string_view::npos) {
      if (p.back() != ']') return make_error("bad index in key path '" + path + "'");
      const std::string_view num = p.substr(br + 1, p.size() - br - 2);
      int v = -1;
      const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      if (ec != std::errc() || end != num.data() + num.size() || v < 0) {
        return make_error("bad index in key path '" + path + "'");
      }
      s.index = v;
    }
    out.push_back(std::move(s));
  }
  return out;
}

Error located(const std::string& file, const YAML::Node& near, const std::string& path,
              const std::string& message) {
  Where w{1, 1, path};
  const YAML::Mark m = near.Mark();
  if (m.line >= 0 && m.column >= 0) {
    w.line = m.line + 1;
    w.column = m.column + 1;
  }
  return error_at(file, w, message);
}

std::vector<std::string> keys_of(const YAML::Node& map) {
  std::vector<std::string> out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar()) out.push_back(it->first.Scalar());
  }
  return out;
}

Status apply_one(YAML::Node& root, const Override& o, const std::string& file) {
  auto steps = split_path(o.key_path);
  const std::string where_set = " (in --set " + o.key_path + "=" + o.value + ")";
  if (!steps.ok()) return located(file, root, "", steps.error().message + where_set);
  YAML::Node cur = root;
  std::string done;
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const Step& s = (*steps)[i];
    const bool last = i + 1 == steps->size() && s.index < 0;
    if (!cur.IsMap()) {
      return located(file, cur, done,
                     "'" + done + "' is not a mapping, cannot select '" + s.key + "'" + where_set);
    }
    YAML::Node next;
    bool found = false;
    for (auto it = cur.begin(); it != cur.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == s.key) {
        next.reset(it->second);  // rebind the handle; operator= would write through it
        found = true;
        break;
      }
    }
    const std::string here = done.empty() ? s.key : done + "." + s.key;
    if (!found) {
      if (last && is_schema_key(s.key)) {
        cur[s.key] = o.value;  // adds an optional key; validation checks it belongs here
        return Status::success();
      }
      const std::vector<std::string> keys = keys_of(cur);
      return located(file, cur, done,
                     "unknown key '" + s.key + "' in --set path '" + o.key_path + "'" +
                         did_you_mean(s.key, keys) + "; keys here: " + join(keys, ", "));
    }
    done = here;
    if (s.index >= 0) {
      if (!next.IsSequence() || static_cast<std::size_t>(s.index) >= next.size()) {
        return located(file, next, done,
                       "'" + done + "' has no item [" + std::to_string(s.index) + "]" + where_set);
      }
      const YAML::Node seq = next;
      next.reset(seq[static_cast<std::size_t>(s.index)]);
      done += "[" + std::to_string(s.index) + "]";
    }
    if (i + 1 == steps->size()) {
      if (!next.IsScalar() && !next.IsNull()) {
        return located(file, next, done,
                       "--set can only replace a single value, '" + done + "' is a " +
                           (next.IsMap() ? "mapping" : "sequence") + where_set);
      }
      next = o.value;  // assigns in place (yaml-cpp nodes are handles)
      return Status::success();
    }
    cur.reset(next);
  }
  return Status::success();
}

}  // namespace

Status apply_overrides(YAML::Node& root, const std::vector<Override>& overrides,
                       const std::string& file) {
  for (const Override& o : overrides) {
    TAWPIPE_TRY(apply_one(root, o, file));
  }
  return Status::success();
}

}  // namespace detail
}  // namespace tawpipe::topo
