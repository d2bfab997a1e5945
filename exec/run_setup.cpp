#include "exec/run_setup.h"

#include <algorithm>
#include <utility>

#include "common/ir/json.h"
#include "common/ir/verifier.h"
#include "common/model/presets.h"

namespace tawpipe::exec {

Expected<PreparedRun> prepare_run(const ProgramOptions& o) {
  PreparedRun run;
  schedules::WorkloadSpec spec = o.workload;
  std::vector<std::string> sets = {"train.seq_len=64", "train.micro_batches=2",
                                   "train.global_batch=0", "train.compute_dtype=fp32",
                                   "train.recompute=full"};
  sets.insert(sets.end(), o.flag_sets.begin(), o.flag_sets.end());
  sets.insert(sets.end(), spec.sets.begin(), spec.sets.end());
  spec.sets = std::move(sets);

  if (!o.ir_file.empty()) {
    auto program = ir::read_program_file(o.ir_file);
    if (!program.ok()) return program.error();
    run.program = std::move(*program);
    run.label = o.ir_file;
    // The model is the program's; optimizer and seed come from the (default or --set) training
    // settings, which the topology does not affect.
    spec.model = run.program.header.model;
    auto w = schedules::resolve_workload(spec);
    if (!w.ok()) return w.error();
    run.model = std::move(w->model);
    run.train = w->train;
    run.host_cpu = w->topology.host_cpu();
    if (run.model.layers != run.program.header.layers) {
      return make_error(o.ir_file + ": the program has " +
                        std::to_string(run.program.header.layers) + " layers, model '" +
                        run.model.name + "' has " + std::to_string(run.model.layers));
    }
  } else {
    auto w = schedules::resolve_workload(spec);
    if (!w.ok()) return w.error();
    auto variants = schedules::parse_schedule_list(o.schedule);
    if (!variants.ok()) return variants.error();
    if (variants->size() != 1) {
      return make_error("--schedule: tawexec runs one schedule at a time, got '" + o.schedule +
                        "'");
    }
    auto program = schedules::build_program(*w, variants->front());
    if (!program.ok()) return program.error();
    run.program = std::move(*program);
    run.label = variants->front().label;
    run.model = std::move(w->model);
    run.train = w->train;
    run.host_cpu = w->topology.host_cpu();
  }

  ir::VerifyOptions vo;
  vo.skip_dataflow = o.unverified_ir;
  const ir::VerifyResult v = ir::verify(run.program, vo);
  if (!v.ok) {
    return make_error("the program does not verify (" + std::string(ir::name(v.stage)) +
                      "): " + v.message);
  }
  return run;
}

std::vector<std::int32_t> program_samples(const ir::Program& program) {
  std::vector<std::int32_t> s;
  for (const ir::RankProgram& rp : program.ranks) {
    for (const ir::Op& op : rp.ops) {
      if (op.kind == ir::OpKind::compute && op.compute == ir::ComputeKind::embedding_forward)
        s.push_back(op.sample);
    }
  }
  std::sort(s.begin(), s.end());
  return s;
}

}  // namespace tawpipe::exec
