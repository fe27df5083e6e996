#include "output/writers.hpp"

#include "summary/hints.hpp"
#include "summary/verdict.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <fmt/compile.h>

namespace snailtrail {
namespace {

using Buf = fmt::memory_buffer;

void put(Buf& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
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
    append_json_string(out, names.op(ops[k].first));
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
void put_wrapped(Buf& out, std::string_view text, size_t width, std::string_view indent) {
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

void put_diagnostics(fmt::memory_buffer& out, const Diagnostics& d, DiagnosticsJson style) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"no_paths\":{},\"property1_violations\":{},\"property2_violations\":{},"
                 "\"property2_ns\":{},\"zero_duration_cycles\":{}",
                 d.no_paths, d.property1_violations, d.property2_violations, d.property2_ns,
                 d.zero_duration_cycles);
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

SummarySelection SummarySelection::parse(const std::string& list) {
  SummarySelection s{false, false, false, false, false, false, false};
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
    else if (item == "verdict")
      s.verdict = true;
    else
      throw std::invalid_argument("unknown summary \"" + item +
                                  "\" (expected activity, worker, operator, communication, top, "
                                  "diagnostics, verdict or all)");
  }
  if (!any) throw std::invalid_argument("empty summary list");
  return s;
}

namespace {

// Decodes the UTF-8 code point at s[i]; sets `len` to its bytes (1 for an invalid byte,
// which then counts as one column).
uint32_t decode_utf8(std::string_view s, size_t i, size_t& len) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    len = 1;
    return c;
  }
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) >> 6) != 2) {
      len = 1;
      return c;
    }
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  len = n;
  return cp;
}

size_t code_point_width(uint32_t cp) {
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || cp == 0xfe0f) return 0;
  const bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
                    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
                    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
                    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
                    (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd);
  return wide ? 2 : 1;
}

// Byte offset where the longest suffix of at most `cols` columns starts (code points are
// decoded forwards, so the offsets are boundaries).
size_t suffix_start(std::string_view s, size_t cols) {
  std::vector<std::pair<size_t, size_t>> points;  // (offset, width)
  for (size_t i = 0, len; i < s.size(); i += len)
    points.emplace_back(i, code_point_width(decode_utf8(s, i, len)));
  size_t w = 0, start = s.size();
  for (size_t k = points.size(); k-- > 0;) {
    if (w + points[k].second > cols) break;
    w += points[k].second;
    start = points[k].first;
  }
  return start;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         (static_cast<unsigned char>(c) & 0x80);
}

// A candidate abbreviation: name[0, head) + "…" + name[tail, end).
struct Cut {
  size_t head, tail;
  int kind;  // preference on ties: 2 head with number, 1 head up to a delimiter, 0 end only
};

}  // namespace

size_t display_width(std::string_view s) {
  size_t w = 0;
  for (size_t i = 0, len; i < s.size(); i += len) w += code_point_width(decode_utf8(s, i, len));
  return w;
}

std::string abbreviate(std::string_view name, size_t width) {
  if (display_width(name) <= width) return std::string(name);
  if (width == 0) return "";
  static constexpr std::string_view kEllipsis = "…";
  if (width == 1) return std::string(kEllipsis);
  // Runs of digits: numbers tell instances, stages and partitions apart.
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < name.size();) {
    if (!is_digit(name[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < name.size() && is_digit(name[j])) ++j;
    runs.emplace_back(i, j);
    i = j;
  }
  // The end after a head of `head` bytes, starting at a word boundary when one is near.
  auto tail_after = [&](size_t head) {
    const size_t head_w = display_width(name.substr(0, head));
    const size_t room = width - 1 - head_w;
    size_t t = std::max(head, suffix_start(name, room));
    if (t > 0 && t < name.size() && is_word(name[t - 1]) && is_word(name[t])) {
      // Mid-word: skip to the next boundary if it is within the first third of the end
      // and skips no digit.
      const size_t limit = t + room / 3;
      for (size_t k = t; k < name.size() && k <= limit; ++k) {
        if (is_digit(name[k])) break;
        if (!is_word(name[k])) {
          t = k;
          break;
        }
      }
    }
    while (t < name.size() &&
           (name[t] == ' ' || name[t] == ':' || name[t] == ',' || name[t] == ';'))
      ++t;
    return t;
  };
  std::vector<Cut> cuts;
  auto add_cut = [&](size_t head, int kind) {
    const size_t tail = tail_after(head);
    while (head > 0 && name[head - 1] == ' ') --head;
    cuts.push_back({head, tail, kind});
  };
  add_cut(0, 0);
  // The leading identifier: up to the end of the first number, if "…" and a bit of the
  // end still fit after it.
  if (!runs.empty() && display_width(name.substr(0, runs[0].second)) + 2 <= width) {
    size_t head = runs[0].second;
    // Keep a delimiter right after the number ("stage 50 (") when room remains.
    for (std::string_view d : {" (", ": ", " - ", "(", ":"})
      if (name.substr(head, d.size()) == d) {
        if (display_width(name.substr(0, head + d.size())) + 1 + 6 <= width) head += d.size();
        break;
      }
    add_cut(head, 2);
  }
  {
    // A short head up to the first delimiter: "Source:", "Window(".
    const size_t d = name.find_first_of(":(");
    if (d != std::string_view::npos && d >= 2 && display_width(name.substr(0, d + 1)) <= width / 3)
      add_cut(d + 1, 1);
  }
  // Best: the most whole numbers kept, then the first number (usually the identifier),
  // then an end that starts at a word boundary, then a head followed by a good part of
  // the end (a third of the width), then the end alone, then the most of the name.
  auto kept = [&](const Cut& c) {
    int n = 0;
    for (const auto& [rs, re] : runs) n += re <= c.head || rs >= c.tail;
    return n;
  };
  auto first_kept = [&](const Cut& c) {
    return !runs.empty() && (runs[0].second <= c.head || runs[0].first >= c.tail);
  };
  auto shown = [&](const Cut& c) {
    return display_width(name.substr(0, c.head)) + display_width(name.substr(c.tail));
  };
  auto clean = [&](const Cut& c) {
    return c.tail == 0 || c.tail >= name.size() || !is_word(name[c.tail - 1]) ||
           !is_word(name[c.tail]);
  };
  auto rank = [&](const Cut& c) {
    const int pref = c.kind == 0 ? 1 : 3 * display_width(name.substr(c.tail)) >= width ? 2 : 0;
    return std::make_tuple(kept(c), first_kept(c), clean(c), pref, shown(c));
  };
  const Cut* best = &cuts[0];
  for (const Cut& c : cuts)
    if (rank(c) > rank(*best)) best = &c;
  std::string out(name.substr(0, best->head));
  out += kEllipsis;
  out += name.substr(best->tail);
  return out;
}

std::string fit_column(std::string_view name, size_t width) {
  std::string s = abbreviate(name, width);
  s.append(width - std::min(width, display_width(s)), ' ');
  return s;
}

std::string abbreviate_pair(std::string_view a, std::string_view sep, std::string_view b,
                            size_t width) {
  const size_t aw = display_width(a), bw = display_width(b), sw = display_width(sep);
  if (aw + sw + bw <= width) return std::string(a) + std::string(sep) + std::string(b);
  if (width < sw + 2) return abbreviate(std::string(a) + std::string(sep) + std::string(b), width);
  const size_t room = width - sw;
  size_t a_room = (room + 1) / 2;
  if (aw <= a_room)
    a_room = aw;
  else if (bw <= room - a_room)
    a_room = room - bw;
  return abbreviate(a, a_room) + std::string(sep) + abbreviate(b, room - a_room);
}

std::string what_if_name(const WhatIf& x, const Names& names) {
  switch (x.kind) {
    case WhatIfKind::worker:
      return names.worker[x.id];
    case WhatIfKind::op:
      return names.op(x.id);
    case WhatIfKind::activity:
      return std::string(name_of(static_cast<ActivityType>(x.id)));
  }
  return {};
}

void put_what_if(Buf& out, const WhatIf& x, const Names& names) {
  put(out, "{\"kind\":");
  append_json_string(out, name_of(x.kind));
  put(out, ",\"name\":");
  append_json_string(out, what_if_name(x, names));
  put(out, ",\"speedup\":");
  append_json_number(out, x.speedup);
  fmt::format_to(std::back_inserter(out), ",\"basis\":\"{}\",\"saved_ns\":{}}}",
                 x.peer_median ? "peer_median" : "factor", std::llround(x.saved_ns));
}

// The next step for a dominant activity type.
const char* activity_advice(ActivityType t) {
  switch (t) {
    case ActivityType::scheduling:
      return "cut the scheduling delay (fewer, larger tasks; a less loaded driver or scheduler)";
    case ActivityType::serialization:
    case ActivityType::deserialization:
      return "make records cheaper to (de)serialize, or avoid the exchange that needs it";
    case ActivityType::buffer:
      return "look at buffer management (buffer sizes, memory pressure)";
    case ActivityType::io:
      return "make the I/O cheaper (faster storage, fewer or larger reads and writes)";
    case ActivityType::fault_tolerance:
      return "make checkpoints cheaper or less frequent";
    case ActivityType::barrier_processing:
      return "shorten the barriers (alignment, checkpoint barriers)";
    case ActivityType::busy_waiting:
      return "replace the busy waiting, or find what it waits for";
    default:
      return "make it cheaper";
  }
}

std::string verdict_name(const Verdict& v, const Names& names) {
  switch (v.kind) {
    case VerdictKind::straggler:
    case VerdictKind::balanced:
      return v.id < names.worker.size() ? names.worker[v.id] : std::string();
    case VerdictKind::op:
      return names.op(v.id);
    case VerdictKind::no_cp:
      return {};
    default:
      return std::string(name_of(static_cast<ActivityType>(v.id)));
  }
}

std::string pct(double v) {
  return fmt::format("{:.1f}%", v * 100);
}

std::string rank_text(uint32_t rank) {
  return rank == 1 ? "first" : fmt::format("#{}", rank);
}

std::string saving_text(const WhatIf* w, const char* subject) {
  if (!w) return {};
  const std::string how = w->peer_median    ? "As fast as its peers' median"
                          : w->speedup == 2 ? "Twice as fast"
                                            : fmt::format("{:g} times as fast", w->speedup);
  return fmt::format(" {}, {} would shorten the critical path by {}.", how, subject,
                     format_ns(std::llround(w->saved_ns)));
}

// One sentence per verdict kind, filled by name from the same fields: {name} (what the
// verdict is about), {cp} (its share of the critical paths), {busy} (its conventional
// share), {rank} (its conventional rank), {worker} and {worker_cp} (where most of it
// runs), {saving} (the what-if sentence, or nothing) and {advice} (the next step).
struct VerdictSentence {
  VerdictKind kind;
  const char* text;
};
constexpr VerdictSentence kVerdictSentences[] = {
    {VerdictKind::no_cp,
     "No transient critical path: at some instant every worker waits with no message in "
     "flight, or messages are unmatched; nothing can be ranked (see DIAGNOSTICS)."},
    {VerdictKind::instrumentation,
     "Most critical time is unknown ({cp} of the critical paths): the trace misses "
     "activities. Next: instrument the gaps, or map names to activity types with --map."},
    {VerdictKind::activity,
     "{name} limits latency: {cp} of the critical paths, {busy} of all time (conventional "
     "profiling ranks it {rank}); most on {worker} ({worker_cp}).{saving} Next: {advice}."},
    {VerdictKind::straggler,
     "{name} is the straggler: on {cp} of the critical paths while doing {busy} of the work "
     "(conventional profiling ranks it {rank}).{saving} Next: look for a hot key or a skewed "
     "partition on it (split the key, rebalance)."},
    {VerdictKind::op,
     "Operator {name} is the bottleneck: {cp} of the critical paths, {busy} of the busy time "
     "(conventional profiling ranks it {rank}).{saving} Next: {op_advice}."},
    {VerdictKind::communication,
     "Communication limits latency: messages are {cp} of the critical paths. Next: "
     "co-locate the operators that talk most, batch messages, or check the network."},
    {VerdictKind::input,
     "The job keeps up with its input: {cp} of the critical paths are sources reading "
     "input; no worker or operator stands out."},
    {VerdictKind::balanced,
     "Nothing stands out: the critical paths spread over workers, operators and "
     "activities (the most critical worker, {name}, holds {cp})."},
};

// The next step for an operator verdict: DS2's number when the trace's rates gave one.
std::string op_advice(const Verdict& v, const std::string& name) {
  if (v.ds2_needed == 0)
    return fmt::format(
        "add instances of {} (`snailtrail scale policy` gives the number when rates are known)",
        name);
  if (v.ds2_needed > v.ds2_now)
    return fmt::format("add instances of {}: DS2 says {} (now {})", name, v.ds2_needed, v.ds2_now);
  return fmt::format(
      "DS2 says {} instance{} of {} keep up with the sources' observed rate (now {}); for a "
      "higher rate, `snailtrail scale policy --source-rates` sizes it",
      v.ds2_needed, v.ds2_needed == 1 ? "" : "s", name, v.ds2_now);
}

std::string verdict_text(const Verdict& v, const Names& names) {
  const auto* it = std::find_if(std::begin(kVerdictSentences), std::end(kVerdictSentences),
                                [&](const VerdictSentence& x) { return x.kind == v.kind; });
  if (it == std::end(kVerdictSentences)) return {};
  const bool activity = v.kind == VerdictKind::activity;
  return fmt::format(
      fmt::runtime(it->text), fmt::arg("name", verdict_name(v, names)), fmt::arg("cp", pct(v.cp)),
      fmt::arg("busy", pct(v.busy)), fmt::arg("rank", rank_text(v.busy_rank)),
      fmt::arg("worker",
               v.top_worker < names.worker.size() ? names.worker[v.top_worker] : std::string("?")),
      fmt::arg("worker_cp", pct(v.top_worker_cp)), fmt::arg("saving", saving_text(v.what_if, "it")),
      fmt::arg("advice", activity ? activity_advice(static_cast<ActivityType>(v.id)) : ""),
      fmt::arg("op_advice",
               v.kind == VerdictKind::op ? op_advice(v, verdict_name(v, names)) : std::string()));
}

// A window's finding in a few words, for the run verdict's tally of its windows.
std::string finding_text(const VerdictTally::Entry& e, const Names& names) {
  Verdict v;
  v.kind = e.kind;
  v.id = e.id;
  switch (e.kind) {
    case VerdictKind::straggler:
      return "straggler " + verdict_name(v, names);
    case VerdictKind::op:
      return "operator " + verdict_name(v, names);
    case VerdictKind::activity:
      return verdict_name(v, names);
    case VerdictKind::instrumentation:
      return "unknown time";
    case VerdictKind::communication:
      return "communication";
    case VerdictKind::input:
      return "the input";
    case VerdictKind::balanced:
      return "nothing standing out";
    case VerdictKind::no_cp:
      break;
  }
  return "no critical path";
}

std::string run_verdict_text(const RunVerdict& r, const Names& names) {
  std::string text = verdict_text(r.verdict, names);
  const uint64_t m = r.windows_with_paths;
  if (m <= 1) return text;
  const bool balanced = r.verdict.kind == VerdictKind::balanced;
  const std::string what = balanced ? "find nothing standing out" : "find this";
  if (r.windows == m)
    text += fmt::format(" Windows: all {} {}", m, what);
  else
    text += fmt::format(" Windows: {} of {} {}", r.windows, m, what);
  for (size_t k = 0; k < r.others.size(); ++k)
    text +=
        fmt::format("{} {} {} {}", k ? "," : ";", r.others[k].windows,
                    r.others[k].windows == 1 ? "finds" : "find", finding_text(r.others[k], names));
  return text + ".";
}

void put_verdict(Buf& out, const Verdict& v, const Names& names, const std::vector<Hint>& hints,
                 const RunVerdict* run = nullptr) {
  put(out, "{\"kind\":");
  append_json_string(out, name_of(v.kind));
  put(out, ",\"name\":");
  const std::string name = verdict_name(v, names);
  if (name.empty())
    put(out, "null");
  else
    append_json_string(out, name);
  put(out, ",\"text\":");
  append_json_string(out, run ? run_verdict_text(*run, names) : verdict_text(v, names));
  if (v.ds2_needed > 0)
    fmt::format_to(std::back_inserter(out), ",\"ds2\":{{\"instances\":{},\"now\":{}}}",
                   v.ds2_needed, v.ds2_now);
  if (run) {
    fmt::format_to(std::back_inserter(out), ",\"windows\":{},\"windows_with_paths\":{}",
                   run->windows, run->windows_with_paths);
    put(out, ",\"others\":[");
    for (size_t k = 0; k < run->others.size(); ++k) {
      const VerdictTally::Entry& e = run->others[k];
      put(out, k ? ",{\"kind\":" : "{\"kind\":");
      append_json_string(out, name_of(e.kind));
      put(out, ",\"name\":");
      Verdict x;
      x.kind = e.kind;
      x.id = e.id;
      append_json_string(out, verdict_name(x, names));
      fmt::format_to(std::back_inserter(out), ",\"windows\":{}}}", e.windows);
    }
    out.push_back(']');
  }
  if (!hints.empty()) {
    put(out, ",\"hints\":[");
    for (size_t i = 0; i < hints.size(); ++i) {
      put(out, i ? ",{\"kind\":" : "{\"kind\":");
      append_json_string(out, name_of(hints[i].kind));
      put(out, ",\"text\":");
      append_json_string(out, hints[i].text);
      out.push_back('}');
    }
    out.push_back(']');
  }
  out.push_back('}');
}

void write_verdict_json(Buf& out, const Groups& cp, const Groups& conventional, bool has_paths,
                        const std::vector<WhatIf>& what_if, const Diagnostics& diagnostics,
                        int64_t window_ns, uint64_t windows, const Names& names) {
  put_verdict(out, decide_verdict(cp, conventional, has_paths, what_if), names,
              decide_hints(cp, diagnostics, has_paths, window_ns, windows));
}

RunVerdict run_verdict(const Aggregate& agg, const VerdictEnricher& enrich) {
  RunVerdict r = decide_run_verdict(agg.verdicts, agg.cp, agg.conventional, agg.what_if);
  if (enrich) enrich(r.verdict);
  return r;
}

void write_run_verdict_json(Buf& out, const Aggregate& agg, const Names& names,
                            const VerdictEnricher& enrich) {
  const RunVerdict r = run_verdict(agg, enrich);
  put_verdict(out, r.verdict, names,
              decide_hints(agg.cp, agg.diagnostics, agg.windows_with_paths > 0, agg.diag_weight_ns,
                           agg.windows),
              &r);
}

void write_run_json(Buf& out, const Aggregate& agg, const Names& names, const SummarySelection& sel,
                    const VerdictEnricher& enrich) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"run\":{{\"windows\":{},\"windows_with_paths\":{},\"events\":{},"
                 "\"edges\":{},\"window_ns\":{},\"cp_ns\":{}}}",
                 agg.windows, agg.windows_with_paths, agg.events, agg.edges, agg.diag_weight_ns,
                 agg.weight_ns);
  if (sel.verdict) {
    put(out, ",\"verdict\":");
    write_run_verdict_json(out, agg, names, enrich);
  }
  if (sel.what_if) {
    put(out, ",\"what_if\":[");
    for (size_t k = 0; k < agg.what_if.size(); ++k) {
      if (k) out.push_back(',');
      put_what_if(out, agg.what_if[k], names);
    }
    out.push_back(']');
  }
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
      append_json_number(out, a.cp);
      out.push_back('}');
    }
    out.push_back(']');
  }
  if (sel.verdict) {
    put(out, ",\"verdict\":");
    write_verdict_json(out, w.cp, w.conventional, w.has_paths, w.what_if, w.diagnostics,
                       w.window.end - w.window.start, 1, names);
  }
  if (sel.what_if) {
    put(out, ",\"what_if\":[");
    for (size_t k = 0; k < w.what_if.size(); ++k) {
      if (k) out.push_back(',');
      put_what_if(out, w.what_if[k], names);
    }
    out.push_back(']');
  }
  if (sel.diagnostics || !w.has_paths) {  // they say why a window has no CP
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
  if (w.has_paths) append_json_number(out, cp);
  out.push_back(',');
  append_json_number(out, conv);
  out.push_back(',');
  if (w.has_paths) append_json_number(out, single);
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
  if (sel.op) {
    for (size_t k = 0; k < w.cp.op.size(); ++k)
      csv_row(out, w, "operator", names.op(w.cp.op[k].first), w.cp.op[k].second,
              w.conventional.op[k].second, w.single_path.op[k].second);
    for (size_t k = 0; k < w.cp.op_per_worker.size(); ++k)
      csv_row(out, w, "operator_per_worker", names.op(w.cp.op_per_worker[k].first),
              w.cp.op_per_worker[k].second, w.conventional.op_per_worker[k].second,
              w.single_path.op_per_worker[k].second);
  }
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
    edge(u, v, pag.messages[s.msg_index[k]].type, kNone, c, r.message_cp[k]);
  }
}

// What-if: the critical path time each speed-up saves, summed over the windows.
void write_what_if_table(Buf& out, const Aggregate& agg, const Names& names,
                         const TableContext& ctx) {
  put(out, "\nWHAT IF (critical path time saved, summed over windows)\n");
  if (agg.what_if.empty()) {
    put(out, "  no speed-up of the most critical items shortens the critical path\n");
    return;
  }
  const size_t rows = std::min(agg.what_if.size(), ctx.max_rows);
  fmt::format_to(std::back_inserter(out), "  {:>9}  {:>6}  {:<8}  {:<20}  {}\n", "saved", "share",
                 "kind", "speed-up", "name");
  for (size_t k = 0; k < rows; ++k) {
    const WhatIf& x = agg.what_if[k];
    const std::string how = x.peer_median ? fmt::format("peer median ({:.2f}x)", x.speedup)
                                          : fmt::format("{:g}x faster", x.speedup);
    const double share =
        agg.diag_weight_ns > 0 ? x.saved_ns / static_cast<double>(agg.diag_weight_ns) : 0;
    fmt::format_to(std::back_inserter(out), "  {:>9}  {}  {:<8}  {:<20}  {}\n",
                   format_ns(std::llround(x.saved_ns)), percent(share), name_of(x.kind), how,
                   abbreviate(what_if_name(x, names), 29));
  }
}

void write_table(Buf& out, const Aggregate& agg, const Names& names, const SummarySelection& sel,
                 const TableContext& ctx, const char* heading) {
  fmt::format_to(std::back_inserter(out), "{}\n", heading);
  fmt::format_to(std::back_inserter(out), "{} window{} of {}, {} events, {} edges\n", agg.windows,
                 agg.windows == 1 ? "" : "s", ctx.window_label, agg.events, agg.edges);
  fmt::format_to(std::back_inserter(out), "CP: mean over the {} window{} with transient paths\n",
                 agg.windows_with_paths, agg.windows_with_paths == 1 ? "" : "s");
  // The verdict, and the hints also without it when there is no CP (a user stuck).
  if (sel.verdict || agg.windows_with_paths == 0) {
    out.push_back('\n');
    if (sel.verdict)
      put_wrapped(out, "VERDICT: " + run_verdict_text(run_verdict(agg, ctx.enrich), names), 79,
                  "  ");
    const std::vector<Hint> hints = decide_hints(
        agg.cp, agg.diagnostics, agg.windows_with_paths > 0, agg.diag_weight_ns, agg.windows);
    for (const Hint& h : hints) put_wrapped(out, "HINT: " + h.text, 79, "  ");
    if (sel.verdict || !hints.empty()) out.push_back('\n');
  }
  if (agg.windows_with_paths == 0)
    put(out, "\nno transient critical path in any window (see diagnostics): no CP to show\n");
  else {
    auto value_of = [](const std::vector<std::pair<uint32_t, double>>& list, uint32_t id) {
      auto it = std::lower_bound(list.begin(), list.end(), id,
                                 [](const auto& p, uint32_t x) { return p.first < x; });
      return it != list.end() && it->first == id ? it->second : 0.0;
    };
    // What the columns mean, for the sections shown.
    const bool op_shown = sel.op && !agg.cp.op.empty();
    const bool time_col = sel.activity || (sel.communication && !agg.cp.communication.empty());
    if (ctx.column_key && (sel.activity || sel.worker || op_shown || sel.communication)) {
      std::string key = "Columns: CP = critical participation (share of the critical paths)";
      if (op_shown) key += "; CP/worker = an operator's CP over the number of workers that ran it";
      const bool busy_col = sel.worker || op_shown;
      key += "; conventional profile:";
      if (time_col) key += " time = share of all activity time";
      if (time_col && busy_col) key += ",";
      if (busy_col) key += " busy = share of all workers' busy (non-waiting) time";
      put_wrapped(out, key + ".", 79, "  ");
    }
    if (sel.activity) {
      std::vector<Row> rows;
      for (int a = 0; a < kActivityTypeCount; ++a)
        if (agg.cp.activity[a] != 0 || agg.conventional.activity[a] != 0)
          rows.push_back({std::string(name_of(static_cast<ActivityType>(a))),
                          {agg.cp.activity[a], agg.conventional.activity[a]}});
      put_rows(out, "ACTIVITY TYPE", {"CP", "time"}, rows, ctx.max_rows);
    }
    if (sel.worker) {
      std::vector<Row> rows;
      for (size_t k = 0; k < agg.cp.worker.size(); ++k)
        if (agg.cp.worker[k] != 0 || agg.conventional.worker[k] != 0)
          rows.push_back({names.worker[k], {agg.cp.worker[k], agg.conventional.worker[k]}});
      const double comm_cp = agg.cp.activity[static_cast<int>(ActivityType::data_message)] +
                             agg.cp.activity[static_cast<int>(ActivityType::control_message)];
      const double comm_time =
          agg.conventional.activity[static_cast<int>(ActivityType::data_message)] +
          agg.conventional.activity[static_cast<int>(ActivityType::control_message)];
      put_rows(out, "WORKER (straggler)", {"CP", "busy"}, rows, ctx.max_rows);
      // Messages are on no worker's timeline: their CP is shown apart; they have no busy
      // share (their time share is in ACTIVITY TYPE and COMMUNICATION).
      if (comm_cp != 0 || comm_time != 0)
        put_row(out, {"(communication)", {comm_cp, NAN}}, {"CP", "busy"});
    }
    if (op_shown) {
      std::vector<Row> rows;
      for (const auto& [id, cp] : agg.cp.op)
        rows.push_back(
            {names.op(id),
             {cp, value_of(agg.cp.op_per_worker, id), value_of(agg.conventional.op, id)}});
      put_rows(out, "OPERATOR (all its activities)", {"CP", "CP/worker", "busy"}, rows,
               ctx.max_rows);
    }
    if (sel.communication && !agg.cp.communication.empty()) {
      std::vector<Row> rows;
      for (size_t k = 0; k < agg.cp.communication.size(); ++k) {
        const CommCell& c = agg.cp.communication[k];
        double time = 0;
        for (const CommCell& x : agg.conventional.communication)
          if (x.src == c.src && x.dst == c.dst) time = x.value;
        rows.push_back(
            {abbreviate_pair(names.worker[c.src], " -> ", names.worker[c.dst], kNameWidth),
             {c.value, time}});
      }
      put_rows(out, "COMMUNICATION", {"CP", "time"}, rows, ctx.max_rows);
    }
    if (sel.top && !agg.top.empty()) {
      const size_t k_max = std::min(ctx.top_k, agg.top.size());
      fmt::format_to(std::back_inserter(out), "\nTOP {} CRITICAL ACTIVITIES\n", k_max);
      // "  CP(6)  type  worker  operator  duration(8)  at": 36 columns plus the type,
      // worker and operator columns, sized to what is shown, within 79. Messages have no
      // operator: their "sender->receiver" spans the worker and operator columns.
      size_t type_w = 4, who_w = 6, op_w = 8, msg_w = 0;
      for (size_t k = 0; k < k_max; ++k) {
        const TopActivity& a = agg.top[k];
        type_w = std::max(type_w, display_width(name_of(a.type)));
        if (a.remote != kNone) {
          msg_w = std::max(msg_w, display_width(names.worker[a.worker]) + 2 +
                                      display_width(names.worker[a.remote]));
        } else {
          who_w = std::max(who_w, display_width(names.worker[a.worker]));
          if (a.op != kNone) op_w = std::max(op_w, display_width(names.op(a.op)));
        }
      }
      const size_t room = 79 - 36 - type_w;  // for worker + operator
      if (who_w + op_w > room) {
        // The worker keeps its name when it can; the operator (whose identifier comes
        // first, "stage 50 (…") takes the rest, at least half.
        // (room - op_w would wrap when the operator alone is wider than the room.)
        who_w = std::min(who_w, std::max(room / 2, op_w < room ? room - op_w : 0));
        op_w = room - who_w;
      } else if (msg_w > who_w + 2 + op_w) {
        op_w = std::min(room, msg_w - 2) - who_w;
      }
      fmt::format_to(std::back_inserter(out), "  {:>6}  {}  {}  {}  {:>8}  {}\n", "CP",
                     fit_column("type", type_w), fit_column("worker", who_w),
                     fit_column("operator", op_w), "duration", "at");
      for (size_t k = 0; k < k_max; ++k) {
        const TopActivity& a = agg.top[k];
        const std::string where =
            a.remote != kNone
                ? fit_column(abbreviate_pair(names.worker[a.worker], "->", names.worker[a.remote],
                                             who_w + 2 + op_w),
                             who_w + 2 + op_w)
                : fit_column(names.worker[a.worker], who_w) + "  " +
                      fit_column(a.op == kNone ? "-" : names.op(a.op), op_w);
        fmt::format_to(std::back_inserter(out), "  {}  {}  {}  {:>8}  +{}\n", percent(a.cp),
                       fit_column(name_of(a.type), type_w), where, format_ns(a.end - a.start),
                       format_ns(a.start - ctx.origin_ns));
      }
    }
  }
  if (sel.what_if) write_what_if_table(out, agg, names, ctx);
  if (sel.diagnostics || agg.windows_with_paths == 0) {  // they say why there is no CP
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
