// The critical path of one thread as `snailtrail kernel critical-path` prints it: the
// path with its totals per thread and per state, as a table or JSON.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cli/output_file.hpp"
#include "kernel/critical_path.hpp"

namespace snailtrail::cli {

// Milliseconds with 3 decimals; seconds.nanoseconds.
std::string path_ms(int64_t ns);
std::string path_secs(int64_t ns);

// The thread `--thread` names: a tid, or a comm if unique (several hosts: HOST/TID or
// HOST/COMM). Throws std::invalid_argument naming the trace when none or several match.
int32_t pick_kernel_thread(const kernel::KernelModel& m, std::string sel);
// --from/--to: '12345.6s' on the trace clock, or '+1s' after `origin` (the first event).
int64_t resolve_kernel_instant(const std::string& text, int64_t origin);

// A critical path with its totals per thread (largest first) and per state.
struct PathView {
  const kernel::KernelModel& m;
  int32_t t;  // the thread whose path this is
  int64_t from, to;
  const kernel::CriticalPathResult& r;
  std::vector<std::pair<int32_t, int64_t>> threads;
  std::array<int64_t, kernel::kPathStateCount> per_state{};
  double total;
  PathView(const kernel::KernelModel& model, int32_t thread, int64_t f, int64_t e,
           const kernel::CriticalPathResult& result);
  void write_json(OutputFile& out) const;
  // The table with the first `limit` segments.
  void write_table(fmt::memory_buffer& buf, size_t limit) const;
};

}  // namespace snailtrail::cli
