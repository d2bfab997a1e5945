#include "common/error.h"

namespace tawpipe {

std::string Error::to_string() const {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (line > 0) {
      out += ':' + std::to_string(line);
      if (column > 0) out += ':' + std::to_string(column);
    }
    out += ": ";
  }
  if (!key_path.empty()) out += key_path + ": ";
  out += message;
  return out;
}

Error Error::at(std::string file_name, int line_no, int column_no, std::string key) const {
  Error e = *this;
  if (e.file.empty()) e.file = std::move(file_name);
  if (e.line == 0) {
    e.line = line_no;
    e.column = column_no;
  }
  if (e.key_path.empty()) e.key_path = std::move(key);
  return e;
}

}  // namespace tawpipe
