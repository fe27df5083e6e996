// The waterfall of span traces (waterfall.hpp).
#include "report/waterfall.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "output/names.hpp"
#include "output/writers.hpp"
#include "report/page_embed.hpp"
#include "report/web_assets.hpp"
#include "requests/critical_path.hpp"

namespace snailtrail::report {

using importers::kNoSpan;
using importers::Span;
using importers::SpanSet;

namespace {

// CSR of `n` items grouped by key (keys < groups), items in order within a group.
struct Groups {
  std::vector<uint32_t> begin, items;
  template <class KeyOf>
  Groups(uint32_t n, uint32_t groups, KeyOf key_of) : begin(groups + 1, 0), items(n) {
    for (uint32_t i = 0; i < n; ++i)
      if (key_of(i) != kNoSpan) ++begin[key_of(i) + 1];
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (uint32_t i = 0; i < n; ++i)
      if (key_of(i) != kNoSpan) items[fill[key_of(i)]++] = i;
    items.resize(begin.back());
  }
};

}  // namespace

WaterfallBuilder::Unit WaterfallBuilder::build_unit(const SpanSet& set) {
  std::vector<uint32_t> parent;
  const std::vector<requests::CriticalPath> paths =
      requests::critical_paths(set, &parent, /*segments=*/true);
  return build_unit(set, paths, parent);
}

WaterfallBuilder::Unit WaterfallBuilder::build_unit(
    const SpanSet& set, const std::vector<requests::CriticalPath>& paths,
    const std::vector<uint32_t>& parent) {
  const std::vector<Span>& spans = set.spans;
  const uint32_t n = static_cast<uint32_t>(spans.size());
  Unit u;
  std::unordered_map<uint32_t, uint32_t> local;  // the set's string id -> u.names
  auto name = [&](uint32_t id) {
    auto [it, fresh] = local.emplace(id, static_cast<uint32_t>(u.names.size()));
    if (fresh) u.names.push_back(set.str(id));
    return it->second;
  };
  std::unordered_map<uint32_t, uint32_t> slot;  // interned trace id -> path
  for (uint32_t k = 0; k < paths.size(); ++k) slot.emplace(paths[k].trace, k);
  std::vector<uint32_t> trace_of(n);
  for (uint32_t i = 0; i < n; ++i) trace_of[i] = slot.at(spans[i].trace);
  const Groups by_trace(n, static_cast<uint32_t>(paths.size()),
                        [&](uint32_t i) { return trace_of[i]; });
  // Children (and roots, per trace) by start time, then file order: Jaeger UI's order.
  Groups children(n, n, [&](uint32_t i) { return parent[i]; });
  auto by_start = [&](uint32_t a, uint32_t b) {
    return spans[a].start != spans[b].start ? spans[a].start < spans[b].start : a < b;
  };
  for (uint32_t x = 0; x < n; ++x)
    std::sort(children.items.begin() + children.begin[x],
              children.items.begin() + children.begin[x + 1], by_start);

  std::vector<uint32_t> row_of(n, kNoSpan), stack;
  u.rows.reserve(n);
  u.traces.reserve(paths.size());
  for (uint32_t k = 0; k < paths.size(); ++k) {
    const requests::CriticalPath& p = paths[k];
    Trace t{};
    t.id_begin = static_cast<uint32_t>(u.ids.size());
    set.ids.append(p.trace, u.ids);
    t.id_len = static_cast<uint32_t>(u.ids.size()) - t.id_begin;
    t.duration_ns = p.duration_ns;
    t.spans = p.spans;
    t.clipped = p.clipped;
    t.dropped = p.dropped;
    t.roots = p.roots;
    t.nonblocking = p.nonblocking;
    t.rows_begin = static_cast<uint32_t>(u.rows.size());
    t.start_ns = INT64_MAX;
    // Depth first from the roots, children by start (pushed in reverse).
    std::vector<uint32_t> roots;
    for (uint32_t c = by_trace.begin[k]; c < by_trace.begin[k + 1]; ++c) {
      const uint32_t i = by_trace.items[c];
      t.start_ns = std::min(t.start_ns, spans[i].start);
      if (parent[i] == kNoSpan) roots.push_back(i);
    }
    std::sort(roots.begin(), roots.end(), by_start);
    stack.assign(roots.rbegin(), roots.rend());
    while (!stack.empty()) {
      const uint32_t x = stack.back();
      stack.pop_back();
      const Span& s = spans[x];
      Row r{};
      r.parent = parent[x] == kNoSpan ? kNoSpan : row_of[parent[x]] - t.rows_begin;
      r.depth = parent[x] == kNoSpan ? 0 : u.rows[row_of[parent[x]]].depth + 1;
      r.service = name(s.service);
      r.operation = name(s.operation);
      r.id_begin = static_cast<uint32_t>(u.ids.size());
      set.ids.append(s.id, u.ids);
      r.id_len = static_cast<uint32_t>(u.ids.size()) - r.id_begin;
      r.start_ns = s.start;
      r.end_ns = s.end;
      r.kind = static_cast<uint8_t>(s.kind);
      // Self time: what no child covers (children clipped to the span, sorted by start).
      int64_t covered = 0, reach = s.start;
      for (uint32_t c = children.begin[x]; c < children.begin[x + 1]; ++c) {
        const Span& y = spans[children.items[c]];
        const int64_t a = std::max({y.start, s.start, reach}), b = std::min(y.end, s.end);
        if (b > a) covered += b - a;
        reach = std::max(reach, std::min(b, s.end));
      }
      r.self_ns = s.end - s.start - covered;
      row_of[x] = static_cast<uint32_t>(u.rows.size());
      u.rows.push_back(r);
      for (uint32_t c = children.begin[x + 1]; c-- > children.begin[x];)
        stack.push_back(children.items[c]);
    }
    t.rows_end = static_cast<uint32_t>(u.rows.size());
    if (t.start_ns == INT64_MAX) t.start_ns = p.start_ns;
    t.segs_begin = static_cast<uint32_t>(u.segments.size());
    for (const requests::PathSegment& s : p.segments) {
      u.segments.push_back({row_of[s.span] - t.rows_begin, s.start_ns, s.end_ns});
      u.rows[row_of[s.span]].critical_ns += s.end_ns - s.start_ns;
    }
    t.segs_end = static_cast<uint32_t>(u.segments.size());
    u.traces.push_back(t);
  }
  return u;
}

void WaterfallBuilder::add(size_t unit, const SpanSet& set) {
  std::vector<uint32_t> parent;
  const std::vector<requests::CriticalPath> paths =
      requests::critical_paths(set, &parent, /*segments=*/true);
  Unit u = build_unit(set, paths, parent);
  // The percentile views need what `critical-path` keeps: the steps with their contexts.
  std::optional<requests::UnitPaths> p;
  if (opt_.percentiles) p = requests::summarize_paths(set, paths, parent, /*contexts=*/true);
  std::lock_guard lock(mutex_);
  units_.emplace_back(unit, std::move(u));
  if (p) paths_.emplace_back(unit, std::move(*p));
}

void WaterfallBuilder::add_unit(size_t unit, Unit u) {
  std::lock_guard lock(mutex_);
  units_.emplace_back(unit, std::move(u));
}

size_t WaterfallBuilder::traces() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const auto& [k, u] : units_) n += u.traces.size();
  return n;
}

uint64_t WaterfallBuilder::spans() const {
  std::lock_guard lock(mutex_);
  uint64_t n = 0;
  for (const auto& [k, u] : units_)
    for (const Trace& t : u.traces) n += t.spans;
  return n;
}

namespace {

struct Ref {
  const WaterfallBuilder::Unit* unit;
  const WaterfallBuilder::Trace* trace;
};

}  // namespace

std::string WaterfallBuilder::json() const {
  std::lock_guard lock(mutex_);
  // Every trace in file order, then by latency, slowest first (ties: file order).
  std::vector<const std::pair<size_t, Unit>*> units;
  for (const auto& u : units_) units.push_back(&u);
  std::sort(units.begin(), units.end(), [](auto* a, auto* b) { return a->first < b->first; });
  std::vector<Ref> all;
  uint64_t total_spans = 0;
  for (const auto* u : units)
    for (const Trace& t : u->second.traces) {
      all.push_back({&u->second, &t});
      total_spans += t.spans;
    }
  std::stable_sort(all.begin(), all.end(), [](const Ref& a, const Ref& b) {
    return a.trace->duration_ns > b.trace->duration_ns;
  });
  const size_t total = all.size();
  // The percentile picks (nearest rank of the latencies, ascending), then the slowest.
  std::vector<std::pair<size_t, std::string>> picks;  // position in `all`, label
  auto pick = [&](size_t at, std::string label) {
    for (auto& p : picks)
      if (p.first == at) {
        if (p.second.empty()) p.second = std::move(label);
        return;
      }
    picks.emplace_back(at, std::move(label));
  };
  if (total > 0 && opt_.max_traces > 3)
    for (const int pc : {99, 90, 50}) {
      const size_t rank = std::max<size_t>(
          1, static_cast<size_t>(std::ceil(pc / 100.0 * static_cast<double>(total))));
      pick(total - rank, fmt::format("p{}", pc));
    }
  for (size_t at = 0; at < total && picks.size() < opt_.max_traces; ++at) pick(at, "");
  std::sort(picks.begin(), picks.end());

  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{{\"schema\":1,\"view\":\"waterfall\",\"source\":");
  append_json_string(out, opt_.source, kJsonNames);
  fmt::format_to(it, ",\"traces_total\":{},\"spans_total\":{},\"traces_shown\":{},\"left_out\":{}",
                 total, total_spans, picks.size(), total - picks.size());
  fmt::format_to(it, ",\"skipped\":{},\"import_diagnostics\":", skipped_);
  put_counts(out, diagnostics_, /*compact=*/true);
  // Names of the picked traces only, interned here.
  std::vector<std::string_view> names;
  std::unordered_map<std::string_view, uint32_t> name_ids;
  auto name = [&](const Unit& u, uint32_t id) {
    auto [i, fresh] = name_ids.emplace(u.names[id], static_cast<uint32_t>(names.size()));
    if (fresh) names.push_back(u.names[id]);
    return i->second;
  };
  auto id_text = [](const Unit& u, uint32_t begin, uint32_t len) {
    return std::string_view(u.ids).substr(begin, len);
  };
  fmt::memory_buffer traces;
  auto ti = std::back_inserter(traces);
  for (size_t k = 0; k < picks.size(); ++k) {
    const Unit& u = *all[picks[k].first].unit;
    const Trace& t = *all[picks[k].first].trace;
    const Row& root = u.rows[t.rows_begin];
    fmt::format_to(ti, "{}{{\"id\":", k ? "," : "");
    append_json_string(traces, id_text(u, t.id_begin, t.id_len), kJsonNames);
    fmt::format_to(ti,
                   ",\"rank\":{},\"pick\":\"{}\",\"start_ns\":{},\"duration_ns\":{},\"spans\":{},"
                   "\"root\":[{},{}],\"clipped\":{},\"dropped\":{},\"roots\":{},"
                   "\"nonblocking\":{},\"rows\":[",
                   picks[k].first + 1, picks[k].second, t.start_ns, t.duration_ns, t.spans,
                   name(u, root.service), name(u, root.operation), t.clipped, t.dropped, t.roots,
                   t.nonblocking);
    for (uint32_t r = t.rows_begin; r < t.rows_end; ++r) {
      const Row& x = u.rows[r];
      fmt::format_to(ti, "{}[{},{},{},{},{},{},{},{},\"{}\",", r > t.rows_begin ? "," : "",
                     x.parent == kNoSpan ? -1 : static_cast<int64_t>(x.parent), x.depth,
                     name(u, x.service), name(u, x.operation), x.start_ns - t.start_ns,
                     x.end_ns - x.start_ns, x.self_ns, x.critical_ns,
                     importers::name_of(static_cast<importers::SpanKind>(x.kind)));
      append_json_string(traces, id_text(u, x.id_begin, x.id_len), kJsonNames);
      fmt::format_to(ti, "]");
    }
    fmt::format_to(ti, "],\"path\":[");
    for (uint32_t s = t.segs_begin; s < t.segs_end; ++s) {
      const Segment& g = u.segments[s];
      fmt::format_to(ti, "{}[{},{},{}]", s > t.segs_begin ? "," : "", g.row,
                     g.start_ns - t.start_ns, g.end_ns - t.start_ns);
    }
    fmt::format_to(ti, "]}}");
  }
  fmt::format_to(it, ",\"names\":[");
  for (size_t k = 0; k < names.size(); ++k) {
    if (k) fmt::format_to(it, ",");
    append_json_string(out, names[k], kJsonNames);
  }
  fmt::format_to(it, "],\"traces\":[");
  out.append(traces.data(), traces.data() + traces.size());
  fmt::format_to(it, "]");
  if (opt_.percentiles) {
    // The paths merged in file order, as `critical-path` merges them.
    std::vector<const std::pair<size_t, requests::UnitPaths>*> order;
    for (const auto& p : paths_) order.push_back(&p);
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
    requests::PathCollection collection;
    for (const auto* p : order) collection.add(p->second);
    fmt::format_to(it, ",\"percentiles\":");
    const std::string p = percentiles_json(collection, opt_.percentile_view);
    out.append(p.data(), p.data() + p.size());
  }
  fmt::format_to(it, "}}\n");
  return fmt::to_string(out);
}

std::string render_waterfall_html(const std::string& waterfall_json) {
  return embed_page(std::string(assets::kWaterfallHtml), assets::kWaterfallJs, waterfall_json);
}

std::string render_live_waterfall_html() {
  // No trace embedded: "live" switches the script to polling (web/waterfall.js).
  return render_waterfall_html(
      "{\"schema\":1,\"view\":\"waterfall\",\"live\":true,\"source\":\"serve --otlp: slow "
      "traces\",\"traces_total\":0,\"spans_total\":0,\"traces_shown\":0,\"left_out\":0,"
      "\"skipped\":0,\"import_diagnostics\":{},\"names\":[],\"traces\":[]}");
}

}  // namespace snailtrail::report
