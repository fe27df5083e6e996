// DS2 rates of policy intervals as JSON: what `snailtrail serve` answers on
// GET /api/rates (docs/SERVE.md) and `snailtrail scale manage --serve` reads back
// (docs/AUTOSCALING.md §2). One page:
//
//   {"interval_ns": 1000000000, "first_event_ns": 0,
//    "topology": {"operators": [{"id": 0, "name": "source", "instances": 4}, ...],
//                 "edges": [[0, 1], [1, 2]]},
//    "intervals": [{"epoch": 0, "start_ns": 0, "end_ns": 1000000000, "instances": [
//      {"operator": 1, "operator_name": "flatmap", "instance": 0, "worker": 4,
//       "worker_name": "flatmap-0", "window_s": 1, "useful_s": 0.25,
//       "records_processed": 50, "records_pushed": 500,
//       "true_processing_rate": 200, "true_output_rate": 2000,
//       "observed_processing_rate": 50, "observed_output_rate": 500}, ...]}, ...]}
//
// The four rates are those of DS2's rates CSV (Eq. 4.1-4.4; null when undefined); the
// reader recomputes them from the sums (window_s, useful_s, records), which are written
// in shortest round-trip form, so a decision on a page equals one on the same intervals
// in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "scale/rate_collector.hpp"
#include "scale/topology.hpp"

namespace snailtrail::scale {

using NameOf = std::function<std::string(uint32_t)>;

// One interval's object; `epoch` numbers the intervals of a stream from 0.
std::string interval_json(const IntervalMetrics& m, int64_t epoch, const NameOf& operator_name,
                          const NameOf& worker_name);
// A RateCollector's topology (ids: decimal operator ids) as the page's "topology" object.
std::string topology_json(const Topology& t);
// A whole page from the pieces above (intervals: interval_json objects).
std::string rates_page_json(int64_t interval_ns, int64_t first_event_ns,
                            const std::string& topology, const std::vector<std::string>& intervals);

struct RatesPage {
  int64_t interval_ns = 0;
  int64_t first_event_ns = 0;  // earliest event in the stream (0 before any)
  Topology topology;           // ids: decimal operator ids
  struct Interval {
    int64_t epoch = 0;
    IntervalMetrics metrics;                  // op: the operator id
    std::vector<std::string> operator_names;  // per instance, as the page names them
  };
  std::vector<Interval> intervals;
};

// Throws std::invalid_argument with what is wrong (not JSON, a field missing or of the
// wrong type, an edge naming an unknown operator).
RatesPage parse_rates_page(std::string_view json);

}  // namespace snailtrail::scale
