// The "Tasks per stage" view of Spark event logs (stages.hpp).
#include "report/stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string_view>

#include "output/names.hpp"
#include "output/writers.hpp"
#include "report/page_embed.hpp"
#include "report/web_assets.hpp"

namespace snailtrail::report {

namespace {

// Nearest rank (as the waterfall's picks): the ceil(p/100 * n)-th smallest, n > 0.
int64_t nearest_rank(const std::vector<int64_t>& sorted, int pc) {
  const auto n = static_cast<double>(sorted.size());
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(pc / 100.0 * n)));
  return sorted[std::min(rank, sorted.size()) - 1];
}

}  // namespace

std::vector<StageSummary> summarize_stages(const importers::spark::TaskTable& table,
                                           const std::vector<std::pair<uint32_t, double>>& cp) {
  std::map<uint32_t, size_t> index;  // stage id -> position in `out` (few stages)
  std::vector<StageSummary> out;
  auto of = [&](uint32_t id) -> StageSummary& {
    auto [it, fresh] = index.emplace(id, out.size());
    if (fresh) {
      out.emplace_back();
      out.back().id = id;
    }
    return out[it->second];
  };
  for (const auto& s : table.stages) {
    StageSummary& st = of(s.id);
    ++st.attempts;
    if (st.name.empty()) st.name = s.name;
    for (uint32_t p : s.parents)
      if (std::find(st.parents.begin(), st.parents.end(), p) == st.parents.end())
        st.parents.push_back(p);
  }
  std::sort(out.begin(), out.end(),
            [](const StageSummary& a, const StageSummary& b) { return a.id < b.id; });
  index.clear();
  for (size_t k = 0; k < out.size(); ++k) index.emplace(out[k].id, k);

  // Durations grouped by stage: one flat array, sorted per stage.
  std::vector<std::pair<size_t, int64_t>> durations;  // (stage position, duration)
  durations.reserve(table.tasks.size());
  for (const auto& t : table.tasks) {
    StageSummary& st = of(t.stage_id);  // a task always names a stage the parser kept
    const size_t at = index.at(t.stage_id);
    if (t.failed) {
      ++st.failed_tasks;
      continue;
    }
    ++st.tasks;
    st.gc_ns += t.gc_ns;
    st.total_ns += t.duration_ns;
    st.shuffle_read_bytes += t.shuffle_read_bytes;
    st.shuffle_write_bytes += t.shuffle_write_bytes;
    st.memory_spill_bytes += t.memory_spill_bytes;
    st.disk_spill_bytes += t.disk_spill_bytes;
    durations.emplace_back(at, t.duration_ns);
  }
  std::sort(durations.begin(), durations.end());
  std::vector<int64_t> sorted;
  for (size_t b = 0; b < durations.size();) {
    size_t e = b;
    sorted.clear();
    while (e < durations.size() && durations[e].first == durations[b].first)
      sorted.push_back(durations[e++].second);
    StageSummary& st = out[durations[b].first];
    st.min_ns = sorted.front();
    st.median_ns = nearest_rank(sorted, 50);
    st.p95_ns = nearest_rank(sorted, 95);
    st.max_ns = sorted.back();
    st.skew = st.median_ns > 0 ? static_cast<double>(st.max_ns) / st.median_ns : 0;
    st.skewed = sorted.size() >= 2 && st.max_ns > 0 &&
                static_cast<double>(st.max_ns) >= kSkewFlag * static_cast<double>(st.median_ns);
    // Equal-width bins from min to max; the max falls in the last bin.
    st.histogram.assign(kStageHistogramBins, 0);
    const int64_t width = st.max_ns - st.min_ns;
    for (int64_t d : sorted) {
      size_t bin = width > 0 ? static_cast<size_t>(static_cast<double>(d - st.min_ns) /
                                                   static_cast<double>(width) * kStageHistogramBins)
                             : 0;
      ++st.histogram[std::min(bin, kStageHistogramBins - 1)];
    }
    b = e;
  }
  for (const auto& [op, value] : cp) {
    auto it = index.find(op);
    if (it != index.end()) out[it->second].cp = value;
  }
  // Parents Spark skipped (their output was reused) are not stages of the log: no edge.
  for (StageSummary& st : out)
    std::erase_if(st.parents, [&](uint32_t p) { return !index.contains(p); });
  return out;
}

std::string stages_json(const StagesPage& page, const std::vector<StageSummary>& stages) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  uint64_t tasks = 0;
  for (const auto& s : stages) tasks += s.tasks;
  fmt::format_to(it, "{{\"schema\":1,\"view\":\"stages\",\"source\":");
  append_json_string(out, page.source, kJsonNames);
  fmt::format_to(it, ",\"window\":");
  append_json_string(out, page.window, kJsonNames);
  fmt::format_to(it,
                 ",\"windows\":{},\"windows_with_paths\":{},\"stages_total\":{},\"tasks_total\":{},"
                 "\"skew_flag\":{},\"import_diagnostics\":",
                 page.windows, page.windows_with_paths, stages.size(), tasks, kSkewFlag);
  put_counts(out, page.diagnostics, /*compact=*/true);
  fmt::format_to(it, ",\"stages\":[");
  for (size_t k = 0; k < stages.size(); ++k) {
    const StageSummary& s = stages[k];
    fmt::format_to(it, "{}{{\"id\":{},\"name\":", k ? "," : "", s.id);
    append_json_string(out, s.name, kJsonNames);
    fmt::format_to(
        it, ",\"attempts\":{},\"parents\":[{}],\"tasks\":{},\"failed_tasks\":{},\"cp\":{:.6f}",
        s.attempts, fmt::join(s.parents, ","), s.tasks, s.failed_tasks, s.cp);
    fmt::format_to(it,
                   ",\"duration_ns\":[{},{},{},{}],\"skew\":{:.4f},\"skewed\":{},\"gc_ns\":{},"
                   "\"total_ns\":{},\"shuffle_read_bytes\":{},\"shuffle_write_bytes\":{},"
                   "\"memory_spill_bytes\":{},\"disk_spill_bytes\":{},\"histogram\":[{}]}}",
                   s.min_ns, s.median_ns, s.p95_ns, s.max_ns, s.skew, s.skewed, s.gc_ns, s.total_ns,
                   s.shuffle_read_bytes, s.shuffle_write_bytes, s.memory_spill_bytes,
                   s.disk_spill_bytes, fmt::join(s.histogram, ","));
  }
  fmt::format_to(it, "]}}\n");
  return fmt::to_string(out);
}

std::string render_stages_html(const std::string& stages_json) {
  return embed_page(std::string(assets::kStagesHtml), assets::kStagesJs, stages_json);
}

}  // namespace snailtrail::report
