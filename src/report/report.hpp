// The HTML report and the live dashboard: a ReportBuilder reduces the analyzed
// windows of a trace, one at a time and in bounded memory, to the data the web views draw;
// render_report_html embeds that data into one self-contained page, and
// render_dashboard_html returns the same page fetching it from /api/report instead.
// Data schema and the contract with `serve`: docs/REPORT.md.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "output/names.hpp"
#include "output/writers.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::report {

struct ReportOptions {
  size_t max_points = 1024;      // time-series points; adjacent points merge beyond this
  size_t bucket_groups = 16;     // workers (and operators) kept per point, the rest is "other"
  size_t top_groups = 30;        // workers/operators in the whole-trace charts, then "other"
  size_t heatmap_workers = 24;   // senders/receivers in the heatmaps, then "other"
  size_t timelines = 8;          // windows whose timeline (Gantt) is kept
  size_t timeline_edges = 4000;  // edges kept per timeline (the most critical, then longest)
  size_t top_k = 10;             // rows of the top critical activities table
  std::string source;            // trace name shown in the title
  std::string window_label;      // e.g. "1s"
  int64_t window_ns = 0;         // nominal window width (0: whole trace)
  bool what_if = false;          // windows carry what-if savings (report --what-if)
  VerdictEnricher enrich;        // adds to the run's verdict (cli/verdict_ds2.hpp), optional
};

// One point of the time series: the windows [first_window, last_window] merged.
struct SeriesPoint {
  struct Group {
    uint32_t id;  // dense worker index or operator id
    double cp;    // sums weighted like the activity sums below
    double conv;
  };
  uint64_t first_window = 0, last_window = 0;
  int64_t start = 0, end = 0;  // ns
  uint64_t windows = 0, windows_with_paths = 0, events = 0, issues = 0;
  int64_t cp_weight = 0;    // span of windows with paths (weights CP)
  int64_t conv_weight = 0;  // length of all windows (weights conventional shares)
  std::array<double, kActivityTypeCount> cp{}, conv{};  // value * weight, summed
  std::vector<Group> workers, ops;                      // the bucket_groups largest; sorted by id
  double other_worker_cp = 0, other_worker_conv = 0, other_op_cp = 0, other_op_conv = 0;
  double unknown = 0, waiting = 0;  // share * window length, summed
};

// A window's edges for the timeline view; times relative to the window start.
struct TimelineEdge {
  uint32_t worker;  // dense index; for messages the sender
  uint32_t remote;  // receiver of a message, kNone for timeline edges
  int64_t start, end;
  uint32_t op;  // kNone if none
  ActivityType type;
  double cp;
};
struct Timeline {
  WindowSummary summary;
  std::vector<TimelineEdge> edges;  // timeline edges, then messages
  uint64_t dropped_edges = 0;       // beyond ReportOptions::timeline_edges
  double score = 0;                 // CP of the window's most critical activity
};

// Workers are keyed by their id, not by the dense index of the PAG a window came from, so
// windows of different PAGs (serve cuts a new one per batch of windows) add up; `names`
// maps the window's dense indices to ids and names.
class ReportBuilder {
 public:
  explicit ReportBuilder(ReportOptions options);

  // Adds the next window (windows must come in time order). The view's timeline is
  // kept if the window is the first, the latest, or among the most concentrated.
  void add(const WindowView& view, const Names& names);
  // Adds a window known only by its summary (no timeline).
  void add(const WindowSummary& summary, const Names& names);
  // Adds a window whose timeline was extracted already (extract_timeline with
  // options.timeline_edges, e.g. on the thread that analyzed the window).
  void add(const WindowSummary& summary, const Names& names, Timeline&& timeline);
  // Counts a recoverable input problem of the whole trace (e.g. an importer's repairs,
  // Trace::import_diagnostics); shown in the diagnostics panel.
  void add_input_diagnostic(const std::string& kind, uint64_t n) {
    aggregate_.diagnostics.add_input(kind, n);
  }

  // The report data as a JSON object (schema: docs/REPORT.md). Can be called any time,
  // also between windows; the builder stays usable.
  std::string json() const;

  // For tests: the reduced state.
  const std::deque<SeriesPoint>& points() const { return points_; }
  const Aggregate& aggregate() const { return aggregate_; }
  uint64_t bucket_windows() const { return bucket_windows_; }
  std::vector<const Timeline*> timelines() const;

 private:
  // The summary with dense worker indices replaced by this builder's stable slots.
  WindowSummary remap(const WindowSummary& w, const Names& names, size_t min_workers = 0);
  void add_summary(const WindowSummary& w);
  void maybe_keep_timeline(Timeline&& t, const WindowSummary& remapped);
  void merge_pairs();

  std::unordered_map<uint32_t, uint32_t> slot_of_;  // worker id -> slot
  std::vector<uint32_t> slot_map_;                  // the current window's dense index -> slot
  std::vector<std::string> worker_names_;           // by slot
  std::unordered_map<uint32_t, std::string> op_names_;
  ReportOptions opt_;
  Aggregate aggregate_;
  std::deque<SeriesPoint> points_;
  uint64_t bucket_windows_ = 1;  // windows per point (a power of two)
  uint64_t windows_ = 0;
  Timeline first_, latest_;
  bool have_first_ = false, have_latest_ = false;
  std::vector<Timeline> best_;  // min-heap by score, at most timelines - 2
  struct Top {
    TopActivity activity;
    uint64_t window;
  };
  std::vector<Top> top_;  // the most critical activities of any window, by their window CP
};

// Helpers exposed for tests.
// Keeps the `keep` groups with the largest cp + conv (ties: smaller id), sorted by id, and
// adds the rest to other_cp/other_conv.
void keep_largest(std::vector<SeriesPoint::Group>& groups, size_t keep, double& other_cp,
                  double& other_conv);
// Merges point b (the later one) into a.
void merge_points(SeriesPoint& a, const SeriesPoint& b, size_t keep);
// Extracts a window's edges, keeping at most max_edges (highest CP first, then longest).
Timeline extract_timeline(const WindowView& view, size_t max_edges);

// The self-contained report page with `report_json` embedded.
std::string render_report_html(const std::string& report_json);
// The same page for `serve`: polls GET /api/report every second and redraws.
std::string render_dashboard_html();

}  // namespace snailtrail::report
