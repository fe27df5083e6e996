// Header patterns, presets, detection and timestamps (log_format.hpp).
#include "logs/log_format.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "trace/ascii.hpp"

namespace snailtrail::logs {
namespace {

using ascii::is_space;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (iequals(name, n)) return true;
  return false;
}

// Escapes a literal for std::regex (ECMAScript).
void regex_escape(std::string& out, char c) {
  if (std::string_view(".^$|()[]{}*+?\\/").find(c) != std::string_view::npos) out.push_back('\\');
  out.push_back(c);
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

constexpr int64_t kMaxEpochSeconds = 5'680'281'600;  // 2150-01-01

int month_of(std::string_view w) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
  if (w.size() < 3) return 0;
  for (int i = 0; i < 12; ++i)
    if (iequals(w.substr(0, 3), kMonths[i])) return i + 1;
  return 0;
}

// The parts of a time text, in order: its numbers, a month name, a UTC offset.
struct TimeParts {
  struct Num {
    int64_t v;
    int digits;
    size_t end;
  };
  std::array<Num, 10> nums{};
  int n = 0, month = 0;
  int64_t offset_s = 0;
  int frac_index = -1;  // the number that is a fraction of a second, if any
};

// A UTC offset after the time at t[i] ('+' or '-'): +hh:mm, +hhmm or +hh. Returns the
// position after it.
size_t scan_offset(std::string_view t, size_t i, int64_t& offset_s) {
  const int sign = t[i] == '-' ? -1 : 1;
  size_t j = i + 1;
  int64_t hh = 0, mm = 0;
  int d = 0;
  while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j])) && d < 2)
    hh = hh * 10 + (t[j++] - '0'), ++d;
  if (j < t.size() && t[j] == ':') ++j;
  d = 0;
  while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j])) && d < 2)
    mm = mm * 10 + (t[j++] - '0'), ++d;
  offset_s = sign * (hh * 3600 + mm * 60);
  return j;
}

// Splits a time text into its parts; false if it has more than 10 numbers or a word
// that is neither a month, a weekday nor a zone (T, Z, UTC, GMT).
bool scan_time(std::string_view t, TimeParts& p) {
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c >= '0' && c <= '9') {
      if (p.n == static_cast<int>(p.nums.size())) return false;
      int64_t v = 0;
      int d = 0;
      const size_t start = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
        if (d < 18) v = v * 10 + (t[i] - '0');
        ++d, ++i;
      }
      // A fraction: digits right after '.' or ',' that follow the seconds.
      if (start > 0 && (t[start - 1] == '.' || t[start - 1] == ',') && p.n >= 3 && p.frac_index < 0)
        p.frac_index = p.n;
      p.nums[p.n++] = {v, d, i};
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < t.size() && std::isalpha(static_cast<unsigned char>(t[j]))) ++j;
      const std::string_view w = t.substr(i, j - i);
      if (const int m = month_of(w); m && w.size() <= 9 && p.month == 0)
        p.month = m;
      else if (w != "T" && w != "Z" && w != "UTC" && w != "GMT" &&
               month_of(w) == 0)  // weekday names are fine: "Mon Jun 14 ..."
        if (!(w.size() == 3 && is_one_of(w, {"mon", "tue", "wed", "thu", "fri", "sat", "sun"})))
          return false;
      i = j;
    } else if ((c == '+' || c == '-') && p.n >= 5 && i + 1 < t.size() &&
               std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
      i = scan_offset(t, i, p.offset_s);
    } else {
      ++i;
    }
  }
  return true;
}

// Removes the fraction from the numbers; returns it in ns (0 if none).
int64_t take_fraction(TimeParts& p) {
  if (p.frac_index < 0) return 0;
  const TimeParts::Num f = p.nums[p.frac_index];
  int64_t v = f.v;
  int d = std::min(f.digits, 18);
  while (d > 9) v /= 10, --d;
  while (d < 9) v *= 10, ++d;
  for (int k = p.frac_index; k + 1 < p.n; ++k) p.nums[k] = p.nums[k + 1];
  --p.n;
  return v;
}

struct CivilTime {
  int64_t y = 1970, mo = 1, d = 1, h = 0, mi = 0, s = 0, ns = 0;
};

// nums[k..] as h m [s], or one 6-digit hhmmss, or h m s ms (HealthApp's 22:15:29:606).
bool read_hms(const TimeParts& p, int k, CivilTime& c) {
  const auto& nums = p.nums;
  const int r = p.n - k;
  if (r == 1 && nums[k].digits == 6) {
    c.h = nums[k].v / 10000, c.mi = nums[k].v / 100 % 100, c.s = nums[k].v % 100;
    return true;
  }
  if (r == 4 && nums[k + 3].digits == 3) {
    c.h = nums[k].v, c.mi = nums[k + 1].v, c.s = nums[k + 2].v;
    c.ns = nums[k + 3].v * 1'000'000;
    return true;
  }
  if (r != 2 && r != 3) return false;
  c.h = nums[k].v, c.mi = nums[k + 1].v;
  c.s = r == 3 ? nums[k + 2].v : 0;
  return true;
}

// With a month name: Jun 14 15:16:01 [2024] | 14 Jun 2024 15:16:01 | Mon Jun 14 15:16:01 2024
bool read_named_month(std::string_view t, TimeParts& p, CivilTime& c) {
  const auto& nums = p.nums;
  c.mo = p.month;
  int k = 0;
  if (p.n >= 1 && nums[0].digits <= 2) c.d = nums[0].v, k = 1;
  if (k < p.n && nums[k].digits == 4 && nums[k].end < t.size() && t[nums[k].end] != ':')
    c.y = nums[k].v, ++k;
  if (p.n - k == 4 && nums[p.n - 1].digits == 4) {  // year last
    c.y = nums[p.n - 1].v;
    --p.n;
  }
  return read_hms(p, k, c);
}

// The date and time of the numbers, by the layouts the presets meet.
bool read_civil(std::string_view t, TimeParts& p, CivilTime& c) {
  const auto& nums = p.nums;
  const int n = p.n;
  if (p.month) return read_named_month(t, p, c);
  if (n >= 1 && nums[0].digits == 8) {  // 20240301 12:00:00 or 20240301 120000
    c.y = nums[0].v / 10000, c.mo = nums[0].v / 100 % 100, c.d = nums[0].v % 100;
    return read_hms(p, 1, c);
  }
  if (n == 2 && nums[0].digits == 6 && nums[1].digits == 6) {  // HDFS 081109 203615
    c.y = 2000 + nums[0].v / 10000, c.mo = nums[0].v / 100 % 100, c.d = nums[0].v % 100;
    c.h = nums[1].v / 10000, c.mi = nums[1].v / 100 % 100, c.s = nums[1].v % 100;
    return true;
  }
  if (n >= 5 && nums[0].digits == 4) {  // 2024-03-01 12:00:00
    c.y = nums[0].v, c.mo = nums[1].v, c.d = nums[2].v;
    return read_hms(p, 3, c);
  }
  if (n >= 5 && nums[0].digits <= 2 && nums[2].digits == 4) {  // 01/03/2024 12:00:00
    c.d = nums[0].v, c.mo = nums[1].v, c.y = nums[2].v;
    return read_hms(p, 3, c);
  }
  if (n == 5 && nums[0].digits == 2 && nums[1].digits == 2) {
    // No year: Android's 03-17 16:13:38.811, Proxifier's 10.30 16:49:06
    c.mo = nums[0].v, c.d = nums[1].v;
    return read_hms(p, 2, c);
  }
  if (n >= 5 && nums[0].digits == 2) {  // Spark 17/06/09 20:10:40
    c.y = 2000 + nums[0].v, c.mo = nums[1].v, c.d = nums[2].v;
    return read_hms(p, 3, c);
  }
  if (n == 3 || (n == 2 && nums[0].digits <= 2)) return read_hms(p, 0, c);  // time only
  return false;
}

}  // namespace

LogFormat LogFormat::compile(std::string_view pattern, std::string_view name) {
  LogFormat f;
  f.pattern_ = std::string(pattern);
  f.name_ = std::string(name);
  const std::string re = f.translate(pattern);
  f.assign_roles();
  if (f.content_ < 0)
    throw std::invalid_argument("log format '" + f.pattern_ + "' has no <Content> field");
  if (f.use_regex_) {
    try {
      f.regex_ = std::regex(re, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument("log format '" + f.pattern_ + "': bad regular expression (" +
                                  e.what() + ")");
    }
    f.elems_.clear();
  }
  return f;
}

// The pattern as elements for the matcher (fields, literals, spaces) and as the same
// regular expression, for std::regex if the pattern uses its syntax.
std::string LogFormat::translate(std::string_view pattern) {
  std::string re = "^";
  auto add_literal = [&](char c) {
    if (elems_.empty() || elems_.back().kind != Elem::literal)
      elems_.push_back({Elem::literal, "", -1});
    elems_.back().text.push_back(c);
    regex_escape(re, c);
  };
  for (size_t i = 0; i < pattern.size();) {
    const char c = pattern[i];
    if (c == '<') {
      const size_t close = pattern.find('>', i);
      std::string_view field =
          close == std::string_view::npos ? "" : pattern.substr(i + 1, close - i - 1);
      const bool ok = !field.empty() && std::all_of(field.begin(), field.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
      });
      if (ok) {
        const int idx = static_cast<int>(names_.size());
        names_.emplace_back(field);
        elems_.push_back({Elem::field_ref, "", idx});
        re += "(.*?)";
        i = close + 1;
        continue;
      }
      add_literal(c);
      ++i;
    } else if (c == ' ') {
      while (i < pattern.size() && pattern[i] == ' ') ++i;
      if (elems_.empty() || elems_.back().kind != Elem::space)
        elems_.push_back({Elem::space, "", -1});
      re += "\\s+";
    } else if (c == '\\' && i + 1 < pattern.size()) {
      const char n = pattern[i + 1];
      if (std::isalnum(static_cast<unsigned char>(n))) {
        // \s, \d, \w, ...: a character class, only std::regex knows it.
        use_regex_ = true;
        re.push_back('\\');
        re.push_back(n);
      } else {
        add_literal(n);
      }
      i += 2;
    } else if (std::string_view("()|?*+[]{}.^$").find(c) != std::string_view::npos) {
      use_regex_ = true;  // as in logparser, the pattern is a regular expression
      re.push_back(c);
      // The pattern's own groups do not capture: groups are the fields.
      if (c == '(' && (i + 1 >= pattern.size() || pattern[i + 1] != '?')) re += "?:";
      ++i;
    } else {
      add_literal(c);
      ++i;
    }
  }
  return re + "$";
}

// What the fields are, by name: content, time, level, thread, node.
void LogFormat::assign_roles() {
  for (size_t k = 0; k < names_.size(); ++k) {
    const std::string& n = names_[k];
    const int idx = static_cast<int>(k);
    if (n == "Content") content_ = idx;
    if (is_one_of(n, {"Date", "Time", "Timestamp", "Datetime", "Month", "Day", "Year"}))
      time_fields_.push_back(idx);
    if (is_one_of(n, {"Level", "Severity"})) level_ = idx;
    if (thread_ < 0 && is_one_of(n, {"Thread", "Tid"})) thread_ = idx;
    if (node_ < 0 && is_one_of(n, {"Node", "Host", "Hostname"})) node_ = idx;
  }
  // A process id is the thread only if there is no thread field (Android has both).
  for (size_t k = 0; k < names_.size() && thread_ < 0; ++k)
    if (is_one_of(names_[k], {"Pid", "Process"})) thread_ = static_cast<int>(k);
}

int LogFormat::field_index(std::string_view name) const {
  for (size_t k = 0; k < names_.size(); ++k)
    if (iequals(names_[k], name)) return static_cast<int>(k);
  return -1;
}

bool LogFormat::match_from(size_t e, size_t p, std::string_view line,
                           std::vector<std::string_view>& out, int& budget) const {
  if (--budget < 0) return false;
  if (e == elems_.size()) return p == line.size();
  const Elem& el = elems_[e];
  switch (el.kind) {
    case Elem::literal:
      if (line.substr(p, el.text.size()) != el.text) return false;
      return match_from(e + 1, p + el.text.size(), line, out, budget);
    case Elem::space: {
      if (p >= line.size() || !is_space(line[p])) return false;
      size_t q = p;
      while (q < line.size() && is_space(line[q])) ++q;
      return match_from(e + 1, q, line, out, budget);
    }
    case Elem::field_ref: {
      if (e + 1 == elems_.size()) {  // the last element takes the rest of the line
        out[el.field] = line.substr(p);
        return true;
      }
      const Elem& next = elems_[e + 1];
      // Lazily: the shortest field (at least one character, except <Content>) after
      // which the rest matches.
      size_t q = el.field == content_ ? p : p + 1;
      while (q <= line.size()) {
        if (next.kind == Elem::literal) {
          q = line.find(next.text, q);
          if (q == std::string_view::npos) return false;
        } else if (next.kind == Elem::space) {
          while (q < line.size() && !is_space(line[q])) ++q;
          if (q >= line.size()) return false;
        }
        out[el.field] = line.substr(p, q - p);
        if (match_from(e + 1, q, line, out, budget)) return true;
        if (budget < 0) return false;
        ++q;
      }
      return false;
    }
  }
  return false;
}

bool LogFormat::match(std::string_view line, std::vector<std::string_view>& fields) const {
  fields.assign(names_.size(), std::string_view());
  if (use_regex_) {
    // libstdc++'s std::regex recurses per character: only the first kRegexBytes of a
    // line are matched, and <Content> ending there extends to the end of the line.
    constexpr size_t kRegexBytes = 2048;
    const std::string_view head = line.substr(0, kRegexBytes);
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_match(head.begin(), head.end(), m, regex_)) return false;
    for (size_t i = 0; i < names_.size(); ++i)
      fields[i] =
          line.substr(static_cast<size_t>(m.position(i + 1)), static_cast<size_t>(m.length(i + 1)));
    if (line.size() > head.size()) {
      const std::string_view c = fields[content_];
      if (c.data() + c.size() != head.data() + head.size()) return false;
      fields[content_] = line.substr(static_cast<size_t>(c.data() - line.data()));
    }
    return true;
  }
  int budget = 4096;  // pathological lines fail instead of taking exponential time
  return match_from(0, 0, line, fields, budget);
}

LogFormat format_from_option(std::string_view s) {
  for (const FormatPreset& p : format_presets())
    if (p.name == s) return LogFormat::compile(p.pattern, p.name);
  if (s.find('<') == std::string_view::npos) {
    std::string names;
    for (const FormatPreset& p : format_presets())
      names += (names.empty() ? "" : ", ") + std::string(p.name);
    throw std::invalid_argument("unknown log format '" + std::string(s) + "': give a preset (" +
                                names +
                                ") or a pattern such as '<Date> <Time> <Level> <Component>: "
                                "<Content>'");
  }
  return LogFormat::compile(s);
}

bool is_level_word(std::string_view s) {
  return is_one_of(s,
                   {"TRACE",  "DEBUG",   "INFO", "WARN",  "WARNING", "ERROR",  "FATAL", "CRITICAL",
                    "NOTICE", "SEVERE",  "FINE", "FINER", "FINEST",  "CONFIG", "ALERT", "EMERG",
                    "ERR",    "CRIT",    "T",    "D",     "I",       "W",      "E",     "F",
                    "V",      "VERBOSE", "DBG",  "INF",   "WRN",     "ERRO",   "PANIC"});
}

std::optional<int64_t> parse_timestamp(std::string_view t) {
  TimeParts p;
  if (!scan_time(t, p)) return std::nullopt;
  const int64_t frac_ns = take_fraction(p);
  if (!p.month && p.n == 1 && (p.nums[0].digits == 10 || p.nums[0].digits == 13)) {
    const int64_t v = p.nums[0].v;  // epoch seconds or milliseconds, up to 2150
    if (p.nums[0].digits == 10 ? v >= kMaxEpochSeconds : v >= kMaxEpochSeconds * 1000)
      return std::nullopt;
    return p.nums[0].digits == 10 ? v * 1'000'000'000 + frac_ns : v * 1'000'000 + frac_ns;
  }
  CivilTime c;
  if (!read_civil(t, p, c)) return std::nullopt;
  // Years 1900-2149: any two times then differ by less than 2^63 ns.
  if (c.mo < 1 || c.mo > 12 || c.d < 1 || c.d > 31 || c.h > 23 || c.mi > 59 || c.s > 60 ||
      c.y < 1900 || c.y >= 2150)
    return std::nullopt;
  const int64_t days =
      days_from_civil(c.y, static_cast<unsigned>(c.mo), static_cast<unsigned>(c.d));
  return ((days * 86400 + c.h * 3600 + c.mi * 60 + c.s) - p.offset_s) * 1'000'000'000 + frac_ns +
         c.ns;
}

bool match_header(const LogFormat& f, std::string_view line, bool check_level,
                  std::vector<std::string_view>& scratch, std::string& time_buf, HeaderMatch& out) {
  if (!f.match(line, scratch)) return false;
  if (check_level && f.level_field() >= 0 && !is_level_word(scratch[f.level_field()])) return false;
  out.ts.reset();
  if (!f.time_fields().empty()) {
    time_buf.clear();
    for (int k : f.time_fields()) {
      if (!time_buf.empty()) time_buf.push_back(' ');
      time_buf.append(scratch[k]);
    }
    out.ts = parse_timestamp(time_buf);
    // loghub's formats name several fields that are not one time together (BGL's
    // <Timestamp> <Date> ... <Time>): then the <Timestamp> field on its own.
    // (Only a field named Timestamp: a lone Time or Month field would let lazy fields
    // match foreign headers.)
    for (size_t k = 0; !out.ts && f.time_fields().size() > 1 && k < f.time_fields().size(); ++k)
      if (iequals(f.field_names()[f.time_fields()[k]], "Timestamp"))
        out.ts = parse_timestamp(scratch[f.time_fields()[k]]);
    if (!out.ts) return false;
  }
  out.content = scratch[f.content_field()];
  out.thread = f.thread_field() >= 0 ? scratch[f.thread_field()] : std::string_view();
  out.node = f.node_field() >= 0 ? scratch[f.node_field()] : std::string_view();
  return true;
}

std::optional<LogFormat> detect_format(const std::vector<std::string_view>& lines) {
  size_t nonempty = 0;
  for (std::string_view l : lines) nonempty += !l.empty();
  if (nonempty == 0) return std::nullopt;
  std::vector<std::string_view> scratch;
  std::string buf;
  HeaderMatch m;
  size_t best_count = 0;
  int best = -1;
  const auto& presets = format_presets();
  for (size_t p = 0; p < presets.size(); ++p) {
    const LogFormat f = LogFormat::compile(presets[p].pattern, presets[p].name);
    size_t count = 0;
    for (std::string_view l : lines) count += match_header(f, l, true, scratch, buf, m);
    if (count > best_count) best_count = count, best = static_cast<int>(p);
  }
  if (best < 0 || best_count * 5 < nonempty) return std::nullopt;
  return LogFormat::compile(presets[best].pattern, presets[best].name);
}

}  // namespace snailtrail::logs
