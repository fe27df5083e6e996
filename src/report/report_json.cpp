// The report's data as one JSON object (schema: docs/REPORT.md).
#include <algorithm>
#include <deque>
#include <functional>
#include <iterator>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "output/writers.hpp"
#include "report/report.hpp"
#include "report/report_detail.hpp"

namespace snailtrail::report {
namespace {

using detail::op_groups;
using detail::worker_groups;

using Buf = fmt::memory_buffer;

void put(Buf& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

// Shares are drawn and shown in tooltips; 6 significant digits keep the file small and
// are more than a screen can show. JSON has no inf/nan.
void num(Buf& out, double v) {
  append_json_number(out, v, 6);
}
constexpr DiagnosticsJson kReportDiagnostics{.segments = false, .significant = 6};

template <typename T, typename F>
void list(Buf& out, const T& items, F&& each) {
  out.push_back('[');
  bool first = true;
  for (const auto& x : items) {
    if (!first) out.push_back(',');
    first = false;
    each(x);
  }
  out.push_back(']');
}

double ratio(double v, int64_t w) {
  return w > 0 ? v / static_cast<double>(w) : 0.0;
}

void put_activity(Buf& out, const Groups& cp, const Groups& conv) {
  put(out, "{\"cp\":");
  list(out, cp.activity, [&](double v) { num(out, v); });
  put(out, ",\"conv\":");
  list(out, conv.activity, [&](double v) { num(out, v); });
  out.push_back('}');
}

// {"groups":[{"id","name","cp","conv"}...], "other": {"cp","conv","count"}}: the `keep`
// groups with the largest cp + conv, by CP descending, the rest summed. With
// `cp_per_worker` (operators), each group also has "cp_per_worker".
void put_ranked(Buf& out, std::vector<SeriesPoint::Group> g, size_t keep,
                const std::function<std::string(uint32_t)>& name,
                const std::vector<std::pair<uint32_t, double>>* cp_per_worker = nullptr) {
  const size_t total = g.size();
  double ocp = 0, oconv = 0;
  keep_largest(g, keep, ocp, oconv);
  std::sort(g.begin(), g.end(), [](const auto& a, const auto& b) {
    return a.cp != b.cp ? a.cp > b.cp : a.conv != b.conv ? a.conv > b.conv : a.id < b.id;
  });
  put(out, "{\"groups\":");
  list(out, g, [&](const SeriesPoint::Group& x) {
    fmt::format_to(std::back_inserter(out), "{{\"id\":{},\"name\":", x.id);
    append_json_string(out, name(x.id), kJsonNames);
    put(out, ",\"cp\":");
    num(out, x.cp);
    put(out, ",\"conv\":");
    num(out, x.conv);
    if (cp_per_worker) {
      auto it = std::lower_bound(cp_per_worker->begin(), cp_per_worker->end(), x.id,
                                 [](const auto& p, uint32_t id) { return p.first < id; });
      put(out, ",\"cp_per_worker\":");
      num(out, it != cp_per_worker->end() && it->first == x.id ? it->second : 0.0);
    }
    out.push_back('}');
  });
  put(out, ",\"other\":{\"cp\":");
  num(out, ocp);
  put(out, ",\"conv\":");
  num(out, oconv);
  fmt::format_to(std::back_inserter(out), ",\"count\":{}}}}}", total - g.size());
}

// Sender x receiver matrix reduced to the `keep` workers with the most communication
// (CP + conventional, as sender or receiver) plus an "other" row/column.
// Worker names by slot and operator names, as put_heatmap/put_top read them.
struct Labels {
  const std::vector<std::string>& workers;
  const std::unordered_map<uint32_t, std::string>& ops;
  std::string worker(uint32_t slot) const {
    return slot < workers.size() ? workers[slot] : std::to_string(slot);
  }
  std::string op(uint32_t id) const {
    auto it = ops.find(id);
    return it != ops.end() ? it->second : std::to_string(id);
  }
};

void put_heatmap(Buf& out, const Groups& cp, const Groups& conv, size_t keep, const Labels& names) {
  std::unordered_map<uint32_t, double> mass;
  for (const CommCell& c : cp.communication) {
    mass[c.src] += c.value;
    mass[c.dst] += c.value;
  }
  for (const CommCell& c : conv.communication) {
    mass[c.src] += c.value;
    mass[c.dst] += c.value;
  }
  std::vector<std::pair<uint32_t, double>> ranked(mass.begin(), mass.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const bool other = ranked.size() > keep;
  if (other) ranked.resize(keep);
  std::sort(ranked.begin(), ranked.end());  // by worker index: stable axis order
  std::unordered_map<uint32_t, size_t> slot;
  for (size_t i = 0; i < ranked.size(); ++i) slot[ranked[i].first] = i;
  const size_t n = ranked.size() + (other ? 1 : 0);
  auto cell = [&](uint32_t w) {
    auto it = slot.find(w);
    return it != slot.end() ? it->second : n - 1;
  };
  std::vector<double> mcp(n * n, 0.0), mconv(n * n, 0.0);
  for (const CommCell& c : cp.communication) mcp[cell(c.src) * n + cell(c.dst)] += c.value;
  for (const CommCell& c : conv.communication) mconv[cell(c.src) * n + cell(c.dst)] += c.value;
  put(out, "{\"labels\":[");
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (i) out.push_back(',');
    const uint32_t w = ranked[i].first;
    append_json_string(out, names.worker(w), kJsonNames);
  }
  if (other) put(out, ranked.empty() ? "\"other\"" : ",\"other\"");
  put(out, "],\"cp\":");
  list(out, mcp, [&](double v) { num(out, v); });
  put(out, ",\"conv\":");
  list(out, mconv, [&](double v) { num(out, v); });
  out.push_back('}');
}

template <typename Windows = std::nullptr_t>
void put_top(Buf& out, const std::vector<TopActivity>& top, const Labels& names, int64_t origin,
             const Windows* windows = nullptr) {
  size_t i = 0;
  list(out, top, [&](const TopActivity& a) {
    put(out, "{\"worker\":");
    append_json_string(out, names.worker(a.worker), kJsonNames);
    if (a.remote != kNone) {
      put(out, ",\"remote\":");
      append_json_string(out, names.worker(a.remote), kJsonNames);
    }
    put(out, ",\"type\":");
    append_json_string(out, name_of(a.type));
    if (a.op != kNone) {
      put(out, ",\"operator\":");
      append_json_string(out, names.op(a.op), kJsonNames);
    }
    if constexpr (!std::is_same_v<Windows, std::nullptr_t>)
      fmt::format_to(std::back_inserter(out), ",\"window\":{}", (*windows)[i].window);
    ++i;
    fmt::format_to(std::back_inserter(out),
                   ",\"start_ns\":{},\"end_ns\":{},\"cp\":", a.start - origin, a.end - origin);
    num(out, a.cp);
    out.push_back('}');
  });
}

// Writes the report's parts; what the builder holds comes in as arguments.
class ReportJson {
 public:
  ReportJson(Buf& out, const ReportOptions& opt, const Labels& names, const Names& full_names,
             int64_t origin)
      : out_(out), opt_(opt), names_(names), full_names_(full_names), origin_(origin) {}

  // The source, window, totals, activity types and workers.
  void head(const Aggregate& agg) {
    Buf& out = out_;
    const Labels& names = names_;
    const int64_t origin = origin_;
    put(out, "{\"schema\":1,\"source\":");
    append_json_string(out, opt_.source, kJsonNames);
    put(out, ",\"window\":");
    append_json_string(out, opt_.window_label);
    fmt::format_to(std::back_inserter(out),
                   ",\"window_ns\":{},\"origin_ns\":{},\"windows\":{},\"windows_with_paths\":{},"
                   "\"events\":{},\"edges\":{}",
                   opt_.window_ns, origin, agg.windows, agg.windows_with_paths, agg.events,
                   agg.edges);
    put(out, ",\"types\":");
    list(out, kActivityNames, [&](std::string_view n) { append_json_string(out, n); });
    put(out, ",\"workers\":");
    list(out, names.workers, [&](const std::string& n) { append_json_string(out, n, kJsonNames); });
  }

  // Time series: one entry per point, values are means over the point's windows; then
  // the names of every operator id a point or a timeline refers to.
  void series(const std::deque<SeriesPoint>& points, uint64_t bucket_windows, const Aggregate& agg,
              const std::vector<const Timeline*>& timelines) {
    Buf& out = out_;
    fmt::format_to(std::back_inserter(out),
                   ",\"series\":{{\"windows_per_point\":{},\"points\":", bucket_windows);
    list(out, points, [&](const SeriesPoint& p) { point(p); });
    put(out, ",\"operators\":");
    operator_names(points, agg, timelines);
    put(out, "}");
  }

  // Whole trace: activity, workers, operators, heatmap, the most critical activities
  // (`top`: of any window), diagnostics, verdict and what-if savings.
  template <typename Top>
  void overall(const Aggregate& agg, std::vector<Top> top) {
    Buf& out = out_;
    put(out, ",\"overall\":{\"activity\":");
    put_activity(out, agg.cp, agg.conventional);
    put(out, ",\"single_path\":");
    list(out, agg.single_path.activity, [&](double v) { num(out, v); });
    {
      std::vector<SeriesPoint::Group> w;
      const size_t n = std::max(agg.cp.worker.size(), agg.conventional.worker.size());
      for (size_t k = 0; k < n; ++k) {
        double cp = k < agg.cp.worker.size() ? agg.cp.worker[k] : 0.0;
        double conv = k < agg.conventional.worker.size() ? agg.conventional.worker[k] : 0.0;
        if (cp != 0 || conv != 0) w.push_back({static_cast<uint32_t>(k), cp, conv});
      }
      put(out, ",\"workers\":");
      ranked_workers(std::move(w));
      WindowSummary tmp;
      tmp.cp.op = agg.cp.op;
      tmp.conventional.op = agg.conventional.op;
      put(out, ",\"operators\":");
      ranked_operators(op_groups(tmp, 1.0, 1.0), agg.cp.op_per_worker);
    }
    put(out, ",\"heatmap\":");
    put_heatmap(out, agg.cp, agg.conventional, opt_.heatmap_workers, names_);
    {
      std::sort(top.begin(), top.end(), [](const Top& a, const Top& b) {
        return a.activity.cp != b.activity.cp ? a.activity.cp > b.activity.cp : a.window < b.window;
      });
      if (top.size() > opt_.top_k) top.resize(opt_.top_k);
      std::vector<TopActivity> activities;
      for (const Top& t : top) activities.push_back(t.activity);
      put(out, ",\"top\":");
      put_top(out, activities, names_, origin_, &top);
    }
    put(out, ",\"diagnostics\":");
    put_diagnostics(out, agg.diagnostics, kReportDiagnostics);
    put(out, ",\"verdict\":");
    write_run_verdict_json(out, agg, full_names_, opt_.enrich);
    // What-if savings summed over the windows (report --what-if), largest first; null when
    // not computed.
    put(out, ",\"what_if\":");
    if (opt_.what_if) {
      const size_t n = std::min(agg.what_if.size(), opt_.top_k);
      put(out, "[");
      for (size_t k = 0; k < n; ++k) {
        if (k) out.push_back(',');
        put_what_if(out, agg.what_if[k], full_names_);
      }
      put(out, "]");
    } else {
      put(out, "null");
    }
    out.push_back('}');
  }

  // A window with a timeline, with its own summaries.
  void timeline(const Timeline* t) {
    Buf& out = out_;
    const int64_t origin = origin_;
    const WindowSummary& w = t->summary;
    fmt::format_to(std::back_inserter(out),
                   "{{\"index\":{},\"t0\":{},\"t1\":{},\"span0\":{},\"span1\":{},\"events\":{},"
                   "\"has_paths\":{},\"paths_log10\":",
                   w.index, w.window.start - origin, w.window.end - origin,
                   w.span_start - w.window.start, w.span_end - w.window.start, w.events,
                   w.has_paths ? "true" : "false");
    if (w.has_paths)
      num(out, w.paths_log10);
    else
      put(out, "null");
    put(out, ",\"score\":");
    num(out, t->score);
    put(out, ",\"activity\":");
    put_activity(out, w.cp, w.conventional);
    put(out, ",\"workers\":");
    ranked_workers(worker_groups(w, 1.0, 1.0));
    put(out, ",\"operators\":");
    ranked_operators(op_groups(w, 1.0, 1.0), w.cp.op_per_worker);
    put(out, ",\"heatmap\":");
    put_heatmap(out, w.cp, w.conventional, opt_.heatmap_workers, names_);
    put(out, ",\"top\":");
    put_top(out, w.top, names_, w.window.start);
    put(out, ",\"diagnostics\":");
    put_diagnostics(out, w.diagnostics, kReportDiagnostics);
    put(out, ",\"verdict\":");
    write_verdict_json(out, w, full_names_);
    edges(*t);
  }

 private:
  // The `top_groups` largest worker or operator groups, by name (put_ranked).
  void ranked_workers(std::vector<SeriesPoint::Group> g) {
    put_ranked(out_, std::move(g), opt_.top_groups, [&](uint32_t w) { return names_.worker(w); });
  }
  void ranked_operators(std::vector<SeriesPoint::Group> g,
                        const std::vector<std::pair<uint32_t, double>>& cp_per_worker) {
    put_ranked(
        out_, std::move(g), opt_.top_groups, [&](uint32_t id) { return names_.op(id); },
        &cp_per_worker);
  }

  void point(const SeriesPoint& p) {
    Buf& out = out_;
    const int64_t origin = origin_;
    fmt::format_to(std::back_inserter(out),
                   "{{\"w0\":{},\"w1\":{},\"t0\":{},\"t1\":{},\"windows\":{},\"paths\":{},"
                   "\"events\":{},\"issues\":{},\"cp\":",
                   p.first_window, p.last_window, p.start - origin, p.end - origin, p.windows,
                   p.windows_with_paths, p.events, p.issues);
    if (p.cp_weight > 0)
      list(out, p.cp, [&](double v) { num(out, ratio(v, p.cp_weight)); });
    else
      put(out, "null");
    put(out, ",\"conv\":");
    list(out, p.conv, [&](double v) { num(out, ratio(v, p.conv_weight)); });
    auto groups = [&](const char* key, const std::vector<SeriesPoint::Group>& g, double ocp,
                      double oconv) {
      fmt::format_to(std::back_inserter(out), ",\"{}\":", key);
      list(out, g, [&](const SeriesPoint::Group& x) {
        fmt::format_to(std::back_inserter(out), "[{},", x.id);
        num(out, ratio(x.cp, p.cp_weight));
        out.push_back(',');
        num(out, ratio(x.conv, p.conv_weight));
        out.push_back(']');
      });
      fmt::format_to(std::back_inserter(out), ",\"{}_other\":[", key);
      num(out, ratio(ocp, p.cp_weight));
      out.push_back(',');
      num(out, ratio(oconv, p.conv_weight));
      out.push_back(']');
    };
    groups("workers", p.workers, p.other_worker_cp, p.other_worker_conv);
    groups("ops", p.ops, p.other_op_cp, p.other_op_conv);
    put(out, ",\"unknown\":");
    num(out, ratio(p.unknown, p.conv_weight));
    put(out, ",\"waiting\":");
    num(out, ratio(p.waiting, p.conv_weight));
    out.push_back('}');
  }

  void operator_names(const std::deque<SeriesPoint>& points, const Aggregate& agg,
                      const std::vector<const Timeline*>& timelines) {
    Buf& out = out_;
    const Labels& names = names_;
    // Names of every operator id a point or a timeline refers to.
    std::vector<uint32_t> ids;
    for (const SeriesPoint& p : points)
      for (const auto& g : p.ops) ids.push_back(g.id);
    for (const auto& [id, v] : agg.cp.op) ids.push_back(id);
    for (const auto& [id, v] : agg.conventional.op) ids.push_back(id);
    for (const Timeline* t : timelines)
      for (const TimelineEdge& e : t->edges)
        if (e.op != kNone) ids.push_back(e.op);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    out.push_back('{');
    for (size_t i = 0; i < ids.size(); ++i) {
      fmt::format_to(std::back_inserter(out), "{}\"{}\":", i ? "," : "", ids[i]);
      append_json_string(out, names.op(ids[i]), kJsonNames);
    }
    out.push_back('}');
  }

  // Edges: [worker, start, end, type, operator (-1: none), cp]; messages:
  // [sender, receiver, send, receive, type, cp]. Times in ns from the window start.
  void edges(const Timeline& timeline) {
    Buf& out = out_;
    const Timeline* t = &timeline;
    put(out, ",\"edges\":[");
    bool first = true;
    for (const TimelineEdge& e : t->edges) {
      if (e.remote != kNone) continue;
      fmt::format_to(std::back_inserter(out), "{}[{},{},{},{},{},", first ? "" : ",", e.worker,
                     e.start, e.end, static_cast<int>(e.type),
                     e.op == kNone ? int64_t{-1} : int64_t{e.op});
      num(out, e.cp);
      out.push_back(']');
      first = false;
    }
    put(out, "],\"messages\":[");
    first = true;
    for (const TimelineEdge& e : t->edges) {
      if (e.remote == kNone) continue;
      fmt::format_to(std::back_inserter(out), "{}[{},{},{},{},{},", first ? "" : ",", e.worker,
                     e.remote, e.start, e.end, static_cast<int>(e.type));
      num(out, e.cp);
      out.push_back(']');
      first = false;
    }
    fmt::format_to(std::back_inserter(out), "],\"dropped_edges\":{}}}", t->dropped_edges);
  }

  Buf& out_;
  const ReportOptions& opt_;
  const Labels& names_;
  const Names& full_names_;
  const int64_t origin_;
};

}  // namespace

std::string ReportBuilder::json() const {
  Buf out;
  Aggregate agg = aggregate_;
  agg.finish();
  const int64_t origin = points_.empty() ? 0 : points_.front().start;
  const Labels names{worker_names_, op_names_};
  // The same names as output/names.hpp's Names, for the verdict and what-if writers:
  // workers by slot, the slot as the id.
  Trace by_slot;
  by_slot.operator_names = op_names_;
  Pag slots;
  for (uint32_t k = 0; k < worker_names_.size(); ++k) {
    by_slot.worker_names[k] = worker_names_[k];
    slots.worker_ids.push_back(k);
  }
  const Names full_names(by_slot, slots);
  ReportJson w(out, opt_, names, full_names, origin);
  w.head(agg);
  w.series(points_, bucket_windows_, agg, timelines());
  w.overall(agg, top_);
  // Windows with a timeline, each with its own summaries.
  put(out, ",\"timelines\":");
  list(out, timelines(), [&](const Timeline* t) { w.timeline(t); });
  out.push_back('}');
  return std::string(out.data(), out.size());
}

}  // namespace snailtrail::report
