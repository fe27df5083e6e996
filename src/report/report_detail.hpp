// Shared by the report builder (report.cpp) and its JSON writer (report_json.cpp).
// Internal to src/report.
#pragma once

#include <vector>

#include "report/report.hpp"

namespace snailtrail::report::detail {

// Groups by id from a dense vector (workers) or a sorted (id, value) list (operators),
// their CP and conventional values scaled by cp_w and conv_w.
std::vector<SeriesPoint::Group> worker_groups(const WindowSummary& w, double cp_w, double conv_w);
std::vector<SeriesPoint::Group> op_groups(const WindowSummary& w, double cp_w, double conv_w);

}  // namespace snailtrail::report::detail
