// `tawsim merge SLICE...`: joins the slices that `tawsim --sweep ... --shard K/N` wrote (csv or
// json; the first line of each is the shard marker, run.h) into exactly what the unsliced sweep
// prints, in point order whatever the order of the files. Every slice 1..N must be given once,
// all of one sweep (same N, same point total, same format, same CSV header). Exit 0, or 2 with
// one line naming the file.
#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/io.h"
#include "sim/cli/cli.h"
#include "sim/cli/file_args.h"

namespace po = boost::program_options;

namespace tawpipe::cli {
namespace {

struct Slice {
  std::string file;
  bool json = false;
  long long index = 0, count = 0, first = 0, points = 0, total = 0;
  std::string header;  ///< csv: the header line
  std::string body;    ///< csv: the rows; json: the point objects, ",\n"-separated
};

int fail(const std::string& file, const std::string& message) {
  std::fprintf(stderr, "tawsim merge: %s%s%s\n", file.c_str(), file.empty() ? "" : ": ",
               message.c_str());
  return kExitUsage;
}

// Parses a slice; returns an error message or "".
std::string parse_slice(const std::string& text, Slice& s) {
  const auto eol = text.find('\n');
  if (eol == std::string::npos) return "not a tawsim shard (no marker line)";
  const std::string marker = text.substr(0, eol);
  std::string rest = text.substr(eol + 1);
  int used = 0;
  if (std::sscanf(marker.c_str(),
                  "# tawsim shard %lld/%lld first_point=%lld points=%lld total_points=%lld%n",
                  &s.index, &s.count, &s.first, &s.points, &s.total, &used) == 5 &&
      static_cast<std::size_t>(used) == marker.size()) {
    const auto h = rest.find('\n');
    if (h == std::string::npos) return "csv shard without a header line";
    s.header = rest.substr(0, h + 1);
    s.body = rest.substr(h + 1);
    return "";
  }
  if (std::sscanf(marker.c_str(),
                  "{\"tawsim_shard\": \"%lld/%lld\", \"first_point\": %lld, \"points\": %lld, "
                  "\"total_points\": %lld, \"slice\": [%n",
                  &s.index, &s.count, &s.first, &s.points, &s.total, &used) == 5 &&
      static_cast<std::size_t>(used) == marker.size()) {
    s.json = true;
    const std::string tail = s.points > 0 ? "\n]}\n" : "]}\n";
    if (rest.size() < tail.size() || rest.compare(rest.size() - tail.size(), tail.size(), tail))
      return "json shard is truncated (no closing ]})";
    s.body = rest.substr(0, rest.size() - tail.size());
    return "";
  }
  return "not a tawsim shard: the first line is not a shard marker (run the sweep with --shard "
         "K/N --format csv|json)";
}

}  // namespace

int merge_command(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  po::options_description opts("Options");
  opts.add_options()("help,h", "print this help");
  if (auto status =
          parse_file_args(args, opts, "tawsim merge",
                          "Usage: tawsim merge SLICE...\n\n"
                          "Joins the slices of `tawsim --sweep ... --shard K/N --format csv|json`\n"
                          "into the unsliced sweep's output (stdout), in point order.\n",
                          files)) {
    return *status;
  }
  if (files.empty()) return fail("", "no file given (usage: tawsim merge SLICE...)");
  std::map<long long, Slice> slices;
  for (const std::string& file : files) {
    auto text = read_text_file(file);
    if (!text.ok()) return fail("", text.error().to_string());
    Slice s;
    s.file = file;
    if (std::string e = parse_slice(*text, s); !e.empty()) return fail(file, e);
    if (s.count < 1 || s.index < 1 || s.index > s.count)
      return fail(file,
                  "bad shard index " + std::to_string(s.index) + "/" + std::to_string(s.count));
    if (!slices.empty()) {
      const Slice& f = slices.begin()->second;
      if (s.count != f.count || s.total != f.total || s.json != f.json ||
          (!s.json && s.header != f.header))
        return fail(file, "belongs to another sweep than " + f.file +
                              " (slice count, point total, format or CSV header differ)");
    }
    if (slices.count(s.index))
      return fail(file, "slice " + std::to_string(s.index) + " given twice (also " +
                            slices[s.index].file + ")");
    slices.emplace(s.index, std::move(s));
  }
  const Slice& any = slices.begin()->second;
  long long next = 0;
  for (long long k = 1; k <= any.count; ++k) {
    const auto it = slices.find(k);
    if (it == slices.end()) return fail("", fmt::format("slice {}/{} is missing", k, any.count));
    if (it->second.first != next)
      return fail(it->second.file,
                  fmt::format("starts at point {}, expected {}", it->second.first, next));
    next += it->second.points;
  }
  if (next != any.total)
    return fail("", fmt::format("the slices hold {} points of {}", next, any.total));
  std::string out;
  if (any.json) {
    out = "[\n";
    bool first = true;
    for (const auto& [k, s] : slices) {
      if (s.points == 0) continue;
      out += (first ? "" : ",\n") + s.body;
      first = false;
    }
    out += "\n]\n";
  } else {
    out = any.header;
    for (const auto& [k, s] : slices)
      out += s.body;
  }
  std::cout << out;
  return kExitOk;
}

}  // namespace tawpipe::cli
