#include "summary/hints.hpp"

#include <fmt/format.h>

#include "summary/summary.hpp"

namespace snailtrail {

const char* name_of(HintKind kind) {
  switch (kind) {
    case HintKind::map_unknown:
      return "map_unknown";
    case HintKind::unmatched_messages:
      return "unmatched_messages";
    case HintKind::missing_causes:
      return "missing_causes";
    case HintKind::idle:
      return "idle";
    case HintKind::no_cp_window:
      return "no_cp_window";
  }
  return "?";
}

std::vector<Hint> decide_hints(const Groups& cp, const Diagnostics& d, bool has_paths,
                               int64_t window_ns, uint64_t windows) {
  std::vector<Hint> hints;
  const double unknown_cp = has_paths ? cp.activity[static_cast<int>(ActivityType::unknown)] : 0;
  if (d.unknown_share >= kHintUnknownShare || unknown_cp >= kHintUnknownShare)
    hints.push_back({HintKind::map_unknown,
                     fmt::format("{:.0f}% of the workers' time ({:.0f}% of the critical paths) "
                                 "has type `unknown`: name it with --map RULES.toml (chrome, "
                                 "otlp, jaeger; docs/IMPORTERS.md), or record its type.",
                                 d.unknown_share * 100, unknown_cp * 100)});
  const uint64_t unmatched = d.issues[static_cast<int>(Issue::unmatched_send)] +
                             d.issues[static_cast<int>(Issue::unmatched_recv)] +
                             d.issues[static_cast<int>(Issue::message_without_correlator)];
  if (unmatched > 0 && (!has_paths || d.no_path_segments > 0))
    hints.push_back(
        {HintKind::unmatched_messages,
         fmt::format("{} message end(s) have no other end (unmatched sends/receives, no "
                     "correlator): paths cannot cross them. Trace every worker that sends, and "
                     "give both ends the same correlator.",
                     unmatched)});
  if (d.property1_violations > 0 && !has_paths)
    hints.push_back({HintKind::missing_causes,
                     fmt::format("{} node(s) have no cause in the trace (something starts "
                                 "without a message or activity before it): the instrumentation "
                                 "misses what triggers them.",
                                 d.property1_violations)});
  if (window_ns > 0 && d.property2_ns >= kHintIdleShare * static_cast<double>(window_ns))
    hints.push_back(
        {HintKind::idle,
         fmt::format("For {:.0f}% of the time every worker waits with no message in flight "
                     "({} interval(s)): the trace misses what the workers wait for (record "
                     "the messages that wake them), or the system was idle.",
                     100.0 * static_cast<double>(d.property2_ns) / static_cast<double>(window_ns),
                     d.property2_violations)});
  if (!has_paths && windows > 1)
    hints.push_back({HintKind::no_cp_window,
                     "No window has a transient critical path: try --window whole (paths "
                     "that cross window borders are cut) and read DIAGNOSTICS."});
  return hints;
}

}  // namespace snailtrail
