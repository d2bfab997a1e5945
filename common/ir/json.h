/// \file
/// JSON serialisation of a Program (format in common/ir/FORMAT.md): versioned, compact (one
/// array row per op, one line per op) and exact: write -> read -> write gives identical bytes,
/// and read(write(p)) == p for every program that passes the verifier's structure check and
/// whose pools are laid out as ProgramBuilder lays them out (each op's lists contiguous, in op
/// order; other layouts read back as that canonical layout, with the same lists per op).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/ir/program.h"

namespace tawpipe::ir {

/// Parses a program from JSON text. `file_name` only labels errors. Errors carry the file,
/// line and column (1-based; columns count bytes) of the offending value and its key path, such
/// as `ranks[3].ops[17].kind`: syntax errors, an unsupported format_version, unknown keys or
/// enum names, wrong types, and ids out of range (buffer, communicator, cost, stream, rank,
/// dependency). Never crashes, whatever the input. Does not verify the program (see verify()).
Expected<Program> read_program_json(std::string_view text, std::string_view file_name);

/// Reads and parses a file; an unreadable file is an error naming it.
Expected<Program> read_program_file(const std::string& path);

/// Writes `program` as JSON (FORMAT.md). Deterministic. Precondition: costs are finite.
void write_program_json(const Program& program, std::ostream& out);

/// Convenience: write_program_json into a string.
std::string program_to_json(const Program& program);

}  // namespace tawpipe::ir
