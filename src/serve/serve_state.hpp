// What `serve`'s HTTP API reads (written by the analysis thread under its mutex), and the
// Prometheus text of /metrics drawn from it and from the ingest counters. docs/SERVE.md.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/report.hpp"
#include "serve/http_front.hpp"
#include "serve/ingest.hpp"
#include "serve/live_job_graph.hpp"

namespace snailtrail::serve {

// Late events above this share of the events warn on stderr and in /metrics.
constexpr double kLateWarnShare = 0.01;

// Workers and operators named in /metrics per window; the rest are one "(other)" series.
constexpr size_t kMetricGroups = 16;

// What the HTTP API reads, written by the analysis thread.
struct SharedState {
  std::mutex mu;
  std::deque<std::pair<int64_t, std::string>> windows;  // (start_ns, JSON), oldest first
  std::array<double, kActivityTypeCount> latest_cp{};
  // CP per worker and per operator in the latest window: the kMetricGroups most critical
  // by name, then "(other)" with the rest summed (bounded label sets for Prometheus).
  std::vector<std::pair<std::string, double>> latest_worker_cp, latest_op_cp;
  bool has_latest = false;
  int64_t latest_start = 0;
  uint64_t windows_emitted = 0;
  uint64_t events_analyzed = 0, late = 0, out_of_order = 0, time_jumps = 0, empty_windows = 0;
  double late_share = 0;  // late / (analyzed + late) events so far
  double lag_last = 0, lag_max = 0, ingest_rate = 0;
  size_t retained_nodes = 0, retained_messages = 0;
  std::unique_ptr<report::ReportBuilder> report;  // the dashboard's data
  LiveJobGraph jobgraph;                          // GET /api/jobgraph (its own lock, not mu)
};

// The `keep` largest (name, value) pairs, largest first (ties: by name), then "(other)"
// with the sum of the rest when there is a rest.
std::vector<std::pair<std::string, double>> bounded_groups(
    std::vector<std::pair<std::string, double>> all, size_t keep);

// A Prometheus label value: backslash, double quote and newline escaped, and each byte of
// invalid UTF-8 as U+FFFD (label values are UTF-8; names come from untrusted traces).
std::string label_value(std::string_view v);

// The Prometheus text of /metrics (without the rates' part); locks s.mu.
std::string metrics_text(SharedState& s, const IngestCounters& c, const BatchQueue& q,
                         const HttpFront::Counters& h, size_t budget);

}  // namespace snailtrail::serve
