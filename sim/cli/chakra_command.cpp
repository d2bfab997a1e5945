#include "sim/cli/chakra_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/chakra/export.h"
#include "sim/cli/cli.h"
#include "sim/cli/run.h"
#include "sim/compute/compute_model.h"

namespace tawpipe::cli {

int emit_chakra(const schedules::Workload& workload,
                const std::vector<schedules::ScheduleVariant>& variants, const std::string& dir) {
  // Generate, verify and cost every schedule first: nothing is written unless all of them are
  // valid (as --emit-ir does).
  auto programs = generate_verified(workload, variants);
  if (!programs.ok()) {
    std::fprintf(stderr, "tawsim: %s\n", programs.error().to_string().c_str());
    return kExitUsage;
  }
  struct Pending {
    std::string label;
    const ir::Program* program;
    sim::ComputeModel model;
  };
  std::vector<Pending> pending;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const ir::Program& program = (*programs)[i];
    auto model = sim::ComputeModel::create(program, workload.topology, nullptr);
    if (!model.ok()) {
      std::fprintf(stderr, "tawsim: %s\n", model.error().to_string().c_str());
      return kExitUsage;
    }
    pending.push_back({variants[i].label, &program, std::move(*model)});
  }
  for (const Pending& p : pending) {
    const sim::ComputeModel& cm = p.model;
    const auto micros = [&](ir::Rank rank, const ir::Op& op) {
      return static_cast<std::uint64_t>(std::llround(cm.op_time(rank, op).microseconds()));
    };
    const std::string out =
        variants.size() == 1 ? dir : (std::filesystem::path(dir) / p.label).string();
    auto written = chakra::write_chakra(*p.program, out, micros);
    if (!written.ok()) {
      std::fprintf(stderr, "tawsim: %s\n", written.error().to_string().c_str());
      return kExitUsage;
    }
    for (const auto& s : *written) {
      std::printf("%s: %lld nodes, %lld control + %lld data edges\n",
                  (std::filesystem::path(out) / s.file).string().c_str(),
                  static_cast<long long>(s.nodes), static_cast<long long>(s.ctrl_edges),
                  static_cast<long long>(s.data_edges));
    }
  }
  return kExitOk;
}

}  // namespace tawpipe::cli
