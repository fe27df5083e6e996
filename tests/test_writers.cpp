// Unit tests of the output writers (src/output) on small hand-made summaries with odd
// names: quotes, commas, newlines, wide Unicode and names too long for a table column;
// on a trace whose names hold control characters and invalid UTF-8, through the whole
// analysis; and the what-if tables of the examples and test traces, through the CLI.
// Each format is checked against an independent oracle: the CSV read back with an
// RFC 4180 reader, the JSON parsed back with simdjson, and the table against its column
// invariants (every row of a section as wide as its header, values right-aligned under
// their headers, abbreviations made of a head and a tail of the name).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "csv_reader.hpp"
#include "output/names.hpp"
#include "output/verdict_text.hpp"
#include "output/writers.hpp"
#include "pag/timeline.hpp"
#include "process_util.hpp"
#include "summary/analysis.hpp"
#include "trace/trace_io.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_writers {
namespace {

constexpr std::string_view kEllipsis = "…";

// Names the writers must carry through: JSON and CSV quote them, the table abbreviates.
const char* const kWorkerNames[] = {
    "map, \"hot\" one",                                                // comma and quotes
    "sink \xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC",                          // é and two wide CJK
    "exec 12 (stage 50 at org.apache.spark.rdd.MapPartitionsRDD:24)",  // too long
    "plain",
};
constexpr uint32_t kOpShort = 5, kOpLong = 7;
const char* const kOpShortName = "Window(\"a\",b)";
const char* const kOpLongName =
    "stage 50 (mapPartitions at <console>:24 over a much longer description)";

// Four workers with an activity each, named as above; two operators.
struct OddNames {
  Trace trace;
  Pag pag;
  OddNames() {
    testing::TraceBuilder b;
    for (uint32_t k = 0; k < 4; ++k)
      b.activity(k, ActivityType::processing, 0, 100, k % 2 ? kOpLong : kOpShort);
    trace = b.build();
    for (uint32_t k = 0; k < 4; ++k) trace.worker_names[k] = kWorkerNames[k];
    trace.operator_names[kOpShort] = kOpShortName;
    trace.operator_names[kOpLong] = kOpLongName;
    pag = build_pag(trace);
  }
};

// A window whose every list is filled with distinct values (worker 3 stays at zero, so
// it is left out of the worker lists).
WindowSummary odd_window(uint64_t index, bool has_paths) {
  WindowSummary w;
  w.index = index;
  w.window = {int64_t(index) * 1000, int64_t(index + 1) * 1000};
  w.span_start = w.window.start;
  w.span_end = w.window.end;
  w.cp_ns = 1000;
  w.events = 8;
  w.nodes = 8;
  w.edges = 6;
  w.has_paths = has_paths;
  w.paths_log10 = 1.5;
  auto fill = [](Groups& g, double scale) {
    g.activity[static_cast<int>(ActivityType::processing)] = 0.6 * scale;
    g.activity[static_cast<int>(ActivityType::data_message)] = 0.25 * scale;
    g.worker = {0.5 * scale, 0.125 * scale, 0.375 * scale, 0};
    g.op = {{kOpShort, 0.7 * scale}, {kOpLong, 0.3 * scale}};
    g.op_per_worker = {{kOpShort, 0.35 * scale}, {kOpLong, 0.15 * scale}};
    g.communication = {{0, 1, 0.2 * scale}, {2, 1, 0.05 * scale}};
  };
  fill(w.cp, 1);
  fill(w.conventional, 0.5);
  fill(w.single_path, 0.9);
  w.top = {
      {0, kNone, ActivityType::processing, kOpShort, w.window.start, w.window.start + 400, 0.4},
      {2, 1, ActivityType::data_message, kNone, w.window.start + 400, w.window.start + 500, 0.1},
      {1, kNone, ActivityType::processing, kOpLong, w.window.start + 500, w.window.start + 900,
       0.3}};
  w.what_if = {{WhatIfKind::worker, 2, false, 2.0, 250.0, 0, 0, 0, 0, 0},
               {WhatIfKind::op, kOpLong, true, 1.5, 120.0, 0, 0, 0, 0, 0}};
  w.diagnostics.segments = 1;
  w.diagnostics.unknown_share = 0.05;
  w.diagnostics.add_input("late \"events\", dropped", 3);
  return w;
}

// ---- CSV ----------------------------------------------------------------------------------

// (summary, key) -> (cp, conventional, single_path) as text, from the summary's fields.
using CsvOracle = std::map<std::pair<std::string, std::string>, std::tuple<double, double, double>>;

// `worker_names` by dense index: the names as the trace has them (the test's own list).
CsvOracle expected_csv(const WindowSummary& w, const Names& names,
                       const std::vector<std::string>& worker_names) {
  CsvOracle rows;
  for (int a = 0; a < kActivityTypeCount; ++a)
    if (w.cp.activity[a] != 0 || w.conventional.activity[a] != 0)
      rows[{"activity", std::string(name_of(static_cast<ActivityType>(a)))}] = {
          w.cp.activity[a], w.conventional.activity[a], w.single_path.activity[a]};
  for (size_t k = 0; k < w.cp.worker.size(); ++k)
    if (w.cp.worker[k] != 0 || w.conventional.worker[k] != 0)
      rows[{"worker", worker_names[k]}] = {w.cp.worker[k], w.conventional.worker[k],
                                           w.single_path.worker[k]};
  for (size_t k = 0; k < w.cp.op.size(); ++k) {
    rows[{"operator", names.op(w.cp.op[k].first)}] = {
        w.cp.op[k].second, w.conventional.op[k].second, w.single_path.op[k].second};
    rows[{"operator_per_worker", names.op(w.cp.op_per_worker[k].first)}] = {
        w.cp.op_per_worker[k].second, w.conventional.op_per_worker[k].second,
        w.single_path.op_per_worker[k].second};
  }
  for (size_t k = 0; k < w.cp.communication.size(); ++k) {
    const CommCell& c = w.cp.communication[k];
    rows[{"communication", worker_names[c.src] + "->" + worker_names[c.dst]}] = {
        c.value, w.conventional.communication[k].value, w.single_path.communication[k].value};
  }
  return rows;
}

TEST(WriterCsv, OddNamesReadBackWithEveryValue) {
  OddNames t;
  const Names names(t.trace, t.pag);
  fmt::memory_buffer out;
  write_csv_header(out);
  const WindowSummary w = odd_window(4, true);
  write_window_csv(out, w, names, SummarySelection{});
  const auto rows = testing::read_csv(fmt::to_string(out));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0], (std::vector<std::string>{"window", "start_ns", "end_ns", "summary", "key",
                                               "cp", "conventional", "single_path"}));
  CsvOracle got;
  for (size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), 8u) << "row " << r;
    EXPECT_EQ(rows[r][0], "4");
    EXPECT_EQ(rows[r][1], "4000");
    EXPECT_EQ(rows[r][2], "5000");
    const auto key = std::make_pair(rows[r][3], rows[r][4]);
    EXPECT_EQ(got.count(key), 0u) << "row listed twice: " << key.first << " " << key.second;
    got[key] = {std::stod(rows[r][5]), std::stod(rows[r][6]), std::stod(rows[r][7])};
  }
  EXPECT_EQ(got, expected_csv(w, names, {std::begin(kWorkerNames), std::end(kWorkerNames)}));
}

TEST(WriterCsv, WindowWithoutPathsLeavesTheCpColumnsEmpty) {
  OddNames t;
  const Names names(t.trace, t.pag);
  fmt::memory_buffer out;
  SummarySelection sel = SummarySelection::parse("worker");
  write_window_csv(out, odd_window(0, false), names, sel);
  const auto rows = testing::read_csv(fmt::to_string(out));
  ASSERT_EQ(rows.size(), 3u);  // workers 0, 1, 2 (worker 3 is zero everywhere)
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 8u);
    EXPECT_EQ(row[3], "worker");
    EXPECT_EQ(row[5], "") << "no CP without paths";
    EXPECT_NE(row[6], "") << "the conventional profile is there";
    EXPECT_EQ(row[7], "");
  }
}

// ---- JSON ---------------------------------------------------------------------------------

simdjson::dom::element parse(simdjson::dom::parser& parser, const fmt::memory_buffer& out) {
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(out.data(), out.size()).get(doc), simdjson::SUCCESS)
      << fmt::to_string(out);
  return doc;
}

std::string str(simdjson::dom::element e) {
  return std::string(std::string_view(e));
}

TEST(WriterJson, WindowCarriesOddNamesAndEveryList) {
  OddNames t;
  const Names names(t.trace, t.pag);
  const WindowSummary w = odd_window(2, true);
  SummarySelection sel;
  sel.what_if = true;
  fmt::memory_buffer out;
  write_window_json(out, w, names, sel);
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, out);
  EXPECT_EQ(int64_t(doc["window"]["index"]), 2);
  EXPECT_EQ(int64_t(doc["window"]["end_ns"]), 3000);
  EXPECT_DOUBLE_EQ(double(doc["paths_log10"]), 1.5);
  // The worker map: exactly the workers with a value, under their names.
  std::map<std::string, double> workers;
  for (auto [key, value] : simdjson::dom::object(doc["worker"]))
    workers[std::string(key)] = double(value);
  EXPECT_EQ(workers,
            (std::map<std::string, double>{
                {kWorkerNames[0], 0.5}, {kWorkerNames[1], 0.125}, {kWorkerNames[2], 0.375}}));
  EXPECT_DOUBLE_EQ(double(doc["operator"][kOpShortName]), 0.7);
  EXPECT_DOUBLE_EQ(double(doc["operator_per_worker"][kOpLongName]), 0.15);
  EXPECT_DOUBLE_EQ(double(doc["conventional"]["operator"][kOpLongName]), 0.15);
  EXPECT_DOUBLE_EQ(double(doc["single_path"]["worker"][kWorkerNames[2]]), 0.375 * 0.9);
  // Communication: sender and receiver by name, the CP under "cp", the share under "share".
  const simdjson::dom::array comm = doc["communication"];
  ASSERT_EQ(comm.size(), 2u);
  EXPECT_EQ(str(comm.at(1)["src"]), kWorkerNames[2]);
  EXPECT_EQ(str(comm.at(1)["dst"]), kWorkerNames[1]);
  EXPECT_DOUBLE_EQ(double(comm.at(1)["cp"]), 0.05);
  EXPECT_DOUBLE_EQ(double(doc["conventional"]["communication"].at(0)["share"]), 0.1);
  // The top list: a message has a remote and no operator, an activity the reverse.
  const simdjson::dom::array top = doc["top"];
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(str(top.at(0)["operator"]), kOpShortName);
  EXPECT_TRUE(top.at(0)["remote"].error() == simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(str(top.at(1)["worker"]), kWorkerNames[2]);
  EXPECT_EQ(str(top.at(1)["remote"]), kWorkerNames[1]);
  EXPECT_TRUE(top.at(1)["operator"].error() == simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(int64_t(top.at(2)["end_ns"]) - int64_t(top.at(2)["start_ns"]), 400);
  // What-if items by name, and the diagnostics with the odd input kind as a key.
  const simdjson::dom::array what_if = doc["what_if"];
  ASSERT_EQ(what_if.size(), 2u);
  EXPECT_EQ(str(what_if.at(0)["name"]), kWorkerNames[2]);
  EXPECT_EQ(str(what_if.at(1)["name"]), kOpLongName);
  EXPECT_EQ(str(what_if.at(1)["basis"]), "peer_median");
  EXPECT_EQ(int64_t(what_if.at(1)["saved_ns"]), 120);
  EXPECT_EQ(uint64_t(doc["diagnostics"]["input"]["late \"events\", dropped"]), 3u);
  // The verdict is an object with a kind and a sentence.
  EXPECT_FALSE(str(doc["verdict"]["kind"]).empty());
  EXPECT_FALSE(str(doc["verdict"]["text"]).empty());
}

TEST(WriterJson, SelectionLeavesOutWhatWasNotAskedFor) {
  OddNames t;
  const Names names(t.trace, t.pag);
  const SummarySelection sel = SummarySelection::parse("activity,communication");
  for (bool has_paths : {true, false}) {
    fmt::memory_buffer out;
    write_window_json(out, odd_window(1, has_paths), names, sel);
    simdjson::dom::parser parser;
    const simdjson::dom::element doc = parse(parser, out);
    for (const char* key :
         {"worker", "operator", "operator_per_worker", "top", "verdict", "what_if"})
      EXPECT_TRUE(doc[key].error() == simdjson::NO_SUCH_FIELD) << key;
    EXPECT_TRUE(doc["conventional"]["worker"].error() == simdjson::NO_SUCH_FIELD);
    EXPECT_EQ(doc["activity"].error(), simdjson::SUCCESS);
    EXPECT_EQ(doc["conventional"]["communication"].error(), simdjson::SUCCESS);
    // Diagnostics say why a window has no CP: there even when not asked for.
    EXPECT_EQ(doc["diagnostics"].error() == simdjson::SUCCESS, !has_paths);
    EXPECT_EQ(doc["paths_log10"].is_null(), !has_paths);
  }
}

Aggregate odd_aggregate(size_t windows) {
  Aggregate agg;
  for (size_t k = 0; k < windows; ++k) agg.add(odd_window(k, true), 10);
  agg.finish();
  return agg;
}

TEST(WriterJson, RunLineCountsTheWindowsAndNamesTheVerdict) {
  OddNames t;
  const Names names(t.trace, t.pag);
  const Aggregate agg = odd_aggregate(3);
  SummarySelection sel;
  sel.what_if = true;
  fmt::memory_buffer out;
  write_run_json(out, agg, names, sel);
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parse(parser, out);
  EXPECT_EQ(uint64_t(doc["run"]["windows"]), 3u);
  EXPECT_EQ(uint64_t(doc["run"]["windows_with_paths"]), 3u);
  EXPECT_EQ(uint64_t(doc["run"]["events"]), 24u);
  EXPECT_EQ(uint64_t(doc["verdict"]["windows_with_paths"]), 3u);
  EXPECT_TRUE(doc["verdict"]["others"].is_array());
  const simdjson::dom::array what_if = doc["what_if"];
  ASSERT_EQ(what_if.size(), agg.what_if.size());
  for (size_t k = 0; k < agg.what_if.size(); ++k)
    EXPECT_EQ(int64_t(what_if.at(k)["saved_ns"]), std::llround(agg.what_if[k].saved_ns));
}

// ---- table --------------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  EXPECT_TRUE(line.empty()) << "the table ends with a newline";
  return lines;
}

// The display column where `what` starts in `line` (npos when absent).
size_t column_of(const std::string& line, std::string_view what) {
  const size_t at = line.find(what);
  return at == std::string::npos ? at : display_width(std::string_view(line).substr(0, at));
}

// The byte where display column `col` starts in `line` (its size when shorter).
size_t byte_at_column(std::string_view line, size_t col) {
  size_t byte = 0;
  while (byte < line.size() && display_width(line.substr(0, byte)) < col) {
    ++byte;  // to the next code point's lead byte
    while (byte < line.size() && (static_cast<unsigned char>(line[byte]) >> 6) == 2) ++byte;
  }
  return byte;
}

// True when `shown` is `name`, or a head of it, "…", and a tail of it.
bool is_abbreviation_of(std::string_view shown, std::string_view name) {
  if (shown == name) return true;
  const size_t cut = shown.find(kEllipsis);
  if (cut == std::string_view::npos) return false;
  const std::string_view head = shown.substr(0, cut), tail = shown.substr(cut + kEllipsis.size());
  return head.size() + tail.size() < name.size() && name.substr(0, head.size()) == head &&
         name.substr(name.size() - tail.size()) == tail;
}

std::string trim_right(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The rows of the ranked section titled `title`: up to the next empty line.
std::vector<std::string> section(const std::vector<std::string>& lines, std::string_view title,
                                 std::string* header) {
  std::vector<std::string> rows;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(title, 0) == 0) {
      *header = lines[i];
      for (size_t k = i + 1; k < lines.size() && !lines[k].empty(); ++k) rows.push_back(lines[k]);
      break;
    }
  return rows;
}

// The table of `agg`, every summary with what-if, in the default context.
std::string full_table(const Aggregate& agg, const Names& names, const char* heading) {
  TableContext ctx;
  ctx.window_label = "1s";
  SummarySelection sel;
  sel.what_if = true;
  fmt::memory_buffer out;
  write_table(out, agg, names, sel, ctx, heading);
  return fmt::to_string(out);
}

// The table of `agg` over the odd names.
std::string odd_table(const Aggregate& agg) {
  OddNames t;
  return full_table(agg, Names(t.trace, t.pag), "odd names");
}

TEST(WriterTable, RankedSectionsKeepTheirColumnsWithOddNames) {
  const Aggregate agg = odd_aggregate(2);
  const std::string text = odd_table(agg);
  const std::vector<std::string> lines = lines_of(text);
  // Every line within 79 columns, the what-if rows too (their name column takes the
  // rest of the line).
  for (const std::string& line : lines) EXPECT_LE(display_width(line), 79u) << line;
  // Name column: 2 + 30, a space, a bar of 20 cells; then the values right-aligned under
  // their headers, so each row is exactly as wide as its header.
  std::set<std::string> shown_workers;
  for (const char* title :
       {"ACTIVITY TYPE", "WORKER (straggler)", "OPERATOR (all its activities)", "COMMUNICATION"}) {
    std::string header;
    const std::vector<std::string> rows = section(lines, title, &header);
    ASSERT_FALSE(rows.empty()) << title;
    for (const std::string& row : rows) {
      EXPECT_EQ(display_width(row), display_width(header)) << title << ": " << row;
      EXPECT_EQ(row.substr(0, 2), "  ");
      // The name column ends at column 32 and a space; the bar's 20 cells hold only
      // block characters and spaces.
      const size_t name_end = byte_at_column(row, 32), bar_end = byte_at_column(row, 53);
      ASSERT_EQ(display_width(std::string_view(row).substr(0, name_end)), 32u) << row;
      EXPECT_EQ(row[name_end], ' ') << row;
      std::string bar = row.substr(name_end + 1, bar_end - name_end - 1);
      for (std::string_view cell : {"█", "▏", "▎", "▍", "▌", "▋", "▊", "▉", " "})
        for (size_t at; (at = bar.find(cell)) != std::string::npos;) bar.erase(at, cell.size());
      EXPECT_EQ(bar, "") << "not a bar: " << row;
      const std::string name = trim_right(row.substr(2, name_end - 2));
      if (std::string_view(title) == "WORKER (straggler)" && name != "(communication)") {
        bool matched = false;
        for (const char* full : kWorkerNames)
          if (is_abbreviation_of(name, full)) matched = true, shown_workers.insert(full);
        EXPECT_TRUE(matched) << "not a worker's name or its abbreviation: " << name;
      }
    }
  }
  // Every worker with a value is in the list, the long one abbreviated.
  EXPECT_EQ(shown_workers,
            (std::set<std::string>{kWorkerNames[0], kWorkerNames[1], kWorkerNames[2]}));
  // The tables abbreviate it (the verdict's sentence above them may name it in full).
  const std::string tables = text.substr(text.find("ACTIVITY TYPE"));
  EXPECT_EQ(tables.find(kWorkerNames[2]), std::string::npos) << text;
  EXPECT_NE(text.find("exec 12"), std::string::npos) << "the identifier stays";
}

TEST(WriterTable, TopListAndWhatIfColumnsLineUpUnderTheirHeaders) {
  const Aggregate agg = odd_aggregate(1);
  const std::vector<std::string> lines = lines_of(odd_table(agg));
  std::string header;
  const std::vector<std::string> top = section(lines, "TOP 3 CRITICAL ACTIVITIES", &header);
  ASSERT_EQ(top.size(), 4u) << "the column header and three rows";
  const std::string& columns = top[0];
  const size_t at = column_of(columns, " at") + 1, op = column_of(columns, "operator");
  size_t messages = 0, short_op = 0;
  for (size_t k = 1; k < top.size(); ++k) {
    EXPECT_EQ(column_of(top[k], "  +") + 2, at) << top[k];
    EXPECT_EQ(column_of(top[k], "%"), 7u) << "CP right-aligned in 6 columns: " << top[k];
    if (top[k].find("->") != std::string::npos) {
      // A message's "sender->receiver" spans the worker and operator columns.
      ++messages;
      EXPECT_EQ(column_of(top[k], "exec 12"), column_of(columns, "worker")) << top[k];
    }
    if (top[k].find("Window(") != std::string::npos) {
      ++short_op;
      EXPECT_EQ(column_of(top[k], "Window("), op) << top[k];
    }
  }
  EXPECT_EQ(messages, 1u);
  EXPECT_EQ(short_op, 1u);
  std::string what_if_header;
  const std::vector<std::string> what_if =
      section(lines, "WHAT IF (critical path time saved, summed over windows)", &what_if_header);
  ASSERT_EQ(what_if.size(), 1 + agg.what_if.size());
  const size_t name_col = column_of(what_if[0], "name");
  for (size_t k = 1; k < what_if.size(); ++k) {
    const std::string name = what_if[k].substr(byte_at_column(what_if[k], name_col));
    EXPECT_TRUE(is_abbreviation_of(name, kWorkerNames[2]) || is_abbreviation_of(name, kOpLongName))
        << name;
    EXPECT_LE(display_width(what_if[k]), 79u) << what_if[k];
  }
  // The diagnostics list the odd input kind as written.
  EXPECT_NE(std::find(lines.begin(), lines.end(), "  input: late \"events\", dropped: 3"),
            lines.end());
}

// ---- abbreviation -------------------------------------------------------------------------

// Random names from pieces that the abbreviation treats apart: numbers, delimiters, wide
// and combining characters.
std::string random_name(std::mt19937& rng) {
  static const char* const kPieces[] = {
      "stage",  " ", "50",    "exec",         "(",        ")",         ":",
      ",",      "_", "Sink",  "\xE6\x9D\xB1", "\xC3\xA9", "e\xCC\x81", "<console>",
      "123456", "-", "Window"};
  std::uniform_int_distribution<size_t> piece(0, std::size(kPieces) - 1), count(0, 16);
  std::string name;
  for (size_t n = count(rng); n > 0; --n) name += kPieces[piece(rng)];
  return name;
}

TEST(WriterAbbreviate, FitsTheWidthAndKeepsAHeadAndATail) {
  std::mt19937 rng(14);
  for (int i = 0; i < 3000; ++i) {
    const std::string name = random_name(rng);
    const size_t width = std::uniform_int_distribution<size_t>(0, 40)(rng);
    const std::string a = abbreviate(name, width);
    EXPECT_LE(display_width(a), width) << name << " / " << width;
    if (display_width(name) <= width) {
      EXPECT_EQ(a, name);
    } else if (width >= 1) {
      EXPECT_TRUE(is_abbreviation_of(a, name)) << name << " -> " << a;
    }
    const std::string f = fit_column(name, width);
    EXPECT_EQ(display_width(f), width) << name;
    EXPECT_EQ(trim_right(f), trim_right(a));
    const std::string other = random_name(rng);
    const std::string pair = abbreviate_pair(name, " -> ", other, width);
    EXPECT_LE(display_width(pair), width) << name << " | " << other << " / " << width;
    if (display_width(name) + 4 + display_width(other) <= width) {
      EXPECT_EQ(pair, name + " -> " + other);
    }
  }
}

// True when abbreviation `a` of `name` cuts no escape of printable() in two: its head ends
// and its tail starts outside every \n, \xHH, \uHHHH of the name.
::testing::AssertionResult keeps_escapes_whole(const std::string& name, const std::string& a) {
  static const std::regex escape(R"(\\(n|r|t|x[0-9a-f]{2}|u[0-9a-f]{4}))");
  const size_t at = a.find(kEllipsis);
  if (at == std::string::npos) return ::testing::AssertionSuccess();
  if (!is_abbreviation_of(a, name))
    return ::testing::AssertionFailure() << "not an abbreviation: " << name << " -> " << a;
  const size_t head_end = at, tail_begin = name.size() - (a.size() - at - kEllipsis.size());
  for (auto m = std::sregex_iterator(name.begin(), name.end(), escape); m != std::sregex_iterator();
       ++m) {
    const size_t b = m->position(), e = b + m->length();
    if ((b < head_end && head_end < e) || (b < tail_begin && tail_begin < e))
      return ::testing::AssertionFailure() << "an escape cut in two: " << name << " -> " << a;
  }
  return ::testing::AssertionSuccess();
}

// Names shown printable(): an abbreviation keeps each escape whole or drops it.
TEST(WriterAbbreviate, KeepsEscapesWhole) {
  const std::string pieces[] = {
      "stage", " ",        "50",   "\n",   "\t", "\x1b[31m", std::string(1, '\0'),
      "\x7f",  "\xC2\x9B", "\xFF", "exec", "(",  ":",        "_"};
  std::mt19937 rng(21);
  std::uniform_int_distribution<size_t> piece(0, std::size(pieces) - 1), count(1, 14);
  size_t cut = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string raw;
    for (size_t n = count(rng); n > 0; --n) raw += pieces[piece(rng)];
    const std::string name = printable(raw);
    const size_t width = std::uniform_int_distribution<size_t>(2, 30)(rng);
    const std::string a = abbreviate(name, width);
    EXPECT_LE(display_width(a), width);
    EXPECT_TRUE(keeps_escapes_whole(name, a));
    cut += a != name;
  }
  EXPECT_GT(cut, 1000u);
  // The communication row of the control names (the tail cut "\x1b" to "…1b[31m").
  const std::string b = "nul\\x00 esc\\x1b[31m red\\x7f";
  const std::string pair = abbreviate_pair("tab\\there\\r", " -> ", b, 30);
  ASSERT_NE(pair.find(" -> "), std::string::npos);
  EXPECT_TRUE(keeps_escapes_whole(b, pair.substr(pair.find(" -> ") + 4))) << pair;
}

TEST(WriterAbbreviate, DisplayWidthCountsColumnsNotBytes) {
  EXPECT_EQ(display_width("plain"), 5u);
  EXPECT_EQ(display_width("\xC3\xA9"), 1u);                  // é: two bytes, one column
  EXPECT_EQ(display_width("e\xCC\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(display_width("\xE6\x9D\xB1\xE4\xBA\xAC"), 4u);  // two wide CJK
  EXPECT_EQ(display_width("\xFF\xFE"), 2u);                  // invalid bytes: one each
  EXPECT_EQ(display_width(kEllipsis), 1u);
}

// ---- names with control characters --------------------------------------------------------

using namespace std::string_literals;

// A name as an untrusted trace may carry it; how the human-readable outputs show it
// (written out by hand: the oracle of printable()); and what JSON reads back.
struct ControlName {
  std::string raw, shown, json;
};
// Workers 0..3 by id; worker 3's name is invalid UTF-8, which no JSON text can carry:
// the test sets it through the trace API.
const ControlName kControlWorkers[] = {
    {"in\nput 0", "in\\nput 0", "in\nput 0"},
    {"tab\there\r", "tab\\there\\r", "tab\there\r"},
    {"nul\0 esc\x1b[31m red\x7f"s, "nul\\x00 esc\\x1b[31m red\\x7f", "nul\0 esc\x1b[31m red\x7f"s},
    {"bad\xff\xc3( c1\xc2\x9b", "bad\xEF\xBF\xBD\xEF\xBF\xBD( c1\\u009b",
     "bad\xEF\xBF\xBD\xEF\xBF\xBD( c1\xc2\x9b"},
};
// Operators 1 and 2: a newline, and a right-to-left override (it would reorder the line).
const ControlName kControlOps[] = {
    {"op\nsplit", "op\\nsplit", "op\nsplit"},
    {"bidi \xE2\x80\xAE evil", "bidi \\u202e evil", "bidi \xE2\x80\xAE evil"},
};

std::vector<const ControlName*> control_names() {
  std::vector<const ControlName*> all;
  for (const ControlName& c : kControlWorkers) all.push_back(&c);
  for (const ControlName& c : kControlOps) all.push_back(&c);
  return all;
}

// A JSONL trace of 4 ms: each millisecond worker 0 reads input (operator 1) and sends it
// to worker 1 (operator 2), which sends to worker 2 (operator 1); worker 3 works alone
// (operator 2). The names are JSON-escaped as a trace writer writes them.
std::string control_names_jsonl() {
  std::string s = R"({"meta":"worker","id":0,"name":"in\nput 0"})"
                  "\n"
                  R"({"meta":"worker","id":1,"name":"tab\there\r"})"
                  "\n"
                  R"({"meta":"worker","id":2,"name":"nul\u0000 esc\u001b[31m red\u007f"})"
                  "\n"
                  R"({"meta":"worker","id":3,"name":"replaced by the test"})"
                  "\n"
                  R"({"meta":"operator","id":1,"name":"op\nsplit"})"
                  "\n"
                  R"({"meta":"operator","id":2,"name":"bidi \u202e evil"})"
                  "\n";
  std::vector<std::pair<int64_t, std::string>> events;
  auto activity = [&](int64_t start, int64_t end, int worker, const char* type, int op) {
    for (const char* kind : {"start", "end"})
      events.emplace_back(
          kind[0] == 's' ? start : end,
          fmt::format(R"({{"ts":{},"worker":{},"activity":"{}","event":"{}","operator":{}}})",
                      kind[0] == 's' ? start : end, worker, type, kind, op));
  };
  int64_t correlator = 0;
  auto message = [&](int64_t send, int from, int64_t recv, int to) {
    ++correlator;
    for (const bool is_send : {true, false})
      events.emplace_back(
          is_send ? send : recv,
          fmt::format(
              R"({{"ts":{},"worker":{},"activity":"data_message","event":"{}","correlator":{},"remote":{}}})",
              is_send ? send : recv, is_send ? from : to, is_send ? "send" : "recv", correlator,
              is_send ? to : from));
  };
  for (int64_t t = 0; t < 4'000'000; t += 1'000'000) {
    activity(t, t + 200'000, 0, "input", 1);
    message(t + 200'000, 0, t + 250'000, 1);
    activity(t + 250'000, t + 600'000, 1, "processing", 2);
    message(t + 600'000, 1, t + 650'000, 2);
    activity(t + 650'000, t + 900'000, 2, "processing", 1);
    activity(t, t + 950'000, 3, "processing", 2);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [ts, line] : events) s += line + "\n";
  return s;
}

// The trace, analyzed in windows of 1 ms with what-if, and the run's aggregate.
struct ControlTrace {
  Trace trace;
  Pag pag;
  std::vector<WindowSummary> windows;
  Aggregate agg;
  ControlTrace() {
    trace = parse_jsonl(control_names_jsonl(), "control.jsonl");
    trace.worker_names[3] = kControlWorkers[3].raw;
    pag = build_pag(trace);
    AnalysisOptions opt;
    opt.windows.width_ns = 1'000'000;
    opt.what_if.enabled = true;
    analyze_pag(pag, opt, [&](const WindowView& v) { windows.push_back(v.summary); });
    for (const WindowSummary& w : windows) agg.add(w, 10);
    agg.finish();
  }
  // The worker's entry of kControlWorkers by dense index.
  const ControlName& worker(size_t k) const { return kControlWorkers[pag.worker_ids.at(k)]; }
  const ControlName& op(uint32_t id) const { return kControlOps[id - 1]; }
};

// Text a terminal shows as it is: valid UTF-8 with no control character (but '\n' ending
// lines when `lines`): no C0, DEL, C1, line or paragraph separator, bidirectional control.
::testing::AssertionResult terminal_safe(std::string_view text, bool lines) {
  if (!simdjson::validate_utf8(text.data(), text.size()))
    return ::testing::AssertionFailure() << "invalid UTF-8: " << text;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size(); ++i) {
    const bool c0 = p[i] < 0x20 && !(lines && p[i] == '\n');
    const bool c1 = p[i] == 0xC2 && i + 1 < text.size() && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F;
    const bool e2 = p[i] == 0xE2 && i + 2 < text.size();
    const bool separator_or_bidi =
        e2 && ((p[i + 1] == 0x80 && p[i + 2] >= 0xA8 && p[i + 2] <= 0xAE) ||
               (p[i + 1] == 0x81 && p[i + 2] >= 0xA6 && p[i + 2] <= 0xA9));
    if (c0 || p[i] == 0x7F || c1 || separator_or_bidi)
      return ::testing::AssertionFailure()
             << "control character at byte " << i << ": " << text.substr(i > 20 ? i - 20 : 0, 40);
  }
  return ::testing::AssertionSuccess();
}

TEST(WriterTable, ControlCharactersInNamesAreEscapedAndRowsStayWhole) {
  const ControlTrace t;
  const std::string text = full_table(t.agg, Names(t.trace, t.pag), "control names");
  ASSERT_TRUE(terminal_safe(text, true));
  const TableContext ctx;  // the limits the table had
  const std::vector<std::string> lines = lines_of(text);
  for (const std::string& line : lines) EXPECT_LE(display_width(line), 79u) << line;
  EXPECT_NE(text.find("\nVERDICT: "), std::string::npos);
  // The ranked sections: one line per row, as wide as the header; every worker and
  // operator listed under its escaped name (whole or abbreviated).
  std::set<std::string> shown;
  for (const char* title : {"WORKER (straggler)", "OPERATOR (all its activities)"}) {
    std::string header;
    const std::vector<std::string> rows = section(lines, title, &header);
    for (const std::string& row : rows) {
      EXPECT_EQ(display_width(row), display_width(header)) << title << ": " << row;
      const std::string name = trim_right(row.substr(2, byte_at_column(row, 32) - 2));
      if (name == "(communication)") continue;
      bool matched = false;
      for (const ControlName* c : control_names())
        if (is_abbreviation_of(name, c->shown)) matched = true, shown.insert(c->shown);
      EXPECT_TRUE(matched) << title << ": " << row;
    }
  }
  std::set<std::string> all;
  for (const ControlName* c : control_names()) all.insert(c->shown);
  EXPECT_EQ(shown, all);
  // Communication, the top list and what-if: one line per item.
  std::string header;
  EXPECT_EQ(section(lines, "COMMUNICATION", &header).size(), t.agg.cp.communication.size());
  const size_t top = std::min<size_t>(ctx.top_k, t.agg.top.size());
  ASSERT_GT(top, 0u);
  EXPECT_EQ(section(lines, fmt::format("TOP {} CRITICAL ACTIVITIES", top), &header).size(),
            1 + top);
  const std::vector<std::string> what_if =
      section(lines, "WHAT IF (critical path time saved, summed over windows)", &header);
  ASSERT_GT(t.agg.what_if.size(), 0u);
  ASSERT_EQ(what_if.size(), 1 + std::min(t.agg.what_if.size(), ctx.max_rows));
  const size_t name_col = column_of(what_if[0], "name");
  for (size_t k = 1; k < what_if.size(); ++k) {
    const WhatIf& x = t.agg.what_if[k - 1];
    const std::string expected = x.kind == WhatIfKind::worker ? t.worker(x.id).shown
                                 : x.kind == WhatIfKind::op
                                     ? t.op(x.id).shown
                                     : std::string(name_of(static_cast<ActivityType>(x.id)));
    const std::string name = what_if[k].substr(byte_at_column(what_if[k], name_col));
    EXPECT_TRUE(is_abbreviation_of(name, expected)) << name << " / " << expected;
  }
}

TEST(WriterVerdict, SentencesShowNamesEscaped) {
  const ControlTrace t;
  const Names names(t.trace, t.pag);
  for (size_t k = 0; k < t.pag.worker_ids.size(); ++k) {
    Verdict v;
    v.kind = VerdictKind::straggler;
    v.id = static_cast<uint32_t>(k);
    v.cp = 0.4;
    v.busy = 0.2;
    v.busy_rank = 3;
    std::string text = verdict_text(v, names);
    EXPECT_TRUE(terminal_safe(text, false));
    EXPECT_NE(text.find(t.worker(k).shown + " is the straggler"), std::string::npos) << text;
    v.kind = VerdictKind::activity;
    v.id = static_cast<uint32_t>(ActivityType::processing);
    v.top_worker = static_cast<uint32_t>(k);
    text = verdict_text(v, names);
    EXPECT_TRUE(terminal_safe(text, false));
    EXPECT_NE(text.find("most on " + t.worker(k).shown + " ("), std::string::npos) << text;
  }
  for (uint32_t id : {1u, 2u}) {
    Verdict v;
    v.kind = VerdictKind::op;
    v.id = id;
    const std::string text = verdict_text(v, names);
    EXPECT_TRUE(terminal_safe(text, false));
    EXPECT_NE(text.find("Operator " + t.op(id).shown + " is"), std::string::npos) << text;
    EXPECT_NE(text.find("instances of " + t.op(id).shown + " ("), std::string::npos) << text;
  }
  // The run's sentence names what other windows find.
  RunVerdict r;
  r.verdict.kind = VerdictKind::straggler;
  r.windows = 2;
  r.windows_with_paths = 4;
  r.others = {{VerdictKind::straggler, 1, 1, 0, 0}, {VerdictKind::op, 2, 1, 0, 0}};
  const std::string text = output_detail::run_verdict_text(r, names);
  EXPECT_TRUE(terminal_safe(text, false));
  EXPECT_NE(text.find("finds straggler " + t.worker(1).shown + ","), std::string::npos) << text;
  EXPECT_NE(text.find("finds operator " + t.op(2).shown + "."), std::string::npos) << text;
}

TEST(WriterJson, ControlCharactersInNamesReadBack) {
  const ControlTrace t;
  const Names names(t.trace, t.pag);
  std::set<std::string> workers, ops, activities;
  for (const ControlName& c : kControlWorkers) workers.insert(c.json);
  for (const ControlName& c : kControlOps) ops.insert(c.json);
  for (int a = 0; a < kActivityTypeCount; ++a)
    activities.insert(std::string(name_of(static_cast<ActivityType>(a))));
  auto in = [](const std::set<std::string>& set, simdjson::dom::element e) {
    return set.count(str(e)) > 0;
  };
  SummarySelection sel;
  sel.what_if = true;
  ASSERT_EQ(t.windows.size(), 4u);
  for (const WindowSummary& w : t.windows) {
    fmt::memory_buffer out;
    write_window_json(out, w, names, sel);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(out.data(), out.size()).get(doc), simdjson::SUCCESS)
        << "window " << w.index << " is not valid JSON";
    std::set<std::string> keys;
    for (auto [key, value] : simdjson::dom::object(doc["worker"])) keys.insert(std::string(key));
    EXPECT_EQ(keys, workers) << "window " << w.index;
    std::set<std::string> op_keys;
    for (auto [key, value] : simdjson::dom::object(doc["conventional"]["operator"]))
      op_keys.insert(std::string(key));
    EXPECT_EQ(op_keys, ops);
    for (simdjson::dom::element c : simdjson::dom::array(doc["communication"]))
      EXPECT_TRUE(in(workers, c["src"]) && in(workers, c["dst"]));
    for (simdjson::dom::element a : simdjson::dom::array(doc["top"])) {
      EXPECT_TRUE(in(workers, a["worker"]));
      if (a["operator"].error() == simdjson::SUCCESS) {
        EXPECT_TRUE(in(ops, a["operator"]));
      }
    }
    for (simdjson::dom::element x : simdjson::dom::array(doc["what_if"]))
      EXPECT_TRUE(in(workers, x["name"]) || in(ops, x["name"]) || in(activities, x["name"]))
          << str(x["name"]);
    // The verdict's sentence is for people: names escaped as in the table.
    EXPECT_TRUE(terminal_safe(str(doc["verdict"]["text"]), false));
  }
  fmt::memory_buffer out;
  write_run_json(out, t.agg, names, sel);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out.data(), out.size()).get(doc), simdjson::SUCCESS)
      << "the run line is not valid JSON";
  const simdjson::dom::element name = doc["verdict"]["name"];
  EXPECT_TRUE(name.is_null() || in(workers, name) || in(ops, name) || in(activities, name));
  EXPECT_TRUE(terminal_safe(str(doc["verdict"]["text"]), false));
  ASSERT_GT(simdjson::dom::array(doc["what_if"]).size(), 0u);
  for (simdjson::dom::element x : simdjson::dom::array(doc["what_if"]))
    EXPECT_TRUE(in(workers, x["name"]) || in(ops, x["name"]) || in(activities, x["name"]));
}

TEST(WriterCsv, ControlCharactersInNamesReadBackExactly) {
  const ControlTrace t;
  const Names names(t.trace, t.pag);
  std::vector<std::string> raw;  // by dense index
  for (size_t k = 0; k < t.pag.worker_ids.size(); ++k) raw.push_back(t.worker(k).raw);
  ASSERT_EQ(t.windows.size(), 4u);
  for (const WindowSummary& w : t.windows) {
    fmt::memory_buffer out;
    write_window_csv(out, w, names, SummarySelection{});
    const auto rows = testing::read_csv(fmt::to_string(out));
    CsvOracle got;
    for (const auto& row : rows) {
      ASSERT_EQ(row.size(), 8u);
      got[{row[3], row[4]}] = {std::stod(row[5]), std::stod(row[6]), std::stod(row[7])};
    }
    EXPECT_EQ(got, expected_csv(w, names, raw)) << "window " << w.index;
    EXPECT_GE(got.size(), 4u + 2u);  // the workers and operators at least
  }
}

TEST(WriterPrintable, EscapesControlsReplacesInvalidUtf8AndKeepsTheRest) {
  const std::pair<std::string, std::string> cases[] = {
      {"plain name (stage 5): x", "plain name (stage 5): x"},
      {"back\\slash", "back\\slash"},
      {"a\nb\rc\td", "a\\nb\\rc\\td"},
      {"\0\x01\x1f\x7f"s, "\\x00\\x01\\x1f\\x7f"},
      {"\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07"},
      {"\xC2\x80 \xC2\x9B \xC2\x9F \xC2\xA0", "\\u0080 \\u009b \\u009f \xC2\xA0"},
      {"\xE2\x80\xA8\xE2\x80\xA9\xE2\x80\xAA\xE2\x80\xAE\xE2\x81\xA6\xE2\x81\xA9",
       "\\u2028\\u2029\\u202a\\u202e\\u2066\\u2069"},
      {"\xC3\xA9 \xE6\x9D\xB1 e\xCC\x81 \xF0\x9F\x98\x80",
       "\xC3\xA9 \xE6\x9D\xB1 e\xCC\x81 \xF0\x9F\x98\x80"},
      {"\xFF", "\xEF\xBF\xBD"},
      {"\xC3(", "\xEF\xBF\xBD("},
      {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},                  // overlong '/'
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // a surrogate
      {"cut \xE6\x9D", "cut \xEF\xBF\xBD\xEF\xBF\xBD"},          // a sequence cut short
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(printable(in), want) << in;
    EXPECT_TRUE(terminal_safe(printable(in), false)) << in;
  }
  EXPECT_EQ(display_width(printable("a\nb")), 4u);
  EXPECT_EQ(display_width(printable("\x1b")), 4u);
  EXPECT_EQ(display_width(printable("\xFF")), 1u);
  // Any bytes: terminal-safe, printable() again changes nothing.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(std::uniform_int_distribution<size_t>(0, 24)(rng), '\0');
    for (char& c : s) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    const std::string p = printable(s);
    EXPECT_TRUE(terminal_safe(p, false));
    EXPECT_EQ(printable(p), p);
  }
}

// ---- the examples and test traces through the CLI ----------------------------------------

// `analyze --what-if` over every example scenario (simulated) and every trace of
// tests/data, as golden.sh runs them: every line of the table within 79 columns.
TEST(WriterTable, WhatIfTablesOfTheExamplesAndTestTracesFit79Columns) {
  namespace fs = std::filesystem;
  const fs::path source = SNAILTRAIL_SOURCE_DIR;
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-writers-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto run = [&](const std::vector<std::string>& args) {
    const fs::path out = dir / "out", err = dir / "err";
    testing::Process p(args, out, err);
    const int code = p.wait();
    EXPECT_EQ(code, 0) << args[0] << " " << args[1] << ": " << testing::slurp(err);
    return testing::slurp(out);
  };
  std::vector<fs::path> traces;
  for (const auto& entry : fs::directory_iterator(source / "examples"))
    if (entry.path().extension() == ".toml") {
      const fs::path trace = dir / (entry.path().stem().string() + ".snail");
      run({"simulate", entry.path().string(), "-d", "3s", "--seed", "7", "-o", trace.string(),
           "-q"});
      traces.push_back(trace);
    }
  ASSERT_GE(traces.size(), 10u);
  traces.push_back(source / "examples" / "pipeline.jsonl");
  for (const char* f : {"chrome-flows.json", "chrome-tf-timeline.json", "jaeger-request.json",
                        "otlp-request.json", "perf-sched-timer.txt", "spark-2stage-eventlog"})
    traces.push_back(source / "tests" / "data" / f);
  size_t what_if_rows = 0, abbreviated = 0;
  for (const fs::path& trace : traces)
    for (const char* window : {"auto", "whole"}) {
      const std::string text =
          run({"analyze", trace.string(), "--what-if", "--window", window, "--no-progress"});
      const std::vector<std::string> lines = lines_of(text);
      for (const std::string& line : lines)
        EXPECT_LE(display_width(line), 79u) << trace.filename() << " --window " << window << ":\n"
                                            << line;
      std::string header;
      const std::vector<std::string> rows =
          section(lines, "WHAT IF (critical path time saved, summed over windows)", &header);
      EXPECT_FALSE(header.empty()) << trace;
      for (size_t k = 1; k < rows.size(); ++k, ++what_if_rows)
        abbreviated += rows[k].find(kEllipsis) != std::string::npos;
    }
  // The case that overflowed: what-if names too long for their column.
  EXPECT_GT(what_if_rows, 50u);
  EXPECT_GT(abbreviated, 0u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace snailtrail::test_writers
