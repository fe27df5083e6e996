// Reader for the text `perf script` prints for scheduler tracepoints (`perf sched record`,
// `perf record -e 'sched:*' -e 'irq:*' ...`), docs/KERNEL.md "perf script".
//
// A sample line is `COMM TID [CPU] [FLAGS] SECONDS.FRACTION: [PERIOD] [SYS:]EVENT: ARGS`,
// where COMM may contain spaces and TID may be `PID/TID`; the CPU column and flags are
// optional. Both argument layouts are read: the kernel's `key=value` format and the
// compact one of libtraceevent's sched plugin (`prev:12 [120] S ==> next:34 [120]`).
// Events the model does not use are counted (`perf.unknown_event`), lines that are not
// samples (call-chain frames, warnings) are counted (`perf.skipped_line`), a known event
// with a missing field is an error naming the line (except a cut last line, counted).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kernel/kernel_event.hpp"

namespace snailtrail::kernel {

// Parses a whole perf script text; events come back sorted by timestamp (stable), with
// `perf.out_of_order` counting those that were not. Throws TraceError naming
// `source:LINE` for a malformed known event, or when no line is a sample at all.
KernelEvents parse_perf_script(std::string_view text, const std::string& source);

// The same reader a line at a time (streaming): each line's event, if any, is appended
// to events().events in input order (not sorted: the caller orders or counts); comm
// strings and counters accumulate in events(). Throws TraceError naming the line as
// parse_perf_script does.
class Reader;
class PerfScriptLines {
 public:
  explicit PerfScriptLines(const std::string& source);
  ~PerfScriptLines();
  void line(std::string_view text, uint32_t line_no, bool last_and_cut = false);
  KernelEvents& events();
  const KernelEvents& events() const;

 private:
  std::unique_ptr<Reader> r_;
};

// How sure we are that the first bytes of a file are perf script sched output (0..100).
int sniff_perf_script(std::string_view head);

}  // namespace snailtrail::kernel
