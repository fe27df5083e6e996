// Header patterns, presets, detection and timestamps (log_format.hpp).
#include "logs/log_format.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

namespace snailtrail::logs {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

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

}  // namespace

LogFormat LogFormat::compile(std::string_view pattern, std::string_view name) {
  LogFormat f;
  f.pattern_ = std::string(pattern);
  f.name_ = std::string(name);
  std::string re = "^";
  auto add_literal = [&](char c) {
    if (f.elems_.empty() || f.elems_.back().kind != Elem::literal)
      f.elems_.push_back({Elem::literal, "", -1});
    f.elems_.back().text.push_back(c);
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
        const int idx = static_cast<int>(f.names_.size());
        f.names_.emplace_back(field);
        f.elems_.push_back({Elem::field_ref, "", idx});
        re += "(.*?)";
        i = close + 1;
        continue;
      }
      add_literal(c);
      ++i;
    } else if (c == ' ') {
      while (i < pattern.size() && pattern[i] == ' ') ++i;
      if (f.elems_.empty() || f.elems_.back().kind != Elem::space)
        f.elems_.push_back({Elem::space, "", -1});
      re += "\\s+";
    } else if (c == '\\' && i + 1 < pattern.size()) {
      const char n = pattern[i + 1];
      if (std::isalnum(static_cast<unsigned char>(n))) {
        // \s, \d, \w, ...: a character class, only std::regex knows it.
        f.use_regex_ = true;
        re.push_back('\\');
        re.push_back(n);
      } else {
        add_literal(n);
      }
      i += 2;
    } else if (std::string_view("()|?*+[]{}.^$").find(c) != std::string_view::npos) {
      f.use_regex_ = true;  // as in logparser, the pattern is a regular expression
      re.push_back(c);
      // The pattern's own groups do not capture: groups are the fields.
      if (c == '(' && (i + 1 >= pattern.size() || pattern[i + 1] != '?')) re += "?:";
      ++i;
    } else {
      add_literal(c);
      ++i;
    }
  }
  re += "$";
  for (size_t k = 0; k < f.names_.size(); ++k) {
    const std::string& n = f.names_[k];
    const int idx = static_cast<int>(k);
    if (n == "Content") f.content_ = idx;
    if (is_one_of(n, {"Date", "Time", "Timestamp", "Datetime", "Month", "Day", "Year"}))
      f.time_fields_.push_back(idx);
    if (is_one_of(n, {"Level", "Severity"})) f.level_ = idx;
    if (f.thread_ < 0 && is_one_of(n, {"Thread", "Tid", "Pid", "Process"})) f.thread_ = idx;
    if (f.node_ < 0 && is_one_of(n, {"Node", "Host", "Hostname"})) f.node_ = idx;
  }
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

const std::vector<FormatPreset>& format_presets() {
  static const std::vector<FormatPreset> presets = {
      {"log4j-thread", R"(<Date> <Time> <Level> \[<Thread>\] <Component>: <Content>)",
       "2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: "
       "Created MRAppMaster"},
      {"hdfs", "<Date> <Time> <Pid> <Level> <Component>: <Content>",
       "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block "
       "blk_38865049064139660 terminating"},
      {"log4j", "<Date> <Time> <Level> <Component>: <Content>",
       "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers"},
      {"iso8601", R"(<Timestamp> <Level> \[<Thread>\] <Component> - <Content>)",
       "2024-03-01T12:00:00.123Z INFO [http-nio-8080-exec-1] c.e.OrderService - Order 42 placed"},
      {"iso8601-plain", "<Timestamp> <Level> <Content>",
       "2024-03-01T12:00:00.123+01:00 WARN cache miss for key user:42"},
      {"syslog", "<Month> <Day> <Time> <Host> <Process>: <Content>",
       "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0"},
  };
  return presets;
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
  struct Num {
    int64_t v;
    int digits;
    size_t end;
  };
  std::array<Num, 10> nums{};
  int n = 0, month = 0;
  int64_t offset_s = 0;
  size_t i = 0;
  int frac_index = -1;
  while (i < t.size()) {
    const char c = t[i];
    if (c >= '0' && c <= '9') {
      if (n == static_cast<int>(nums.size())) return std::nullopt;
      int64_t v = 0;
      int d = 0;
      const size_t start = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
        if (d < 18) v = v * 10 + (t[i] - '0');
        ++d, ++i;
      }
      // A fraction: digits right after '.' or ',' that follow the seconds.
      if (start > 0 && (t[start - 1] == '.' || t[start - 1] == ',') && n >= 3 && frac_index < 0)
        frac_index = n;
      nums[n++] = {v, d, i};
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < t.size() && std::isalpha(static_cast<unsigned char>(t[j]))) ++j;
      const std::string_view w = t.substr(i, j - i);
      if (const int m = month_of(w); m && w.size() <= 9 && month == 0)
        month = m;
      else if (w != "T" && w != "Z" && w != "UTC" && w != "GMT" &&
               month_of(w) == 0)  // weekday names are fine: "Mon Jun 14 ..."
        if (!(w.size() == 3 && is_one_of(w, {"mon", "tue", "wed", "thu", "fri", "sat", "sun"})))
          return std::nullopt;
      i = j;
    } else if ((c == '+' || c == '-') && n >= 5 && i + 1 < t.size() &&
               std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
      // A UTC offset after the time: +hh:mm, +hhmm or +hh.
      const int sign = c == '-' ? -1 : 1;
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
      i = j;
    } else {
      ++i;
    }
  }
  int64_t frac_ns = 0;
  if (frac_index >= 0) {
    const Num f = nums[frac_index];
    int64_t v = f.v;
    int d = std::min(f.digits, 18);
    while (d > 9) v /= 10, --d;
    while (d < 9) v *= 10, ++d;
    frac_ns = v;
    for (int k = frac_index; k + 1 < n; ++k) nums[k] = nums[k + 1];
    --n;
  }
  int64_t y = 1970, mo = 1, d = 1, h = 0, mi = 0, s = 0;
  auto hms = [&](int k) {  // nums[k..] as h m [s], or one 6-digit hhmmss
    const int r = n - k;
    if (r == 1 && nums[k].digits == 6) {
      h = nums[k].v / 10000, mi = nums[k].v / 100 % 100, s = nums[k].v % 100;
      return true;
    }
    if (r != 2 && r != 3) return false;
    h = nums[k].v, mi = nums[k + 1].v;
    s = r == 3 ? nums[k + 2].v : 0;
    return true;
  };
  if (month) {
    mo = month;
    // Jun 14 15:16:01 [2024] | 14 Jun 2024 15:16:01 | Mon Jun 14 15:16:01 2024
    int k = 0;
    if (n >= 1 && nums[0].digits <= 2) d = nums[0].v, k = 1;
    if (k < n && nums[k].digits == 4 && nums[k].end < t.size() && t[nums[k].end] != ':')
      y = nums[k].v, ++k;
    if (n - k == 4 && nums[n - 1].digits == 4) {  // year last
      y = nums[n - 1].v;
      --n;
    }
    if (!hms(k)) return std::nullopt;
  } else if (n == 1 && (nums[0].digits == 10 || nums[0].digits == 13)) {
    const int64_t v = nums[0].v;  // epoch seconds or milliseconds, up to 2150
    if (nums[0].digits == 10 ? v >= kMaxEpochSeconds : v >= kMaxEpochSeconds * 1000)
      return std::nullopt;
    return nums[0].digits == 10 ? v * 1'000'000'000 + frac_ns : v * 1'000'000 + frac_ns;
  } else if (n >= 1 && nums[0].digits == 8) {  // 20240301 12:00:00 or 20240301 120000
    y = nums[0].v / 10000, mo = nums[0].v / 100 % 100, d = nums[0].v % 100;
    if (!hms(1)) return std::nullopt;
  } else if (n == 2 && nums[0].digits == 6 && nums[1].digits == 6) {  // HDFS 081109 203615
    y = 2000 + nums[0].v / 10000, mo = nums[0].v / 100 % 100, d = nums[0].v % 100;
    h = nums[1].v / 10000, mi = nums[1].v / 100 % 100, s = nums[1].v % 100;
  } else if (n >= 5 && nums[0].digits == 4) {  // 2024-03-01 12:00:00
    y = nums[0].v, mo = nums[1].v, d = nums[2].v;
    if (!hms(3)) return std::nullopt;
  } else if (n >= 5 && nums[0].digits <= 2 && nums[2].digits == 4) {  // 01/03/2024 12:00:00
    d = nums[0].v, mo = nums[1].v, y = nums[2].v;
    if (!hms(3)) return std::nullopt;
  } else if (n >= 5 && nums[0].digits == 2) {  // Spark 17/06/09 20:10:40
    y = 2000 + nums[0].v, mo = nums[1].v, d = nums[2].v;
    if (!hms(3)) return std::nullopt;
  } else if (n == 3 || (n == 2 && nums[0].digits <= 2)) {  // time only
    if (!hms(0)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  // Years 1900-2149: any two times then differ by less than 2^63 ns.
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1900 || y >= 2150)
    return std::nullopt;
  const int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 86400 + h * 3600 + mi * 60 + s) - offset_s) * 1'000'000'000 + frac_ns;
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
