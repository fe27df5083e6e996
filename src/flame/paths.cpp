#include "flame/paths.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "trace/event.hpp"

namespace snailtrail::flame {
namespace {

std::string operator_frame(const SampleSet& set, uint32_t op) {
  if (op == kNoId) return "[no operator]";
  auto it = set.operator_names.find(op);
  return fmt::format("[op {}]", it != set.operator_names.end() ? it->second : std::to_string(op));
}

// The sample's own comm (perf), else the thread's last known name.
const std::string* comm_of(const SampleSet& set, const StackSample& s) {
  if (s.comm != kNoId) return &set.comm(s.comm);
  auto it = set.thread_names.find(s.thread);
  return it != set.thread_names.end() ? &it->second : nullptr;
}

std::string thread_frame(const SampleSet& set, const StackSample& s) {
  if (s.thread == kNoId) return "[no thread]";
  if (const std::string* comm = comm_of(set, s))
    return fmt::format("[thread {} {}]", s.thread, *comm);
  return fmt::format("[thread {}]", s.thread);
}

// stackcollapse-perf.pl's process frame: "comm", "comm-PID" or "comm-PID/TID", spaces as
// '_', "?" for a PID perf did not print.
std::string process_frame(const SampleSet& set, const StackSample& s, ProcessRoot how) {
  std::string name = set.comm(s.comm);
  std::replace(name.begin(), name.end(), ' ', '_');
  const std::string pid = s.pid == kNoId ? "?" : std::to_string(s.pid);
  if (how == ProcessRoot::pid) return name + "-" + pid;
  if (how == ProcessRoot::tid) return fmt::format("{}-{}/{}", name, pid, s.thread);
  return name;
}

class Names {
 public:
  explicit Names(std::vector<std::string>& names) : names_(names) {}
  uint32_t id(const std::string& name) {
    auto [it, added] = index_.try_emplace(name, static_cast<uint32_t>(names_.size()));
    if (added) names_.push_back(name);
    return it->second;
  }

 private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, uint32_t> index_;
};

// The root frames above sample s, as an index into ps.prefixes (one per distinct list).
class Prefixes {
 public:
  Prefixes(const SampleSet& set, const TreeOptions& o, PathSet& ps, Names& names)
      : set_(set), o_(o), ps_(ps), names_(names) {
    for (const StackSample& s : set.samples) any_op_ = any_op_ || s.op != kNoId;
  }
  uint32_t of(const StackSample& s) {
    const bool proc = o_.process_root != ProcessRoot::none && s.comm != kNoId;
    const auto key =
        std::make_tuple(o_.thread_root ? s.thread : kNoId, o_.thread_root || proc ? s.comm : kNoId,
                        o_.operator_root && any_op_ ? s.op : kNoId, proc ? s.pid : kNoId);
    auto [it, added] = index_.try_emplace(key, static_cast<uint32_t>(ps_.prefixes.size()));
    if (!added) return it->second;
    std::vector<uint32_t> frames;
    if (o_.thread_root) frames.push_back(names_.id(thread_frame(set_, s)));
    if (o_.operator_root && any_op_) frames.push_back(names_.id(operator_frame(set_, s.op)));
    if (proc) frames.push_back(names_.id(process_frame(set_, s, o_.process_root)));
    ps_.prefixes.push_back(std::move(frames));
    return it->second;
  }

 private:
  const SampleSet& set_;
  const TreeOptions& o_;
  PathSet& ps_;
  Names& names_;
  bool any_op_ = false;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, uint32_t> index_;
};

// Path p's name ids, root first, read in place.
struct Seq {
  const uint32_t *pre, *stack;
  size_t npre, nstack;
  uint32_t leaf;
  const uint32_t* frame_name;
  size_t size() const { return npre + nstack + (leaf != kNoId); }
  uint32_t at(size_t i) const {
    if (i < npre) return pre[i];
    i -= npre;
    return i < nstack ? frame_name[stack[i]] : leaf;
  }
};

}  // namespace

void PathSet::names_of(const SampleSet& set, const Path& p, std::vector<uint32_t>& out) const {
  out = prefixes[p.prefix];
  auto [b, e] = set.stack(p.stack);
  for (const uint32_t* f = b; f != e; ++f) out.push_back(frame_name[*f]);
  if (p.leaf != kNoId) out.push_back(p.leaf);
}

PathSet collect_paths(const SampleSet& set, const std::vector<double>& weights,
                      const TreeOptions& o, std::vector<uint32_t>* sample_path) {
  PathSet ps;
  Names names(ps.names);
  ps.frame_name.resize(set.frame_count());
  for (uint32_t f = 0; f < set.frame_count(); ++f)
    ps.frame_name[f] = names.id(o.short_names ? short_frame_name(set.frame(f)) : set.frame(f));
  Prefixes prefixes(set, o, ps, names);
  std::vector<uint32_t> off_cpu_leaf(kActivityTypeCount, kNoId);
  std::vector<uint32_t> sample_of;  // with sample_path: the sample of each unmerged path
  for (size_t i = 0; i < set.samples.size() && i < weights.size(); ++i) {
    const StackSample& s = set.samples[i];
    const double w = weights[i];
    if (!(w > 0)) continue;
    if (o.operator_id && s.op != *o.operator_id) continue;
    if (o.worker && (s.worker != kNoId ? s.worker : s.thread) != *o.worker) continue;
    PathSet::Path p{prefixes.of(s), s.stack, kNoId, 0, w};
    if (o.split_by_who) p.who = who_of(s);
    if (o.off_cpu_leaf && s.kind == SampleKind::off_cpu && s.activity < kActivityTypeCount) {
      uint32_t& leaf = off_cpu_leaf[s.activity];
      if (leaf == kNoId) leaf = names.id(fmt::format("[off-cpu {}]", kActivityNames[s.activity]));
      p.leaf = leaf;
    }
    ps.total += w;
    ps.paths.push_back(p);
    if (sample_path) sample_of.push_back(static_cast<uint32_t>(i));
  }
  std::vector<PathSet::Path> unmerged;
  if (sample_path) unmerged = ps.paths;
  // Merge samples of one path (integers first: cheap), then order by names.
  auto key = [](const PathSet::Path& p) { return std::tie(p.prefix, p.stack, p.leaf, p.who); };
  std::sort(ps.paths.begin(), ps.paths.end(),
            [&](const auto& a, const auto& b) { return key(a) < key(b); });
  size_t n = 0;
  for (size_t i = 0; i < ps.paths.size(); ++i) {
    if (n > 0 && key(ps.paths[n - 1]) == key(ps.paths[i]))
      ps.paths[n - 1].weight += ps.paths[i].weight;
    else
      ps.paths[n++] = ps.paths[i];
  }
  ps.paths.resize(n);
  std::vector<uint32_t> order(ps.names.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return ps.names[a] < ps.names[b]; });
  ps.rank.resize(ps.names.size());
  for (size_t i = 0; i < order.size(); ++i)
    ps.rank[order[i]] = i > 0 && ps.names[order[i]] == ps.names[order[i - 1]]
                            ? ps.rank[order[i - 1]]
                            : static_cast<uint32_t>(i);
  auto seq = [&](const PathSet::Path& p) {
    auto [b, e] = set.stack(p.stack);
    const std::vector<uint32_t>& pre = ps.prefixes[p.prefix];
    return Seq{pre.data(), b, pre.size(), static_cast<size_t>(e - b), p.leaf, ps.frame_name.data()};
  };
  // Rank of each stack frame, so that paths under one prefix (the common case: all of
  // them) compare their stacks in a tight loop; the general walk finishes the rest.
  std::vector<uint32_t> frame_rank(ps.frame_name.size());
  for (size_t f = 0; f < frame_rank.size(); ++f) frame_rank[f] = ps.rank[ps.frame_name[f]];
  std::sort(ps.paths.begin(), ps.paths.end(), [&](const auto& pa, const auto& pb) {
    const Seq a = seq(pa), b = seq(pb);
    size_t i = 0;
    if (pa.prefix == pb.prefix) {
      const size_t common = std::min(a.nstack, b.nstack);
      size_t k = 0;
      while (k < common && frame_rank[a.stack[k]] == frame_rank[b.stack[k]]) ++k;
      if (k < common) return frame_rank[a.stack[k]] < frame_rank[b.stack[k]];
      i = a.npre + common;
    }
    const size_t na = a.size(), nb = b.size();
    for (; i < na && i < nb; ++i) {
      const uint32_t ra = ps.rank[a.at(i)], rb = ps.rank[b.at(i)];
      if (ra != rb) return ra < rb;
    }
    return na < nb;
  });
  if (sample_path) {  // each sample's key, looked up among the merged paths
    std::vector<uint32_t> by_key(ps.paths.size());
    std::iota(by_key.begin(), by_key.end(), 0u);
    std::sort(by_key.begin(), by_key.end(),
              [&](uint32_t a, uint32_t b) { return key(ps.paths[a]) < key(ps.paths[b]); });
    sample_path->assign(set.samples.size(), kNoId);
    for (size_t u = 0; u < unmerged.size(); ++u) {
      const auto k = key(unmerged[u]);
      auto it = std::lower_bound(by_key.begin(), by_key.end(), k,
                                 [&](uint32_t x, const auto& kk) { return key(ps.paths[x]) < kk; });
      (*sample_path)[sample_of[u]] = *it;
    }
  }
  return ps;
}

namespace {

std::string folded_name(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

namespace {

// Folded lines "path weight" sorted by path as bytes (as stackcollapse-perf.pl and
// flamegraph.pl sort), weights rounded, lines rounding to 0 left out.
class FoldedLines {
 public:
  void add(const std::string& path, double w) {
    const double r = std::round(w);
    if (r < 1) return;
    lines_.push_back({text_.size(), path.size(), r});
    text_ += path;
  }
  std::string str() {
    std::sort(lines_.begin(), lines_.end(),
              [&](const Line& a, const Line& b) { return path(a) < path(b); });
    std::string out;
    out.reserve(text_.size() + lines_.size() * 8);
    for (const Line& l : lines_) {
      out += path(l);
      out += fmt::format(" {:.0f}\n", l.weight);
    }
    return out;
  }

 private:
  struct Line {
    size_t begin, size;
    double weight;
  };
  std::string_view path(const Line& l) const {
    return std::string_view(text_).substr(l.begin, l.size);
  }
  std::string text_;
  std::vector<Line> lines_;
};

}  // namespace

std::string to_folded(const FlameTree& tree) {
  FoldedLines lines;
  std::string path;
  std::vector<size_t> cut(tree.max_depth + 2, 0);  // path length before depth d's frame
  // Depth-first: nodes are stored in depth-first order, so a node's path is its parent's
  // (still in `path`) plus its name.
  for (uint32_t n = 1; n < tree.nodes.size(); ++n) {
    const FlameTree::Node& node = tree.nodes[n];
    path.resize(cut[node.depth]);
    if (node.depth > 1) path += ';';
    path += folded_name(node.name);
    if (node.depth + 1 < cut.size()) cut[node.depth + 1] = path.size();
    if (node.self > 0) lines.add(path, node.self);
  }
  return lines.str();
}

std::string to_folded(const SampleSet& set, const std::vector<double>& weights,
                      const TreeOptions& options) {
  const PathSet ps = collect_paths(set, weights, options);
  std::vector<std::string> folded(ps.names.size());
  for (size_t i = 0; i < folded.size(); ++i) folded[i] = folded_name(ps.names[i]);
  FoldedLines lines;
  std::vector<uint32_t> names, last;
  std::string path;
  double weight = 0;
  auto flush = [&]() {
    if (last.empty()) return;
    path.clear();
    for (size_t d = 0; d < last.size(); ++d) (d ? path += ';' : path) += folded[last[d]];
    lines.add(path, weight);
  };
  for (const PathSet::Path& p : ps.paths) {  // equal name paths are adjacent
    ps.names_of(set, p, names);
    if (names != last) {
      flush();
      last.swap(names);
      weight = 0;
    }
    weight += p.weight;
  }
  flush();
  return lines.str();
}

}  // namespace snailtrail::flame
