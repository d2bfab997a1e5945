/// \file
/// A small named table for the extension points (schedules, network models, collective
/// algorithms, model presets): each row has a name, a one-line description, the reference it
/// comes from, and a factory. `--list-*` prints the rows; lookups of unknown names suggest the
/// closest one. A new extension is one file plus one row, never an enum plus if-chains.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/strings.h"

namespace tawpipe {

template <class Factory>
class Registry {
 public:
  struct Entry {
    std::string name;
    std::string description;  ///< one line
    std::string reference;    ///< paper or source the entry implements
    Factory factory;
  };

  /// `kind` names the table in error messages ("schedule", "model").
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  /// Adds a row. Precondition: the name is new (a duplicate is a bug in tawpipe).
  void add(Entry entry) {
    assert(find(entry.name) == nullptr);
    entries_.push_back(std::move(entry));
    std::sort(entries_.begin(), entries_.end(),
              [](const Entry& a, const Entry& b) { return a.name < b.name; });
  }

  /// The row named `name`, or nullptr.
  const Entry* find(std::string_view name) const {
    for (const auto& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  /// The row named `name`, or an error listing the known names with a "did you mean".
  Expected<const Entry*> lookup(std::string_view name) const {
    if (const Entry* e = find(name)) return e;
    return make_error("unknown " + kind_ + " '" + std::string(name) + "'" +
                      did_you_mean(name, names()) + "; known: " + join(names(), ", "));
  }

  /// All names, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& e : entries_)
      out.push_back(e.name);
    return out;
  }

  /// All rows, sorted by name.
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::string kind_;
  std::vector<Entry> entries_;
};

}  // namespace tawpipe
