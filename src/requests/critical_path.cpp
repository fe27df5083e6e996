// Critical path of request traces (critical_path.hpp).
#include "requests/critical_path.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace snailtrail::requests {

namespace {

// The tree, as Jaeger UI builds it: a span's parent is its CHILD_OF parent, else the
// first reference of any kind (FOLLOWS_FROM, an OTLP link) to a span of the same trace.
std::vector<uint32_t> tree_parents(const SpanSet& set) {
  const std::vector<Span>& spans = set.spans;
  const uint32_t n = static_cast<uint32_t>(spans.size());
  std::vector<uint32_t> tree_parent(n, kNoSpan);
  for (uint32_t i = 0; i < n; ++i) {
    tree_parent[i] = spans[i].parent;
    if (tree_parent[i] != kNoSpan) continue;
    for (uint32_t r = spans[i].refs_begin; r < spans[i].refs_end && r < set.ref_target.size();
         ++r) {
      const uint32_t t = set.ref_target[r];
      if (t != kNoSpan && t != i && spans[t].trace == spans[i].trace) {
        tree_parent[i] = t;
        break;
      }
    }
  }
  // Follows-from parents can close a cycle: break it where it is found.
  constexpr uint8_t kUnknown = 0, kOnPath = 1, kDone = 2;
  std::vector<uint8_t> state(n, kUnknown);
  std::vector<uint32_t> chain;
  for (uint32_t i = 0; i < n; ++i) {
    chain.clear();
    for (uint32_t x = i; x != kNoSpan && state[x] == kUnknown; x = tree_parent[x]) {
      state[x] = kOnPath;
      chain.push_back(x);
      if (tree_parent[x] != kNoSpan && state[tree_parent[x]] == kOnPath) tree_parent[x] = kNoSpan;
    }
    for (uint32_t x : chain) state[x] = kDone;
  }
  return tree_parent;
}

// The tree with its children as CSR. A consumer child of a producer runs on its own
// (Jaeger UI: not blocking, whatever the reference), so it and its subtree are left out.
struct RequestTree {
  const std::vector<Span>& spans;
  std::vector<uint32_t> parent;
  std::vector<uint32_t> child_begin, children;

  explicit RequestTree(const SpanSet& set) : spans(set.spans), parent(tree_parents(set)) {
    const uint32_t n = static_cast<uint32_t>(spans.size());
    child_begin.assign(n + 1, 0);
    children.resize(n);
    for (uint32_t i = 0; i < n; ++i)
      if (parent[i] != kNoSpan && blocking(i)) ++child_begin[parent[i] + 1];
    std::partial_sum(child_begin.begin(), child_begin.end(), child_begin.begin());
    std::vector<uint32_t> fill(child_begin.begin(), child_begin.end() - 1);
    for (uint32_t i = 0; i < n; ++i)
      if (parent[i] != kNoSpan && blocking(i)) children[fill[parent[i]]++] = i;
  }
  bool blocking(uint32_t child) const {
    const uint32_t p = parent[child];
    return !(spans[p].kind == SpanKind::producer && spans[child].kind == SpanKind::consumer);
  }
};

// Traces in order of first appearance, with their span counts and their roots (spans
// without a parent in the tree), in file order.
std::vector<CriticalPath> paths_by_trace(const RequestTree& tree,
                                         std::vector<std::vector<uint32_t>>& roots) {
  const std::vector<Span>& spans = tree.spans;
  std::unordered_map<uint32_t, uint32_t> trace_slot;
  std::vector<CriticalPath> paths;
  for (uint32_t i = 0; i < spans.size(); ++i) {
    auto [it, fresh] = trace_slot.emplace(spans[i].trace, static_cast<uint32_t>(paths.size()));
    if (fresh) {
      paths.push_back({spans[i].trace, kNoSpan, 0, 0, 0, 0, {}});
      roots.emplace_back();
    }
    CriticalPath& p = paths[it->second];
    ++p.spans;
    if (tree.parent[i] == kNoSpan)
      roots[it->second].push_back(i);
    else if (!tree.blocking(i))
      ++p.nonblocking;
  }
  return paths;
}

// The path of one root: its subtree clipped to it, then walked backward from its end.
// The buffers are per span of the set and reused from root to root.
class PathWalker {
 public:
  PathWalker(const RequestTree& tree, bool segments)
      : segments_(segments),
        tree_(tree),
        spans_(tree.spans),
        cs_(spans_.size()),
        ce_(spans_.size()),
        crit_(spans_.size(), 0),
        first_(spans_.size(), 0) {}

  // Appends the root's steps to path.path, by first_ns.
  void walk(uint32_t root, CriticalPath& path) {
    clip(root, path);
    order_.clear();
    walked_.clear();
    push(root, ce_[root]);
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      while (f.next < f.end && ce_[order_[f.next]] > f.point) ++f.next;
      if (f.next == f.end) {
        credit(f.span, cs_[f.span], f.point);
        stack_.pop_back();
        continue;
      }
      const uint32_t child = order_[f.next++];
      credit(f.span, ce_[child], f.point);
      f.point = cs_[child];
      push(child, ce_[child]);  // may reallocate: f is not used after this
    }
    path.duration_ns += spans_[root].end - spans_[root].start;
    // The walk went backward: its intervals come latest first.
    path.segments.insert(path.segments.end(), walked_.rbegin(), walked_.rend());
    const size_t from = path.path.size();
    for (uint32_t x : reached_)
      if (crit_[x] > 0) path.path.push_back({x, crit_[x], first_[x]});
    std::sort(path.path.begin() + static_cast<std::ptrdiff_t>(from), path.path.end(),
              [](const PathStep& a, const PathStep& b) { return a.first_ns < b.first_ns; });
    if (path.path.size() == from) path.path.push_back({root, 0, spans_[root].start});
    for (uint32_t x : reached_) crit_[x] = 0;
  }

 private:
  // A span on the walk's stack (explicit frames: traces can be deep).
  struct Frame {
    uint32_t span;
    int64_t point;        // walking backward: everything after it is done
    uint32_t next;        // cursor into the span's children sorted by clipped end, descending
    uint32_t begin, end;  // the span's sorted children in `order_`
  };

  bool outside(uint32_t child, uint32_t x) const {
    return spans_[child].start > ce_[x] || spans_[child].end < cs_[x];
  }

  // Clip top-down; children entirely outside their parent are dropped with their subtree.
  void clip(uint32_t root, CriticalPath& path) {
    reached_.assign(1, root);
    cs_[root] = spans_[root].start;
    ce_[root] = spans_[root].end;
    for (size_t k = 0; k < reached_.size(); ++k) {
      const uint32_t x = reached_[k];
      for (uint32_t c = tree_.child_begin[x]; c < tree_.child_begin[x + 1]; ++c) {
        const uint32_t y = tree_.children[c];
        if (outside(y, x)) {
          ++path.dropped;
          continue;
        }
        path.clipped += spans_[y].start < cs_[x] || spans_[y].end > ce_[x];
        cs_[y] = std::max(spans_[y].start, cs_[x]);
        ce_[y] = std::min(spans_[y].end, ce_[x]);
        reached_.push_back(y);
      }
    }
  }

  // A frame for x, its kept children sorted by clipped end (latest first; ties: the one
  // that started first).
  void push(uint32_t x, int64_t point) {
    const uint32_t b = static_cast<uint32_t>(order_.size());
    for (uint32_t c = tree_.child_begin[x]; c < tree_.child_begin[x + 1]; ++c) {
      const uint32_t y = tree_.children[c];
      if (outside(y, x)) continue;  // dropped
      order_.push_back(y);
    }
    std::sort(order_.begin() + b, order_.end(), [&](uint32_t a, uint32_t c) {
      if (ce_[a] != ce_[c]) return ce_[a] > ce_[c];
      if (cs_[a] != cs_[c]) return cs_[a] < cs_[c];
      return a < c;
    });
    stack_.push_back({x, point, b, b, static_cast<uint32_t>(order_.size())});
  }

  // x ran on the critical path in [a, b).
  void credit(uint32_t x, int64_t a, int64_t b) {
    if (b <= a) return;
    if (crit_[x] == 0 || a < first_[x]) first_[x] = a;
    crit_[x] += b - a;
    if (!segments_) return;
    if (!walked_.empty() && walked_.back().span == x && walked_.back().start_ns == b)
      walked_.back().start_ns = a;  // continues the same stretch (a zero-length child between)
    else
      walked_.push_back({x, a, b});
  }

  const bool segments_;
  const RequestTree& tree_;
  const std::vector<Span>& spans_;
  std::vector<int64_t> cs_, ce_;  // clipped intervals
  std::vector<int64_t> crit_, first_;
  std::vector<uint32_t> reached_, order_;
  std::vector<Frame> stack_;
  std::vector<PathSegment> walked_;  // this root's intervals, latest first
};

}  // namespace

std::vector<CriticalPath> critical_paths(const SpanSet& set, std::vector<uint32_t>* tree_parent_out,
                                         bool segments) {
  const std::vector<Span>& spans = set.spans;
  RequestTree tree(set);
  // Each root gets its own path, in order of start time, and the paths are concatenated.
  std::vector<std::vector<uint32_t>> roots;
  std::vector<CriticalPath> paths = paths_by_trace(tree, roots);
  PathWalker walker(tree, segments);
  for (size_t t = 0; t < paths.size(); ++t) {
    CriticalPath& path = paths[t];
    std::vector<uint32_t>& rs = roots[t];
    std::stable_sort(rs.begin(), rs.end(),
                     [&](uint32_t a, uint32_t b) { return spans[a].start < spans[b].start; });
    path.roots = static_cast<uint32_t>(rs.size());
    if (rs.empty()) continue;  // cannot happen: cycles are broken in tree_parents
    path.root = rs.front();
    path.start_ns = spans[rs.front()].start;
    for (const uint32_t root : rs) walker.walk(root, path);
  }
  if (tree_parent_out) *tree_parent_out = std::move(tree.parent);
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

}  // namespace snailtrail::requests

namespace snailtrail::requests {

TraceFigures figures_of(const CriticalPath& p) {
  return {p.duration_ns, p.start_ns, p.spans, p.clipped, p.dropped, p.roots, p.nonblocking};
}

UnitPaths summarize_paths(const SpanSet& set, const std::vector<CriticalPath>& paths,
                          const std::vector<uint32_t>& tree_parent, bool contexts) {
  UnitPaths u;
  std::unordered_map<uint32_t, uint32_t> local;  // the set's string id -> u.names
  auto name = [&](uint32_t id) {
    auto [it, fresh] = local.emplace(id, static_cast<uint32_t>(u.names.size()));
    if (fresh) u.names.push_back(set.str(id));
    return it->second;
  };
  // Calling contexts: a trie of service:operation frames, one node per distinct chain of
  // ancestors, memoized per span (each span is walked once).
  std::vector<uint32_t> node;
  std::unordered_map<uint64_t, uint32_t> frames, trie;
  std::vector<uint32_t> chain;
  if (contexts) node.assign(set.spans.size(), kNoSpan);
  auto context_of = [&](uint32_t x) {
    chain.clear();
    while (x != kNoSpan && node[x] == kNoSpan) {
      chain.push_back(x);
      x = tree_parent[x];
    }
    uint32_t parent = x == kNoSpan ? kNoSpan : node[x];
    for (size_t k = chain.size(); k-- > 0;) {
      const Span& s = set.spans[chain[k]];
      const uint32_t service = name(s.service), operation = name(s.operation);
      const uint64_t frame =
          frames.emplace(uint64_t(service) << 32 | operation, static_cast<uint32_t>(frames.size()))
              .first->second;
      const uint64_t key = uint64_t(static_cast<uint32_t>(parent + 1)) << 32 | frame;
      auto [it, fresh] = trie.emplace(key, static_cast<uint32_t>(u.contexts.size()));
      if (fresh) u.contexts.push_back({parent, service, operation});
      parent = node[chain[k]] = it->second;
    }
    return parent;
  };
  u.traces.reserve(paths.size());
  for (const CriticalPath& p : paths) {
    UnitPaths::TracePaths t{};
    t.id_begin = static_cast<uint32_t>(u.ids.size());
    set.ids.append(p.trace, u.ids);
    t.id_len = static_cast<uint32_t>(u.ids.size()) - t.id_begin;
    static_cast<TraceFigures&>(t) = figures_of(p);
    t.steps_begin = static_cast<uint32_t>(u.steps.size());
    for (const PathStep& step : p.path) {
      const Span& s = set.spans[step.span];
      UnitPaths::Step out{};
      out.service = name(s.service);
      out.operation = name(s.operation);
      out.context = contexts ? context_of(step.span) : kNoSpan;
      out.id_begin = static_cast<uint32_t>(u.ids.size());
      set.ids.append(s.id, u.ids);
      out.id_len = static_cast<uint32_t>(u.ids.size()) - out.id_begin;
      out.start_ns = s.start;
      out.end_ns = s.end;
      out.self_ns = step.critical_ns;
      u.steps.push_back(out);
    }
    t.steps_end = static_cast<uint32_t>(u.steps.size());
    u.traces.push_back(t);
  }
  return u;
}

uint32_t PathCollection::intern(const std::string& s) {
  auto [it, fresh] = name_ids_.emplace(s, static_cast<uint32_t>(names_.size()));
  if (fresh) names_.push_back(s);
  return it->second;
}

void PathCollection::add(const UnitPaths& unit) {
  std::vector<uint32_t> name(unit.names.size());
  for (size_t i = 0; i < name.size(); ++i) name[i] = intern(unit.names[i]);
  std::vector<uint32_t> context(unit.contexts.size());
  for (size_t i = 0; i < context.size(); ++i) {
    const UnitPaths::Context& c = unit.contexts[i];
    const uint32_t parent = c.parent == kNoSpan ? kNoSpan : context[c.parent];
    const uint32_t service = name[c.service], operation = name[c.operation];
    const uint64_t frame =
        frame_ids_
            .emplace(uint64_t(service) << 32 | operation, static_cast<uint32_t>(frame_ids_.size()))
            .first->second;
    const uint64_t key = uint64_t(static_cast<uint32_t>(parent + 1)) << 32 | frame;
    auto [it, fresh] = context_ids_.emplace(key, static_cast<uint32_t>(contexts_.size()));
    if (fresh) contexts_.push_back({parent, service, operation});
    context[i] = it->second;
  }
  for (const UnitPaths::TracePaths& t : unit.traces) {
    TracePaths g;
    g.ids.assign(unit.ids, t.id_begin, t.id_len);
    g.id_len = t.id_len;
    if (!trace_ids_.emplace(g.ids, 0).second) ++repeated_;
    static_cast<TraceFigures&>(g) = t;
    g.path.reserve(t.steps_end - t.steps_begin);
    for (uint32_t k = t.steps_begin; k < t.steps_end; ++k) {
      Step s = unit.steps[k];
      s.service = name[s.service];
      s.operation = name[s.operation];
      if (s.context != kNoSpan) s.context = context[s.context];
      const uint32_t at = static_cast<uint32_t>(g.ids.size());
      g.ids.append(unit.ids, s.id_begin, s.id_len);
      s.id_begin = at;
      g.path.push_back(s);
    }
    total_spans_ += t.spans;
    traces_.push_back(std::move(g));
  }
}

std::vector<ServiceTime> PathCollection::by_service() const {
  std::vector<size_t> all(traces_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return by_service(all);
}

std::vector<ServiceTime> PathCollection::by_service(const std::vector<size_t>& traces) const {
  std::unordered_map<uint32_t, size_t> slot;
  std::vector<ServiceTime> out;
  for (size_t t : traces)
    for (const Step& s : traces_[t].path) {
      auto [it, fresh] = slot.emplace(s.service, out.size());
      if (fresh) out.push_back({s.service, 0, 0});
      out[it->second].critical_ns += s.self_ns;
      ++out[it->second].spans_on_path;
    }
  std::stable_sort(out.begin(), out.end(), [&](const ServiceTime& a, const ServiceTime& b) {
    if (a.critical_ns != b.critical_ns) return a.critical_ns > b.critical_ns;
    return names_[a.service] < names_[b.service];
  });
  return out;
}

}  // namespace snailtrail::requests
