#include "report/report.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "output/writers.hpp"
#include "report/web_assets.hpp"

namespace snailtrail::report {
namespace {

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

// Groups by id from a dense vector (workers) or a sorted (id, value) list (operators).
std::vector<SeriesPoint::Group> worker_groups(const WindowSummary& w, double cp_w, double conv_w) {
  std::vector<SeriesPoint::Group> g;
  const size_t n = std::max(w.cp.worker.size(), w.conventional.worker.size());
  for (size_t k = 0; k < n; ++k) {
    double cp = k < w.cp.worker.size() ? w.cp.worker[k] * cp_w : 0.0;
    double conv = k < w.conventional.worker.size() ? w.conventional.worker[k] * conv_w : 0.0;
    if (cp != 0 || conv != 0) g.push_back({static_cast<uint32_t>(k), cp, conv});
  }
  return g;
}

std::vector<SeriesPoint::Group> op_groups(const WindowSummary& w, double cp_w, double conv_w) {
  std::vector<SeriesPoint::Group> g;
  auto a = w.cp.op.begin(), ae = w.cp.op.end();
  auto b = w.conventional.op.begin(), be = w.conventional.op.end();
  while (a != ae || b != be) {
    if (b == be || (a != ae && a->first < b->first)) {
      g.push_back({a->first, a->second * cp_w, 0.0});
      ++a;
    } else if (a == ae || b->first < a->first) {
      g.push_back({b->first, 0.0, b->second * conv_w});
      ++b;
    } else {
      g.push_back({a->first, a->second * cp_w, b->second * conv_w});
      ++a;
      ++b;
    }
  }
  std::erase_if(g, [](const SeriesPoint::Group& x) { return x.cp == 0 && x.conv == 0; });
  return g;
}

// Merges two id-sorted group lists, summing values of equal ids.
std::vector<SeriesPoint::Group> merge_groups(const std::vector<SeriesPoint::Group>& a,
                                             const std::vector<SeriesPoint::Group>& b) {
  std::vector<SeriesPoint::Group> out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].id < b[j].id)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].id < a[i].id) {
      out.push_back(b[j++]);
    } else {
      out.push_back({a[i].id, a[i].cp + b[j].cp, a[i].conv + b[j].conv});
      ++i;
      ++j;
    }
  }
  return out;
}

uint64_t issue_count(const Diagnostics& d) {
  uint64_t n = d.property1_violations + d.property2_violations + d.zero_duration_cycles;
  for (uint64_t c : d.issues) n += c;
  return n;
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
    append_json_string(out, name(x.id));
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
  const std::vector<std::string>& worker;
  const std::unordered_map<uint32_t, std::string>& ops;
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
    append_json_string(out, w < names.worker.size() ? names.worker[w] : std::to_string(w));
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
  auto worker = [&](uint32_t w) {
    return w < names.worker.size() ? names.worker[w] : std::to_string(w);
  };
  list(out, top, [&](const TopActivity& a) {
    put(out, "{\"worker\":");
    append_json_string(out, worker(a.worker));
    if (a.remote != kNone) {
      put(out, ",\"remote\":");
      append_json_string(out, worker(a.remote));
    }
    put(out, ",\"type\":");
    append_json_string(out, name_of(a.type));
    if (a.op != kNone) {
      put(out, ",\"operator\":");
      append_json_string(out, names.op(a.op));
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

}  // namespace

void keep_largest(std::vector<SeriesPoint::Group>& groups, size_t keep, double& other_cp,
                  double& other_conv) {
  if (groups.size() <= keep) return;
  auto larger = [](const SeriesPoint::Group& a, const SeriesPoint::Group& b) {
    const double x = a.cp + a.conv, y = b.cp + b.conv;
    return x != y ? x > y : a.id < b.id;
  };
  std::nth_element(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(keep), groups.end(),
                   larger);
  for (size_t i = keep; i < groups.size(); ++i) {
    other_cp += groups[i].cp;
    other_conv += groups[i].conv;
  }
  groups.resize(keep);
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
}

void merge_points(SeriesPoint& a, const SeriesPoint& b, size_t keep) {
  a.last_window = b.last_window;
  a.end = b.end;
  a.windows += b.windows;
  a.windows_with_paths += b.windows_with_paths;
  a.events += b.events;
  a.issues += b.issues;
  a.cp_weight += b.cp_weight;
  a.conv_weight += b.conv_weight;
  for (int t = 0; t < kActivityTypeCount; ++t) {
    a.cp[t] += b.cp[t];
    a.conv[t] += b.conv[t];
  }
  a.workers = merge_groups(a.workers, b.workers);
  a.ops = merge_groups(a.ops, b.ops);
  a.other_worker_cp += b.other_worker_cp;
  a.other_worker_conv += b.other_worker_conv;
  a.other_op_cp += b.other_op_cp;
  a.other_op_conv += b.other_op_conv;
  keep_largest(a.workers, keep, a.other_worker_cp, a.other_worker_conv);
  keep_largest(a.ops, keep, a.other_op_cp, a.other_op_conv);
  a.unknown += b.unknown;
  a.waiting += b.waiting;
}

Timeline extract_timeline(const WindowView& view, size_t max_edges) {
  const Snapshot& s = view.snapshot;
  const CpResult& r = view.cp;
  const Pag& pag = view.pag;
  const int64_t origin = s.window.start;
  Timeline t;
  t.summary = view.summary;
  for (const TopActivity& a : view.summary.top) t.score = std::max(t.score, a.cp);
  t.edges.reserve(std::min(max_edges, s.edge_count()));
  for (uint32_t v = 0; v + 1 < s.node_count(); ++v) {
    if (s.edge[v] == kNone || s.ts[v + 1] == s.ts[v]) continue;  // zero length: nothing to draw
    const uint32_t g = s.edge[v];
    t.edges.push_back({s.worker[v], kNone, s.ts[v] - origin, s.ts[v + 1] - origin, pag.edge_op[g],
                       static_cast<ActivityType>(pag.edge_type[g]),
                       r.timeline_cp.size() > v ? r.timeline_cp[v] : 0.0});
  }
  for (uint32_t k = 0; k < s.msg_src.size(); ++k) {
    const uint32_t u = s.msg_src[k], v = s.msg_dst[k];
    t.edges.push_back({s.worker[u], s.worker[v], s.ts[u] - origin, s.ts[v] - origin, kNone,
                       pag.messages[s.msg_index[k]].type,
                       r.message_cp.size() > k ? r.message_cp[k] : 0.0});
  }
  if (t.edges.size() > max_edges) {
    // The edges that matter for the story: the most critical, then the longest.
    auto before = [](const TimelineEdge& a, const TimelineEdge& b) {
      if (a.cp != b.cp) return a.cp > b.cp;
      return a.end - a.start > b.end - b.start;
    };
    std::nth_element(t.edges.begin(), t.edges.begin() + static_cast<std::ptrdiff_t>(max_edges),
                     t.edges.end(), before);
    t.dropped_edges = t.edges.size() - max_edges;
    t.edges.resize(max_edges);
    std::sort(t.edges.begin(), t.edges.end(), [](const TimelineEdge& a, const TimelineEdge& b) {
      const bool am = a.remote != kNone, bm = b.remote != kNone;
      if (am != bm) return bm;
      if (a.worker != b.worker) return a.worker < b.worker;
      return a.start < b.start;
    });
  }
  return t;
}

ReportBuilder::ReportBuilder(ReportOptions options) : opt_(std::move(options)) {
  opt_.max_points = std::max<size_t>(opt_.max_points, 2);
}

void ReportBuilder::add(const WindowSummary& summary, const Names& names) {
  if (summary.window.empty_run > 0) return;  // windows without events: not analyzed
  add_summary(remap(summary, names));
}

void ReportBuilder::add(const WindowView& view, const Names& names) {
  if (view.summary.window.empty_run > 0) return;
  if (opt_.timelines == 0) return add(view.summary, names);
  add(view.summary, names, extract_timeline(view, opt_.timeline_edges));
}

void ReportBuilder::add(const WindowSummary& summary, const Names& names, Timeline&& timeline) {
  if (summary.window.empty_run > 0) return;
  size_t workers = 0;
  for (const TimelineEdge& e : timeline.edges)
    workers = std::max<size_t>(workers, std::max(e.worker, e.remote == kNone ? 0 : e.remote) + 1);
  WindowSummary w = remap(summary, names, workers);
  add_summary(w);
  if (opt_.timelines > 0) maybe_keep_timeline(std::move(timeline), w);
}

WindowSummary ReportBuilder::remap(const WindowSummary& w, const Names& names, size_t min_workers) {
  for (const auto& [id, name] : names.op_names) op_names_.try_emplace(id, name);
  // Every dense index the window refers to gets a slot, also one the names do not cover
  // (then the index is taken for the id): no index can fall outside slot_map_.
  size_t n = std::max({names.worker_ids.size(), w.cp.worker.size(), w.conventional.worker.size(),
                       w.single_path.worker.size(), min_workers});
  for (const Groups* g : {&w.cp, &w.conventional, &w.single_path})
    for (const CommCell& c : g->communication) n = std::max<size_t>(n, std::max(c.src, c.dst) + 1);
  for (const TopActivity& a : w.top)
    n = std::max<size_t>(n, std::max(a.worker, a.remote == kNone ? 0 : a.remote) + 1);
  for (const WhatIf& x : w.what_if)
    if (x.kind == WhatIfKind::worker) n = std::max<size_t>(n, size_t{x.id} + 1);
  slot_map_.resize(n);
  for (size_t k = 0; k < n; ++k) {
    const uint32_t id =
        k < names.worker_ids.size() ? names.worker_ids[k] : static_cast<uint32_t>(k);
    auto [it, added] = slot_of_.try_emplace(id, static_cast<uint32_t>(worker_names_.size()));
    if (added)
      worker_names_.push_back(k < names.worker.size() ? names.worker[k] : std::to_string(id));
    slot_map_[k] = it->second;
  }
  WindowSummary r = w;
  for (Groups* g : {&r.cp, &r.conventional, &r.single_path}) {
    std::vector<double> by_slot(worker_names_.size(), 0.0);
    for (size_t k = 0; k < g->worker.size(); ++k) by_slot[slot_map_[k]] = g->worker[k];
    g->worker = std::move(by_slot);
    for (CommCell& c : g->communication) {
      c.src = slot_map_[c.src];
      c.dst = slot_map_[c.dst];
    }
    std::sort(g->communication.begin(), g->communication.end(),
              [](const CommCell& a, const CommCell& b) {
                return a.src != b.src ? a.src < b.src : a.dst < b.dst;
              });
  }
  for (TopActivity& a : r.top) {
    a.worker = slot_map_[a.worker];
    if (a.remote != kNone) a.remote = slot_map_[a.remote];
  }
  for (WhatIf& x : r.what_if)
    if (x.kind == WhatIfKind::worker) x.id = slot_map_[x.id];
  return r;
}

void ReportBuilder::add_summary(const WindowSummary& w) {
  ++windows_;
  aggregate_.add(w, opt_.top_k);
  for (const TopActivity& a : w.top) top_.push_back({a, w.index});
  auto more_critical = [](const Top& a, const Top& b) {
    return a.activity.cp != b.activity.cp ? a.activity.cp > b.activity.cp : a.window < b.window;
  };
  if (top_.size() > 4 * opt_.top_k + 64) {
    std::partial_sort(top_.begin(), top_.begin() + static_cast<std::ptrdiff_t>(opt_.top_k),
                      top_.end(), more_critical);
    top_.resize(opt_.top_k);
  }
  const int64_t length = w.window.end - w.window.start;
  const int64_t span = w.has_paths ? w.cp_ns : 0;
  SeriesPoint p;
  p.first_window = p.last_window = w.index;
  p.start = w.window.start;
  p.end = w.window.end;
  p.windows = 1;
  p.windows_with_paths = w.has_paths ? 1 : 0;
  p.events = w.events;
  p.issues = issue_count(w.diagnostics);
  p.cp_weight = span;
  p.conv_weight = length;
  const double cw = static_cast<double>(span), vw = static_cast<double>(length);
  for (int t = 0; t < kActivityTypeCount; ++t) {
    p.cp[t] = w.has_paths ? w.cp.activity[t] * cw : 0.0;
    p.conv[t] = w.conventional.activity[t] * vw;
  }
  p.workers = worker_groups(w, w.has_paths ? cw : 0.0, vw);
  p.ops = op_groups(w, w.has_paths ? cw : 0.0, vw);
  keep_largest(p.workers, opt_.bucket_groups, p.other_worker_cp, p.other_worker_conv);
  keep_largest(p.ops, opt_.bucket_groups, p.other_op_cp, p.other_op_conv);
  p.unknown = w.diagnostics.unknown_share * vw;
  p.waiting = w.diagnostics.waiting_share * vw;
  if (!points_.empty() && points_.back().windows < bucket_windows_)
    merge_points(points_.back(), p, opt_.bucket_groups);
  else
    points_.push_back(std::move(p));
  if (points_.size() > opt_.max_points) merge_pairs();
}

// Halves the number of points: every point then covers twice as many windows.
void ReportBuilder::merge_pairs() {
  std::deque<SeriesPoint> merged;
  for (size_t i = 0; i < points_.size(); i += 2) {
    SeriesPoint p = std::move(points_[i]);
    if (i + 1 < points_.size()) merge_points(p, points_[i + 1], opt_.bucket_groups);
    merged.push_back(std::move(p));
  }
  points_ = std::move(merged);
  bucket_windows_ *= 2;
}

void ReportBuilder::maybe_keep_timeline(Timeline&& t, const WindowSummary& remapped) {
  t.summary = remapped;
  for (TimelineEdge& e : t.edges) {
    e.worker = slot_map_[e.worker];
    if (e.remote != kNone) e.remote = slot_map_[e.remote];
  }
  if (!have_first_) {
    first_ = std::move(t);
    have_first_ = true;
    return;
  }
  auto heap_cmp = [](const Timeline& a, const Timeline& b) {
    return a.score != b.score ? a.score > b.score : a.summary.index < b.summary.index;
  };  // min-heap on score; among equal scores the latest is dropped first
  const size_t best_cap = opt_.timelines > 2 ? opt_.timelines - 2 : 0;
  if (have_latest_ && best_cap > 0) {
    // The previous latest window is no longer the latest: it stays if it ranks.
    if (best_.size() < best_cap) {
      best_.push_back(std::move(latest_));
      std::push_heap(best_.begin(), best_.end(), heap_cmp);
    } else if (latest_.score > best_.front().score) {
      std::pop_heap(best_.begin(), best_.end(), heap_cmp);
      best_.back() = std::move(latest_);
      std::push_heap(best_.begin(), best_.end(), heap_cmp);
    }
  }
  if (opt_.timelines >= 2) {
    latest_ = std::move(t);
    have_latest_ = true;
  }
}

std::vector<const Timeline*> ReportBuilder::timelines() const {
  std::vector<const Timeline*> out;
  if (have_first_) out.push_back(&first_);
  for (const Timeline& t : best_) out.push_back(&t);
  if (have_latest_) out.push_back(&latest_);
  std::sort(out.begin(), out.end(), [](const Timeline* a, const Timeline* b) {
    return a->summary.index < b->summary.index;
  });
  return out;
}

std::string ReportBuilder::json() const {
  Buf out;
  Aggregate agg = aggregate_;
  agg.finish();
  const int64_t origin = points_.empty() ? 0 : points_.front().start;
  const Labels names{worker_names_, op_names_};
  auto worker_name = [&](uint32_t w) {
    return w < names.worker.size() ? names.worker[w] : std::to_string(w);
  };
  auto op_name = [&](uint32_t id) { return names.op(id); };
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

  put(out, "{\"schema\":1,\"source\":");
  append_json_string(out, opt_.source);
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
  list(out, names.worker, [&](const std::string& n) { append_json_string(out, n); });

  // Time series: one entry per point, values are means over the point's windows.
  fmt::format_to(std::back_inserter(out),
                 ",\"series\":{{\"windows_per_point\":{},\"points\":", bucket_windows_);
  list(out, points_, [&](const SeriesPoint& p) {
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
  });
  put(out, ",\"operators\":");
  {
    // Names of every operator id a point or a timeline refers to.
    std::vector<uint32_t> ids;
    for (const SeriesPoint& p : points_)
      for (const auto& g : p.ops) ids.push_back(g.id);
    for (const auto& [id, v] : agg.cp.op) ids.push_back(id);
    for (const auto& [id, v] : agg.conventional.op) ids.push_back(id);
    for (const Timeline* t : timelines())
      for (const TimelineEdge& e : t->edges)
        if (e.op != kNone) ids.push_back(e.op);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    out.push_back('{');
    for (size_t i = 0; i < ids.size(); ++i) {
      fmt::format_to(std::back_inserter(out), "{}\"{}\":", i ? "," : "", ids[i]);
      append_json_string(out, names.op(ids[i]));
    }
    out.push_back('}');
  }
  put(out, "}");

  // Whole trace.
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
    put_ranked(out, std::move(w), opt_.top_groups, worker_name);
    WindowSummary tmp;
    tmp.cp.op = agg.cp.op;
    tmp.conventional.op = agg.conventional.op;
    put(out, ",\"operators\":");
    put_ranked(out, op_groups(tmp, 1.0, 1.0), opt_.top_groups, op_name, &agg.cp.op_per_worker);
  }
  put(out, ",\"heatmap\":");
  put_heatmap(out, agg.cp, agg.conventional, opt_.heatmap_workers, names);
  {
    std::vector<Top> top = top_;
    std::sort(top.begin(), top.end(), [](const Top& a, const Top& b) {
      return a.activity.cp != b.activity.cp ? a.activity.cp > b.activity.cp : a.window < b.window;
    });
    if (top.size() > opt_.top_k) top.resize(opt_.top_k);
    std::vector<TopActivity> activities;
    for (const Top& t : top) activities.push_back(t.activity);
    put(out, ",\"top\":");
    put_top(out, activities, names, origin, &top);
  }
  put(out, ",\"diagnostics\":");
  put_diagnostics(out, agg.diagnostics, kReportDiagnostics);
  put(out, ",\"verdict\":");
  write_run_verdict_json(out, agg, full_names, opt_.enrich);
  // What-if savings summed over the windows (report --what-if), largest first; null when
  // not computed.
  put(out, ",\"what_if\":");
  if (opt_.what_if) {
    const size_t n = std::min(agg.what_if.size(), opt_.top_k);
    put(out, "[");
    for (size_t k = 0; k < n; ++k) {
      if (k) out.push_back(',');
      put_what_if(out, agg.what_if[k], full_names);
    }
    put(out, "]");
  } else {
    put(out, "null");
  }
  out.push_back('}');

  // Windows with a timeline, each with its own summaries.
  put(out, ",\"timelines\":");
  list(out, timelines(), [&](const Timeline* t) {
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
    put_ranked(out, worker_groups(w, 1.0, 1.0), opt_.top_groups, worker_name);
    put(out, ",\"operators\":");
    put_ranked(out, op_groups(w, 1.0, 1.0), opt_.top_groups, op_name, &w.cp.op_per_worker);
    put(out, ",\"heatmap\":");
    put_heatmap(out, w.cp, w.conventional, opt_.heatmap_workers, names);
    put(out, ",\"top\":");
    put_top(out, w.top, names, w.window.start);
    put(out, ",\"diagnostics\":");
    put_diagnostics(out, w.diagnostics, kReportDiagnostics);
    put(out, ",\"verdict\":");
    write_verdict_json(out, w.cp, w.conventional, w.has_paths, w.what_if, w.diagnostics,
                       w.window.end - w.window.start, 1, full_names);
    // Edges: [worker, start, end, type, operator (-1: none), cp]; messages:
    // [sender, receiver, send, receive, type, cp]. Times in ns from the window start.
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
  });
  out.push_back('}');
  return std::string(out.data(), out.size());
}

namespace {

void replace_once(std::string& s, std::string_view marker, std::string_view with) {
  const size_t at = s.find(marker);
  if (at == std::string::npos) return;
  s.replace(at, marker.size(), with);
}

std::string page(const std::string& data_json, bool live) {
  std::string html(assets::kReportHtml);
  // Inside <script>, "</script>" or "<!--" in the data would end or confuse the element;
  // '<' only occurs inside JSON strings, where \u003c means the same character.
  std::string data;
  data.reserve(data_json.size() + 64);
  for (char c : data_json) {
    if (c == '<')
      data += "\\u003c";
    else
      data += c;
  }
  replace_once(html, "/*SNAILTRAIL_CSS*/", assets::kReportCss);
  replace_once(html, "\"SNAILTRAIL_MODE\"", live ? "\"live\"" : "\"file\"");
  // The script goes in before the data, so that text in the data is never taken for a marker.
  replace_once(html, "/*SNAILTRAIL_JS*/", assets::kReportJs);
  replace_once(html, "/*SNAILTRAIL_DATA*/", data);
  return html;
}

}  // namespace

std::string render_report_html(const std::string& report_json) {
  return page(report_json, false);
}

std::string render_dashboard_html() {
  return page("null", true);
}

}  // namespace snailtrail::report
