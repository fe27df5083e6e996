// Log header formats in the convention of the public log-parsing benchmarks (logpai's
// logparser): a pattern in which `<Name>` stands for a header field and `<Content>` for the
// message, e.g. `<Date> <Time> <Level> \[<Process>\] <Component>: <Content>`. A run of
// spaces matches any run of whitespace, `\x` is the literal x, every other character is
// itself. Patterns made only of fields, literals and spaces are matched by a small
// backtracking matcher (fields match lazily, like logpai's `(?P<Name>.*?)`); a pattern
// with other regular-expression syntax (`(`, `|`, `?`, `*`, `+`, `[`, `{`, `\d`, ...) is
// compiled with std::regex instead (about 20x slower; docs/LOGS.md).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace snailtrail::logs {

class LogFormat {
 public:
  // Throws std::invalid_argument for a pattern without <Content> or a bad regex.
  static LogFormat compile(std::string_view pattern, std::string_view name = "custom");

  // Matches a whole line (without its '\n'); on success fields[i] is field i's text.
  bool match(std::string_view line, std::vector<std::string_view>& fields) const;

  const std::string& pattern() const { return pattern_; }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& field_names() const { return names_; }
  int content_field() const { return content_; }
  // -1 if absent. Time fields: Date, Time, Timestamp, Datetime, Month, Day, Year.
  const std::vector<int>& time_fields() const { return time_fields_; }
  int level_field() const { return level_; }
  // Thread-like field (Thread, Process, Pid, Tid), -1 if none; node-like (Node, Host).
  int thread_field() const { return thread_; }
  int node_field() const { return node_; }
  // The index of the field of this name (case-insensitive), -1 if none.
  int field_index(std::string_view name) const;
  bool uses_std_regex() const { return use_regex_; }

 private:
  struct Elem {
    enum Kind : uint8_t { literal, space, field_ref } kind;
    std::string text;  // literal
    int field = -1;
  };
  bool match_from(size_t e, size_t p, std::string_view line, std::vector<std::string_view>& out,
                  int& budget) const;
  std::string translate(std::string_view pattern);  // -> elems_, names_; the regex text
  void assign_roles();                              // -> content_, time_fields_, ...

  std::string pattern_, name_;
  std::vector<std::string> names_;
  std::vector<Elem> elems_;
  std::vector<int> time_fields_;
  int content_ = -1, level_ = -1, thread_ = -1, node_ = -1;
  bool use_regex_ = false;
  std::regex regex_;
};

struct FormatPreset {
  std::string_view name, pattern, example;
};
// The loghub datasets' headers (hdfs, openstack, zookeeper, android, windows-cbs, bgl,
// hpc, thunderbird, apache, proxifier, healthapp; Hadoop is log4j-thread, Spark log4j,
// Linux/Mac/OpenSSH syslog) and the Java layouts (log4j, iso8601), in log_presets.cpp.
const std::vector<FormatPreset>& format_presets();
// A preset's name or a pattern -> the compiled format. Throws std::invalid_argument.
LogFormat format_from_option(std::string_view name_or_pattern);

// Whether a log level word (INFO, WARN, E, ...) is one we know: validates detection.
bool is_level_word(std::string_view s);

// Parses the concatenated time fields of a header into ns since the epoch (UTC). Accepts
// ISO-8601 (2024-03-01T12:00:00.123+01:00), log4j (2015-10-18 18:01:47,978), Spark
// (17/06/09 20:10:40), HDFS (081109 203615), syslog (Jun 14 15:16:01, year 1970),
// time-only (15:16:01.5) and epoch seconds or milliseconds (1131566461). Years 1900 to
// 2149 only (so that differences never overflow); nullopt if not.
std::optional<int64_t> parse_timestamp(std::string_view text);

// A line's header, validated: the pattern matches, the time fields (if any) parse and
// the level field (if `check_level`) is a level word.
struct HeaderMatch {
  std::optional<int64_t> ts;
  std::string_view content, thread, node;
};
bool match_header(const LogFormat& f, std::string_view line, bool check_level,
                  std::vector<std::string_view>& scratch, std::string& time_buf, HeaderMatch& out);

// Picks the preset that validly matches most of `lines` (ties: the earlier preset);
// nullopt if none matches at least a fifth of the non-empty ones.
std::optional<LogFormat> detect_format(const std::vector<std::string_view>& lines);

}  // namespace snailtrail::logs
