// The "Critical flow" view of kernel traces (critical_flow.hpp).
#include "report/critical_flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <stdexcept>

#include "output/names.hpp"
#include "output/writers.hpp"
#include "report/page_embed.hpp"
#include "report/web_assets.hpp"

namespace snailtrail::report {
namespace {

using kernel::kPathStateCount;
using kernel::PathState;
using StateTimes = std::array<int64_t, kPathStateCount>;

int64_t total_of(const StateTimes& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{0});
}

// A path's time per thread (model index) and state, the largest total first (ties: index).
std::vector<std::pair<int32_t, StateTimes>> time_per_thread(const kernel::CriticalPathResult& r) {
  std::map<int32_t, StateTimes> by;
  for (const kernel::PathSegment& s : r.path) {
    auto [it, fresh] = by.try_emplace(s.thread);
    if (fresh) it->second.fill(0);
    it->second[static_cast<int>(s.state)] += s.end - s.start;
  }
  std::vector<std::pair<int32_t, StateTimes>> out(by.begin(), by.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return total_of(a.second) > total_of(b.second);
  });
  return out;
}

// Thread changes along the path: where it moves from one thread's lane to another's.
uint64_t count_hops(const std::vector<kernel::PathSegment>& path, size_t n) {
  uint64_t hops = 0;
  for (size_t k = 1; k < n; ++k) hops += path[k].thread != path[k - 1].thread;
  return hops;
}

// A lane: the thread's intervals clipped to [from, to] as path states, adjacent ones of
// one state merged; beyond `cap`, only the longest `cap` are kept (in time order).
void fill_lane(const kernel::Thread& th, int64_t from, int64_t to, size_t cap, FlowThread& out) {
  std::vector<FlowInterval>& ivs = out.intervals;
  for (const kernel::Interval& iv : th.intervals) {
    const int64_t s = std::max(iv.start, from), e = std::min(iv.end, to);
    if (e <= s) continue;
    const PathState st = kernel::path_state(iv);
    if (!ivs.empty() && ivs.back().end == s && ivs.back().state == st)
      ivs.back().end = e;
    else
      ivs.push_back({s, e, st});
  }
  out.intervals_merged = ivs.size();
  if (ivs.size() <= cap) return;
  std::vector<uint32_t> order(ivs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(cap), order.end(),
                   [&](uint32_t a, uint32_t b) {
                     const int64_t la = ivs[a].end - ivs[a].start, lb = ivs[b].end - ivs[b].start;
                     return la != lb ? la > lb : a < b;
                   });
  order.resize(cap);
  std::sort(order.begin(), order.end());
  std::vector<FlowInterval> kept;
  kept.reserve(cap);
  for (uint32_t k : order) kept.push_back(ivs[k]);
  ivs.swap(kept);
}

}  // namespace

CriticalFlow build_critical_flow(const kernel::KernelModel& m, const CriticalFlowOptions& o) {
  CriticalFlow f;
  f.from = o.from_given ? o.from : m.begin;
  f.to = o.to_given ? o.to : m.end;
  if (f.to <= f.from)
    throw std::invalid_argument(m.source + ": the range holds no time (--from/--to)");

  // Each thread's running / preempted / blocked time within the range.
  const size_t n = m.threads.size();
  std::vector<std::array<int64_t, 3>> by(n, {0, 0, 0});
  std::vector<int32_t> candidates;
  for (size_t t = 0; t < n; ++t) {
    for (const kernel::Interval& iv : m.threads[t].intervals) {
      const int64_t s = std::max(iv.start, f.from), e = std::min(iv.end, f.to);
      if (e > s) by[t][static_cast<int>(iv.state)] += e - s;
    }
    if (by[t][0] + by[t][1] + by[t][2] > 0) candidates.push_back(static_cast<int32_t>(t));
  }
  if (candidates.empty() && o.thread < 0)
    throw std::invalid_argument(m.source + ": no thread has traced time in the range");
  auto by_running = [&](int32_t a, int32_t b) {
    return by[a][0] != by[b][0] ? by[a][0] > by[b][0] : a < b;
  };
  std::sort(candidates.begin(), candidates.end(), by_running);
  f.candidates = candidates.size();

  // The picker: the K threads with the most running time, and the one asked for.
  std::vector<int32_t> picker(
      candidates.begin(),
      candidates.begin() + static_cast<std::ptrdiff_t>(std::min(o.paths, candidates.size())));
  if (o.thread >= 0 && std::find(picker.begin(), picker.end(), o.thread) == picker.end()) {
    if (!picker.empty() && picker.size() >= std::max<size_t>(o.paths, 1)) picker.pop_back();
    picker.push_back(o.thread);
    std::sort(picker.begin(), picker.end(), by_running);
  }

  // Each picked thread's path, over its own first to last event as `kernel critical-path`
  // computes it by default, or over --from/--to.
  std::vector<kernel::CriticalPathResult> results;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int32_t t : picker) {
    const auto& ivs = m.threads[t].intervals;
    int64_t a = ivs.empty() ? m.begin : ivs.front().start;
    int64_t b = ivs.empty() ? m.end : ivs.back().end;
    if (o.from_given) a = o.from;
    if (o.to_given) b = o.to;
    ranges.emplace_back(a, b);
    results.push_back(kernel::critical_path(m, t, a, b));
  }
  // The page opens on --thread, else on the path with the most wake-up hops (ties: the
  // most running time): the one that shows the most of the flow between threads.
  f.initial = 0;
  uint64_t best = 0;
  for (size_t p = 0; p < picker.size(); ++p) {
    if (o.thread >= 0) {
      if (picker[p] == o.thread) f.initial = p;
      continue;
    }
    const uint64_t h = count_hops(results[p].path, results[p].path.size());
    if (h > best) best = h, f.initial = p;
  }

  // Lane order: the initial path's thread and its path's threads (most time on the path
  // first), then the other paths' likewise, then the rest by running time.
  std::vector<std::vector<std::pair<int32_t, StateTimes>>> per_thread;
  for (const auto& r : results) per_thread.push_back(time_per_thread(r));
  std::vector<int32_t> order;
  std::vector<char> seen(n, 0), on_path(n, 0);
  auto add = [&](int32_t t) {
    if (!seen[t]) seen[t] = 1, order.push_back(t);
  };
  std::vector<size_t> path_order(picker.size());
  std::iota(path_order.begin(), path_order.end(), size_t{0});
  if (!path_order.empty())
    std::rotate(path_order.begin(), path_order.begin() + static_cast<std::ptrdiff_t>(f.initial),
                path_order.begin() + static_cast<std::ptrdiff_t>(f.initial) + 1);
  for (size_t p : path_order) {
    add(picker[p]);
    on_path[picker[p]] = 1;
    for (const auto& [t, times] : per_thread[p]) add(t), on_path[t] = 1;
  }
  for (int32_t t : candidates) add(t);

  const size_t lanes = std::min(o.lanes, order.size());
  f.lanes_left_out = order.size() - lanes;
  const size_t cap = std::max<size_t>(64, o.lane_intervals / std::max<size_t>(lanes, 1));
  std::vector<int32_t> index(n, -1);  // model index -> index in f.threads
  for (size_t k = 0; k < order.size(); ++k) {
    const int32_t t = order[k];
    if (k >= lanes && !on_path[t]) continue;
    index[t] = static_cast<int32_t>(f.threads.size());
    FlowThread& ft = f.threads.emplace_back();
    ft.thread = t;
    ft.running_ns = by[t][0];
    ft.preempted_ns = by[t][1];
    ft.blocked_ns = by[t][2];
    ft.lane = k < lanes;
    if (ft.lane) fill_lane(m.threads[t], f.from, f.to, cap, ft);
  }

  for (size_t p = 0; p < picker.size(); ++p) {
    FlowPath& fp = f.paths.emplace_back();
    fp.thread = static_cast<uint32_t>(index[picker[p]]);
    fp.from = ranges[p].first;
    fp.to = ranges[p].second;
    fp.result = std::move(results[p]);
    const auto& path = fp.result.path;
    fp.kept = std::min(path.size(), o.path_segments);
    fp.hops_total = count_hops(path, path.size());
    for (size_t k = 1; k < fp.kept; ++k)
      if (path[k].thread != path[k - 1].thread)
        fp.hops.push_back({path[k].start, static_cast<uint32_t>(index[path[k - 1].thread]),
                           static_cast<uint32_t>(index[path[k].thread])});
    for (const auto& [t, times] : per_thread[p])
      fp.per_thread.emplace_back(static_cast<uint32_t>(index[t]), times);
  }
  return f;
}

std::string critical_flow_json(const kernel::KernelModel& m, const CriticalFlow& f,
                               const CriticalFlowOptions& o) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  const int64_t t0 = f.from;
  uint64_t drawn = 0, merged = 0, lanes = 0;
  for (const FlowThread& t : f.threads) {
    drawn += t.intervals.size();
    merged += t.intervals_merged;
    lanes += t.lane;
  }
  fmt::format_to(it, "{{\"schema\":1,\"view\":\"critical-flow\",\"source\":");
  append_json_string(out, o.source, kJsonNames);
  fmt::format_to(it, ",\"format\":");
  append_json_string(out, o.format, kJsonNames);
  fmt::format_to(it,
                 ",\"t0_ns\":{},\"duration_ns\":{},\"range\":\"{}\",\"events\":{},"
                 "\"threads_total\":{},\"candidates\":{},\"lanes\":{},\"lanes_left_out\":{},"
                 "\"intervals_total\":{},\"intervals_drawn\":{},\"intervals_left_out\":{},"
                 "\"paths_total\":{},\"initial\":{},\"states\":[",
                 t0, f.to - f.from, o.from_given || o.to_given ? "given" : "trace", m.events,
                 m.threads.size(), f.candidates, lanes, f.lanes_left_out, merged, drawn,
                 merged - drawn, f.paths.size(), f.initial);
  for (int s = 0; s < kPathStateCount; ++s)
    fmt::format_to(it, "{}\"{}\"", s ? "," : "", kernel::name_of(static_cast<PathState>(s)));
  fmt::format_to(it, "],\"threads\":[");
  for (size_t k = 0; k < f.threads.size(); ++k) {
    const FlowThread& t = f.threads[k];
    fmt::format_to(it, "{}{{\"tid\":{},\"comm\":", k ? "," : "", m.threads[t.thread].tid);
    append_json_string(out, m.comm(t.thread), kJsonNames);
    fmt::format_to(it, ",\"label\":");
    append_json_string(out, m.thread_label(t.thread), kJsonNames);
    fmt::format_to(it,
                   ",\"running_ns\":{},\"preempted_ns\":{},\"blocked_ns\":{},\"lane\":{},"
                   "\"iv_left_out\":{},\"iv\":[",
                   t.running_ns, t.preempted_ns, t.blocked_ns, t.lane,
                   t.intervals_merged - t.intervals.size());
    for (size_t i = 0; i < t.intervals.size(); ++i) {
      const FlowInterval& iv = t.intervals[i];
      fmt::format_to(it, "{}{},{},{}", i ? "," : "", iv.start - t0, iv.end - t0,
                     static_cast<int>(iv.state));
    }
    fmt::format_to(it, "]}}");
  }
  // Interrupt names of the segments, indexed from the segments.
  std::vector<std::string> irqs;
  auto irq_index = [&](const kernel::IrqContext& c) -> int {
    if (c.kind == kernel::IrqKind::none) return -1;
    const std::string label = kernel::irq_label(m.strings, c);
    const auto at = std::find(irqs.begin(), irqs.end(), label);
    if (at != irqs.end()) return static_cast<int>(at - irqs.begin());
    irqs.push_back(label);
    return static_cast<int>(irqs.size() - 1);
  };
  fmt::format_to(it, "],\"paths\":[");
  for (size_t p = 0; p < f.paths.size(); ++p) {
    const FlowPath& fp = f.paths[p];
    const auto& path = fp.result.path;
    fmt::format_to(it,
                   "{}{{\"thread\":{},\"from_ns\":{},\"to_ns\":{},\"segments_total\":{},"
                   "\"hops_total\":{},\"waker_hops\":{},\"packet_hops\":{},"
                   "\"inconsistent_wakers\":{},\"segments\":[",
                   p ? "," : "", fp.thread, fp.from - t0, fp.to - t0, path.size(), fp.hops_total,
                   fp.result.waker_hops, fp.result.packet_hops, fp.result.inconsistent);
    std::vector<int32_t> index_of(m.threads.size(), -1);
    for (const auto& [k, times] : fp.per_thread)
      index_of[f.threads[k].thread] = static_cast<int32_t>(k);
    for (size_t k = 0; k < fp.kept; ++k) {
      const kernel::PathSegment& s = path[k];
      fmt::format_to(it, "{}[{},{},{},{},{}]", k ? "," : "", s.start - t0, s.end - t0,
                     index_of[s.thread], static_cast<int>(s.state), irq_index(s.irq));
    }
    fmt::format_to(it, "],\"hops\":[");
    for (size_t k = 0; k < fp.hops.size(); ++k)
      fmt::format_to(it, "{}[{},{},{}]", k ? "," : "", fp.hops[k].at - t0, fp.hops[k].from,
                     fp.hops[k].to);
    fmt::format_to(it, "],\"per_thread\":[");
    for (size_t k = 0; k < fp.per_thread.size(); ++k)
      fmt::format_to(it, "{}[{},{}]", k ? "," : "", fp.per_thread[k].first,
                     fmt::join(fp.per_thread[k].second, ","));
    fmt::format_to(it, "]}}");
  }
  fmt::format_to(it, "],\"irqs\":[");
  for (size_t k = 0; k < irqs.size(); ++k) {
    if (k) out.push_back(',');
    append_json_string(out, irqs[k], kJsonNames);
  }
  fmt::format_to(it, "],\"diagnostics\":");
  put_counts(out, m.diagnostics.items(), /*compact=*/true);
  fmt::format_to(it, "}}\n");
  return fmt::to_string(out);
}

std::string render_critical_flow_html(const std::string& json) {
  return embed_page(std::string(assets::kCriticalFlowHtml), assets::kCriticalFlowJs, json);
}

}  // namespace snailtrail::report
