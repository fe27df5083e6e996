#include "report/job_graph.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <simdjson.h>

#include "trace/byte_wire.hpp"
#include "trace/json_text.hpp"
#include "trace/trace.hpp"

namespace snailtrail::report {
namespace {

constexpr uint8_t kWaiting = static_cast<uint8_t>(ActivityType::waiting);
// How far the operator of a message's end is looked for along a worker's timeline.
constexpr uint32_t kLinkLookup = 64;

bool is_output(uint8_t type) {
  return type == static_cast<uint8_t>(ActivityType::serialization) ||
         type == static_cast<uint8_t>(ActivityType::buffer);
}

// The operators at both ends of a data message, by the rule DS2's topology uses
// (scale/rate_collector.hpp): the sender's latest activity with an operator up to the send,
// the receiver's first activity with an operator that starts at or after the receipt.
// Looked up in the window's snapshot only (a .snail file read block by block has the same
// snapshots, not the same PAG around them), at most kLinkLookup edges away; kNone if none.
uint32_t sender_op(const Snapshot& s, const Pag& pag, uint32_t u) {
  for (uint32_t k = 0; u > 0 && k < kLinkLookup; --u, ++k) {
    const uint32_t p = u - 1;
    if (s.worker[p] != s.worker[u]) return kNone;
    // A node without an edge inside a worker's nodes: a segment cut (docs/PAG.md §4).
    if (s.edge[p] != kNone && pag.edge_op[s.edge[p]] != kNone) return pag.edge_op[s.edge[p]];
  }
  return kNone;
}
uint32_t receiver_op(const Snapshot& s, const Pag& pag, uint32_t v, uint32_t dst_node) {
  const uint32_t w = s.worker[v];
  for (uint32_t k = 0; v < s.node_count() && k < kLinkLookup; ++v, ++k) {
    if (s.worker[v] != w) return kNone;
    const uint32_t g = s.edge[v];
    if (g != kNone && pag.edge_op[g] != kNone && pag.edge_instance[g] >= dst_node)
      return pag.edge_op[g];
  }
  return kNone;
}

void num(std::string& out, double v) {
  append_json_number(out, v, 6);
}

}  // namespace

JobGraphWindow extract_job_graph_window(const WindowView& view) {
  const Snapshot& s = view.snapshot;
  const Pag& pag = view.pag;
  const CpResult& r = view.cp;
  JobGraphWindow out;
  out.index = view.summary.index;
  out.start = s.window.start;
  out.end = s.window.end;
  // An end on a border belongs to the window it ends (the next one has no part of it).
  auto inside = [&](int64_t t) { return t > s.window.start && t <= s.window.end; };
  // One cell per (worker, operator) met, found by key.
  std::unordered_map<uint64_t, size_t> at;
  for (uint32_t v = 0; v + 1 < s.node_count(); ++v) {
    if (s.edge[v] == kNone) continue;
    const uint32_t g = s.edge[v];
    const uint32_t w = s.worker[v];
    const uint32_t op = pag.edge_op[g];
    const uint8_t type = s.type[v];
    const uint64_t key = uint64_t{w} << 32 | op;
    auto [it, added] = at.try_emplace(key, out.cells.size());
    if (added) {
      JobGraphWindow::Cell c;
      c.op = op;
      c.worker = pag.worker_ids[w];
      out.cells.push_back(c);
    }
    JobGraphWindow::Cell& c = out.cells[it->second];
    const int64_t dur = s.ts[v + 1] - s.ts[v];
    c.ran = true;
    if (type != kWaiting) c.busy_ns += dur;
    if (is_output(type)) c.output_ns += dur;
    if (r.timeline_cp.size() > v) c.cp += r.timeline_cp[v];
    // An operator's activity completed here: its last edge (the next one in the window, if
    // any, is another activity) ends inside the window.
    if (op != kNone && type != kWaiting && inside(pag.node_ts[g + 1])) {
      // The next edge of the worker here, past a segment cut's edgeless node.
      const uint32_t n = v + 2 < s.node_count() && s.edge[v + 1] == kNone ? v + 2 : v + 1;
      const bool continues = s.worker[n] == w && s.edge[n] != kNone &&
                             pag.edge_instance[s.edge[n]] == pag.edge_instance[g];
      if (!continues) ++out.completed;
    }
  }
  std::sort(out.cells.begin(), out.cells.end(), [](const auto& a, const auto& b) {
    return a.worker != b.worker ? a.worker < b.worker : a.op < b.op;
  });
  // Channels: the data messages that lie within the window (a message across a border is
  // left out: its other end is a border node here, in no other window whole).
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> links;
  for (uint32_t k = 0; k < s.msg_index.size(); ++k) {
    const Message& m = pag.messages[s.msg_index[k]];
    if (m.type != ActivityType::data_message) continue;
    if (s.ts[s.msg_src[k]] != m.src_ts || s.ts[s.msg_dst[k]] != m.dst_ts) continue;
    const uint32_t from = sender_op(s, pag, s.msg_src[k]);
    const uint32_t to = receiver_op(s, pag, s.msg_dst[k], m.dst_node);
    if (from == kNone || to == kNone || from == to) continue;
    ++links[{from, to}];
  }
  for (const auto& [ft, n] : links) out.links.push_back({ft.first, ft.second, n});
  return out;
}

static_assert(std::is_trivially_copyable_v<JobGraphWindow::Cell>);
static_assert(std::is_trivially_copyable_v<JobGraphWindow::Link>);

void append_job_graph_window(std::string& out, const JobGraphWindow& w) {
  ByteWriter b(out);
  b.pod(w.index);
  b.pod(w.start);
  b.pod(w.end);
  b.pod(w.completed);
  b.vec(w.cells);
  b.vec(w.links);
}

void read_job_graph_window(std::string_view in, size_t& pos, JobGraphWindow& w) {
  ByteReader r(in, pos, "job graph window");
  r.pod(w.index);
  r.pod(w.start);
  r.pod(w.end);
  r.pod(w.completed);
  r.vec(w.cells);
  r.vec(w.links);
}

void JobGraphBuilder::render(const WindowView& view) {
  if (view.summary.window.empty_run > 0 || view.skipped) return;
  JobGraphWindow w = extract_job_graph_window(view);
  std::lock_guard lock(mu_);
  pending_[view.summary.index] = std::move(w);
}

void JobGraphBuilder::consume(const WindowSummary& summary, const Names& names) {
  JobGraphWindow w;
  if (summary.window.empty_run == 0) {
    std::lock_guard lock(mu_);
    auto it = pending_.find(summary.index);
    if (it == pending_.end()) return;  // not rendered (a rank's window): left out
    w = std::move(it->second);
    pending_.erase(it);
  }
  add(summary, names, std::move(w));
}

uint32_t JobGraphBuilder::slot(uint32_t worker_id, const Names& names) {
  auto [it, added] = slot_of_.try_emplace(worker_id, static_cast<uint32_t>(worker_names_.size()));
  if (added) {
    const auto k = std::find(names.worker_ids.begin(), names.worker_ids.end(), worker_id);
    const size_t i = static_cast<size_t>(k - names.worker_ids.begin());
    worker_names_.push_back(i < names.worker.size() ? names.worker[i] : std::to_string(worker_id));
  }
  return it->second;
}

void JobGraphBuilder::add(const WindowSummary& summary, const Names& names, JobGraphWindow&& w) {
  if (run_.absorb(summary)) {
    run_names_ = &names;
    return;
  }
  take_run();
  add_now(summary, names, std::move(w));
}

void JobGraphBuilder::take_run() {
  if (run_.pending()) add_now(run_.take(), *run_names_, {});
}

void JobGraphBuilder::add_now(const WindowSummary& summary, const Names& names,
                              JobGraphWindow&& w) {
  const uint64_t count = summary.window.count();
  const int64_t length = summary.window.end - summary.window.start;
  windows_ += count;
  length_ns_ += length;
  for (const auto& [id, name] : names.op_names) op_names_.try_emplace(id, name);
  Point p;
  p.w0 = summary.index;
  p.w1 = summary.index + count - 1;
  p.windows = count;
  p.t0 = summary.window.start;
  p.t1 = summary.window.end;
  // A run of windows without events, and a window in which no operator activity ended,
  // are stalls: nothing completed.
  const bool stall = summary.window.empty_run > 0 || w.completed == 0;
  p.stalls = stall ? count : 0;
  stalls_ += p.stalls;
  const bool paths = summary.window.empty_run == 0 && summary.has_paths;
  const double s = paths ? static_cast<double>(summary.cp_ns) : 0.0;
  if (paths) {
    cp_weight_ += summary.cp_ns;
    p.cp_weight = summary.cp_ns;
    for (const auto& [op, v] : summary.cp.op) op_cp_[op] += v * s;  // as Aggregate::add
  }
  for (const JobGraphWindow::Cell& c : w.cells) {
    const uint32_t k = slot(c.worker, names);
    Acc& a = cells_[{c.op, k}];
    a.busy_ns += c.busy_ns;
    a.output_ns += c.output_ns;
    a.cp += c.cp * s;
    if (c.ran) ran_[{c.op, k}] = true;
    if (k < opt_.max_workers) {
      if (p.workers.size() <= k) p.workers.resize(k + 1);
      p.workers[k].busy_ns += c.busy_ns;
      p.workers[k].output_ns += c.output_ns;
      p.workers[k].cp += c.cp * s;
    }
  }
  for (const JobGraphWindow::Link& l : w.links) links_[{l.from, l.to}] += l.messages;
  push(std::move(p));
}

void JobGraphBuilder::push(Point&& p) {
  auto merge = [](Point& a, const Point& b) {
    a.w1 = b.w1;
    a.t1 = b.t1;
    a.windows += b.windows;
    a.stalls += b.stalls;
    a.cp_weight += b.cp_weight;
    if (a.workers.size() < b.workers.size()) a.workers.resize(b.workers.size());
    for (size_t k = 0; k < b.workers.size(); ++k) {
      a.workers[k].busy_ns += b.workers[k].busy_ns;
      a.workers[k].output_ns += b.workers[k].output_ns;
      a.workers[k].cp += b.workers[k].cp;
    }
  };
  if (!points_.empty() && points_.back().windows < windows_per_point_)
    merge(points_.back(), p);
  else
    points_.push_back(std::move(p));
  if (points_.size() <= std::max<size_t>(opt_.max_points, 2)) return;
  std::deque<Point> merged;
  for (size_t i = 0; i < points_.size(); i += 2) {
    Point a = std::move(points_[i]);
    if (i + 1 < points_.size()) merge(a, points_[i + 1]);
    merged.push_back(std::move(a));
  }
  points_ = std::move(merged);
  windows_per_point_ *= 2;
}

std::string JobGraphBuilder::json() {
  take_run();
  if (windows_ == 0) return "null";
  // Operators: every id with an edge, by topological depth over the channels (Kahn; the
  // operators of a cycle follow, one column after their deepest placed predecessor).
  std::vector<uint32_t> ops;
  for (const auto& [key, ran] : ran_)
    if (key.first != kNone && (ops.empty() || ops.back() != key.first)) ops.push_back(key.first);
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  std::map<uint32_t, int> depth, indegree;
  for (uint32_t op : ops) indegree[op] = 0;
  for (const auto& [ft, n] : links_)
    if (indegree.count(ft.first) && indegree.count(ft.second)) ++indegree[ft.second];
  std::vector<uint32_t> ready;
  for (uint32_t op : ops) {
    if (indegree[op] != 0) continue;
    depth[op] = 0;
    ready.push_back(op);
  }
  for (size_t i = 0; i < ready.size(); ++i) {
    for (const auto& [ft, n] : links_) {
      if (ft.first != ready[i] || !indegree.count(ft.second)) continue;
      depth[ft.second] =
          std::max(depth.count(ft.second) ? depth[ft.second] : 0, depth[ready[i]] + 1);
      if (--indegree[ft.second] == 0) ready.push_back(ft.second);
    }
  }
  for (uint32_t op : ops)
    if (!depth.count(op)) {
      int d = 0;
      for (const auto& [ft, n] : links_)
        if (ft.second == op && depth.count(ft.first)) d = std::max(d, depth[ft.first] + 1);
      depth[op] = d;
    }
  std::stable_sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t b) {
    return depth[a] != depth[b] ? depth[a] < depth[b] : a < b;
  });

  const double length = static_cast<double>(std::max<int64_t>(length_ns_, 1));
  const double inv_cp = cp_weight_ > 0 ? 1.0 / static_cast<double>(cp_weight_) : 0.0;
  std::string out = "{";
  out += fmt::format("\"windows\":{},\"stall_windows\":{},\"length_ns\":{},", windows_, stalls_,
                     length_ns_);
  out += fmt::format("\"windows_per_point\":{},\"points_merged\":{},", windows_per_point_,
                     windows_ - points_.size());
  out += "\"workers\":[";
  for (size_t k = 0; k < worker_names_.size(); ++k) {
    if (k) out += ',';
    append_json_string(out, worker_names_[k], kJsonNames);
  }
  out += fmt::format("],\"workers_in_series\":{},\"operators\":[",
                     std::min(worker_names_.size(), opt_.max_workers));
  for (size_t i = 0; i < ops.size(); ++i) {
    const uint32_t op = ops[i];
    if (i) out += ',';
    auto name = op_names_.find(op);
    out += fmt::format("{{\"id\":{},\"name\":", op);
    append_json_string(out, name != op_names_.end() ? name->second : std::to_string(op),
                       kJsonNames);
    int64_t busy = 0, output = 0;
    uint32_t workers = 0;
    for (auto it = cells_.lower_bound({op, 0}); it != cells_.end() && it->first.first == op; ++it) {
      busy += it->second.busy_ns;
      output += it->second.output_ns;
      workers += ran_.count(it->first) ? 1 : 0;
    }
    auto cp = op_cp_.find(op);
    const double per = workers > 0 ? 1.0 / (length * workers) : 0.0;
    out += fmt::format(",\"depth\":{},\"workers\":{},\"cp\":", depth[op], workers);
    num(out, cp != op_cp_.end() ? cp->second * inv_cp : 0.0);
    out += ",\"busy\":";
    num(out, static_cast<double>(busy) * per);
    out += ",\"output\":";
    num(out, static_cast<double>(output) * per);
    out += ",\"rows\":[";  // per worker: [slot, busy, output, cp]
    bool first = true;
    for (auto it = cells_.lower_bound({op, 0}); it != cells_.end() && it->first.first == op; ++it) {
      out += first ? "[" : ",[";
      first = false;
      out += fmt::format("{},", it->first.second);
      num(out, static_cast<double>(it->second.busy_ns) / length);
      out += ',';
      num(out, static_cast<double>(it->second.output_ns) / length);
      out += ',';
      num(out, it->second.cp * inv_cp);
      out += ']';
    }
    out += "]}";
  }
  out += "],\"channels\":[";
  bool first = true;
  for (const auto& [ft, n] : links_) {
    out += fmt::format("{}[{},{},{}]", first ? "" : ",", ft.first, ft.second, n);
    first = false;
  }
  // Per worker over all its activities (with an operator or not).
  std::vector<Acc> totals(worker_names_.size());
  for (const auto& [key, a] : cells_) {
    totals[key.second].busy_ns += a.busy_ns;
    totals[key.second].output_ns += a.output_ns;
    totals[key.second].cp += a.cp;
  }
  out += "],\"worker_totals\":[";
  for (size_t k = 0; k < totals.size(); ++k) {
    out += fmt::format("{}[{},", k ? "," : "", k);
    num(out, static_cast<double>(totals[k].busy_ns) / length);
    out += ',';
    num(out, static_cast<double>(totals[k].output_ns) / length);
    out += ',';
    num(out, totals[k].cp * inv_cp);
    out += ']';
  }
  out += "],\"points\":[";
  const size_t shown = std::min(worker_names_.size(), opt_.max_workers);
  for (size_t i = 0; i < points_.size(); ++i) {
    const Point& p = points_[i];
    out += fmt::format("{}{{\"w0\":{},\"w1\":{},\"t0\":{},\"t1\":{},\"windows\":{},\"stalls\":{}",
                       i ? "," : "", p.w0, p.w1, p.t0, p.t1, p.windows, p.stalls);
    const double len = static_cast<double>(std::max<int64_t>(p.t1 - p.t0, 1));
    for (const char* field : {"busy", "output", "cp"}) {
      const std::string_view f = field;
      if (f == "cp" && p.cp_weight <= 0) {
        out += ",\"cp\":null";
        continue;
      }
      out += fmt::format(",\"{}\":[", f);
      for (size_t k = 0; k < shown; ++k) {
        if (k) out += ',';
        const Acc a = k < p.workers.size() ? p.workers[k] : Acc{};
        const double v = f == "busy"     ? static_cast<double>(a.busy_ns) / len
                         : f == "output" ? static_cast<double>(a.output_ns) / len
                                         : a.cp / static_cast<double>(p.cp_weight);
        num(out, v);
      }
      out += ']';
    }
    out += '}';
  }
  // The closed loop's decisions and migrations are not in the trace: report --stats-json.
  out += "],\"marks\":" + marks_ + "}";
  return out;
}

std::string loop_marks_json(const std::string& text, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS || !doc.is_object())
    throw TraceError(source, "input", "not a JSON object (run --stats-json writes one)");
  auto seconds = [&](simdjson::dom::element o, const char* key) {
    double v = 0;
    if (o[key].get_double().get(v) != simdjson::SUCCESS || !std::isfinite(v))
      throw TraceError(source, key, "missing or not a number");
    return static_cast<int64_t>(std::llround(v * 1e9));
  };
  auto text_of = [](simdjson::dom::element o, const char* key) {
    std::string_view v;
    return o[key].get_string().get(v) == simdjson::SUCCESS ? std::string(v) : std::string();
  };
  std::string out = "[";
  simdjson::dom::array list;
  if (doc["decisions"].get_array().get(list) == simdjson::SUCCESS)
    for (simdjson::dom::element d : list) {
      int64_t active = 0;
      if (d["active_workers"].get_int64().get(active) != simdjson::SUCCESS) active = 0;
      const std::string what = fmt::format("{}: {} active workers; {}", text_of(d, "kind"), active,
                                           text_of(d, "reason"));
      out +=
          fmt::format("{}{{\"kind\":\"decision\",\"t_ns\":{},\"text\":", out.size() > 1 ? "," : "",
                      seconds(d, "time_s"));
      append_json_string(out, what, kJsonNames);
      out += '}';
    }
  if (doc["migrations"].get_array().get(list) == simdjson::SUCCESS)
    for (simdjson::dom::element m : list) {
      int64_t bins = 0;
      if (m["bins_moved"].get_int64().get(bins) != simdjson::SUCCESS) bins = 0;
      const std::string what = fmt::format("migration ({}): {} bins", text_of(m, "strategy"), bins);
      out += fmt::format("{}{{\"kind\":\"migration\",\"t0_ns\":{},\"t1_ns\":{},\"text\":",
                         out.size() > 1 ? "," : "", seconds(m, "start_s"), seconds(m, "end_s"));
      append_json_string(out, what, kJsonNames);
      out += '}';
    }
  return out + "]";
}

std::string loop_marks_from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "open", "cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  return loop_marks_json(text.str(), path);
}

}  // namespace snailtrail::report
