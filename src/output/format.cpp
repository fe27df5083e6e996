// The shared helpers of the output formats (output/format.hpp) and the --summary list.
#include "output/format.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "output/writers.hpp"

namespace snailtrail {
namespace output_detail {

std::string percent(double v) {
  return fmt::format("{:5.1f}%", v * 100);
}

std::string format_ns(int64_t ns) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3) return fmt::format("{}ns", ns);
  if (a < 1e6) return fmt::format("{:.4g}us", v / 1e3);
  if (a < 1e9) return fmt::format("{:.4g}ms", v / 1e6);
  if (a < 1e4 * 1e9) return fmt::format("{:.4g}s", v / 1e9);
  return fmt::format("{:.4g}h", v / 3.6e12);
}

std::string application_coverage(const Aggregate& agg, const Trace::Application& app) {
  if (agg.covered_first > agg.covered_last) return {};
  const std::string range = fmt::format("from +{} to +{}", format_ns(agg.covered_first - app.start),
                                        format_ns(agg.covered_last - app.start));
  if (!app.end)
    return fmt::format("over {} of the application ({} after its start; the log has no end)",
                       format_ns(agg.covered_ns), range);
  return fmt::format("over {} of the application's {} ({})", format_ns(agg.covered_ns),
                     format_ns(*app.end - app.start), range);
}

std::string what_if_name(const WhatIf& x, const Names& names) {
  switch (x.kind) {
    case WhatIfKind::worker:
      return names.worker[x.id];
    case WhatIfKind::op:
      return names.op(x.id);
    case WhatIfKind::activity:
      return std::string(name_of(static_cast<ActivityType>(x.id)));
  }
  return {};
}

}  // namespace output_detail

SummarySelection SummarySelection::parse(const std::string& list) {
  SummarySelection s{false, false, false, false, false, false, false};
  std::stringstream ss(list);
  std::string item;
  bool any = false;
  // The summaries by name, in the order the error message lists them.
  static constexpr std::pair<const char*, bool SummarySelection::*> kSummaries[] = {
      {"activity", &SummarySelection::activity},
      {"worker", &SummarySelection::worker},
      {"operator", &SummarySelection::op},
      {"communication", &SummarySelection::communication},
      {"top", &SummarySelection::top},
      {"diagnostics", &SummarySelection::diagnostics},
      {"verdict", &SummarySelection::verdict}};
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    any = true;
    if (item == "all") {
      s = SummarySelection{};
      continue;
    }
    auto it = std::find_if(std::begin(kSummaries), std::end(kSummaries),
                           [&](const auto& k) { return item == k.first; });
    if (it == std::end(kSummaries)) {
      std::string names;
      for (const auto& [name, flag] : kSummaries) names += std::string(name) + ", ";
      throw std::invalid_argument("unknown summary \"" + item + "\" (expected " +
                                  names.substr(0, names.size() - 2) + " or all)");
    }
    s.*(it->second) = true;
  }
  if (!any) throw std::invalid_argument("empty summary list");
  return s;
}

}  // namespace snailtrail
