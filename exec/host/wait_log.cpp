#include "exec/host/wait_log.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "exec/host/doorbell.h"

namespace tawpipe::exec::host::wait_log {
namespace detail {
const bool g_on = [] {
  const char* p = std::getenv("TAWPIPE_WAIT_LOG");
  return p != nullptr && *p != '\0';
}();
}  // namespace detail

namespace {

/// One thread's records, kept (by the registry) after the thread ends.
struct ThreadLog {
  std::string text;
  /// The last sleep, written when the test after it (or the wait's end) is known.
  bool sleep_open = false;
  Stamp begin, end;
  std::int64_t requested = 0;
  How how = How::bell;
  std::size_t pending = 0;
  std::uint64_t first_op = 0;
  int slot = 0;
  bool alone = true;
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ThreadLog>> logs;
  std::atomic<std::uint64_t> next_op{1};
  /// At exit, when every thread that logs has ended (the backend joins its stream threads).
  ~Registry() { write(); }
  bool write();
};

Registry& registry() {
  static Registry r;
  return r;
}

ThreadLog& mine() {
  thread_local ThreadLog* log = [] {
    Registry& r = registry();
    const std::lock_guard lock(r.mu);
    r.logs.push_back(std::make_unique<ThreadLog>());
    return r.logs.back().get();
  }();
  return *log;
}

const char* name(How h) {
  switch (h) {
    case How::bell:
      return "bell";
    case How::timeout:
      return "timeout";
    case How::timer:
      return "timer";
  }
  return "?";
}

const char* name(Why w) {
  switch (w) {
    case Why::post_send:
      return "post_send";
    case Why::post_recv:
      return "post_recv";
    case Why::recv_done:
      return "recv_done";
  }
  return "?";
}

void close_sleep(ThreadLog& log, int completed) {
  if (!log.sleep_open) return;
  log.sleep_open = false;
  log.text +=
      fmt::format("S\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", log.begin.t, log.end.t,
                  log.slot, name(log.how), log.requested, log.pending, log.first_op, completed,
                  log.begin.cpu, log.end.cpu, log.alone ? "alone" : "overlapped");
}

std::string rank_of_process() {
  // mpirun's environment (Open MPI, then PMIx); the pid where neither is set.
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    if (const char* s = std::getenv(v); s != nullptr && *s != '\0') return s;
  }
  return fmt::format("pid{}", static_cast<long>(::getpid()));
}

bool Registry::write() {
  if (!detail::g_on) return false;
  const std::string path =
      fmt::format("{}.{}.tsv", std::getenv("TAWPIPE_WAIT_LOG"), rank_of_process());
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  for (const auto& log : logs) {
    close_sleep(*log, -1);
    std::fwrite(log->text.data(), 1, log->text.size(), f);
  }
  return std::fclose(f) == 0;
}

}  // namespace

void issued(std::int64_t first_op_index, std::size_t ops) {
  if (!on()) return;
  mine().text += fmt::format("I\t{}\t{}\t{}\n", now_ns(), first_op_index, ops);
}

void waited(std::size_t completions) {
  if (!on()) return;
  mine().text += fmt::format("D\t{}\t{}\n", now_ns(), completions);
}

void batch(Stamp begin, std::int64_t first_op_index, std::size_t ops) {
  if (!on()) return;
  const Stamp end = stamp();
  mine().text += fmt::format("B\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", begin.t, end.t, doorbell_slot(),
                             first_op_index, ops, begin.cpu, end.cpu);
}

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

std::int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

Stamp stamp() {
  if (!on()) return {};
  return {now_ns(), thread_cpu_ns()};
}

std::uint64_t post(bool is_send, int self_world, int peer_world, int tag, std::uint64_t bytes,
                   int peer_slot) {
  if (!on()) return 0;
  const std::uint64_t op = registry().next_op.fetch_add(1);
  ThreadLog& log = mine();
  log.text += fmt::format("P\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", now_ns(), doorbell_slot(), op,
                          is_send ? "send" : "recv", self_world, peer_world, tag, bytes, peer_slot);
  return op;
}

void ring(int target_world, int target_slot, Why why) {
  if (!on()) return;
  mine().text += fmt::format("R\t{}\t{}\t{}\t{}\t{}\n", now_ns(), doorbell_slot(), target_world,
                             target_slot, name(why));
}

void sleep(Stamp begin, Stamp end, How how, std::int64_t requested_ns, std::size_t pending,
           std::uint64_t first_op, bool tested_alone) {
  if (!on()) return;
  ThreadLog& log = mine();
  close_sleep(log, -1);
  log.sleep_open = true;
  log.begin = begin;
  log.end = end;
  log.how = how;
  log.requested = requested_ns;
  log.pending = pending;
  log.first_op = first_op;
  log.slot = doorbell_slot();
  log.alone = tested_alone;
}

void tested(int completed) {
  if (!on()) return;
  close_sleep(mine(), completed);
}

void wait_end(Stamp begin, std::size_t ops, std::uint64_t bytes, std::uint64_t sleeps) {
  if (!on()) return;
  ThreadLog& log = mine();
  close_sleep(log, -1);
  const Stamp end = stamp();
  log.text += fmt::format("W\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", begin.t, end.t, doorbell_slot(),
                          ops, bytes, begin.cpu, end.cpu, sleeps);
}

void complete(std::uint64_t op) {
  if (!on()) return;
  mine().text += fmt::format("C\t{}\t{}\t{}\n", now_ns(), doorbell_slot(), op);
}

}  // namespace tawpipe::exec::host::wait_log
