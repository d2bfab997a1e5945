// tawsim: the simulator's command line. Dispatches to a sub-command (sim/cli/); user errors end
// there as one line on stderr and exit status 2 (design.md).
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#endif

#include "common/strings.h"
#include "sim/cli/cli.h"

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Steady-state folding and `plan` simulate many programs one after the other: keep freed
  // blocks in the heap (no mmap per large vector, no trimming) so that the next program reuses
  // pages already faulted in; first-touch page faults cost more than the event loop on VMs
  // (sim/run/big_vector.h). Measured on the 24-GPU TawPipe run: about 20 % less CPU time.
  // glibc refuses an mmap threshold above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit), so 32 MiB is
  // the largest that takes effect. One arena: folding's probe threads and parallel generators
  // are short-lived, and each new thread's arena would fault its pages in afresh; with one
  // arena they reuse the main heap (24-GPU runs: about 4,000 instead of 6,400 page faults).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());  // never: see the top pad below
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_ARENA_MAX, 1);
  // Grow the heap by its top pad now and ask for transparent huge pages on it (what glibc's
  // glibc.malloc.hugetlb=1 tunable does, which only the environment can set): in THP's
  // `madvise` mode the kernel then backs it with 2 MiB pages, one fault each instead of 512.
  // On a VM a 4 KiB fault costs ~4 us; the 24-GPU runs fault in 11-18 MiB of tables and
  // programs: WeiPipe 155 -> ~110 ms CPU. Where sbrk is not glibc's heap (sanitizers), the
  // range is empty and nothing happens.
  {
    // The heap below the first 2 MiB boundary (up to 2 MiB from where it starts, at a random
    // offset) cannot be backed by a huge page, and a 2 MiB range written before the advice
    // keeps 4 KiB pages: a block that is never touched fills the heap up to the boundary, and
    // growing the heap writes nothing beyond it before the advice. Measured on 3x8-a100: 500
    // to 1,000 page faults a run, with where the heap started, -> ~300.
    constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
    constexpr std::size_t kProbe = std::size_t{64} << 10;
    const auto before = reinterpret_cast<std::uintptr_t>(sbrk(0));
    const std::uintptr_t lo = (before + kProbe + kHuge - 1) & ~(kHuge - 1);
    // One GiB of address space up front (no memory until touched), so that sweeps and plans,
    // whose heap outgrows 64 MiB, stay on huge pages: a later brk extension of the heap would
    // not carry the advice. The probe's request grows the heap, writing below lo.
    mallopt(M_TOP_PAD, 1 << 30);
    void* volatile probe = std::malloc(kProbe);                // volatile: not elided
    const auto top = reinterpret_cast<std::uintptr_t>(probe);  // the top chunk's start
    std::free(probe);
    // The filler stays allocated (static: reachable, not a leak). Elsewhere (sanitizers' heaps)
    // the probe is not below lo and nothing is filled.
    constexpr std::uintptr_t kHeaders = 64;  // the filler's and the next chunk's headers
    static void* volatile filler = top + kHeaders < lo && lo - top <= kHuge + kProbe
                                       ? std::malloc(lo - top - kHeaders)
                                       : nullptr;
    const auto after = reinterpret_cast<std::uintptr_t>(sbrk(0));
    if (filler != nullptr && reinterpret_cast<std::uintptr_t>(filler) == top && after > lo + kHuge)
      madvise(reinterpret_cast<void*>(lo), (after - lo) & ~(kHuge - 1), MADV_HUGEPAGE);
    mallopt(M_TOP_PAD, 64 << 20);
  }
#endif
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    using Command = int (*)(const std::vector<std::string>&);
    const std::pair<const char*, Command> commands[] = {
        {"verify", tawpipe::cli::verify_command},
        {"compare", tawpipe::cli::compare_command},
        {"collectives", tawpipe::cli::collectives_command},
        {"merge", tawpipe::cli::merge_command},
        {"plan", tawpipe::cli::plan_command},
    };
    std::vector<std::string> names;
    for (const auto& [name, command] : commands) {
      names.emplace_back(name);
      if (!args.empty() && args.front() == name) {
        args.erase(args.begin());
        return command(args);
      }
    }
    // A first word that is no option and no sub-command is a typo (or a sub-command this version
    // lacks): refuse it rather than silently running the default job.
    if (!args.empty() && !args.front().empty() && args.front()[0] != '-') {
      std::fprintf(stderr, "tawsim: unknown sub-command '%s'%s; known: %s (see tawsim --help)\n",
                   args.front().c_str(), tawpipe::did_you_mean(args.front(), names).c_str(),
                   tawpipe::join(names, ", ").c_str());
      return tawpipe::cli::kExitUsage;
    }
    return tawpipe::cli::main_command(args);
  } catch (const std::exception& e) {
    // Library code reports user errors as values; reaching this is a tawpipe bug.
    std::fprintf(stderr, "tawsim: internal error: %s\n", e.what());
    return 70;
  }
}
