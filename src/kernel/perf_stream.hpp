// A growing `perf script` text as snailtrail events, as its bytes arrive (`serve --follow
// trace.txt --importer perf-sched`, docs/KERNEL.md "Following a live trace"): lines are
// parsed as they complete, fed to the incremental thread-state model (ModelBuilder), and
// every interval the model closes becomes events at once, with the same mapping as
// to_trace (threads = workers, running = processing per comm, preempted = scheduling,
// blocked = waiting, wake-ups = control messages from the waker or a pseudo-worker named
// by its cause and interrupt).
//
// Differences from the batch importer (to_trace on the whole model), all documented:
// worker ids follow first appearance (names are the same), a thread keeps the comm it
// had when first seen, and a line that arrives out of time order is dropped and counted
// (`perf.stream_out_of_order`) instead of being sorted in (perf script itself orders
// its samples).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/to_trace.hpp"
#include "trace/trace.hpp"

namespace snailtrail::kernel {

class PerfSchedStream {
 public:
  explicit PerfSchedStream(std::string source);

  // The next bytes, split anywhere. Appends the events that became final to out.events
  // (each worker's in time order, also across calls) and new names to out's maps. Throws
  // TraceError naming the line of a malformed known event.
  void feed(std::string_view bytes, Trace& out);
  // End of input: the last (cut) line, the intervals still open, the pseudo-workers' end.
  void finish(Trace& out);
  std::vector<std::pair<std::string, uint64_t>> diagnostics() const;

 private:
  void take_line(std::string_view line, bool cut);
  void step_events();
  void emit(Trace& out);
  uint32_t worker_of_thread(int32_t thread, Trace& out);
  uint32_t worker_of_cause(const PseudoKey& key, Trace& out);

  PerfScriptLines lines_;
  ModelBuilder model_;
  std::string partial_;
  uint32_t line_no_ = 0;
  int64_t last_ts_ = INT64_MIN;
  uint64_t out_of_order_ = 0;
  std::vector<size_t> emitted_;            // per thread: intervals already turned to events
  std::vector<int64_t> worker_of_thread_;  // per thread: worker id, -1 before its first
  std::unordered_map<uint32_t, uint32_t> op_of_comm_;
  std::vector<std::pair<PseudoKey, uint32_t>> pseudo_;  // cause, interrupt -> worker id
  uint32_t next_worker_ = 0;
  int64_t correlator_ = 0;
  std::vector<std::vector<Event>> pending_sends_;  // per thread: sends not yet placed
};

}  // namespace snailtrail::kernel
