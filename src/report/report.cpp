#include "report/report.hpp"

#include "report/report_detail.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "output/writers.hpp"
#include "report/page_embed.hpp"
#include "report/web_assets.hpp"

namespace snailtrail::report {
namespace detail {

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

}  // namespace detail

namespace {

using detail::op_groups;
using detail::worker_groups;

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
  size_t not_drawn = 0;  // merged pieces beyond max_edges + 1: dropped anyway
  for (uint32_t k = 0; k < s.msg_src.size(); ++k) {
    const uint32_t u = s.msg_src[k], v = s.msg_dst[k];
    // A merged edge is that many identical pieces (Snapshot::msg_mult); at most
    // max_edges of them can be drawn.
    const size_t copies = std::min<size_t>(s.mult(k), max_edges + 1);
    not_drawn += s.mult(k) - copies;
    for (size_t i = 0; i < copies; ++i)
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
    t.dropped_edges = t.edges.size() - max_edges + not_drawn;
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

namespace {

std::string page(const std::string& data_json, bool live) {
  std::string html(assets::kReportHtml);
  replace_once(html, "/*SNAILTRAIL_CSS*/", assets::kReportCss);
  replace_once(html, "\"SNAILTRAIL_MODE\"", live ? "\"live\"" : "\"file\"");
  std::string js(assets::kReportJs);
  js += assets::kJobGraphJs;  // the Job graph section (report/job_graph.hpp)
  return embed_page(std::move(html), js, data_json);
}

}  // namespace

std::string render_report_html(const std::string& report_json) {
  return page(report_json, false);
}

std::string render_dashboard_html() {
  return page("null", true);
}

}  // namespace snailtrail::report
