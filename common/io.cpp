#include "common/io.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include <unistd.h>

namespace tawpipe {

Expected<std::string> read_text_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return make_error("cannot read " + path.string() + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return make_error("cannot read " + path.string() + ": read error");
  return buffer.str();
}

Status write_text_file(const std::filesystem::path& path, std::string_view content) {
  return write_file_with(path, [content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return Status::success();
  });
}

Status write_file_with(const std::filesystem::path& path,
                       const std::function<Status(std::ostream&)>& fill) {
  if (path == "-") {
    Status s = fill(std::cout);
    std::cout.flush();
    return s;
  }
  // Temp name in the same directory so rename() is atomic; pid makes parallel runs safe.
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error("cannot write " + path.string() + ": " + std::strerror(errno));
    Status s = fill(out);
    out.flush();
    if (!s.ok() || !out) {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      if (!s.ok()) return s;
      return make_error("cannot write " + path.string() + ": write error");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return make_error("cannot write " + path.string() + ": " + ec.message());
  }
  return Status::success();
}

}  // namespace tawpipe
