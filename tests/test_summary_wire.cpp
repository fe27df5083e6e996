// summary/summary_wire.hpp: a window's summary crosses ranks unchanged, and a cut or
// corrupt one is an error, not a wrong aggregate.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "output/writers.hpp"
#include "summary/summary_wire.hpp"

namespace snailtrail::test_summary_wire {
namespace {

WindowSummary full_summary() {
  WindowSummary s;
  s.index = 41;
  s.window = {1000, 2000, true, 0};
  s.span_start = 1010;
  s.span_end = 1990;
  s.cp_ns = 900;
  s.events = 77;
  s.nodes = 60;
  s.edges = 88;
  s.has_paths = true;
  s.paths_log10 = 3.25;
  for (Groups* g : {&s.cp, &s.conventional, &s.single_path}) {
    g->activity[2] = 0.5;
    g->worker = {0.25, 0.75, 0};
    g->op = {{7, 0.5}, {9, 0.5}};
    g->op_per_worker = {{7, 0.25}, {9, 0.5}};
    g->communication = {{0, 1, 0.125}, {2, 0, 0.0625}};
  }
  s.top = {{1, 2, ActivityType::data_message, 7, 1100, 1200, 0.5},
           {0, UINT32_MAX, ActivityType::processing, UINT32_MAX, 1000, 1900, 0.25}};
  s.diagnostics.no_paths = false;
  s.diagnostics.property1_violations = 3;
  s.diagnostics.property2_violations = 4;
  s.diagnostics.property2_ns = 55;
  s.diagnostics.segments = 2;
  s.diagnostics.no_path_segments = 1;
  s.diagnostics.zero_duration_cycles = 6;
  s.diagnostics.issues[3] = 9;
  s.diagnostics.unknown_share = 0.1;
  s.diagnostics.waiting_share = 0.2;
  s.diagnostics.add_input("late events", 5);
  s.diagnostics.add_input("spark.bad_lines", 2);
  s.what_if = {{WhatIfKind::worker, 1, false, 2, 300, 0, 0, 0, 0, 0},
               {WhatIfKind::op, 7, true, 1.5, 120, 0, 0, 0, 0, 0}};
  return s;
}

// Everything a writer reads of a summary, as text: equal text, equal summary.
std::string as_text(const WindowSummary& s) {
  Trace trace;
  Pag pag;
  pag.worker_ids = {0, 1, 2};
  const Names names(trace, pag);
  SummarySelection sel = SummarySelection::parse("all");
  sel.what_if = true;
  fmt::memory_buffer out;
  write_window_json(out, s, names, sel);
  write_window_csv(out, s, names, sel);
  return fmt::to_string(out);
}

TEST(SummaryWire, RoundTripsEveryField) {
  const WindowSummary s = full_summary();
  std::string bytes = "prefix";
  append_summary(bytes, s);
  bytes += "suffix";
  size_t pos = 6;
  WindowSummary back;
  read_summary(bytes, pos, back);
  EXPECT_EQ(bytes.substr(pos), "suffix");
  EXPECT_EQ(as_text(back), as_text(s));
  EXPECT_EQ(back.index, 41u);
  EXPECT_TRUE(back.window.closed_end);
  EXPECT_EQ(back.nodes, 60u);
  EXPECT_EQ(back.diagnostics.issues[3], 9u);
  EXPECT_EQ(back.diagnostics.zero_duration_cycles, 6u);
  ASSERT_EQ(back.diagnostics.input.size(), 2u);
  EXPECT_EQ(back.diagnostics.input[1].first, "spark.bad_lines");
  ASSERT_EQ(back.top.size(), 2u);
  EXPECT_EQ(back.top[0].remote, 2u);
  ASSERT_EQ(back.what_if.size(), 2u);
  EXPECT_TRUE(back.what_if[1].peer_median);
  // An aggregate of the decoded summaries equals one of the originals.
  Aggregate a, b;
  a.add(s, 10);
  b.add(back, 10);
  a.finish();
  b.finish();
  EXPECT_EQ(a.weight_ns, b.weight_ns);
  EXPECT_EQ(a.cp.worker, b.cp.worker);
}

TEST(SummaryWire, EveryCutIsAnError) {
  std::string bytes;
  append_summary(bytes, full_summary());
  for (size_t n = 0; n < bytes.size(); ++n) {
    size_t pos = 0;
    WindowSummary back;
    EXPECT_THROW(read_summary(std::string_view(bytes).substr(0, n), pos, back), std::runtime_error)
        << "cut at " << n << " of " << bytes.size();
  }
}

TEST(SummaryWire, AHugeLengthIsAnErrorNotAnAllocation) {
  std::string bytes;
  append_summary(bytes, WindowSummary{});
  // The first vector's length (the cp worker shares) follows the fixed-size fields:
  // index, window, span start and end, cp_ns, events, nodes, edges, has_paths,
  // paths_log10 and the cp activity shares.
  const size_t at = sizeof(uint64_t) + sizeof(Window) + 6 * sizeof(int64_t) + sizeof(bool) +
                    sizeof(double) + sizeof(Groups::activity);
  ASSERT_LE(at + 8, bytes.size());
  for (size_t k = 0; k < 8; ++k) ASSERT_EQ(bytes[at + k], '\0') << "an empty vector's length";
  for (size_t k = 0; k < 8; ++k) bytes[at + k] = '\xff';
  size_t pos = 0;
  WindowSummary back;
  EXPECT_THROW(read_summary(bytes, pos, back), std::runtime_error);
}

}  // namespace
}  // namespace snailtrail::test_summary_wire
