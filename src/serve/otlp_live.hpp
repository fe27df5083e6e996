// `serve --otlp`'s live view of the completed traces' critical paths (docs/SERVE.md,
// "Live critical paths"): per-service critical time since the start for /metrics, and the
// traces completed in the last --otlp-window for `GET /api/critical-path`, answered by
// the same code as `critical-path` (its "services" JSON, its folded stacks around a
// percentile, its percentile diff), so that the live answer equals the file's.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "requests/critical_path.hpp"

namespace httplib {
class Server;
}

namespace snailtrail::serve {

// The steady clock in ns: the receiver's time of completion and of queries.
int64_t steady_now_ns();

struct OtlpLiveLimits {
  int64_t window_ns = int64_t{300} * 1'000'000'000;  // --otlp-window
  size_t max_traces = 20'000;                        // --otlp-window-traces
};

// What `GET /api/critical-path` asks (its query parameters).
struct CriticalPathQuery {
  double minutes = 0;     // ?minutes=: the traces completed this recently (0: the window)
  double percentile = 0;  // ?percentile=: only the traces around it (0: all)
  double bucket = 1;      // ?bucket=: percentile points either side
  bool folded = false;    // ?format=folded: folded stacks (text), not JSON
  bool diff = false;      // ?diff=A,B: the folded diff of two percentiles
  double diff_a = 0, diff_b = 0;
};
// Parses the query parameters (name, value); throws std::invalid_argument naming a bad one.
CriticalPathQuery parse_critical_path_query(
    const std::vector<std::pair<std::string, std::string>>& params);

class OtlpLivePaths {
 public:
  explicit OtlpLivePaths(OtlpLiveLimits limits) : limits_(limits) {}
  // Traces completed at now_ns, as summarize_paths made them (a unit per trace), and
  // `all`, a collection of the same units (their per-service totals are taken from it).
  void add(std::vector<requests::UnitPaths> units, const requests::PathCollection& all,
           int64_t now_ns);
  // Prometheus text: critical seconds and spans on the path per service since the start.
  std::string metrics() const;
  // The answer to `GET /api/critical-path`: JSON, or folded text if the query asks.
  std::string answer(const CriticalPathQuery& q, int64_t now_ns) const;

 private:
  struct Completed {
    int64_t at_ns;
    requests::UnitPaths unit;
  };
  struct Total {
    int64_t critical_ns = 0;
    uint64_t spans_on_path = 0;
  };
  void expire(int64_t now_ns);  // with mu_ held

  OtlpLiveLimits limits_;
  mutable std::mutex mu_;
  std::deque<Completed> recent_;
  size_t recent_traces_ = 0;
  uint64_t dropped_ = 0;
  std::unordered_map<std::string, Total> totals_;
};

// GET /api/critical-path on `http` (the receiver's own port, and serve --http's beside it).
void add_critical_path_route(httplib::Server& http, const OtlpLivePaths& live);

}  // namespace snailtrail::serve
