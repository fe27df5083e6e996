#include "importers/auto_window.hpp"

#include <array>

namespace snailtrail::importers {

AutoWindow choose_auto_window(std::string_view importer) {
  // Importers of inputs that end: what was asked is the whole run's critical path.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kWhole = {{
      {"spark", "a Spark application is a batch job"},
      {"chrome", "a profiler's capture (Chrome trace) is one run"},
      {"otlp", "a span trace is a set of requests"},
      {"jaeger", "a span trace is a set of requests"},
      {"logs", "request logs are a set of requests"},
  }};
  AutoWindow w;
  for (const auto& [name, why] : kWhole)
    if (name == importer) {
      w.whole = true;
      w.label = "whole";
      w.reason = std::string(why);
      return w;
    }
  w.width_ns = kAutoStreamWindowNs;
  w.label = "1s";
  if (importer == "perf-sched" || importer == "lttng")
    w.reason = "a kernel trace records a running system";
  else if (importer == "snail" || importer == "jsonl" || importer == "snailtrail-msgpack")
    w.reason = "snailtrail's own traces (dataflow runs, the simulator) are streams";
  else if (importer.empty())
    w.reason = "an unknown kind of trace is read as a stream";
  else
    w.reason = "a " + std::string(importer) + " trace is a stream";
  return w;
}

}  // namespace snailtrail::importers
