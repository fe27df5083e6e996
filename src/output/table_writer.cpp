// The terminal table of `snailtrail analyze --format table` and `critical-path`: the
// verdict, ranked sections with bars, the top critical activities, what-if and the
// diagnostics, every line within 80 columns (docs/OUTPUT.md).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "output/format.hpp"
#include "output/verdict_text.hpp"
#include "output/writers.hpp"
#include "summary/hints.hpp"

namespace snailtrail {
namespace {

using Buf = fmt::memory_buffer;
using output_detail::application_coverage;
using output_detail::format_ns;
using output_detail::percent;
using output_detail::put;
using output_detail::ShownNames;

// Every line within 79 columns, so that none wraps on an 80-column terminal.
constexpr size_t kTableWidth = 79;

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

// Ranked sections: "  NAME<pad> BAR VALUE  VALUE ...". The name column is followed by at
// least one space, so a name never touches its bar; every line fits 80 columns (the
// widest section, OPERATOR, is 79).
constexpr size_t kNameWidth = 30;
constexpr int kBarWidth = 20;

struct Row {
  std::string name;
  std::vector<double> values;  // values[0] (CP) is drawn as the bar; NaN prints "-"
};

size_t column_width(const char* header) {
  return std::max<size_t>(6, std::string_view(header).size());
}

void put_values(Buf& out, const std::vector<double>& values,
                const std::vector<const char*>& headers) {
  for (size_t c = 0; c < headers.size(); ++c) {
    const double v = c < values.size() ? values[c] : NAN;
    fmt::format_to(std::back_inserter(out), "{}{:>{}}", c == 0 ? " " : "  ",
                   std::isnan(v) ? std::string("-") : percent(v), column_width(headers[c]));
  }
  out.push_back('\n');
}

void put_row(Buf& out, const Row& row, const std::vector<const char*>& headers) {
  fmt::format_to(std::back_inserter(out), "  {} {}", fit_column(row.name, kNameWidth),
                 bar(row.values.empty() ? 0.0 : row.values[0], kBarWidth));
  put_values(out, row.values, headers);
}

// Sorts by the first value, then the last, and prints at most max_rows rows; the rest
// is summed into one "(n more)" row.
void put_rows(Buf& out, const char* title, const std::vector<const char*>& headers,
              std::vector<Row> rows, size_t max_rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.values[0] != b.values[0] ? a.values[0] > b.values[0]
                                      : a.values.back() > b.values.back();
  });
  fmt::format_to(std::back_inserter(out), "\n{}",
                 fit_column(title, 2 + kNameWidth + 1 + kBarWidth));
  for (size_t c = 0; c < headers.size(); ++c)
    fmt::format_to(std::back_inserter(out), "{}{:>{}}", c == 0 ? " " : "  ", headers[c],
                   column_width(headers[c]));
  out.push_back('\n');
  const size_t shown = std::min(rows.size(), max_rows);
  for (size_t i = 0; i < shown; ++i) put_row(out, rows[i], headers);
  if (rows.size() > shown) {
    Row more{fmt::format("({} more)", rows.size() - shown), std::vector<double>(headers.size(), 0)};
    for (size_t i = shown; i < rows.size(); ++i)
      for (size_t c = 0; c < headers.size(); ++c)
        if (c < rows[i].values.size() && !std::isnan(rows[i].values[c]))
          more.values[c] += rows[i].values[c];
    put_row(out, more, headers);
  }
}

// Word-wraps `text` to lines of at most `width` columns, each continuation indented.
// The text may carry names (the verdict's): printed printable().
void put_wrapped(Buf& out, std::string_view raw, size_t width, std::string_view indent) {
  const std::string shown = printable(raw);
  std::string_view text = shown;
  size_t col = 0;
  bool line_start = true;
  while (!text.empty()) {
    const size_t sp = text.find(' ');
    const std::string_view word = text.substr(0, sp);
    text = sp == std::string_view::npos ? std::string_view() : text.substr(sp + 1);
    const size_t w = display_width(word);
    if (!line_start && col + 1 + w > width) {
      out.push_back('\n');
      put(out, indent);
      col = display_width(indent);
      line_start = true;
    }
    if (!line_start) {
      out.push_back(' ');
      ++col;
    }
    put(out, word);
    col += w;
    line_start = false;
  }
  out.push_back('\n');
}

// Below this share of the analyzed time covered by critical paths, the heading says so.
constexpr double kCoveredShown = 0.9;

// The heading: the source, the windows and how many of them have a CP.
void put_heading(Buf& out, const Aggregate& agg, const Names& names, const TableContext& ctx,
                 const char* heading) {
  fmt::format_to(std::back_inserter(out), "{}\n", printable(heading));
  fmt::format_to(std::back_inserter(out), "{} window{} of {}, {} events, {} edges\n", agg.windows,
                 agg.windows == 1 ? "" : "s", ctx.window_label, agg.events, agg.edges);
  fmt::format_to(std::back_inserter(out), "CP: mean over the {} window{} with transient paths\n",
                 agg.windows_with_paths, agg.windows_with_paths == 1 ? "" : "s");
  // Which part of the application the windows cover, when the trace says (a Spark log
  // whose first minute holds no jobs).
  if (names.application) {
    const std::string covered = application_coverage(agg, *names.application);
    if (!covered.empty()) {
      put(out, "  ");
      put_wrapped(out, covered, kTableWidth - 2, "  ");
    }
  }
  // Which part of the run the critical paths describe, when much of it is left out (a
  // job idling on its input).
  const Diagnostics& d = agg.diagnostics;
  const int64_t idle = d.input_idle_ns + d.property2_ns;
  if (agg.windows_with_paths > 0 && static_cast<double>(agg.weight_ns) <
                                        kCoveredShown * static_cast<double>(agg.weight_ns + idle)) {
    put(out, "  ");
    put_wrapped(out,
                fmt::format("over {} of the run; left out: {} when every worker waited{}",
                            format_ns(agg.weight_ns), format_ns(idle),
                            d.input_idle_ns > 0
                                ? fmt::format(" ({} of it for input)", format_ns(d.input_idle_ns))
                                : std::string()),
                kTableWidth - 2, "  ");
  }
}

// The verdict, and the hints also without it when there is no CP (a user stuck).
void put_verdict_and_hints(Buf& out, const Aggregate& agg, const Names& names,
                           const SummarySelection& sel, const TableContext& ctx) {
  if (!sel.verdict && agg.windows_with_paths != 0) return;
  out.push_back('\n');
  if (sel.verdict)
    put_wrapped(out,
                "VERDICT: " + output_detail::run_verdict_text(
                                  output_detail::run_verdict(agg, names, ctx.enrich), names),
                kTableWidth, "  ");
  const std::vector<Hint> hints = decide_hints(agg.cp, agg.diagnostics, agg.windows_with_paths > 0,
                                               agg.diag_weight_ns, agg.windows);
  for (const Hint& h : hints) put_wrapped(out, "HINT: " + h.text, kTableWidth, "  ");
  if (sel.verdict || !hints.empty()) out.push_back('\n');
}

// Which ranked sections a table shows: the operator and communication sections only
// when the trace has operators or messages.
struct Sections {
  bool op, communication;
  Sections(const Aggregate& agg, const SummarySelection& sel)
      : op(sel.op && !agg.cp.op.empty()),
        communication(sel.communication && !agg.cp.communication.empty()) {}
};

// What the columns mean, for the sections shown.
void put_column_key(Buf& out, const SummarySelection& sel, const Sections& shown) {
  if (!(sel.activity || sel.worker || shown.op || sel.communication)) return;
  const bool time_col = sel.activity || shown.communication;
  std::string key = "Columns: CP = critical participation (share of the critical paths)";
  if (shown.op) key += "; CP/worker = an operator's CP over the number of workers that ran it";
  const bool busy_col = sel.worker || shown.op;
  key += "; conventional profile:";
  if (time_col) key += " time = share of all activity time";
  if (time_col && busy_col) key += ",";
  if (busy_col) key += " busy = share of all workers' busy (non-waiting) time";
  put_wrapped(out, key + ".", kTableWidth, "  ");
}

void put_activity_section(Buf& out, const Aggregate& agg, size_t max_rows) {
  std::vector<Row> rows;
  for (int a = 0; a < kActivityTypeCount; ++a)
    if (agg.cp.activity[a] != 0 || agg.conventional.activity[a] != 0)
      rows.push_back({std::string(name_of(static_cast<ActivityType>(a))),
                      {agg.cp.activity[a], agg.conventional.activity[a]}});
  put_rows(out, "ACTIVITY TYPE", {"CP", "time"}, rows, max_rows);
}

void put_worker_section(Buf& out, const Aggregate& agg, const ShownNames& names, size_t max_rows) {
  std::vector<Row> rows;
  for (size_t k = 0; k < agg.cp.worker.size(); ++k)
    if (agg.cp.worker[k] != 0 || agg.conventional.worker[k] != 0)
      rows.push_back({names.worker(k), {agg.cp.worker[k], agg.conventional.worker[k]}});
  const double comm_cp = agg.cp.activity[static_cast<int>(ActivityType::data_message)] +
                         agg.cp.activity[static_cast<int>(ActivityType::control_message)];
  const double comm_time =
      agg.conventional.activity[static_cast<int>(ActivityType::data_message)] +
      agg.conventional.activity[static_cast<int>(ActivityType::control_message)];
  put_rows(out, "WORKER (straggler)", {"CP", "busy"}, rows, max_rows);
  // Messages are on no worker's timeline: their CP is shown apart; they have no busy
  // share (their time share is in ACTIVITY TYPE and COMMUNICATION).
  if (comm_cp != 0 || comm_time != 0)
    put_row(out, {"(communication)", {comm_cp, NAN}}, {"CP", "busy"});
}

void put_operator_section(Buf& out, const Aggregate& agg, const ShownNames& names,
                          size_t max_rows) {
  // The value of `id` in a list sorted by id (0 when absent).
  auto value_of = [](const std::vector<std::pair<uint32_t, double>>& list, uint32_t id) {
    auto it = std::lower_bound(list.begin(), list.end(), id,
                               [](const auto& p, uint32_t x) { return p.first < x; });
    return it != list.end() && it->first == id ? it->second : 0.0;
  };
  std::vector<Row> rows;
  for (const auto& [id, cp] : agg.cp.op)
    rows.push_back({names.op(id),
                    {cp, value_of(agg.cp.op_per_worker, id), value_of(agg.conventional.op, id)}});
  put_rows(out, "OPERATOR (all its activities)", {"CP", "CP/worker", "busy"}, rows, max_rows);
}

void put_communication_section(Buf& out, const Aggregate& agg, const ShownNames& names,
                               size_t max_rows) {
  std::vector<Row> rows;
  for (size_t k = 0; k < agg.cp.communication.size(); ++k) {
    const CommCell& c = agg.cp.communication[k];
    double time = 0;
    for (const CommCell& x : agg.conventional.communication)
      if (x.src == c.src && x.dst == c.dst) time = x.value;
    rows.push_back({abbreviate_pair(names.worker(c.src), " -> ", names.worker(c.dst), kNameWidth),
                    {c.value, time}});
  }
  put_rows(out, "COMMUNICATION", {"CP", "time"}, rows, max_rows);
}

// The widths of the top list's type, worker and operator columns.
struct TopColumns {
  size_t type, who, op;
};

// "  CP(6)  type  worker  operator  duration(8)  at": 36 columns plus the type, worker
// and operator columns, sized to what is shown, within 79. Messages have no operator:
// their "sender->receiver" spans the worker and operator columns.
TopColumns top_columns(const Aggregate& agg, const ShownNames& names, size_t k_max) {
  size_t type_w = 4, who_w = 6, op_w = 8, msg_w = 0;
  for (size_t k = 0; k < k_max; ++k) {
    const TopActivity& a = agg.top[k];
    type_w = std::max(type_w, display_width(name_of(a.type)));
    if (a.remote != kNone) {
      msg_w = std::max(
          msg_w, display_width(names.worker(a.worker)) + 2 + display_width(names.worker(a.remote)));
    } else {
      who_w = std::max(who_w, display_width(names.worker(a.worker)));
      if (a.op != kNone) op_w = std::max(op_w, display_width(names.op(a.op)));
    }
  }
  const size_t room = kTableWidth - 36 - type_w;  // for worker + operator
  if (who_w + op_w > room) {
    // The worker keeps its name when it can; the operator (whose identifier comes
    // first, "stage 50 (…") takes the rest, at least half.
    // (room - op_w would wrap when the operator alone is wider than the room.)
    who_w = std::min(who_w, std::max(room / 2, op_w < room ? room - op_w : 0));
    op_w = room - who_w;
  } else if (msg_w > who_w + 2 + op_w) {
    op_w = std::min(room, msg_w - 2) - who_w;
  }
  return {type_w, who_w, op_w};
}

void put_top_section(Buf& out, const Aggregate& agg, const ShownNames& names,
                     const TableContext& ctx) {
  const size_t k_max = std::min(ctx.top_k, agg.top.size());
  fmt::format_to(std::back_inserter(out), "\nTOP {} CRITICAL ACTIVITIES\n", k_max);
  const TopColumns w = top_columns(agg, names, k_max);
  fmt::format_to(std::back_inserter(out), "  {:>6}  {}  {}  {}  {:>8}  {}\n", "CP",
                 fit_column("type", w.type), fit_column("worker", w.who),
                 fit_column("operator", w.op), "duration", "at");
  for (size_t k = 0; k < k_max; ++k) {
    const TopActivity& a = agg.top[k];
    const std::string where =
        a.remote != kNone ? fit_column(abbreviate_pair(names.worker(a.worker), "->",
                                                       names.worker(a.remote), w.who + 2 + w.op),
                                       w.who + 2 + w.op)
                          : fit_column(names.worker(a.worker), w.who) + "  " +
                                fit_column(a.op == kNone ? "-" : names.op(a.op), w.op);
    fmt::format_to(std::back_inserter(out), "  {}  {}  {}  {:>8}  +{}\n", percent(a.cp),
                   fit_column(name_of(a.type), w.type), where, format_ns(a.end - a.start),
                   format_ns(a.start - ctx.origin_ns));
  }
}

// The CP sections: the column key, then the ranked sections and the top list.
void put_cp_sections(Buf& out, const Aggregate& agg, const ShownNames& names,
                     const SummarySelection& sel, const TableContext& ctx) {
  const Sections shown(agg, sel);
  if (ctx.column_key) put_column_key(out, sel, shown);
  if (sel.activity) put_activity_section(out, agg, ctx.max_rows);
  if (sel.worker) put_worker_section(out, agg, names, ctx.max_rows);
  if (shown.op) put_operator_section(out, agg, names, ctx.max_rows);
  if (shown.communication) put_communication_section(out, agg, names, ctx.max_rows);
  if (sel.top && !agg.top.empty()) put_top_section(out, agg, names, ctx);
}

// One what-if row's cells before the name: the saving, its share of the analyzed time
// and the speed-up tried.
struct WhatIfRow {
  std::string saved, share, how;
  WhatIfRow(const WhatIf& x, const Aggregate& agg)
      : saved(format_ns(std::llround(x.saved_ns))),
        share(percent(agg.diag_weight_ns > 0 ? x.saved_ns / static_cast<double>(agg.diag_weight_ns)
                                             : 0)),
        how(x.peer_median ? fmt::format("peer median ({:.2f}x)", x.speedup)
                          : fmt::format("{:g}x faster", x.speedup)) {}
};

// "  saved(9)  share(6)  kind(8)  speed-up(20)  name": the number columns widen when a
// row needs it (a large peer-median factor), and the name takes the rest of the 79
// columns (abbreviated as in the other sections; at least 8).
struct WhatIfColumns {
  size_t saved = 9, share = 6, how = 20, name = 0;
  explicit WhatIfColumns(const std::vector<WhatIfRow>& rows) {
    for (const WhatIfRow& r : rows) {
      saved = std::max(saved, display_width(r.saved));
      share = std::max(share, display_width(r.share));
      how = std::max(how, display_width(r.how));
    }
    const size_t used = 2 + saved + 2 + share + 2 + 8 + 2 + how + 2;
    name = used + 8 <= kTableWidth ? kTableWidth - used : 8;
  }
};

// What-if: the critical path time each speed-up saves, summed over the windows.
void put_what_if_section(Buf& out, const Aggregate& agg, const ShownNames& names,
                         const TableContext& ctx) {
  put(out, "\nWHAT IF (critical path time saved, summed over windows)\n");
  if (agg.what_if.empty()) {
    put(out, "  no speed-up of the most critical items shortens the critical path\n");
    return;
  }
  std::vector<WhatIfRow> rows;
  for (size_t k = 0; k < std::min(agg.what_if.size(), ctx.max_rows); ++k)
    rows.emplace_back(agg.what_if[k], agg);
  const WhatIfColumns w(rows);
  fmt::format_to(std::back_inserter(out), "  {:>{}}  {:>{}}  {:<8}  {:<{}}  {}\n", "saved", w.saved,
                 "share", w.share, "kind", "speed-up", w.how, "name");
  for (size_t k = 0; k < rows.size(); ++k)
    fmt::format_to(std::back_inserter(out), "  {:>{}}  {:>{}}  {:<8}  {:<{}}  {}\n", rows[k].saved,
                   w.saved, rows[k].share, w.share, name_of(agg.what_if[k].kind), rows[k].how,
                   w.how, abbreviate(names.what_if(agg.what_if[k]), w.name));
}

// The diagnostics: each problem found on its own line, or a line saying there is none.
void put_diagnostics_section(Buf& out, const Aggregate& agg) {
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
  if (d.input_idle_ns)
    fmt::format_to(std::back_inserter(out),
                   "  input-bound: every worker waited, some for input, {} in all\n",
                   format_ns(d.input_idle_ns));
  if (d.property2_violations)
    fmt::format_to(std::back_inserter(out),
                   "  property 2: {} interval(s), {} in all, of only waiting and no message\n",
                   d.property2_violations, format_ns(d.property2_ns));
  if (d.segments > agg.windows || d.no_path_segments)
    fmt::format_to(std::back_inserter(out), "  CP in {} segment(s), {} of them without any path\n",
                   d.segments, d.no_path_segments);
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
    fmt::format_to(std::back_inserter(out), "  input: {}: {}\n", printable(kind), n);
    any = true;
  }
  if (!any && !d.property1_violations && !d.property2_violations)
    put(out, "  no instrumentation problems found\n");
}

}  // namespace

void write_table(Buf& out, const Aggregate& agg, const Names& names, const SummarySelection& sel,
                 const TableContext& ctx, const char* heading) {
  const ShownNames shown(names);  // the sections print names only through it
  put_heading(out, agg, names, ctx, heading);
  put_verdict_and_hints(out, agg, names, sel, ctx);
  if (agg.windows_with_paths == 0)
    put(out, "\nno transient critical path in any window (see diagnostics): no CP to show\n");
  else
    put_cp_sections(out, agg, shown, sel, ctx);
  if (sel.what_if) put_what_if_section(out, agg, shown, ctx);
  if (sel.diagnostics || agg.windows_with_paths == 0)  // they say why there is no CP
    put_diagnostics_section(out, agg);
}

}  // namespace snailtrail
