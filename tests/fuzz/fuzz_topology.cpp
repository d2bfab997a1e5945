// libFuzzer entry point for the topology loader. Invariants checked on every input:
//  - the loader returns (no crash, no sanitizer report, no exception, no hang);
//  - an error always carries the file name, a line and a column > 0;
//  - a topology that loads dumps to YAML that loads again into the same graph and hash,
//    and every GPU pair has a route from the source's vertex to the destination's.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/topology/describe.h"
#include "common/topology/loader.h"
#include "common/topology/topology.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tawpipe::topo;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = load_topology_string(text, "fuzz.yaml");
  if (!t.ok()) {
    const tawpipe::Error& e = t.error();
    check(e.file == "fuzz.yaml" && e.line > 0 && e.column > 0 && !e.message.empty());
    return 0;
  }
  if (t->num_gpus() > 512) return 0;  // keep each run fast; big graphs are unit-tested
  auto again = load_topology_string(to_yaml(*t), "dump.yaml");
  check(again.ok());
  check(again->content_hash() == t->content_hash());
  check(again->links() == t->links() && again->vertices() == t->vertices());
  const int n = t->num_gpus();
  for (GpuId a = 0; a < n; a += 1 + n / 8) {
    for (GpuId b = 0; b < n; b += 1 + n / 7) {
      const auto r = t->route(a, b);
      check((a == b) == r.empty());
      if (r.empty()) continue;
      check(t->link(r.front()).src == t->gpu_vertex(a));
      check(t->link(r.back()).dst == t->gpu_vertex(b));
      check(t->bottleneck(r).bytes_per_second() > 0.0);
    }
  }
  check(!describe(*t).empty());
  return 0;
}
