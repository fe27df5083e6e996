// The Waterfall's percentile and diff views (waterfall_percentiles.hpp).
#include "report/waterfall_percentiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <unordered_map>

#include "output/names.hpp"
#include "requests/folded.hpp"

namespace snailtrail::report {

std::vector<double> embedded_percentiles(const PercentileViewOptions& opt) {
  std::vector<double> ps = {0, 50, 90, 99, opt.pick, opt.diff_a, opt.diff_b};
  std::sort(ps.begin(), ps.end());
  ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
  return ps;
}

std::string percentiles_json(const requests::PathCollection& all,
                             const PercentileViewOptions& opt) {
  const std::vector<double> ps = embedded_percentiles(opt);
  // Stacks are long and repeat across views: each is written once, rows refer to it.
  std::vector<std::string> stacks;
  std::unordered_map<std::string, size_t> stack_ids;
  auto stack_id = [&](const std::string& s) {
    auto [it, fresh] = stack_ids.emplace(s, stacks.size());
    if (fresh) stacks.push_back(s);
    return it->second;
  };
  fmt::memory_buffer views;
  auto vi = std::back_inserter(views);
  for (size_t k = 0; k < ps.size(); ++k) {
    size_t traces = 0;
    std::vector<requests::FoldedRow> rows = requests::folded_rows(all, ps[k], opt.bucket, &traces);
    // Most critical first (ties: stack order, as printed); the rest only counted.
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.us > b.us; });
    int64_t total = 0, left_out = 0;
    for (size_t r = 0; r < rows.size(); ++r) (r < opt.max_rows ? total : left_out) += rows[r].us;
    fmt::format_to(vi, "{}{{\"p\":{},\"traces\":{},\"rows_total\":{},\"left_out_us\":{},\"rows\":[",
                   k ? "," : "", ps[k], traces, rows.size(), left_out);
    for (size_t r = 0; r < rows.size() && r < opt.max_rows; ++r)
      fmt::format_to(vi, "{}[{},{}]", r ? "," : "", stack_id(rows[r].stack), rows[r].us);
    fmt::format_to(vi, "]}}");
  }
  fmt::memory_buffer diffs;
  auto di = std::back_inserter(diffs);
  bool first = true;
  for (size_t x = 0; x < ps.size(); ++x)
    for (size_t y = x + 1; y < ps.size(); ++y) {
      size_t ta = 0, tb = 0;
      std::vector<requests::FoldedDiffRow> rows =
          requests::folded_diff_rows(all, ps[x], ps[y], opt.bucket, &ta, &tb);
      // The largest changes either way are kept; the page sorts them by b - a.
      std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        return std::llabs(a.b_us - a.a_us) > std::llabs(b.b_us - b.a_us);
      });
      fmt::format_to(di,
                     "{}{{\"a\":{},\"b\":{},\"traces_a\":{},\"traces_b\":{},\"rows_total\":{},"
                     "\"rows\":[",
                     first ? "" : ",", ps[x], ps[y], ta, tb, rows.size());
      first = false;
      for (size_t r = 0; r < rows.size() && r < opt.max_rows; ++r)
        fmt::format_to(di, "{}[{},{},{}]", r ? "," : "", stack_id(rows[r].stack), rows[r].a_us,
                       rows[r].b_us);
      fmt::format_to(di, "]}}");
    }
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "{{\"bucket\":{},\"max_rows\":{},\"traces\":{},\"pick\":{},\"diff\":[{},{}],"
                 "\"stacks\":[",
                 opt.bucket, opt.max_rows, all.traces().size(), opt.pick, opt.diff_a, opt.diff_b);
  for (size_t k = 0; k < stacks.size(); ++k) {
    if (k) fmt::format_to(it, ",");
    append_json_string(out, stacks[k], kJsonNames);
  }
  fmt::format_to(it, "],\"views\":[");
  out.append(views.data(), views.data() + views.size());
  fmt::format_to(it, "],\"diffs\":[");
  out.append(diffs.data(), diffs.data() + diffs.size());
  fmt::format_to(it, "]}}");
  return fmt::to_string(out);
}

}  // namespace snailtrail::report
