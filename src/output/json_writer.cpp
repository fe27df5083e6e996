// The JSON outputs of `snailtrail analyze`: one object per window (JSONL), the run's last
// line, the diagnostics object and the PAG edge dump (docs/OUTPUT.md). On analyze's hot
// path: every window of a JSONL run is written here.
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "output/format.hpp"
#include "output/writers.hpp"

namespace snailtrail {
namespace {

using Buf = fmt::memory_buffer;
using output_detail::active_type;
using output_detail::put;
using output_detail::what_if_name;

void put_activity_map(Buf& out, const Groups& g, const WindowSummary& w) {
  out.push_back('{');
  bool first = true;
  for (int a = 0; a < kActivityTypeCount; ++a) {
    if (!active_type(w, a)) continue;
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, name_of(static_cast<ActivityType>(a)));
    out.push_back(':');
    append_json_number(out, g.activity[a]);
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
    append_json_number(out, g.worker[k]);
  }
  out.push_back('}');
}

void put_op_map(Buf& out, const std::vector<std::pair<uint32_t, double>>& ops, const Names& names) {
  out.push_back('{');
  for (size_t k = 0; k < ops.size(); ++k) {
    if (k) out.push_back(',');
    append_json_string(out, names.op(ops[k].first), kJsonNames);
    out.push_back(':');
    append_json_number(out, ops[k].second);
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
    append_json_number(out, c.value);
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
  if (sel.op) {
    key("operator"), put_op_map(out, g.op, names);
    key("operator_per_worker"), put_op_map(out, g.op_per_worker, names);
  }
  if (sel.communication) key("communication"), put_comm(out, g, names, comm_key);
}

}  // namespace

void put_diagnostics(fmt::memory_buffer& out, const Diagnostics& d, DiagnosticsJson style) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"no_paths\":{},\"property1_violations\":{},\"property2_violations\":{},"
                 "\"property2_ns\":{},\"input_idle_ns\":{},\"zero_duration_cycles\":{}",
                 d.no_paths, d.property1_violations, d.property2_violations, d.property2_ns,
                 d.input_idle_ns, d.zero_duration_cycles);
  if (style.segments)
    fmt::format_to(std::back_inserter(out), ",\"segments\":{},\"no_path_segments\":{}", d.segments,
                   d.no_path_segments);
  for (int i = 0; i < kIssueCount; ++i)
    fmt::format_to(std::back_inserter(out), ",\"{}\":{}", kIssueNames[i], d.issues[i]);
  put(out, ",\"unknown_share\":");
  append_json_number(out, d.unknown_share, style.significant);
  put(out, ",\"waiting_share\":");
  append_json_number(out, d.waiting_share, style.significant);
  if (!d.input.empty()) {
    put(out, ",\"input\":");
    put_counts(out, d.input, true);
  }
  out.push_back('}');
}

void put_counts(Buf& out, const std::vector<std::pair<std::string, uint64_t>>& counts,
                bool compact) {
  out.push_back('{');
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i) put(out, compact ? "," : ", ");
    append_json_string(out, counts[i].first, kJsonNames);
    put(out, compact ? ":" : ": ");
    fmt::format_to(std::back_inserter(out), "{}", counts[i].second);
  }
  out.push_back('}');
}

void put_what_if(Buf& out, const WhatIf& x, const Names& names) {
  put(out, "{\"kind\":");
  append_json_string(out, name_of(x.kind));
  put(out, ",\"name\":");
  append_json_string(out, what_if_name(x, names), kJsonNames);
  put(out, ",\"speedup\":");
  append_json_number(out, x.speedup);
  fmt::format_to(std::back_inserter(out), ",\"basis\":\"{}\",\"saved_ns\":{}",
                 x.peer_median ? "peer_median" : "factor", std::llround(x.saved_ns));
  // An operator's tasks (docs/OUTPUT.md): the verdict's evidence of skew or uniform work.
  if (x.tasks > 0)
    fmt::format_to(std::back_inserter(out), ",\"tasks\":{},\"task_ns\":[{},{},{},{}]", x.tasks,
                   std::llround(x.task_min), std::llround(x.task_median), std::llround(x.task_p95),
                   std::llround(x.task_max));
  out.push_back('}');
}

namespace {

// ,"what_if":[...]: the what-if items of a window or of the run.
void put_what_if_list(Buf& out, const std::vector<WhatIf>& what_if, const Names& names) {
  put(out, ",\"what_if\":[");
  for (size_t k = 0; k < what_if.size(); ++k) {
    if (k) out.push_back(',');
    put_what_if(out, what_if[k], names);
  }
  out.push_back(']');
}

// ,"top":[...]: a window's most critical activities.
void put_top_list(Buf& out, const std::vector<TopActivity>& top, const Names& names) {
  put(out, ",\"top\":[");
  for (size_t k = 0; k < top.size(); ++k) {
    const TopActivity& a = top[k];
    if (k) out.push_back(',');
    put(out, "{\"worker\":");
    append_json_string(out, names.worker[a.worker], kJsonNames);
    if (a.remote != kNone) {
      put(out, ",\"remote\":");
      append_json_string(out, names.worker[a.remote], kJsonNames);
    }
    put(out, ",\"type\":");
    append_json_string(out, name_of(a.type));
    if (a.op != kNone) {
      put(out, ",\"operator\":");
      append_json_string(out, names.op(a.op), kJsonNames);
    }
    fmt::format_to(std::back_inserter(out), ",\"start_ns\":{},\"end_ns\":{},\"cp\":", a.start,
                   a.end);
    append_json_number(out, a.cp);
    out.push_back('}');
  }
  out.push_back(']');
}

}  // namespace

void write_run_json(Buf& out, const Aggregate& agg, const Names& names, const SummarySelection& sel,
                    const VerdictEnricher& enrich) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"run\":{{\"windows\":{},\"windows_with_paths\":{},\"events\":{},"
                 "\"edges\":{},\"window_ns\":{},\"cp_ns\":{}}}",
                 agg.windows, agg.windows_with_paths, agg.events, agg.edges, agg.diag_weight_ns,
                 agg.weight_ns);
  if (names.application && agg.covered_first <= agg.covered_last) {
    // Which part of the application the windows cover (docs/OUTPUT.md "Coverage").
    out.resize(out.size() - 1);  // inside "run"
    fmt::format_to(std::back_inserter(out),
                   ",\"application\":{{\"start_ns\":{},\"end_ns\":", names.application->start);
    if (names.application->end)
      fmt::format_to(std::back_inserter(out), "{}", *names.application->end);
    else
      put(out, "null");
    fmt::format_to(std::back_inserter(out),
                   ",\"covered_from_ns\":{},\"covered_to_ns\":{},\"covered_ns\":{}}}}}",
                   agg.covered_first, agg.covered_last, agg.covered_ns);
  }
  if (sel.verdict) {
    put(out, ",\"verdict\":");
    write_run_verdict_json(out, agg, names, enrich);
  }
  if (sel.what_if) put_what_if_list(out, agg.what_if, names);
  out.push_back('}');
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
    append_json_number(out, w.paths_log10);
  else
    put(out, "null");
  put_groups(out, w.cp, w, names, sel, "cp", true);
  put(out, ",\"conventional\":{");
  put_groups(out, w.conventional, w, names, sel, "share", false);
  put(out, "},\"single_path\":{");
  put_groups(out, w.single_path, w, names, sel, "cp", false);
  out.push_back('}');
  if (sel.top) put_top_list(out, w.top, names);
  if (sel.verdict) {
    put(out, ",\"verdict\":");
    write_verdict_json(out, w, names);
  }
  if (sel.what_if) put_what_if_list(out, w.what_if, names);
  if (sel.diagnostics || !w.has_paths) {  // they say why a window has no CP
    put(out, ",\"diagnostics\":");
    put_diagnostics(out, w.diagnostics);
  }
  out.push_back('}');
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
      append_json_number(out, c.log10());
    put(out, ",\"cp\":");
    append_json_number(out, cp);
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
    // A merged edge (Snapshot::msg_mult) stands for that many identical pieces.
    for (uint32_t i = 0; i < s.mult(k); ++i)
      edge(u, v, pag.messages[s.msg_index[k]].type, kNone, c, r.message_cp[k]);
  }
}

// What-if: the critical path time each speed-up saves, summed over the windows.
}  // namespace snailtrail
