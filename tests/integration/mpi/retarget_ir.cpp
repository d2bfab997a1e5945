// retarget_ir IN OUT: writes IN's program with ONE compute op pointed at the wrong weights, for
// the test that shows `tawexec --verify` can fail. It takes the first forward op of rank 0 that
// reads a persistent weight_staging buffer (TawPipe's and WeiPipe's double buffer) and swaps that
// read for another persistent weight_staging buffer of the same size: structurally valid, no
// deadlock, but the op computes with another shard's weights. Exit 0 when done, 1 otherwise.
#include <fstream>
#include <iostream>

#include "common/ir/json.h"

using namespace tawpipe;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: retarget_ir IN.json OUT.json\n";
    return 1;
  }
  auto program = ir::read_program_file(argv[1]);
  if (!program.ok()) {
    std::cerr << program.error().to_string() << "\n";
    return 1;
  }
  ir::RankProgram& rp = program->ranks[0];
  auto staging = [&](ir::BufferId b) {
    const ir::Buffer& buf = rp.buffers[static_cast<std::size_t>(b)];
    return buf.persistent && buf.role == ir::BufferRole::weight_staging;
  };
  for (const ir::Op& op : rp.ops) {
    if (op.kind != ir::OpKind::compute || op.compute != ir::ComputeKind::forward) continue;
    for (std::uint32_t k = 0; k < op.reads_count; ++k) {
      ir::BufferId& read = rp.buffer_pool[op.buffers_offset + k];
      if (!staging(read)) continue;
      for (std::size_t other = 0; other < rp.buffers.size(); ++other) {
        const auto id = static_cast<ir::BufferId>(other);
        if (id == read || !staging(id)) continue;
        if (rp.buffers[other].size != rp.buffers[static_cast<std::size_t>(read)].size) continue;
        std::cerr << "retarget_ir: rank 0 forward [" << op.layer_begin << "," << op.layer_end
                  << ") now reads " << rp.buffers[other].name << " instead of "
                  << rp.buffers[static_cast<std::size_t>(read)].name << "\n";
        read = id;
        std::ofstream out(argv[2]);
        ir::write_program_json(*program, out);
        return out ? 0 : 1;
      }
    }
  }
  std::cerr << "retarget_ir: no forward op reads a persistent weight_staging buffer\n";
  return 1;
}
