// The operator summary (all activities of an operator, and per worker) against
// hand-computed examples and a brute-force sum over each window's edges; the table
// output's names, columns and widths.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <simdjson.h>

#include "output/writers.hpp"
#include "summary/analysis.hpp"
#include "trace_builder.hpp"

namespace snailtrail::test_summary {
namespace {

using testing::TraceBuilder;
constexpr auto P = ActivityType::processing;
constexpr auto DESER = ActivityType::deserialization;

std::vector<WindowSummary> summaries(const Trace& trace, WindowSpec spec = {}) {
  Pag pag = build_pag(trace, {});
  AnalysisOptions opt;
  opt.windows = spec;
  std::vector<WindowSummary> out;
  analyze_pag(pag, opt, [&](const WindowView& v) { out.push_back(v.summary); });
  return out;
}

double value(const std::vector<std::pair<uint32_t, double>>& list, uint32_t id) {
  for (const auto& [k, v] : list)
    if (k == id) return v;
  ADD_FAILURE() << "no operator " << id;
  return NAN;
}

// One stage on two executor slots, each deserializing for 70 and processing for 30:
// two transient paths, each edge has CP = duration / (2 * 100). The stage holds all of
// the CP (the processing-only figure would have been 0.3 / 2 = 0.15).
TEST(OperatorSummary, OneStageDominatedByDeserialization) {
  TraceBuilder b;
  for (uint32_t w : {1u, 2u}) b.activity(w, DESER, 0, 70, 5).activity(w, P, 70, 100, 5);
  const auto ws = summaries(b.build());
  ASSERT_EQ(ws.size(), 1u);
  const WindowSummary& w = ws[0];
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.cp.activity[static_cast<int>(DESER)], 0.7, 1e-15);
  EXPECT_NEAR(w.cp.activity[static_cast<int>(P)], 0.3, 1e-15);
  ASSERT_EQ(w.cp.op.size(), 1u);
  EXPECT_NEAR(value(w.cp.op, 5), 1.0, 1e-15);
  EXPECT_NEAR(value(w.cp.op_per_worker, 5), 0.5, 1e-15);
  // Conventional: all 200 ns of busy time belong to the stage.
  EXPECT_NEAR(value(w.conventional.op, 5), 1.0, 1e-15);
  EXPECT_NEAR(value(w.conventional.op_per_worker, 5), 0.5, 1e-15);
  // The sampled path is one worker's whole timeline: 1.0 of the stage.
  EXPECT_NEAR(value(w.single_path.op, 5), 1.0, 1e-15);
  EXPECT_NEAR(value(w.single_path.op_per_worker, 5), 0.5, 1e-15);
}

// Stage 1 on one worker (W0: processing 0-40, 40-100), stage 2 on two (W1, W2:
// deserialization 0-50, processing 50-100), messages W0@40 -> W1@50 and W0@40 -> W2@50.
// Path counts: f(W0@40) = 1, f(W1@50) = f(W2@50) = 2, N = 1 + 2 + 2 = 5; b(W0@40) = 3.
// c(e) * w(e) / (N * 100): W0 0-40: 3*40/500 = .24, W0 40-100: 60/500 = .12,
// W1/W2 0-50: 50/500 = .1 each, W1/W2 50-100: 2*50/500 = .2 each, messages 10/500 = .02.
TEST(OperatorSummary, TwoStagesWithDifferentWorkerCounts) {
  TraceBuilder b;
  b.activity(0, P, 0, 40, 1).activity(0, P, 40, 100, 1);
  for (uint32_t w : {1u, 2u}) b.activity(w, DESER, 0, 50, 2).activity(w, P, 50, 100, 2);
  b.message(0, 40, 1, 50, 1).message(0, 40, 2, 50, 2);
  const auto ws = summaries(b.build());
  ASSERT_EQ(ws.size(), 1u);
  const WindowSummary& w = ws[0];
  ASSERT_TRUE(w.has_paths);
  EXPECT_NEAR(w.paths_log10, std::log10(5.0), 1e-12);
  EXPECT_NEAR(value(w.cp.op, 1), 0.36, 1e-12);
  EXPECT_NEAR(value(w.cp.op_per_worker, 1), 0.36, 1e-12);
  EXPECT_NEAR(value(w.cp.op, 2), 0.6, 1e-12);
  EXPECT_NEAR(value(w.cp.op_per_worker, 2), 0.3, 1e-12);
  EXPECT_NEAR(w.cp.activity[static_cast<int>(DESER)], 0.2, 1e-12);
  // Conventional: shares of the 300 ns of busy timeline time (messages are on no
  // operator); activity types: shares of all 320 ns.
  EXPECT_NEAR(value(w.conventional.op, 1), 100.0 / 300, 1e-12);
  EXPECT_NEAR(value(w.conventional.op_per_worker, 1), 100.0 / 300, 1e-12);
  EXPECT_NEAR(value(w.conventional.op, 2), 200.0 / 300, 1e-12);
  EXPECT_NEAR(value(w.conventional.op_per_worker, 2), 100.0 / 300, 1e-12);
  EXPECT_NEAR(w.conventional.activity[static_cast<int>(DESER)], 100.0 / 320, 1e-12);

  // The same numbers in the JSON line, the CSV rows and the table.
  const Trace t = b.build();
  const Pag pag = build_pag(t, {});
  const Names names(t, pag);
  fmt::memory_buffer json;
  write_window_json(json, w, names, {});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(json.data(), json.size()).get(doc));
  EXPECT_NEAR(double(doc["operator"]["1"]), 0.36, 1e-12);
  EXPECT_NEAR(double(doc["operator"]["2"]), 0.6, 1e-12);
  EXPECT_NEAR(double(doc["operator_per_worker"]["1"]), 0.36, 1e-12);
  EXPECT_NEAR(double(doc["operator_per_worker"]["2"]), 0.3, 1e-12);
  EXPECT_NEAR(double(doc["conventional"]["operator"]["2"]), 2.0 / 3, 1e-12);
  EXPECT_NEAR(double(doc["conventional"]["operator_per_worker"]["2"]), 1.0 / 3, 1e-12);
  EXPECT_FALSE(doc["single_path"]["operator_per_worker"].error());
  // CSV: operator and operator_per_worker rows with the same figures.
  fmt::memory_buffer csv;
  write_window_csv(csv, w, names, SummarySelection::parse("operator"));
  std::map<std::string, std::vector<double>> rows;  // "summary/key" -> cp, conventional
  std::istringstream in(std::string(csv.data(), csv.size()));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 8u) << line;
    rows[f[3] + "/" + f[4]] = {std::stod(f[5]), std::stod(f[6])};
  }
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_NEAR(rows["operator/2"][0], 0.6, 1e-12);
  EXPECT_NEAR(rows["operator/2"][1], 2.0 / 3, 1e-12);
  EXPECT_NEAR(rows["operator_per_worker/2"][0], 0.3, 1e-12);
  EXPECT_NEAR(rows["operator_per_worker/2"][1], 1.0 / 3, 1e-12);
  EXPECT_NEAR(rows["operator_per_worker/1"][0], 0.36, 1e-12);
  Aggregate agg;
  agg.add(w, 10);
  agg.finish();
  fmt::memory_buffer table;
  write_table(table, agg, names, SummarySelection::parse("operator"), {}, "t");
  const std::string tb(table.data(), table.size());
  // Ranked by the total: stage 2 first; its row shows CP, CP/worker and busy share.
  const size_t row2 = tb.find("  2 "), row1 = tb.find("  1 ");
  ASSERT_NE(row2, std::string::npos) << tb;
  ASSERT_NE(row1, std::string::npos) << tb;
  EXPECT_LT(row2, row1) << tb;
  EXPECT_NE(tb.find(" 60.0%      30.0%   66.7%\n"), std::string::npos) << tb;
  EXPECT_NE(tb.find(" 36.0%      36.0%   33.3%\n"), std::string::npos) << tb;
}

// The aggregate over windows is the span-weighted mean of both figures.
TEST(OperatorSummary, AggregateWeightsBothFiguresBySpan) {
  WindowSummary a, b;
  a.has_paths = b.has_paths = true;
  a.span_start = 0, a.span_end = 100;
  b.span_start = 100, b.span_end = 400;
  a.cp_ns = 100, b.cp_ns = 300;  // windows are weighted by the time their CP covers
  a.window = {0, 100, false};
  b.window = {100, 400, true};
  a.cp.op = {{1, 0.8}};
  a.cp.op_per_worker = {{1, 0.4}};
  b.cp.op = {{1, 0.4}, {2, 0.6}};
  b.cp.op_per_worker = {{1, 0.1}, {2, 0.6}};
  Aggregate agg;
  agg.add(a, 10);
  agg.add(b, 10);
  agg.finish();
  ASSERT_EQ(agg.cp.op.size(), 2u);
  ASSERT_EQ(agg.cp.op_per_worker.size(), 2u);
  EXPECT_NEAR(value(agg.cp.op, 1), (0.8 * 100 + 0.4 * 300) / 400, 1e-15);
  EXPECT_NEAR(value(agg.cp.op_per_worker, 1), (0.4 * 100 + 0.1 * 300) / 400, 1e-15);
  EXPECT_NEAR(value(agg.cp.op, 2), 0.6 * 300 / 400, 1e-15);
  EXPECT_NEAR(value(agg.cp.op_per_worker, 2), 0.6 * 300 / 400, 1e-15);
}

// Oracle: on random traces with operators on some activities of every type, windows cut
// anywhere, each window's operator summary equals a plain sum over its snapshot edges.
TEST(OperatorSummary, MatchesBruteForceSumOverWindowEdges) {
  std::mt19937_64 rng(20261124);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  constexpr ActivityType kTypes[] = {P,
                                     ActivityType::waiting,
                                     DESER,
                                     ActivityType::serialization,
                                     ActivityType::scheduling,
                                     ActivityType::io,
                                     ActivityType::buffer,
                                     ActivityType::unknown};
  constexpr uint32_t kOps[] = {UINT32_MAX, 3, 7, 11};
  size_t windows_checked = 0, ops_checked = 0;
  for (int iter = 0; iter < 300; ++iter) {
    TraceBuilder b;
    const int workers = static_cast<int>(uni(1, 5));
    std::vector<std::vector<int64_t>> cuts(workers);
    for (int w = 0; w < workers; ++w) {
      int64_t t = uni(0, 5);
      const int n = static_cast<int>(uni(1, 8));
      for (int i = 0; i < n; ++i) {
        const int64_t d = uni(1, 9);
        b.activity(static_cast<uint32_t>(w), kTypes[uni(0, 7)], t, t + d, kOps[uni(0, 3)]);
        cuts[w].push_back(t + d);
        t += d;
      }
    }
    // Messages from the end of an activity to a later activity border of another worker.
    const int msgs = static_cast<int>(uni(0, 5));
    for (int k = 0; k < msgs && workers > 1; ++k) {
      const int a = static_cast<int>(uni(0, workers - 1));
      int c = static_cast<int>(uni(0, workers - 2));
      if (c >= a) ++c;
      const int64_t send = cuts[a][uni(0, static_cast<int64_t>(cuts[a].size()) - 1)];
      std::vector<int64_t> later;
      for (int64_t x : cuts[c])
        if (x > send) later.push_back(x);
      if (later.empty()) continue;
      b.message(static_cast<uint32_t>(a), send, static_cast<uint32_t>(c),
                later[uni(0, static_cast<int64_t>(later.size()) - 1)], k);
    }
    const Trace trace = b.build();
    const Pag pag = build_pag(trace, {});
    AnalysisOptions opt;
    opt.windows.width_ns = uni(3, 30);
    analyze_pag(pag, opt, [&](const WindowView& v) {
      const Snapshot& s = v.snapshot;
      const WindowSummary& sum = v.summary;
      std::map<uint32_t, double> cp, dur;
      std::map<uint32_t, std::set<uint32_t>> ran;
      double busy = 0, no_op_cp = 0, msg_cp = 0;  // busy: non-waiting timeline time
      for (uint32_t u = 0; u + 1 < s.node_count(); ++u) {
        if (s.edge[u] == kNone) continue;
        const uint32_t op = pag.edge_op[s.edge[u]];
        const bool waiting =
            pag.edge_type[s.edge[u]] == static_cast<uint8_t>(ActivityType::waiting);
        const double d = static_cast<double>(s.ts[u + 1] - s.ts[u]);
        if (!waiting) busy += d;
        if (waiting) {
          EXPECT_EQ(v.cp.timeline_cp[u], 0.0);
        }
        if (op == kNone) {
          no_op_cp += v.cp.timeline_cp[u];
          continue;
        }
        cp[op] += v.cp.timeline_cp[u];
        if (!waiting) dur[op] += d;
        ran[op].insert(s.worker[u]);
      }
      // A merged message edge stands for mult(k) pieces, each with its message_cp.
      for (size_t k = 0; k < s.msg_src.size(); ++k) msg_cp += v.cp.message_cp[k] * s.mult(k);
      ASSERT_EQ(sum.cp.op.size(), ran.size());
      ASSERT_EQ(sum.cp.op_per_worker.size(), ran.size());
      ASSERT_EQ(sum.conventional.op.size(), ran.size());
      double op_sum = 0;
      size_t k = 0;
      for (const auto& [op, workers_of] : ran) {
        const double n = static_cast<double>(workers_of.size());
        ASSERT_EQ(sum.cp.op[k].first, op);
        ASSERT_EQ(sum.cp.op_per_worker[k].first, op);
        EXPECT_NEAR(sum.cp.op[k].second, cp[op], 1e-12);
        EXPECT_NEAR(sum.cp.op_per_worker[k].second, cp[op] / n, 1e-12);
        EXPECT_NEAR(sum.conventional.op[k].second, busy > 0 ? dur[op] / busy : 0, 1e-12);
        EXPECT_NEAR(sum.conventional.op_per_worker[k].second, busy > 0 ? dur[op] / busy / n : 0,
                    1e-12);
        op_sum += sum.cp.op[k].second;
        ++k;
        ++ops_checked;
      }
      // Operators, edges without one and messages share all of the CP.
      if (sum.has_paths) {
        EXPECT_NEAR(op_sum + no_op_cp + msg_cp, 1.0, 1e-9);
      }
      ++windows_checked;
    });
  }
  EXPECT_GT(windows_checked, 300u);
  EXPECT_GT(ops_checked, 500u);
}

// ---- Table output ----

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Abbreviate, KeepsTheIdentifierAndTheEnd) {
  EXPECT_EQ(abbreviate("count-0", 24), "count-0");
  const std::string stage = "stage 50 (count at <console>:24)";
  for (size_t width = 10; width <= 40; ++width) {
    const std::string a = abbreviate(stage, width);
    SCOPED_TRACE(a);
    EXPECT_LE(display_width(a), width);
    if (width >= stage.size()) {
      EXPECT_EQ(a, stage);
      continue;
    }
    EXPECT_EQ(a.rfind("stage 50", 0), 0u);  // the stage id survives
    EXPECT_NE(a.find("…"), std::string::npos);
    if (width >= 13) {
      EXPECT_EQ(a.substr(a.size() - 3), "24)");  // and the call site's line
    }
  }
  EXPECT_EQ(abbreviate(stage, 28), "stage 50 (…at <console>:24)");
  // Two stages with the same call site stay apart.
  EXPECT_NE(abbreviate("stage 12 (processCmd at CliDriver.java:376)", 20),
            abbreviate("stage 13 (processCmd at CliDriver.java:376)", 20));
  // Flink chains without numbers keep their head and their end.
  const std::string flink = "Source: Custom Source -> Flat Map -> Sink: Print to Std. Out";
  const std::string f = abbreviate(flink, 30);
  EXPECT_EQ(f.rfind("Source:", 0), 0u) << f;
  EXPECT_EQ(f.substr(f.size() - 6), "d. Out") << f;
  EXPECT_LE(display_width(f), 30u);
  // Instance numbers at the end are kept.
  const std::string window = abbreviate("Window(TumblingEventTimeWindows(5000)) -> Sink (3/4)", 20);
  EXPECT_EQ(window.substr(window.size() - 5), "(3/4)") << window;
  // Multi-byte names are measured in columns and never cut inside a character.
  const std::string wide = "処理ステージ 7 (集計)";
  const std::string w8 = abbreviate(wide, 8);
  EXPECT_LE(display_width(w8), 8u);
  EXPECT_EQ(display_width(wide), 21u);  // eight wide characters, five narrow
  // Pairs: the short side keeps its name, the long one its numbers.
  EXPECT_EQ(abbreviate_pair("exec 12 slot 3", " -> ", "driver", 20), "…12 slot 3 -> driver");
  EXPECT_EQ(abbreviate_pair("exec 12 slot 3", " -> ", "exec 7 slot 1", 24),
            "…12 slot 3 -> …7 slot 1");
}

TEST(TableOutput, LongRealisticNamesFit80ColumnsWithPaddingBeforeBars) {
  // Spark-like: a driver and executor slots; stages with long names, two of them with the
  // same call site; a Flink-like chained operator.
  TraceBuilder b;
  const std::vector<std::string> stage_names = {
      "stage 50 (count at <console>:24)", "stage 51 (count at <console>:24)",
      "stage 7 (processCmd at CliDriver.java:376)",
      "Source: Custom Source -> Flat Map -> Sink: Print to Std. Out"};
  for (uint32_t w = 0; w < 6; ++w) {
    const uint32_t op = w % 4;
    b.activity(w, DESER, 0, 10 + w, op).activity(w, P, 10 + w, 100, op);
  }
  b.message(0, 10, 1, 20, 1);
  Trace t = b.build();
  for (uint32_t op = 0; op < 4; ++op) t.operator_names[op] = stage_names[op];
  for (uint32_t w = 0; w < 6; ++w)
    t.worker_names[w] = "exec " + std::to_string(w + 10) + " slot " + std::to_string(w);
  const Pag pag = build_pag(t, {});
  const Names names(t, pag);
  Aggregate agg;
  AnalysisOptions opt;
  analyze_pag(pag, opt, [&](const WindowView& v) { agg.add(v.summary, 10); });
  agg.finish();
  fmt::memory_buffer buf;
  write_table(buf, agg, names, SummarySelection{}, {}, "snailtrail analyze spark.log");
  const std::string out(buf.data(), buf.size());
  const auto lines = lines_of(out);
  for (const std::string& line : lines) EXPECT_LE(display_width(line), 80u) << line;
  // Every bar row: two spaces, a name column, at least one space, then the bar.
  size_t bar_rows = 0;
  for (const std::string& line : lines) {
    const size_t bar_at = line.find_first_of("\xe2");  // first bar glyph (UTF-8 lead byte)
    if (line.find("█") == std::string::npos) continue;
    ++bar_rows;
    const size_t first_block = line.find("█");
    ASSERT_GT(first_block, 0u);
    EXPECT_EQ(line[first_block - 1], ' ') << line;
    EXPECT_LE(bar_at, first_block) << line;
  }
  EXPECT_GT(bar_rows, 6u) << out;
  // The distinguishing ends survive: the stage ids in OPERATOR, the slots in WORKER.
  for (const char* id : {"stage 50 (", "stage 51 (", "stage 7 (", "Source:"})
    EXPECT_NE(out.find(id), std::string::npos) << id << "\n" << out;
  for (int w = 0; w < 6; ++w)
    EXPECT_NE(out.find("exec " + std::to_string(w + 10) + " slot " + std::to_string(w)),
              std::string::npos)
        << out;
  // Headers are the ones docs/OUTPUT.md lists, one meaning each.
  EXPECT_NE(out.find("Columns: CP = critical participation"), std::string::npos) << out;
  auto header = [&](const std::string& title) {
    for (const std::string& line : lines)
      if (line.rfind(title, 0) == 0) return line;
    return std::string();
  };
  auto ends_with = [](const std::string& s, const std::string& end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  EXPECT_TRUE(ends_with(header("ACTIVITY TYPE"), "    CP    time")) << header("ACTIVITY TYPE");
  EXPECT_TRUE(ends_with(header("WORKER (straggler)"), "    CP    busy"));
  EXPECT_TRUE(ends_with(header("OPERATOR (all its activities)"), "    CP  CP/worker    busy"));
  EXPECT_TRUE(ends_with(header("COMMUNICATION"), "    CP    time"));
  EXPECT_EQ(out.find("conv."), std::string::npos) << out;
  // Values line up under their headers: the percent signs end where the headers end.
  const std::string op_header = header("OPERATOR (all its activities)");
  for (const std::string& line : lines)
    if (line.find("stage 50 (") != std::string::npos && line.find("█") != std::string::npos) {
      EXPECT_EQ(display_width(line), display_width(op_header)) << line;
      EXPECT_EQ(line.back(), '%');
    }
  // The top list: every row names its worker (slot) and its stage by id.
  size_t top = 0;
  while (top < lines.size() && lines[top].rfind("TOP ", 0) != 0) ++top;
  ASSERT_LT(top + 2, lines.size()) << out;
  size_t top_rows = 0;
  for (size_t i = top + 2; i < lines.size() && !lines[i].empty(); ++i, ++top_rows) {
    const std::string& row = lines[i];
    EXPECT_TRUE(row.find("exec 1") != std::string::npos) << row;
    if (row.find("->") != std::string::npos) continue;  // a message: no operator
    const bool stage = row.find("stage 50") != std::string::npos ||
                       row.find("stage 51") != std::string::npos ||
                       row.find("stage 7") != std::string::npos;
    EXPECT_TRUE(stage || row.find("Std. Out") != std::string::npos) << row;
  }
  EXPECT_GT(top_rows, 5u) << out;

  // Without the key (per-window tables): the same sections, no "Columns:" line.
  TableContext no_key;
  no_key.column_key = false;
  fmt::memory_buffer again;
  write_table(again, agg, names, SummarySelection{}, no_key, "== window 0");
  const std::string plain(again.data(), again.size());
  EXPECT_EQ(plain.find("Columns:"), std::string::npos) << plain;
  EXPECT_NE(plain.find("OPERATOR (all its activities)"), std::string::npos) << plain;
}

}  // namespace
}  // namespace snailtrail::test_summary
