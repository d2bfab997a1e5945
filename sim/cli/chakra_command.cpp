#include "sim/cli/chakra_command.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/chakra/export.h"
#include "common/ir/verifier.h"
#include "sim/cli/cli.h"
#include "sim/compute/compute_model.h"

namespace tawpipe::cli {

int emit_chakra(const schedules::Workload& workload,
                const std::vector<schedules::ScheduleVariant>& variants, const std::string& dir) {
  // Generate, verify and cost every schedule first: nothing is written unless all of them are
  // valid (as --emit-ir does).
  struct Pending {
    std::string label;
    ir::Program program;
    std::optional<sim::ComputeModel> model;
  };
  std::vector<Pending> pending;
  pending.reserve(variants.size());
  for (const auto& v : variants) {
    auto program = schedules::build_program(workload, v);
    if (!program.ok()) {
      std::fprintf(stderr, "tawsim: %s\n",
                   program.error().at("--schedule " + v.label, 0, 0, "").to_string().c_str());
      return kExitUsage;
    }
    const ir::VerifyResult r = ir::verify(*program);
    if (!r.ok) {
      std::fprintf(stderr, "tawsim: %s: program fails verification (%s): %s\n", v.label.c_str(),
                   ir::name(r.stage), r.message.c_str());
      return kExitUsage;
    }
    pending.push_back({v.label, std::move(*program), std::nullopt});
    auto model = sim::ComputeModel::create(pending.back().program, workload.topology, nullptr);
    if (!model.ok()) {
      std::fprintf(stderr, "tawsim: %s\n", model.error().to_string().c_str());
      return kExitUsage;
    }
    pending.back().model.emplace(std::move(*model));
  }
  for (const Pending& p : pending) {
    const sim::ComputeModel& cm = *p.model;
    const auto micros = [&](ir::Rank rank, const ir::Op& op) {
      return static_cast<std::uint64_t>(std::llround(cm.op_time(rank, op).microseconds()));
    };
    const std::string out =
        variants.size() == 1 ? dir : (std::filesystem::path(dir) / p.label).string();
    auto written = chakra::write_chakra(p.program, out, micros);
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
