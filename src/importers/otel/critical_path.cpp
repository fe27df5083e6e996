// Critical path of request traces (critical_path.hpp).
#include "importers/otel/critical_path.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace snailtrail::importers {

std::vector<CriticalPath> critical_paths(const SpanSet& set) {
  const std::vector<Span>& spans = set.spans;
  const uint32_t n = static_cast<uint32_t>(spans.size());
  // Children (CHILD_OF only) as CSR.
  std::vector<uint32_t> child_begin(n + 1, 0), children(n);
  for (const Span& s : spans)
    if (s.parent != kNoSpan) ++child_begin[s.parent + 1];
  std::partial_sum(child_begin.begin(), child_begin.end(), child_begin.begin());
  {
    std::vector<uint32_t> fill(child_begin.begin(), child_begin.end() - 1);
    for (uint32_t i = 0; i < n; ++i)
      if (spans[i].parent != kNoSpan) children[fill[spans[i].parent]++] = i;
  }
  // Traces in order of first appearance, each with its root.
  std::unordered_map<uint32_t, uint32_t> trace_slot;
  std::vector<CriticalPath> paths;
  auto better_root = [&](uint32_t a, uint32_t b) {  // is a a better root than b?
    const Span &x = spans[a], &y = spans[b];
    const bool xr = x.refs_begin != x.refs_end, yr = y.refs_begin != y.refs_end;
    if (xr != yr) return !xr;
    if (x.start != y.start) return x.start < y.start;
    if (x.end - x.start != y.end - y.start) return x.end - x.start > y.end - y.start;
    return a < b;
  };
  for (uint32_t i = 0; i < n; ++i) {
    auto [it, fresh] = trace_slot.emplace(spans[i].trace, static_cast<uint32_t>(paths.size()));
    if (fresh) paths.push_back({spans[i].trace, kNoSpan, 0, 0, 0, 0, {}});
    CriticalPath& p = paths[it->second];
    ++p.spans;
    if (spans[i].parent == kNoSpan && (p.root == kNoSpan || better_root(i, p.root))) p.root = i;
  }

  std::vector<int64_t> cs(n), ce(n);  // clipped intervals
  std::vector<int64_t> crit(n, 0), first(n, 0);
  std::vector<uint32_t> reached, order;
  struct Frame {
    uint32_t span;
    int64_t point;        // walking backward: everything after it is done
    uint32_t next;        // cursor into the span's children sorted by clipped end, descending
    uint32_t begin, end;  // the span's sorted children in `order`
  };
  std::vector<Frame> stack;
  for (CriticalPath& path : paths) {
    if (path.root == kNoSpan) continue;  // every span has a parent: a cycle was broken elsewhere
    const uint32_t root = path.root;
    // Clip top-down; children entirely outside their parent are dropped with their subtree.
    reached.assign(1, root);
    cs[root] = spans[root].start;
    ce[root] = spans[root].end;
    for (size_t k = 0; k < reached.size(); ++k) {
      const uint32_t x = reached[k];
      for (uint32_t c = child_begin[x]; c < child_begin[x + 1]; ++c) {
        const uint32_t y = children[c];
        if (spans[y].start > ce[x] || spans[y].end < cs[x]) {
          ++path.dropped;
          continue;
        }
        path.clipped += spans[y].start < cs[x] || spans[y].end > ce[x];
        cs[y] = std::max(spans[y].start, cs[x]);
        ce[y] = std::min(spans[y].end, ce[x]);
        reached.push_back(y);
      }
    }
    // The walk, with explicit frames (traces can be deep).
    order.clear();
    auto push = [&](uint32_t x, int64_t point) {
      const uint32_t b = static_cast<uint32_t>(order.size());
      for (uint32_t c = child_begin[x]; c < child_begin[x + 1]; ++c) {
        const uint32_t y = children[c];
        if (spans[y].start > ce[x] || spans[y].end < cs[x]) continue;  // dropped
        order.push_back(y);
      }
      std::sort(order.begin() + b, order.end(), [&](uint32_t a, uint32_t c) {
        if (ce[a] != ce[c]) return ce[a] > ce[c];
        if (cs[a] != cs[c]) return cs[a] < cs[c];
        return a < c;
      });
      stack.push_back({x, point, b, b, static_cast<uint32_t>(order.size())});
    };
    auto credit = [&](uint32_t x, int64_t a, int64_t b) {
      if (b <= a) return;
      if (crit[x] == 0 || a < first[x]) first[x] = a;
      crit[x] += b - a;
    };
    push(root, ce[root]);
    while (!stack.empty()) {
      Frame& f = stack.back();
      while (f.next < f.end && ce[order[f.next]] > f.point) ++f.next;
      if (f.next == f.end) {
        credit(f.span, cs[f.span], f.point);
        stack.pop_back();
        continue;
      }
      const uint32_t child = order[f.next++];
      credit(f.span, ce[child], f.point);
      f.point = cs[child];
      push(child, ce[child]);  // may reallocate: f is not used after this
    }
    path.duration_ns = spans[root].end - spans[root].start;
    for (uint32_t x : reached)
      if (crit[x] > 0) path.path.push_back({x, crit[x], first[x]});
    std::sort(path.path.begin(), path.path.end(),
              [](const PathStep& a, const PathStep& b) { return a.first_ns < b.first_ns; });
    if (path.path.empty()) path.path.push_back({root, 0, spans[root].start});
    for (uint32_t x : reached) crit[x] = 0;
  }
  paths.erase(std::remove_if(paths.begin(), paths.end(),
                             [](const CriticalPath& p) { return p.root == kNoSpan; }),
              paths.end());
  return paths;
}

std::vector<ServiceTime> critical_time_by_service(const SpanSet& set,
                                                  const std::vector<CriticalPath>& paths) {
  std::unordered_map<uint32_t, size_t> slot;
  std::vector<ServiceTime> out;
  for (const CriticalPath& p : paths)
    for (const PathStep& s : p.path) {
      const uint32_t service = set.spans[s.span].service;
      auto [it, fresh] = slot.emplace(service, out.size());
      if (fresh) out.push_back({service, 0, 0});
      out[it->second].critical_ns += s.critical_ns;
      ++out[it->second].spans_on_path;
    }
  std::stable_sort(out.begin(), out.end(), [&](const ServiceTime& a, const ServiceTime& b) {
    if (a.critical_ns != b.critical_ns) return a.critical_ns > b.critical_ns;
    return set.str(a.service) < set.str(b.service);
  });
  return out;
}

}  // namespace snailtrail::importers
