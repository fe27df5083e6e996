// The "Waterfall" view of span traces (OTLP, Jaeger) in `snailtrail report`
// (docs/REPORT.md, "Waterfall"): per trace its spans nested by parent on a time axis, with
// the critical sections of requests::critical_paths, for a bounded pick of the traces.
//
// Units of import (importers::stream_spans) are added from any thread in any order; each
// keeps its traces as flat rows (about 80 bytes a span) until json() picks the traces to
// embed: the slowest, plus the p50, p90 and p99 traces by end-to-end latency.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "importers/otel/spans.hpp"
#include "report/waterfall_percentiles.hpp"
#include "requests/critical_path.hpp"

namespace snailtrail::report {

struct WaterfallOptions {
  std::string source;       // file name shown in the title
  size_t max_traces = 200;  // traces embedded: the percentile picks and the slowest
  // The "Percentiles" panel (waterfall_percentiles.hpp): off for serve's one-trace pages.
  bool percentiles = false;
  PercentileViewOptions percentile_view = {};
};

class WaterfallBuilder {
 public:
  explicit WaterfallBuilder(WaterfallOptions opt) : opt_(std::move(opt)) {}

  // One unit of import (`unit` numbers them in file order). Thread-safe.
  void add(size_t unit, const importers::SpanSet& set);
  void add_diagnostic(const std::string& kind, uint64_t n) { diagnostics_.emplace_back(kind, n); }
  void set_skipped(size_t n) { skipped_ = n; }

  size_t traces() const;
  uint64_t spans() const;
  // The page's data (schema: docs/REPORT.md, "Waterfall").
  std::string json() const;

  // One span as a row of its trace, in display order (depth first, children by start).
  struct Row {
    uint32_t parent;  // row index, kNoSpan at a root
    uint32_t depth;
    uint32_t service, operation;  // into Unit::names
    uint32_t id_begin, id_len;    // span id in Unit::ids
    int64_t start_ns, end_ns;     // absolute
    int64_t self_ns;              // duration minus the union of its children (clipped to it)
    int64_t critical_ns;          // time it is on the critical path
    uint8_t kind;                 // importers::SpanKind
  };
  struct Segment {
    uint32_t row;
    int64_t start_ns, end_ns;  // absolute
  };
  struct Trace {
    uint32_t id_begin, id_len;  // trace id in Unit::ids
    int64_t start_ns;           // earliest span start
    int64_t duration_ns;        // the critical path's (sum of the roots' durations)
    uint32_t spans, clipped, dropped, roots, nonblocking;
    uint32_t rows_begin, rows_end;  // into Unit::rows
    uint32_t segs_begin, segs_end;  // into Unit::segments, time order
  };
  struct Unit {
    std::vector<std::string> names;
    std::string ids;
    std::vector<Row> rows;
    std::vector<Segment> segments;
    std::vector<Trace> traces;
  };
  // The rows of one unit (exposed for the tests).
  static Unit build_unit(const importers::SpanSet& set);
  // The same from the set's paths (critical_paths with segments) and tree parents.
  static Unit build_unit(const importers::SpanSet& set,
                         const std::vector<requests::CriticalPath>& paths,
                         const std::vector<uint32_t>& parent);
  // A unit built already (serve's slow traces keep them). Thread-safe.
  void add_unit(size_t unit, Unit u);

 private:
  WaterfallOptions opt_;
  mutable std::mutex mutex_;
  std::vector<std::pair<size_t, Unit>> units_;  // any order; sorted by json()
  // With percentiles: each unit's paths with calling contexts, as `critical-path` keeps them.
  std::vector<std::pair<size_t, requests::UnitPaths>> paths_;
  std::vector<std::pair<std::string, uint64_t>> diagnostics_;
  size_t skipped_ = 0;
};

// The self-contained page of a waterfall's json().
std::string render_waterfall_html(const std::string& waterfall_json);
// The live page of `serve --otlp` (GET /traces): the same page, whose script polls
// api/slow-traces for the picker and fetches api/trace?id= for the Waterfall drawn.
std::string render_live_waterfall_html();

}  // namespace snailtrail::report
