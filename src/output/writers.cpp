#include "output/writers.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <fmt/compile.h>

namespace snailtrail {
namespace {

using Buf = fmt::memory_buffer;

void put(Buf& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

// Shortest round-trip representation; JSON has no inf/nan.
void put_double(Buf& out, double v) {
  if (!std::isfinite(v)) {
    put(out, "null");
    return;
  }
  if (v == 0) v = 0;  // no "-0"
  char text[32];      // the longest shortest round-trip double is 24 characters
  const char* end = fmt::format_to(text, FMT_COMPILE("{}"), v);
  out.append(text, end);
}

bool active_type(const WindowSummary& w, int a) {
  return w.cp.activity[a] != 0 || w.conventional.activity[a] != 0;
}

void put_activity_map(Buf& out, const Groups& g, const WindowSummary& w) {
  out.push_back('{');
  bool first = true;
  for (int a = 0; a < kActivityTypeCount; ++a) {
    if (!active_type(w, a)) continue;
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, name_of(static_cast<ActivityType>(a)));
    out.push_back(':');
    put_double(out, g.activity[a]);
  }
  out.push_back('}');
}

void put_worker_map(Buf& out, const Groups& g, const WindowSummary& w, const Names& names) {
  out.push_back('{');
  bool first = true;
  for (size_t k = 0; k < g.worker.size(); ++k) {
    if (w.conventional.worker[k] == 0 && w.cp.worker[k] == 0) continue;
    if (!first) out.push_back(',');
    first = false;
    put(out, names.worker_json[k]);
    out.push_back(':');
    put_double(out, g.worker[k]);
  }
  out.push_back('}');
}

void put_op_map(Buf& out, const Groups& g, const Names& names) {
  out.push_back('{');
  for (size_t k = 0; k < g.op.size(); ++k) {
    if (k) out.push_back(',');
    append_json_string(out, names.op(g.op[k].first));
    out.push_back(':');
    put_double(out, g.op[k].second);
  }
  out.push_back('}');
}

void put_comm(Buf& out, const Groups& g, const Names& names, const char* key) {
  const std::string key_text = fmt::format(",\"{}\":", key);
  out.push_back('[');
  for (size_t k = 0; k < g.communication.size(); ++k) {
    const CommCell& c = g.communication[k];
    if (k) out.push_back(',');
    put(out, "{\"src\":");
    put(out, names.worker_json[c.src]);
    put(out, ",\"dst\":");
    put(out, names.worker_json[c.dst]);
    put(out, key_text);
    put_double(out, c.value);
    out.push_back('}');
  }
  out.push_back(']');
}

void put_groups(Buf& out, const Groups& g, const WindowSummary& w, const Names& names,
                const SummarySelection& sel, const char* comm_key, bool leading_comma) {
  bool first = !leading_comma;
  auto key = [&](const char* k) {
    if (!first) out.push_back(',');
    first = false;
    fmt::format_to(std::back_inserter(out), "\"{}\":", k);
  };
  if (sel.activity) key("activity"), put_activity_map(out, g, w);
  if (sel.worker) key("worker"), put_worker_map(out, g, w, names);
  if (sel.op) key("operator"), put_op_map(out, g, names);
  if (sel.communication) key("communication"), put_comm(out, g, names, comm_key);
}

void put_diagnostics(Buf& out, const Diagnostics& d) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"no_paths\":{},\"property1_violations\":{},\"property2_violations\":{},"
                 "\"property2_ns\":{},\"zero_duration_cycles\":{},\"segments\":{},"
                 "\"no_path_segments\":{}",
                 d.no_paths, d.property1_violations, d.property2_violations, d.property2_ns,
                 d.zero_duration_cycles, d.segments, d.no_path_segments);
  for (int i = 0; i < kIssueCount; ++i)
    fmt::format_to(std::back_inserter(out), ",\"{}\":{}", kIssueNames[i], d.issues[i]);
  put(out, ",\"unknown_share\":");
  put_double(out, d.unknown_share);
  put(out, ",\"waiting_share\":");
  put_double(out, d.waiting_share);
  if (!d.input.empty()) {
    put(out, ",\"input\":{");
    for (size_t i = 0; i < d.input.size(); ++i) {
      if (i) out.push_back(',');
      append_json_string(out, d.input[i].first);
      fmt::format_to(std::back_inserter(out), ":{}", d.input[i].second);
    }
    out.push_back('}');
  }
  out.push_back('}');
}

std::string percent(double v) {
  return fmt::format("{:5.1f}%", v * 100);
}

// A bar of `width` cells for a value in [0, 1], with eighth-cell resolution.
std::string bar(double v, int width) {
  static const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  v = std::clamp(v, 0.0, 1.0);
  int eighths = static_cast<int>(std::lround(v * width * 8));
  std::string s;
  int cells = 0;
  for (; eighths >= 8; eighths -= 8, ++cells) s += "█";
  if (eighths > 0) {
    s += kEighths[eighths];
    ++cells;
  }
  s.append(static_cast<size_t>(width - cells), ' ');
  return s;
}

// Pads or shortens to `width` columns. Long names lose their middle, not their end,
// which usually tells instances apart ("flatmap-2 -> sour~ink-3"). Byte-based: names
// are expected to be ASCII; others are cut at a byte but never overflow the column.
std::string fit(std::string s, size_t width) {
  if (s.size() > width) {
    const size_t head = (width - 1) / 2, tail = width - 1 - head;
    s = s.substr(0, head) + "~" + s.substr(s.size() - tail);
  }
  s.append(width - std::min(width, s.size()), ' ');
  return s;
}

struct Row {
  std::string name;
  double cp;
  double conv;
};

void put_rows(Buf& out, const char* title, std::vector<Row> rows, size_t max_rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.cp != b.cp ? a.cp > b.cp : a.conv > b.conv;
  });
  fmt::format_to(std::back_inserter(out), "\n{}{}{:>7}  {:>7}\n", fit(title, 26), fit("", 32), "CP",
                 "conv.");
  size_t shown = std::min(rows.size(), max_rows);
  for (size_t i = 0; i < shown; ++i)
    fmt::format_to(std::back_inserter(out), "  {}{} {}  {}\n", fit(rows[i].name, 24),
                   bar(rows[i].cp, 32), percent(rows[i].cp), percent(rows[i].conv));
  if (rows.size() > shown) {
    double cp = 0, conv = 0;
    for (size_t i = shown; i < rows.size(); ++i) cp += rows[i].cp, conv += rows[i].conv;
    fmt::format_to(std::back_inserter(out), "  {}{} {}  {}\n",
                   fit(fmt::format("({} more)", rows.size() - shown), 24), bar(cp, 32), percent(cp),
                   percent(conv));
  }
}

// At most 4 significant digits and a unit: "423us", "3.096ms", "12.5s", "2.8h".
std::string format_ns(int64_t ns) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  if (a < 1e3) return fmt::format("{}ns", ns);
  if (a < 1e6) return fmt::format("{:.4g}us", v / 1e3);
  if (a < 1e9) return fmt::format("{:.4g}ms", v / 1e6);
  if (a < 1e4 * 1e9) return fmt::format("{:.4g}s", v / 1e9);
  return fmt::format("{:.4g}h", v / 3.6e12);
}

}  // namespace

SummarySelection SummarySelection::parse(const std::string& list) {
  SummarySelection s{false, false, false, false, false, false};
  std::stringstream ss(list);
  std::string item;
  bool any = false;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    any = true;
    if (item == "all")
      s = SummarySelection{};
    else if (item == "activity")
      s.activity = true;
    else if (item == "worker")
      s.worker = true;
    else if (item == "operator")
      s.op = true;
    else if (item == "communication")
      s.communication = true;
    else if (item == "top")
      s.top = true;
    else if (item == "diagnostics")
      s.diagnostics = true;
    else
      throw std::invalid_argument("unknown summary \"" + item +
                                  "\" (expected activity, worker, operator, communication, top, "
                                  "diagnostics or all)");
  }
  if (!any) throw std::invalid_argument("empty summary list");
  return s;
}

void append_json_string(Buf& out, std::string_view s) {
  out.push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        put(out, "\\\"");
        break;
      case '\\':
        put(out, "\\\\");
        break;
      case '\n':
        put(out, "\\n");
        break;
      case '\r':
        put(out, "\\r");
        break;
      case '\t':
        put(out, "\\t");
        break;
      default:
        if (c < 0x20)
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
        else
          out.push_back(ch);
    }
  }
  out.push_back('"');
}

void write_window_json(Buf& out, const WindowSummary& w, const Names& names,
                       const SummarySelection& sel) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"window\":{{\"index\":{},\"start_ns\":{},\"end_ns\":{}}},"
                 "\"span\":{{\"start_ns\":{},\"end_ns\":{},\"cp_ns\":{}}},\"events\":{},"
                 "\"nodes\":{},\"edges\":{},\"paths_log10\":",
                 w.index, w.window.start, w.window.end, w.span_start, w.span_end, w.cp_ns, w.events,
                 w.nodes, w.edges);
  if (w.has_paths)
    put_double(out, w.paths_log10);
  else
    put(out, "null");
  put_groups(out, w.cp, w, names, sel, "cp", true);
  put(out, ",\"conventional\":{");
  put_groups(out, w.conventional, w, names, sel, "share", false);
  put(out, "},\"single_path\":{");
  put_groups(out, w.single_path, w, names, sel, "cp", false);
  out.push_back('}');
  if (sel.top) {
    put(out, ",\"top\":[");
    for (size_t k = 0; k < w.top.size(); ++k) {
      const TopActivity& a = w.top[k];
      if (k) out.push_back(',');
      put(out, "{\"worker\":");
      append_json_string(out, names.worker[a.worker]);
      if (a.remote != kNone) {
        put(out, ",\"remote\":");
        append_json_string(out, names.worker[a.remote]);
      }
      put(out, ",\"type\":");
      append_json_string(out, name_of(a.type));
      if (a.op != kNone) {
        put(out, ",\"operator\":");
        append_json_string(out, names.op(a.op));
      }
      fmt::format_to(std::back_inserter(out), ",\"start_ns\":{},\"end_ns\":{},\"cp\":", a.start,
                     a.end);
      put_double(out, a.cp);
      out.push_back('}');
    }
    out.push_back(']');
  }
  if (sel.diagnostics) {
    put(out, ",\"diagnostics\":");
    put_diagnostics(out, w.diagnostics);
  }
  out.push_back('}');
}

void write_csv_header(Buf& out) {
  put(out, "window,start_ns,end_ns,summary,key,cp,conventional,single_path\n");
}

namespace {
void csv_field(Buf& out, std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    put(out, s);
    return;
  }
  out.push_back('"');
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}
void csv_row(Buf& out, const WindowSummary& w, const char* summary, std::string_view key, double cp,
             double conv, double single) {
  fmt::format_to(std::back_inserter(out), "{},{},{},{},", w.index, w.window.start, w.window.end,
                 summary);
  csv_field(out, key);
  out.push_back(',');
  if (w.has_paths) put_double(out, cp);
  out.push_back(',');
  put_double(out, conv);
  out.push_back(',');
  if (w.has_paths) put_double(out, single);
  out.push_back('\n');
}
}  // namespace

void write_window_csv(Buf& out, const WindowSummary& w, const Names& names,
                      const SummarySelection& sel) {
  if (sel.activity)
    for (int a = 0; a < kActivityTypeCount; ++a)
      if (active_type(w, a))
        csv_row(out, w, "activity", name_of(static_cast<ActivityType>(a)), w.cp.activity[a],
                w.conventional.activity[a], w.single_path.activity[a]);
  if (sel.worker)
    for (size_t k = 0; k < w.cp.worker.size(); ++k)
      if (w.cp.worker[k] != 0 || w.conventional.worker[k] != 0)
        csv_row(out, w, "worker", names.worker[k], w.cp.worker[k], w.conventional.worker[k],
                w.single_path.worker[k]);
  if (sel.op)
    for (size_t k = 0; k < w.cp.op.size(); ++k)
      csv_row(out, w, "operator", names.op(w.cp.op[k].first), w.cp.op[k].second,
              w.conventional.op[k].second, w.single_path.op[k].second);
  if (sel.communication)
    for (size_t k = 0; k < w.cp.communication.size(); ++k) {
      const CommCell& c = w.cp.communication[k];
      csv_row(out, w, "communication", names.worker[c.src] + "->" + names.worker[c.dst], c.value,
              w.conventional.communication[k].value, w.single_path.communication[k].value);
    }
}

void write_edges_jsonl(Buf& out, const WindowView& view) {
  const Snapshot& s = view.snapshot;
  const CpResult& r = view.cp;
  const Pag& pag = view.pag;
  auto edge = [&](uint32_t u, uint32_t v, ActivityType type, uint32_t op, const WideCount& c,
                  double cp) {
    fmt::format_to(std::back_inserter(out),
                   "{{\"window\":{},\"src\":{{\"worker\":{},\"ts\":{}}},\"dst\":{{\"worker\":{},"
                   "\"ts\":{}}},\"type\":\"{}\",\"operator\":",
                   view.summary.index, pag.worker_ids[s.worker[u]], s.ts[u],
                   pag.worker_ids[s.worker[v]], s.ts[v], name_of(type));
    if (op == kNone)
      put(out, "null");
    else
      fmt::format_to(std::back_inserter(out), "{}", op);
    fmt::format_to(std::back_inserter(out),
                   ",\"weight_ns\":{},\"centrality_log10\":", s.ts[v] - s.ts[u]);
    if (c.is_zero())
      put(out, "null");
    else
      put_double(out, c.log10());
    put(out, ",\"cp\":");
    put_double(out, cp);
    put(out, "}\n");
  };
  const bool paths = r.has_paths();
  for (uint32_t v = 0; v + 1 < s.node_count(); ++v) {
    if (s.edge[v] == kNone) continue;
    uint32_t g = s.edge[v];
    auto type = static_cast<ActivityType>(pag.edge_type[g]);
    WideCount c = type == ActivityType::waiting || !paths ? WideCount() : timeline_centrality(r, v);
    edge(v, v + 1, type, pag.edge_op[g], c, r.timeline_cp[v]);
  }
  for (uint32_t k = 0; k < s.msg_src.size(); ++k) {
    uint32_t u = s.msg_src[k], v = s.msg_dst[k];
    WideCount c = paths ? r.forward[u] * r.backward[v] : WideCount();
    edge(u, v, pag.messages[s.msg_index[k]].type, kNone, c, r.message_cp[k]);
  }
}

void write_table(Buf& out, const Aggregate& agg, const Names& names, const SummarySelection& sel,
                 const TableContext& ctx, const char* heading) {
  fmt::format_to(std::back_inserter(out), "{}\n", heading);
  fmt::format_to(std::back_inserter(out), "{} window{} of {}, {} events, {} edges\n", agg.windows,
                 agg.windows == 1 ? "" : "s", ctx.window_label, agg.events, agg.edges);
  fmt::format_to(std::back_inserter(out), "CP: mean over the {} window{} with transient paths\n",
                 agg.windows_with_paths, agg.windows_with_paths == 1 ? "" : "s");
  if (agg.windows_with_paths == 0)
    put(out, "\nno transient critical path in any window (see diagnostics): no CP to show\n");
  else {
    if (sel.activity) {
      std::vector<Row> rows;
      for (int a = 0; a < kActivityTypeCount; ++a)
        if (agg.cp.activity[a] != 0 || agg.conventional.activity[a] != 0)
          rows.push_back({std::string(name_of(static_cast<ActivityType>(a))), agg.cp.activity[a],
                          agg.conventional.activity[a]});
      put_rows(out, "ACTIVITY TYPE", rows, ctx.max_rows);
    }
    if (sel.worker) {
      std::vector<Row> rows;
      for (size_t k = 0; k < agg.cp.worker.size(); ++k)
        if (agg.cp.worker[k] != 0 || agg.conventional.worker[k] != 0)
          rows.push_back({names.worker[k], agg.cp.worker[k], agg.conventional.worker[k]});
      double comm_cp = agg.cp.activity[static_cast<int>(ActivityType::data_message)] +
                       agg.cp.activity[static_cast<int>(ActivityType::control_message)];
      double comm_conv = agg.conventional.activity[static_cast<int>(ActivityType::data_message)] +
                         agg.conventional.activity[static_cast<int>(ActivityType::control_message)];
      put_rows(out, "WORKER (straggler)", rows, ctx.max_rows);
      if (comm_cp != 0 || comm_conv != 0)
        fmt::format_to(std::back_inserter(out), "  {}{} {}  {}\n", fit("(communication)", 24),
                       bar(comm_cp, 32), percent(comm_cp), percent(comm_conv));
    }
    if (sel.op && !agg.cp.op.empty()) {
      std::vector<Row> rows;
      for (size_t k = 0; k < agg.cp.op.size(); ++k) {
        double conv = 0;
        for (const auto& p : agg.conventional.op)
          if (p.first == agg.cp.op[k].first) conv = p.second;
        rows.push_back({names.op(agg.cp.op[k].first), agg.cp.op[k].second, conv});
      }
      put_rows(out, "OPERATOR (per worker)", rows, ctx.max_rows);
    }
    if (sel.communication && !agg.cp.communication.empty()) {
      std::vector<Row> rows;
      for (size_t k = 0; k < agg.cp.communication.size(); ++k) {
        const CommCell& c = agg.cp.communication[k];
        double conv = 0;
        for (const CommCell& x : agg.conventional.communication)
          if (x.src == c.src && x.dst == c.dst) conv = x.value;
        rows.push_back({names.worker[c.src] + " -> " + names.worker[c.dst], c.value, conv});
      }
      put_rows(out, "COMMUNICATION", rows, ctx.max_rows);
    }
    if (sel.top && !agg.top.empty()) {
      fmt::format_to(std::back_inserter(out), "\nTOP {} CRITICAL ACTIVITIES\n",
                     std::min(ctx.top_k, agg.top.size()));
      fmt::format_to(std::back_inserter(out), "  {:>6}  {:<16} {:<16} {:<12} {:>9}  {}\n", "CP",
                     "type", "worker", "operator", "duration", "at");
      for (size_t k = 0; k < std::min(ctx.top_k, agg.top.size()); ++k) {
        const TopActivity& a = agg.top[k];
        std::string who = names.worker[a.worker];
        if (a.remote != kNone) who += "->" + names.worker[a.remote];
        fmt::format_to(std::back_inserter(out), "  {}  {} {} {} {:>9}  {}\n", percent(a.cp),
                       fit(std::string(name_of(a.type)), 16), fit(who, 16),
                       fit(a.op == kNone ? "-" : names.op(a.op), 12), format_ns(a.end - a.start),
                       fit("+" + format_ns(a.start - ctx.origin_ns), 11));
      }
    }
  }
  if (sel.diagnostics) {
    const Diagnostics& d = agg.diagnostics;
    put(out, "\nDIAGNOSTICS\n");
    fmt::format_to(std::back_inserter(out),
                   "  unknown activity {:.1f}% of worker time, waiting {:.1f}%\n",
                   d.unknown_share * 100, d.waiting_share * 100);
    if (agg.windows_with_paths < agg.windows)
      fmt::format_to(std::back_inserter(out),
                     "  {} window(s) without any transient critical path (no CP)\n",
                     agg.windows - agg.windows_with_paths);
    if (d.property1_violations)
      fmt::format_to(std::back_inserter(out),
                     "  property 1: {} node(s) without incoming edge after the window start\n",
                     d.property1_violations);
    if (d.property2_violations)
      fmt::format_to(std::back_inserter(out),
                     "  property 2: {} interval(s), {} in all, of only waiting and no message\n",
                     d.property2_violations, format_ns(d.property2_ns));
    if (d.segments > agg.windows || d.no_path_segments)
      fmt::format_to(std::back_inserter(out),
                     "  CP in {} segment(s), {} of them without any path\n", d.segments,
                     d.no_path_segments);
    if (d.zero_duration_cycles)
      fmt::format_to(std::back_inserter(out),
                     "  {} zero-duration message(s) dropped to break cycles\n",
                     d.zero_duration_cycles);
    bool any = false;
    for (int i = 0; i < kIssueCount; ++i)
      if (d.issues[i]) {
        fmt::format_to(std::back_inserter(out), "  {}: {}\n", kIssueNames[i], d.issues[i]);
        any = true;
      }
    for (const auto& [kind, n] : d.input) {
      fmt::format_to(std::back_inserter(out), "  input: {}: {}\n", kind, n);
      any = true;
    }
    if (!any && !d.property1_violations && !d.property2_violations)
      put(out, "  no instrumentation problems found\n");
  }
}

}  // namespace snailtrail
