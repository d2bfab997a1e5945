#include "common/ir/json_scan.h"

#include <algorithm>

namespace tawpipe::ir::detail {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_space(std::string_view t, std::size_t p) {
  while (p < t.size() && is_space(t[p]))
    ++p;
  return p;
}

// At an opening quote: returns the position after the closing quote; decodes into `out` (simple
// escapes only, enough to compare keys).
std::size_t read_string(std::string_view t, std::size_t p, std::string* out) {
  ++p;
  while (p < t.size() && t[p] != '"') {
    if (t[p] == '\\' && p + 1 < t.size()) {
      const char e = t[p + 1];
      if (out) out->push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      p += 2;
      continue;
    }
    if (out) out->push_back(t[p]);
    ++p;
  }
  return std::min(p + 1, t.size());
}

// At the start of a value: returns the position after it.
std::size_t skip_value(std::string_view t, std::size_t p) {
  if (p >= t.size()) return p;
  if (t[p] == '"') return read_string(t, p, nullptr);
  if (t[p] == '{' || t[p] == '[') {
    int depth = 0;
    while (p < t.size()) {
      const char c = t[p];
      if (c == '"') {
        p = read_string(t, p, nullptr);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return p + 1;
      }
      ++p;
    }
    return p;
  }
  while (p < t.size() && t[p] != ',' && t[p] != ']' && t[p] != '}' && !is_space(t[p]))
    ++p;
  return p;
}

}  // namespace

std::string path_string(const std::vector<PathStep>& path) {
  std::string out;
  for (const PathStep& s : path) {
    if (s.is_index && !s.display) {
      out += "[" + std::to_string(s.index) + "]";
    } else {
      if (!out.empty()) out += '.';
      out += s.is_index ? s.display : s.key;
    }
  }
  return out;
}

std::size_t locate(std::string_view t, const std::vector<PathStep>& path) {
  std::size_t p = skip_space(t, 0);
  for (const PathStep& step : path) {
    if (p >= t.size()) return std::min(p, t.size());
    const std::size_t container = p;
    if (!step.is_index) {
      if (t[p] != '{') return container;
      p = skip_space(t, p + 1);
      bool found = false;
      while (p < t.size() && t[p] == '"') {
        std::string key;
        p = skip_space(t, read_string(t, p, &key));
        if (p >= t.size() || t[p] != ':') return container;
        p = skip_space(t, p + 1);
        if (key == step.key) {
          found = true;
          break;
        }
        p = skip_space(t, skip_value(t, p));
        if (p < t.size() && t[p] == ',') p = skip_space(t, p + 1);
      }
      if (!found) return container;
    } else {
      if (t[p] != '[') return container;
      p = skip_space(t, p + 1);
      for (std::size_t i = 0; i < step.index; ++i) {
        if (p >= t.size() || t[p] == ']') return container;
        p = skip_space(t, skip_value(t, p));
        if (p >= t.size() || t[p] != ',') return container;
        p = skip_space(t, p + 1);
      }
      if (p >= t.size() || t[p] == ']') return container;
    }
  }
  return std::min(p, t.size());
}

std::string path_at(std::string_view t, std::size_t offset) {
  struct Frame {
    bool object;
    std::size_t index = 0;
    std::string key;
    bool has_key = false;
  };
  std::vector<Frame> stack;
  std::size_t p = 0;
  const std::size_t end = std::min(offset, t.size());
  bool expect_key = false;
  while (p < end) {
    const char c = t[p];
    if (c == '"') {
      std::string s;
      const std::size_t after = read_string(t, p, &s);
      if (after > end) break;
      if (!stack.empty() && stack.back().object && expect_key) {
        stack.back().key = s;
        stack.back().has_key = true;
        expect_key = false;
      }
      p = after;
      continue;
    }
    if (c == '{') {
      stack.push_back(Frame{true, 0, {}, false});
      expect_key = true;
    } else if (c == '[') {
      stack.push_back(Frame{false, 0, {}, false});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().object) {
        expect_key = true;
        stack.back().has_key = false;
      } else {
        ++stack.back().index;
      }
    }
    ++p;
  }
  std::vector<PathStep> path;
  for (const Frame& f : stack) {
    if (f.object) {
      if (!f.has_key) break;
      path.push_back(PathStep{f.key, 0, false, nullptr});
    } else {
      path.push_back(PathStep{{}, f.index, true, nullptr});
    }
  }
  return path_string(path);
}

void line_column(std::string_view t, std::size_t offset, int* line, int* column) {
  offset = std::min(offset, t.size());
  int l = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (t[i] == '\n') {
      ++l;
      line_start = i + 1;
    }
  }
  *line = l;
  *column = static_cast<int>(offset - line_start) + 1;
}

}  // namespace tawpipe::ir::detail
