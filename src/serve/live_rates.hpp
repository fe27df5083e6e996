// DS2 rates of a live stream (docs/SERVE.md "Rates"): `serve` feeds every event its
// analysis accepted to a RateCollector (src/scale) and closes policy intervals as its
// windows close. The last `retain` intervals are kept as JSON for GET /api/rates
// (scale/rates_json.hpp), with the topology learned so far; totals and the latest
// interval's per-operator rates go to /metrics. add/advance/finish come from one thread;
// page() and metrics() may be called from any.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "scale/rate_collector.hpp"
#include "trace/trace.hpp"

namespace snailtrail::serve {

class LiveRates {
 public:
  // Intervals [k * interval, (k + 1) * interval), aligned like serve's windows.
  LiveRates(int64_t interval_ns, size_t retain);

  void add_names(const Trace& names);  // operator and worker names from metadata
  void add(const Event& e);            // each worker's events in time order
  // Closes the intervals that end at or before `watermark_ns`.
  void advance(int64_t watermark_ns);
  // End of the stream: closes the rest, the last interval ending at the last event.
  void finish();

  // The page of retained intervals starting at or after `since_ns`, oldest first.
  std::string page(int64_t since_ns) const;
  // Prometheus text lines (snailtrail_rate_*, snailtrail_operator_*).
  std::string metrics() const;
  int64_t interval_ns() const { return interval_ns_; }

 private:
  void publish(std::vector<scale::IntervalMetrics> closed);

  scale::RateCollector collector_;
  Trace names_;
  int64_t interval_ns_;
  size_t retain_;
  int64_t first_ts_ = INT64_MAX;
  int64_t next_epoch_ = 0;

  mutable std::mutex mu_;                             // guards what the readers see
  std::deque<std::pair<int64_t, std::string>> ring_;  // (start_ns, interval JSON)
  std::string topology_ = "{\"operators\": [], \"edges\": []}";
  int64_t first_published_ = 0;
  uint64_t intervals_ = 0;
  double useful_s_ = 0, processed_ = 0, pushed_ = 0;
  struct OperatorGauge {
    std::string name;
    uint32_t instances;
    double true_processing, observed_processing, observed_output;
  };
  std::vector<OperatorGauge> latest_;  // the latest interval, per operator
};

}  // namespace snailtrail::serve
