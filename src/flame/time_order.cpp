#include "flame/time_order.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "flame/paths.hpp"
#include "output/names.hpp"

namespace snailtrail::flame {
namespace {

std::string lane_name(const SampleSet& set, uint64_t key) {
  const auto id = static_cast<uint32_t>(key);
  if (!(key & kThreadBit)) return fmt::format("worker {}", id);
  if (id == kNoId) return "no thread";
  auto n = set.thread_names.find(id);
  return n != set.thread_names.end() ? fmt::format("thread {} {}", id, n->second)
                                     : fmt::format("thread {}", id);
}

// The trie of paths: (parent, name) -> stack.
class Stacks {
 public:
  explicit Stacks(TimeOrder& t) : t_(t) {}
  uint32_t add(const std::vector<uint32_t>& names) {
    uint32_t s = kNoId;
    for (uint32_t n : names) {
      auto [it, added] = index_.try_emplace((uint64_t{s} << 32) | n,
                                            static_cast<uint32_t>(t_.stack_parent.size()));
      if (added) {
        t_.stack_parent.push_back(s);
        t_.stack_frame.push_back(n);
        depth_.push_back(s == kNoId ? 1 : depth_[s] + 1);
      }
      s = it->second;
    }
    return s;
  }
  // The longest common prefix of two stacks.
  uint32_t common(uint32_t a, uint32_t b) const {
    while (a != b) {
      if (a == kNoId || b == kNoId) return kNoId;
      if (depth_[a] >= depth_[b])
        a = t_.stack_parent[a];
      else
        b = t_.stack_parent[b];
    }
    return a;
  }

 private:
  TimeOrder& t_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::vector<uint32_t> depth_;
};

// Merges neighbouring runs of a lane, shortest merge first, until at most max_runs remain
// (or every lane is one run).
size_t cap_runs(std::vector<TimeOrder::Run>& runs, size_t max_runs, const Stacks& stacks) {
  const size_t n = runs.size();
  if (max_runs == 0 || n <= max_runs) return 0;
  std::vector<uint32_t> next(n, kNoId), prev(n, kNoId), version(n, 0);
  std::vector<char> alive(n, 1);
  for (size_t i = 0; i + 1 < n; ++i)
    if (runs[i].lane == runs[i + 1].lane) {
      next[i] = static_cast<uint32_t>(i + 1);
      prev[i + 1] = static_cast<uint32_t>(i);
    }
  // (length of the merged run, left run, versions of left and right when queued); ties go
  // to the earlier run, so the result does not depend on the queue's internals.
  using Cand = std::tuple<int64_t, uint32_t, uint32_t, uint32_t>;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<>> queue;
  auto push = [&](uint32_t l) {
    if (l == kNoId || next[l] == kNoId) return;
    const uint32_t r = next[l];
    queue.emplace(runs[r].end - runs[l].start, l, version[l], version[r]);
  };
  for (uint32_t i = 0; i < n; ++i) push(i);
  size_t live = n;
  while (live > max_runs && !queue.empty()) {
    const auto [len, l, vl, vr] = queue.top();
    queue.pop();
    const uint32_t r = next[l];
    if (!alive[l] || r == kNoId || version[l] != vl || version[r] != vr) continue;
    TimeOrder::Run &a = runs[l], &b = runs[r];
    a.end = std::max(a.end, b.end);
    a.stack = stacks.common(a.stack, b.stack);
    a.weight += b.weight;
    a.samples += b.samples;
    alive[r] = 0;
    next[l] = next[r];
    if (next[r] != kNoId) prev[next[r]] = l;
    ++version[l];
    --live;
    push(prev[l]);
    push(l);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) runs[k++] = runs[i];
  runs.resize(k);
  return n - k;
}

// Keeps only the stacks (and frames) the runs use, renumbered.
void compact(TimeOrder& t, const std::vector<std::string>& names) {
  const size_t ns = t.stack_parent.size();
  std::vector<uint32_t> new_id(ns, kNoId), frame_id(names.size(), kNoId);
  std::vector<char> used(ns, 0);
  for (const TimeOrder::Run& r : t.runs)
    for (uint32_t s = r.stack; s != kNoId && !used[s]; s = t.stack_parent[s]) used[s] = 1;
  std::vector<uint32_t> parent, frame;
  for (size_t s = 0; s < ns; ++s) {  // parents come before their children
    if (!used[s]) continue;
    new_id[s] = static_cast<uint32_t>(parent.size());
    const uint32_t p = t.stack_parent[s], f = t.stack_frame[s];
    parent.push_back(p == kNoId ? kNoId : new_id[p]);
    if (frame_id[f] == kNoId) {
      frame_id[f] = static_cast<uint32_t>(t.frames.size());
      t.frames.push_back(names[f]);
    }
    frame.push_back(frame_id[f]);
  }
  t.stack_parent.swap(parent);
  t.stack_frame.swap(frame);
  for (TimeOrder::Run& r : t.runs)
    if (r.stack != kNoId) r.stack = new_id[r.stack];
}

}  // namespace

TimeOrder time_order(const SampleSet& set, const std::vector<double>& weights,
                     const TreeOptions& options, size_t max_runs) {
  TimeOrder t;
  t.max_runs = max_runs;
  std::vector<uint32_t> sample_path;
  const PathSet ps = collect_paths(set, weights, options, &sample_path);
  Stacks stacks(t);
  std::vector<uint32_t> path_stack(ps.paths.size()), names;
  for (size_t p = 0; p < ps.paths.size(); ++p) {
    ps.names_of(set, ps.paths[p], names);
    path_stack[p] = stacks.add(names);
  }
  // The timed samples, by lane then time.
  std::map<uint64_t, uint32_t> lane_of;
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < sample_path.size(); ++i) {
    if (sample_path[i] == kNoId) continue;
    const StackSample& s = set.samples[i];
    if (s.ts == kNoTime || (s.kind == SampleKind::on_cpu && set.period_ns <= 0)) {
      ++t.untimed;
      continue;
    }
    lane_of.emplace(who_of(s), 0);
    order.push_back(i);
  }
  for (auto& [key, lane] : lane_of) {
    lane = static_cast<uint32_t>(t.lanes.size());
    t.lanes.push_back(lane_name(set, key));
  }
  // A sample's interval: on-CPU, the count x period of CPU time that ends at its ts (the
  // timer fires once the thread used it); off-CPU, the wait that starts at its ts.
  auto span = [&](const StackSample& s) -> std::pair<int64_t, int64_t> {
    if (s.kind == SampleKind::on_cpu)
      return {s.ts - static_cast<int64_t>(s.count) * set.period_ns, s.ts};
    return {s.ts, s.ts + static_cast<int64_t>(s.count)};
  };
  std::vector<uint32_t> lane_at(order.size());
  for (size_t k = 0; k < order.size(); ++k) lane_at[k] = lane_of[who_of(set.samples[order[k]])];
  {
    std::vector<uint32_t> idx(order.size());
    for (uint32_t k = 0; k < idx.size(); ++k) idx[k] = k;
    std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
      if (lane_at[a] != lane_at[b]) return lane_at[a] < lane_at[b];
      return span(set.samples[order[a]]).first < span(set.samples[order[b]]).first;
    });
    std::vector<uint32_t> o(idx.size()), l(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) {
      o[k] = order[idx[k]];
      l[k] = lane_at[idx[k]];
    }
    order.swap(o);
    lane_at.swap(l);
  }
  const int64_t slack = set.period_ns / 2;
  for (size_t k = 0; k < order.size(); ++k) {
    const StackSample& s = set.samples[order[k]];
    const uint32_t stack = path_stack[sample_path[order[k]]];
    const auto [a, b] = span(s);
    const double w = weights[order[k]];
    ++t.samples;
    TimeOrder::Run* last =
        t.runs.empty() || t.runs.back().lane != lane_at[k] ? nullptr : &t.runs.back();
    if (last && last->stack == stack && a <= last->end + slack) {
      last->end = std::max(last->end, b);
      last->weight += w;
      ++last->samples;
      continue;
    }
    const int64_t start = last ? std::max(a, last->end) : a;
    t.runs.push_back({lane_at[k], stack, start, std::max(start, b), w, 1});
  }
  t.merged = cap_runs(t.runs, max_runs, stacks);
  if (!t.runs.empty()) {
    t.t0 = t.runs.front().start;
    for (const TimeOrder::Run& r : t.runs) t.t0 = std::min(t.t0, r.start);
    for (TimeOrder::Run& r : t.runs) {
      r.start -= t.t0;
      r.end -= t.t0;
    }
  }
  compact(t, ps.names);
  return t;
}

std::string time_order_json(const TimeOrder& t) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "{{\"t0\": {}, \"samples\": {}, \"untimed\": {}, \"max_runs\": {}, "
                 "\"merged\": {}, \"frames\": [",
                 t.t0, t.samples, t.untimed, t.max_runs, t.merged);
  for (size_t f = 0; f < t.frames.size(); ++f) {
    if (f) out.push_back(',');
    append_json_string(out, t.frames[f], kJsonNames);
  }
  auto id = [](uint32_t v) { return v == kNoId ? int64_t{-1} : int64_t{v}; };
  auto list = [&](const char* name, size_t n, auto&& value) {
    fmt::format_to(it, "\"{}\": [", name);
    for (size_t i = 0; i < n; ++i) fmt::format_to(it, "{}{}", i ? "," : "", value(i));
    out.push_back(']');
  };
  fmt::format_to(it, "], \"stacks\": {{");
  list("parent", t.stack_parent.size(), [&](size_t i) { return id(t.stack_parent[i]); });
  fmt::format_to(it, ", ");
  list("frame", t.stack_frame.size(), [&](size_t i) { return t.stack_frame[i]; });
  fmt::format_to(it, "}}, \"lanes\": [");
  for (size_t l = 0; l < t.lanes.size(); ++l) {
    if (l) out.push_back(',');
    append_json_string(out, t.lanes[l], kJsonNames);
  }
  fmt::format_to(it, "], \"runs\": {{");
  const auto& r = t.runs;
  list("lane", r.size(), [&](size_t i) { return r[i].lane; });
  fmt::format_to(it, ", ");
  list("stack", r.size(), [&](size_t i) { return id(r[i].stack); });
  fmt::format_to(it, ", ");
  list("start", r.size(), [&](size_t i) { return r[i].start; });
  fmt::format_to(it, ", ");
  list("end", r.size(), [&](size_t i) { return r[i].end; });
  fmt::format_to(it, ", ");
  list("weight", r.size(), [&](size_t i) { return r[i].weight; });
  fmt::format_to(it, ", ");
  list("samples", r.size(), [&](size_t i) { return r[i].samples; });
  fmt::format_to(it, "}}}}");
  return std::string(out.data(), out.size());
}

}  // namespace snailtrail::flame
