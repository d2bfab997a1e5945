/// \file
/// File helpers with the project's error conventions: reads return an Error naming the file;
/// writes go to a temporary file in the same folder that is renamed into place only when complete,
/// so a failed or interrupted run never leaves a half-written output behind.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "common/error.h"

namespace tawpipe {

/// The whole file as text. Error: "cannot read FILE: reason".
Expected<std::string> read_text_file(const std::filesystem::path& path);

/// Writes `content` to `path` atomically (temp file + rename). "-" means standard output.
Status write_text_file(const std::filesystem::path& path, std::string_view content);

/// Streams into `path` atomically: `fill` writes to the stream; nothing appears at `path` unless
/// `fill` returns success and the data reached the disk. "-" means standard output.
Status write_file_with(const std::filesystem::path& path,
                       const std::function<Status(std::ostream&)>& fill);

}  // namespace tawpipe
