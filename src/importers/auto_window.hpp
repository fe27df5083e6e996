// `--window auto` (docs/OUTPUT.md, "Choosing the window"): the window width that fits a
// trace, from the kind of system that wrote it. Batch jobs and request traces have an end
// (a Spark application, a set of requests, a profiler's capture): their CP is asked of the
// whole run. Streams run on: their CP is asked window by window, 1 s by default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace snailtrail::importers {

struct AutoWindow {
  bool whole = false;    // one window over the whole trace
  int64_t width_ns = 0;  // else tumbling windows of this width
  std::string label;     // "whole" or "1s"
  std::string reason;    // "spark: a batch job", shown where the choice is printed
};

// The stream window `--window auto` uses (1 s).
inline constexpr int64_t kAutoStreamWindowNs = 1'000'000'000;

// The choice for a trace read by importer `importer` (a name of all_importers()). An
// unknown name is treated as a stream.
AutoWindow choose_auto_window(std::string_view importer);

}  // namespace snailtrail::importers
