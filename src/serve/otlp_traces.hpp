// The traces `serve --otlp` is still receiving (docs/SERVE.md, "OpenTelemetry (OTLP/HTTP)
// receiver"): spans grouped by trace id as requests bring them; a trace is complete once
// no span of it has arrived for the idle time. Bounds on the open traces and their spans
// keep memory bounded: over them, the least recently added-to traces are completed early
// (evicted, counted); a span of theirs arriving later starts a new trace of the same id.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "importers/otel/spans.hpp"

namespace snailtrail::serve {

struct OtlpTraceLimits {
  int64_t idle_ns = 5'000'000'000;  // --trace-idle
  size_t max_open_traces = 100'000;
  size_t max_open_spans = size_t{1} << 20;
};

class OpenTraces {
 public:
  explicit OpenTraces(const OtlpTraceLimits& limits) : limits_(limits) {}

  // Adds a request's spans, arrived at `now_ns` (any monotonic clock); traces pushed out
  // by the bounds are appended to `done`, resolved (importers::resolve_spans).
  void add(const importers::SpanSet& batch, int64_t now_ns, std::vector<importers::SpanSet>& done);
  // Appends the traces no span has joined since `now_ns - idle_ns`, least recent first.
  void take_idle(int64_t now_ns, std::vector<importers::SpanSet>& done);
  // Appends every open trace (at shutdown).
  void take_all(std::vector<importers::SpanSet>& done);

  size_t open_traces() const { return open_.size(); }
  size_t open_spans() const { return spans_; }
  uint64_t evicted_traces() const { return evicted_; }

 private:
  struct Open {
    importers::SpanSet set;
    int64_t last_ns = 0;
    std::list<std::string>::iterator order;  // in order_
  };
  void complete(const std::string& trace, std::vector<importers::SpanSet>& done);

  OtlpTraceLimits limits_;
  std::unordered_map<std::string, Open> open_;
  std::list<std::string> order_;  // trace ids, least recently added-to first
  size_t spans_ = 0;
  uint64_t evicted_ = 0;
  // Scratch of add(): the batch's spans ordered by trace (counting sort by dense id).
  std::vector<uint32_t> by_trace_, next_, order_in_batch_;
};

}  // namespace snailtrail::serve
