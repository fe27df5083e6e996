// `serve --otlp`'s slow traces (docs/SERVE.md, "Slow traces"): the spans of the slowest
// traces completed recently, kept as the Waterfall's rows (report/waterfall.hpp) so that
// `GET /traces` draws them as `report` draws a span file. A min-heap by latency holds at
// most --slow-traces of them (and --slow-traces-spans spans); a trace older than
// --slow-window leaves it. A trace is built into rows only when the heap takes it: the
// receiver asks wants() with the latency it has already computed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "report/waterfall.hpp"

namespace httplib {
class Server;
}

namespace snailtrail::serve {

struct SlowTraceLimits {
  size_t max_traces = 50;                            // --slow-traces (0: none kept)
  int64_t window_ns = int64_t{300} * 1'000'000'000;  // --slow-window
  size_t max_spans = 200'000;                        // --slow-traces-spans: of all kept traces
};

class SlowTraces {
 public:
  using Unit = report::WaterfallBuilder::Unit;
  explicit SlowTraces(SlowTraceLimits limits) : limits_(limits) {}

  // Whether a trace of this latency and size, completed at now_ns (steady clock), would
  // be kept: the heap has room, or its fastest is faster. Drops what is older than the window.
  bool wants(int64_t duration_ns, size_t spans, int64_t now_ns);
  // Keeps a unit of one trace (WaterfallBuilder::build_unit), completed at now_ns (steady)
  // and wall_ms (Unix ms, shown); evicts the fastest over the bounds.
  void add(Unit unit, int64_t now_ns, int64_t wall_ms);

  // GET /api/slow-traces: the kept traces of the window, slowest first.
  std::string list_json(int64_t now_ns) const;
  // GET /api/trace?id=: the Waterfall data of one kept trace, as `report --traces 1 -f
  // json` writes it for a file of that trace; "" if it is not kept.
  std::string trace_json(const std::string& id) const;

  size_t size() const;
  size_t spans() const;
  const SlowTraceLimits& limits() const { return limits_; }

 private:
  struct Kept {
    int64_t duration_ns, at_ns, wall_ms;
    uint64_t seq;  // arrival: of equal latencies, the newer goes first
    size_t spans;
    std::shared_ptr<const Unit> unit;  // shared with a request drawing it
  };
  static bool faster(const Kept& a, const Kept& b);  // the heap's order: top is the fastest
  void expire(int64_t now_ns);                       // with mu_ held
  void pop_fastest();                                // with mu_ held

  SlowTraceLimits limits_;
  mutable std::mutex mu_;
  std::vector<Kept> heap_;
  size_t spans_ = 0;
  uint64_t seq_ = 0;
};

// GET /traces (the live Waterfall page), /api/slow-traces and /api/trace on `http`; the
// server's pre-routing handler (auth) applies to them as to its other routes.
void add_slow_trace_routes(httplib::Server& http, const SlowTraces& slow);

}  // namespace snailtrail::serve
