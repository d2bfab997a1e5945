/// \file
/// Chakra execution-trace export of an IR program (MLCommons Chakra, ET schema "0.0.4", as read
/// by ASTRA-sim): one file `<dir>/<schedule>.<rank>.et` per rank, each a stream of
/// length-delimited protobuf messages (et_def.proto beside this file): a GlobalMetadata, then one
/// Node per IR op except alloc/free.
///
/// Mapping (ids are the IR op indices, so a node names its op):
///  - compute and copy ops -> COMP_NODE; attributes `num_ops` (int64, FLOPs of the op's cost),
///    `tensor_size` (uint64, memory-traffic bytes of the cost; copies: 2 x the bytes moved),
///    `is_cpu_op` (false); duration_micros from the caller's compute model when given;
///  - send / recv -> COMM_SEND_NODE / COMM_RECV_NODE with `comm_src`, `comm_dst`, `comm_tag`
///    (int32; the k-th message from a to b on communicator c has the same tag on both sides) and
///    `comm_size` (int64 bytes);
///  - collectives -> COMM_COLL_NODE with `comm_type` (int64, CollectiveCommType), `comm_size`
///    (int64 bytes, the IR's collective size convention), `pg_name` (the communicator's index as
///    a string, ASTRA-sim's process-group key; `comm_group.json` in the same directory maps each
///    to its ranks), `root` (int32, broadcast/reduce only);
///  - every node also has `tawpipe.op` (string: the IR op kind, compute kind or collective kind)
///    and, for compute ops, `tawpipe.layers` (int32 list [begin, end)) and `tawpipe.sample`.
/// Dependencies: ctrl_deps = the previous op of the same stream (program order on a stream),
/// data_deps = the op's explicit `deps` (cross-stream events). An alloc or free op is not
/// exported; dependencies on it are replaced by its own (transitively), so the order is kept.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/ir/program.h"

namespace tawpipe::chakra {

/// The Chakra ET schema version written into GlobalMetadata.version.
inline constexpr const char* kSchemaVersion = "0.0.4";

/// Optional compute duration of an op in microseconds (0 = unknown); called for compute and
/// copy ops only.
using DurationFn = std::function<std::uint64_t(ir::Rank, const ir::Op&)>;

/// What was written, per rank.
struct RankSummary {
  std::string file;
  std::int64_t nodes = 0;
  std::int64_t ctrl_edges = 0;
  std::int64_t data_edges = 0;
};

/// The file name of `rank`: `<schedule>.<rank>.et` (characters other than [A-Za-z0-9_-]
/// replaced by '_').
std::string rank_file_name(const ir::Program& program, ir::Rank rank);

/// Writes the files into `dir` (created if missing) plus `comm_group.json`. Errors: directory or
/// file I/O (message names the path).
Expected<std::vector<RankSummary>> write_chakra(const ir::Program& program, const std::string& dir,
                                                const DurationFn& duration = {});

}  // namespace tawpipe::chakra
