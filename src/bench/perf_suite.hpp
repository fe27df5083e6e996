// `snailtrail bench`: whole-process measurements of `snailtrail analyze` on synthetic
// traces shaped like the SnailTrail paper's Flink experiment, against the paper's
// published figures (thesis Tables 3.3, 3.4) and against a floor (reading the same
// events from .snail and grouping them per worker).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snailtrail::bench {

struct PerfOptions {
  std::vector<int> window_seconds = {1, 4, 16, 64, 256};
  int repeat = 3;                    // runs per measurement; the median is reported
  int64_t throughput_seconds = 256;  // trace length for back-to-back windows
  std::string work_dir;              // temporary traces; default: a fresh temp dir
  std::string binary;                // snailtrail executable to run; default: this one
  bool keep_files = false;
  bool quiet = false;  // no progress on stderr
};

struct PaperFigure {
  double events_millions;
  double latency_s;
  double throughput_meps;  // million events per second
};
// Thesis Tables 3.3/3.4 (32-core Xeon, Rust/Timely), by window size in seconds.
PaperFigure paper_figure(int window_seconds);

struct WindowResult {
  int window_s = 0;
  uint64_t events = 0;   // events in the one-window trace
  double latency_s = 0;  // median whole-process wall time, one window
  double latency_min_s = 0, latency_max_s = 0;
  double floor_s = 0;              // median: read .snail + group per worker, in process
  uint64_t peak_rss_kb = 0;        // max over the latency runs
  uint64_t throughput_events = 0;  // events of the back-to-back trace
  uint64_t throughput_windows = 0;
  double throughput_s = 0;  // median wall time over that trace
  double throughput_meps() const {
    return throughput_s > 0 ? static_cast<double>(throughput_events) / throughput_s / 1e6 : 0;
  }
};

struct ReaderResult {
  uint64_t events = 0;
  double snail_meps = 0;       // raw .snail, in memory
  double snail_zstd_meps = 0;  // zstd .snail, in memory
  double jsonl_meps = 0;       // JSONL, in memory
};

struct PerfReport {
  std::string machine;  // CPU model, cores, memory
  std::vector<WindowResult> windows;
  ReaderResult readers;
};

PerfReport run_perf_suite(const PerfOptions& options);

// The floor as a whole process does it (`snailtrail bench --floor FILE`): read the
// events of a .snail file and group them per worker. Returns the number of events.
uint64_t run_floor(const std::string& path);

std::string format_table(const PerfReport& report);
std::string format_json(const PerfReport& report);
// Latency against window size, log-log: ours, the paper, the floor.
std::string format_svg(const PerfReport& report);

}  // namespace snailtrail::bench
