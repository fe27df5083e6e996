// The "Job graph" of a dataflow trace (docs/REPORT.md, "Job graph"), the view Flink's web
// UI users know: operators as nodes, the channels data messages reveal as edges, and per
// operator and worker the busy time, the output time and the critical participation; over
// time, per worker, the same three and the windows in which nothing completed (stalls).
// Fed window by window beside the ReportBuilder, in bounded memory (points merge pairwise
// like the report's time series); its JSON is the report data's "jobgraph" member.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "output/names.hpp"
#include "summary/analysis.hpp"

namespace snailtrail::report {

struct JobGraphOptions {
  size_t max_points = 240;  // time points; adjacent points merge pairwise beyond this
  size_t max_workers = 64;  // workers with a series over time (the first by id)
};

// What one window adds, taken from its snapshot on the thread that analyzed it.
struct JobGraphWindow {
  struct Cell {
    uint32_t op;            // operator id, kNone for the worker's activities without one
    uint32_t worker;        // worker id
    int64_t busy_ns = 0;    // every activity but waiting
    int64_t output_ns = 0;  // serialization + buffer: getting output onto channels
    double cp = 0;          // CP of the edges (the window's share of its critical paths)
    bool ran = false;       // an edge of any type (waiting too): the operator ran here
  };
  struct Link {
    uint32_t from, to;  // sending and receiving operator ids
    uint64_t messages;
  };
  uint64_t index = 0;
  int64_t start = 0, end = 0;
  uint64_t completed = 0;   // operator activities (not waiting) that ended in the window
  std::vector<Cell> cells;  // by (worker, op)
  std::vector<Link> links;  // data messages sent in the window, by (from, to)
};

// A window's contribution (exposed for tests).
JobGraphWindow extract_job_graph_window(const WindowView& view);
// A window's contribution as bytes, for `mpirun ... report` (a rank sends it to rank 0
// with the window): appended to `out`; read back from `in` at `pos` (advanced), throwing
// std::runtime_error on bytes that are cut.
void append_job_graph_window(std::string& out, const JobGraphWindow& w);
void read_job_graph_window(std::string_view in, size_t& pos, JobGraphWindow& w);

class JobGraphBuilder {
 public:
  explicit JobGraphBuilder(JobGraphOptions options = {}) : opt_(options) {}

  // The pipeline's callbacks: render on the worker threads, consume in window order
  // (also for runs of windows without events: they are stalls).
  void render(const WindowView& view);
  void consume(const WindowSummary& summary, const Names& names);
  // The same for a window extracted already.
  void add(const WindowSummary& summary, const Names& names, JobGraphWindow&& w);

  // The "jobgraph" object (schema: docs/REPORT.md); "null" before any window. Takes in a
  // run of windows without events still held.
  std::string json();
  // The closed loop's decisions and migrations, a JSON array (loop_marks_json).
  void set_marks(std::string marks) { marks_ = std::move(marks); }

 private:
  struct Acc {
    int64_t busy_ns = 0, output_ns = 0;
    double cp = 0;  // CP * cp_ns of the windows with paths, summed
  };
  struct Point {
    uint64_t w0 = 0, w1 = 0, windows = 0, stalls = 0;
    int64_t t0 = 0, t1 = 0, cp_weight = 0;
    std::vector<Acc> workers;  // by slot, at most max_workers
  };
  void add_now(const WindowSummary& summary, const Names& names, JobGraphWindow&& w);
  void take_run();
  uint32_t slot(uint32_t worker_id, const Names& names);
  void push(Point&& p);

  JobGraphOptions opt_;
  // A run of windows without events is held until the next window with events (or the
  // end): a run split where two ranks' shares meet is one run, so the points are the same
  // under mpirun as in one process.
  EmptyRunMerger run_;
  const Names* run_names_ = nullptr;
  std::mutex mu_;
  std::unordered_map<uint64_t, JobGraphWindow> pending_;  // rendered, not yet consumed

  std::unordered_map<uint32_t, uint32_t> slot_of_;  // worker id -> slot
  std::vector<std::string> worker_names_;           // by slot
  std::map<uint32_t, std::string> op_names_;
  std::map<std::pair<uint32_t, uint32_t>, Acc> cells_;  // (op, slot); op kNone: no operator
  std::map<std::pair<uint32_t, uint32_t>, bool> ran_;   // (op, slot) with any edge
  std::map<uint32_t, double> op_cp_;                    // summary CP * cp_ns, summed
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> links_;
  int64_t cp_weight_ = 0;  // cp_ns of the windows with paths, summed (as Aggregate)
  int64_t length_ns_ = 0;  // all windows' length, summed
  uint64_t windows_ = 0, stalls_ = 0;
  std::deque<Point> points_;
  uint64_t windows_per_point_ = 1;
  std::string marks_ = "[]";
};

// The decisions and migrations of `run --stats-json` (docs/CLOSED-LOOP.md) as the Job
// graph's marks: [{"kind": "decision", "t_ns", "text"}, {"kind": "migration", "t0_ns",
// "t1_ns", "text"}, ...], at trace time (the run's clock: time_s * 1e9). Throws TraceError
// naming `source` for text that is not such a file.
std::string loop_marks_json(const std::string& text, const std::string& source);
// The same for the file at `path` (unreadable: TraceError).
std::string loop_marks_from_file(const std::string& path);

}  // namespace snailtrail::report
