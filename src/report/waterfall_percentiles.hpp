// The Waterfall's "Percentiles" panel (docs/REPORT.md, "Waterfall"): the critical time per
// calling context (service:operation stack) of the traces around chosen latency
// percentiles, and their pairwise diffs, computed by `critical-path --percentile` and
// `--diff`'s own functions (requests/folded.hpp) so that the page shows what they print.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "requests/critical_path.hpp"

namespace snailtrail::report {

struct PercentileViewOptions {
  double pick = 99;                 // the percentile the panel opens on (0: all traces)
  double diff_a = 50, diff_b = 99;  // the diff it opens on
  double bucket = 1;                // percentile points either side, as --bucket
  size_t max_rows = 200;            // rows embedded per view; the rest counted
};

// The percentiles embedded: 50, 90, 99, all traces (0), the pick and the diff's two.
std::vector<double> embedded_percentiles(const PercentileViewOptions& opt);

// The panel's data, a JSON object (schema: docs/REPORT.md, "Waterfall"): per embedded
// percentile the folded rows, per pair (a < b) the diff rows.
std::string percentiles_json(const requests::PathCollection& all, const PercentileViewOptions& opt);

}  // namespace snailtrail::report
