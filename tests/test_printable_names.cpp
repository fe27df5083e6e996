// Names from untrusted inputs (a thread's comm in a kernel trace, a log template, a request
// identifier, a stack frame) in the outputs of `kernel`, `logs`, `report` and
// `flamegraph`: tables show them printable() (no control character reaches the terminal
// or splits a row, invalid UTF-8 becomes U+FFFD), JSON documents stay valid JSON (invalid
// UTF-8 as \ufffd, controls escaped and read back exactly).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "kernel_perf_text.hpp"
#include "process_util.hpp"

namespace snailtrail::test_printable_names {
namespace {

using testing::PerfStyle;
using testing::PerfText;
using testing::Process;

// A comm with a terminal escape (clear screen) and one with a byte that is not UTF-8.
const std::string kEscComm = "evil\x1b[2Jx";
const std::string kBadComm = "w\xffz";
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

class PrintableNames : public testing::TempDirTest {
 protected:
  PrintableNames() : TempDirTest("printable") {}

  // What `snailtrail args...` prints; it must succeed.
  std::string stdout_of(const std::vector<std::string>& args) {
    Process p(args, path("out"), path("err"));
    EXPECT_EQ(p.wait(), 0) << p.err();
    return p.out();
  }
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name).string();
  }
  // Thread 100 (kEscComm) waits for thread 200 (kBadComm), which wakes it.
  std::string kernel_trace() {
    constexpr int64_t kBase = 777'000'000'000;
    auto us = [](int64_t x) { return kBase + x * 1000; };
    PerfText p(PerfStyle::kv);
    p.name(100, kEscComm);
    p.name(200, kBadComm);
    p.sched_switch(0, us(0), 0, "R", 100);
    p.sched_switch(1, us(0), 0, "R", 200);
    p.sched_switch(0, us(10), 100, "S", 0);
    p.waking(1, us(40), 200, 100, 0);
    p.sched_switch(0, us(41), 0, "R", 100);
    p.sched_switch(1, us(45), 200, "S", 0);
    p.sched_switch(0, us(50), 100, "S", 0);
    return write("sched.txt", p.text());
  }
};

bool valid_utf8(const std::string& s) {
  return simdjson::validate_utf8(s.data(), s.size());
}

// No C0 control but the line ends, no DEL: nothing that drives a terminal or splits a row.
bool no_controls(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\n') || u == 0x7f;
  });
}

size_t count(const std::string& s, std::string_view what) {
  size_t n = 0, at = 0;
  while ((at = s.find(what, at)) != std::string::npos) ++n, at += what.size();
  return n;
}

TEST_F(PrintableNames, KernelTablesShowCommsPrintable) {
  const std::string trace = kernel_trace();
  const std::string threads = stdout_of({"kernel", "threads", trace});
  EXPECT_TRUE(no_controls(threads)) << threads;
  EXPECT_TRUE(valid_utf8(threads)) << threads;
  EXPECT_NE(threads.find("     100  evil\\x1b[2Jx "), std::string::npos) << threads;
  EXPECT_NE(threads.find("     200  w" + kReplacement + "z "), std::string::npos) << threads;

  const std::string table = stdout_of({"kernel", "critical-path", trace, "--thread", "100"});
  EXPECT_TRUE(no_controls(table)) << table;
  EXPECT_TRUE(valid_utf8(table)) << table;
  EXPECT_EQ(table.rfind("critical path of evil\\x1b[2Jx:100 from ", 0), 0u) << table;
  // The path: 100 runs, 200 runs until it wakes 100, 100 preempted, 100 runs; then the
  // share per thread, one row each.
  EXPECT_EQ(count(table, "  evil\\x1b[2Jx:100 "), 4u) << table;
  EXPECT_EQ(count(table, "  w" + kReplacement + "z:200 "), 2u) << table;
}

TEST_F(PrintableNames, KernelJsonIsValidAndKeepsControlCharacters) {
  const std::string json =
      stdout_of({"kernel", "critical-path", kernel_trace(), "--thread", "100", "-f", "json"});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["thread"]["comm"]), kEscComm);
  std::vector<std::string> comms;
  for (simdjson::dom::element t : simdjson::dom::array(doc["threads"]))
    comms.emplace_back(std::string_view(t["comm"]));
  EXPECT_EQ(comms, (std::vector<std::string>{"w" + kReplacement + "z", kEscComm}));
}

TEST_F(PrintableNames, ReportJsonIsValidWithInvalidUtf8Names) {
  // The dataflow views (a kernel trace's report is the Critical flow by default).
  stdout_of({"report", kernel_trace(), "--view", "dataflow", "-f", "json", "-o",
             path("report.json").string()});
  const std::string text = testing::slurp(path("report.json"));
  EXPECT_TRUE(valid_utf8(text));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text;
  const std::string bad = "w" + kReplacement + "z:200", esc = kEscComm + ":100";
  std::vector<std::string> workers;
  for (simdjson::dom::element w : simdjson::dom::array(doc["workers"]))
    workers.emplace_back(std::string_view(w));
  EXPECT_EQ(workers, (std::vector<std::string>{esc, bad}));
  // The ranked groups, the most critical activities and the operator names carry them too.
  std::vector<std::string> ranked;
  for (simdjson::dom::element g : simdjson::dom::array(doc["overall"]["workers"]["groups"]))
    ranked.emplace_back(std::string_view(g["name"]));
  std::sort(ranked.begin(), ranked.end());
  EXPECT_EQ(ranked, (std::vector<std::string>{esc, bad}));
  bool top_bad = false;
  for (simdjson::dom::element a : simdjson::dom::array(doc["overall"]["top"]))
    top_bad = top_bad || std::string_view(a["worker"]) == bad;
  EXPECT_TRUE(top_bad) << text;
  bool op_bad = false;
  for (auto [id, name] : simdjson::dom::object(doc["series"]["operators"]))
    op_bad = op_bad || std::string_view(name) == "w" + kReplacement + "z";
  EXPECT_TRUE(op_bad) << text;
}

// The Critical flow's data (docs/REPORT.md) names threads as the kernel JSON does.
TEST_F(PrintableNames, CriticalFlowJsonIsValidWithInvalidUtf8Names) {
  stdout_of({"report", kernel_trace(), "-f", "json", "-o", path("flow.json").string()});
  const std::string text = testing::slurp(path("flow.json"));
  EXPECT_TRUE(valid_utf8(text));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text;
  std::vector<std::string> comms;
  for (simdjson::dom::element t : simdjson::dom::array(doc["threads"]))
    comms.emplace_back(std::string_view(t["comm"]));
  EXPECT_EQ(comms, (std::vector<std::string>{kEscComm, "w" + kReplacement + "z"}));
}

TEST_F(PrintableNames, FlamegraphJsonIsValidWithInvalidUtf8Frames) {
  const std::string folded = write("stacks.folded", "main;f\xffn;g\x1bx 10\nmain;h 5\n");
  const std::string json = stdout_of({"flamegraph", folded, "--format", "json", "-q"});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  // all -> main -> {f?n -> g<ESC>x, h}: children in name order.
  simdjson::dom::element main_frame = doc["root"]["children"].at(0);
  EXPECT_EQ(std::string_view(main_frame["name"]), "main");
  simdjson::dom::element f = main_frame["children"].at(0);
  EXPECT_EQ(std::string_view(f["name"]), "f" + kReplacement + "n");
  EXPECT_EQ(std::string_view(f["children"].at(0)["name"]), "g\x1bx");
  EXPECT_EQ(uint64_t(f["value"]), 10u);
}

TEST_F(PrintableNames, FlamegraphSvgIsValidUtf8WithoutControls) {
  // A frame with a byte that is not UTF-8 and an escape.
  const std::string bad = write("bad.folded", "main;f\xffn;g\x1bx 10\nmain;h 5\n");
  const std::string svg = stdout_of({"flamegraph", bad, "--format", "svg", "-q"});
  EXPECT_TRUE(valid_utf8(svg));
  EXPECT_TRUE(no_controls(svg));
  EXPECT_NE(svg.find("<title>f" + kReplacement + "n (10 samples"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>g x (10 samples"), std::string::npos) << svg;

  // A frame of 200 two-byte characters in half the width: its label is cut after 79
  // bytes, inside a character, so at the character before.
  std::string accents;
  for (int k = 0; k < 200; ++k) accents += "\xC3\xA9";  // é
  const std::string wide = write("wide.folded", "main;h 15\n" + accents + " 15\n");
  const std::string cut = stdout_of({"flamegraph", wide, "--format", "svg", "-q"});
  EXPECT_TRUE(valid_utf8(cut));
  EXPECT_NE(cut.find(">" + accents.substr(0, 78) + "..</text>"), std::string::npos) << cut;
}

TEST_F(PrintableNames, LogsTablesShowTemplatesAndIdsPrintable) {
  // Requests "r<ESC>N" whose first template holds a terminal escape, a byte that is not
  // UTF-8 and a DEL, and whose second is longer than the steps table's column (60 bytes),
  // with two-byte characters where it is cut.
  std::string log;
  std::string accents;
  for (int k = 0; k < 30; ++k) accents += "\xC3\xA9";  // é
  for (int i = 0; i < 6; ++i) {
    log += fmt::format(
        "2026-11-25 01:00:{:02d},000 INFO [exec] Gateway: Handling id=r\x1b{} for "
        "bad\x1bname\xfe\x7f customer\n",
        i * 3, i);
    log += fmt::format("2026-11-25 01:00:{:02d},500 INFO [exec] Gateway: Finished id=r\x1b{} {}\n",
                       i * 3, i, accents);
  }
  const std::string file = write("app.log", log);
  const std::string flows = stdout_of({"logs", "flows", file, "--id", "id=(\\S+)"});
  EXPECT_TRUE(no_controls(flows)) << flows;
  EXPECT_TRUE(valid_utf8(flows)) << flows;
  const std::string first = "Handling id=<*> for bad\\x1bname" + kReplacement + "\\x7f customer";
  EXPECT_NE(flows.find("  T0           6  " + first + "\n"), std::string::npos) << flows;
  EXPECT_NE(flows.find("  T1           6  Finished id=<*> " + accents + "\n"), std::string::npos)
      << flows;
  // The steps table cuts the second template at 57 bytes, before the character that
  // straddles it: "Finished id=<*> " (16 bytes) and 20 whole "é".
  EXPECT_NE(flows.find("  Finished id=<*> " + accents.substr(0, 40) + "...\n"), std::string::npos)
      << flows;
  for (int i = 0; i < 6; ++i)
    EXPECT_NE(flows.find(fmt::format("\n  r\\x1b{}  ", i)), std::string::npos) << flows;

  const std::string templates = stdout_of({"logs", "templates", file});
  EXPECT_TRUE(no_controls(templates)) << templates;
  EXPECT_TRUE(valid_utf8(templates)) << templates;
  EXPECT_NE(templates.find("50.0%  " + first + "\n"), std::string::npos) << templates;
}

}  // namespace
}  // namespace snailtrail::test_printable_names
