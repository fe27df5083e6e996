// `--window auto` (importers/auto_window.hpp, docs/OUTPUT.md): the whole trace for batch
// jobs and request traces, 1 s for streams; the choice per importer, and through the CLI on
// traces whose right number of windows is known.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "importers/auto_window.hpp"
#include "importers/importer.hpp"
#include "process_util.hpp"
#include "spark_log_util.hpp"

namespace snailtrail::test_auto_window {
namespace {

namespace fs = std::filesystem;

TEST(AutoWindow, ChoicePerImporter) {
  const std::set<std::string> whole = {"spark", "chrome", "otlp", "jaeger", "logs"};
  for (const importers::Importer& imp : importers::all_importers()) {
    const importers::AutoWindow w = importers::choose_auto_window(imp.name);
    const bool batch = whole.count(std::string(imp.name)) > 0;
    EXPECT_EQ(w.whole, batch) << imp.name;
    EXPECT_EQ(w.label, batch ? "whole" : "1s") << imp.name;
    EXPECT_EQ(w.width_ns, batch ? 0 : 1'000'000'000) << imp.name;
    EXPECT_FALSE(w.reason.empty()) << imp.name;
  }
  EXPECT_FALSE(importers::choose_auto_window("no-such-importer").whole);
}

struct CliRun {
  int code = -1;
  std::string out, err;
};

class AutoWindowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("snailtrail-autowin-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CliRun run(const std::vector<std::string>& args) {
    const fs::path out = dir_ / ("o" + std::to_string(n_)), err = dir_ / ("e" + std::to_string(n_));
    ++n_;
    testing::Process p(args, out, err);
    CliRun r;
    r.code = p.wait();
    r.out = testing::slurp(out);
    r.err = testing::slurp(err);
    return r;
  }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // Windows in `analyze -f jsonl` output (runs of empty windows count by their length).
  static size_t windows(const std::string& jsonl) {
    size_t n = 0, pos = 0;
    while ((pos = jsonl.find("{\"window\":{\"index\":", pos)) != std::string::npos) ++n, ++pos;
    return n;
  }

  fs::path dir_;
  int n_ = 0;
};

// A stream of 3.5 s: two workers taking turns in 100 ms steps, with a message at each turn.
std::string stream_jsonl() {
  std::string s =
      "{\"meta\":\"worker\",\"id\":0,\"name\":\"a\"}\n{\"meta\":\"worker\",\"id\":1,\"name\":\"b\"}"
      "\n";
  const int64_t step = 100'000'000;
  for (int k = 0; k < 35; ++k) {
    const int w = k % 2;
    const int64_t t = k * step;
    s += "{\"ts\":" + std::to_string(t) + ",\"worker\":" + std::to_string(w) +
         ",\"activity\":\"processing\",\"event\":\"start\"}\n";
    s += "{\"ts\":" + std::to_string(t + step) + ",\"worker\":" + std::to_string(w) +
         ",\"activity\":\"processing\",\"event\":\"end\"}\n";
  }
  return s;
}

TEST_F(AutoWindowCli, StreamGetsOneSecondWindows) {
  const fs::path trace = write("stream.jsonl", stream_jsonl());
  const CliRun r = run({"analyze", trace.string(), "-f", "jsonl", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(windows(r.out), 4u) << r.out;  // [0,1) [1,2) [2,3) [3,3.5] s
  EXPECT_NE(r.err.find("--window auto chose 1s"), std::string::npos) << r.err;
  // The table says it in its heading.
  const CliRun t = run({"analyze", trace.string(), "--no-progress"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("4 windows of 1s (--window auto), "), std::string::npos) << t.out;
  // An explicit width is kept, and says nothing.
  const CliRun w =
      run({"analyze", trace.string(), "-f", "jsonl", "--no-progress", "--window", "500ms"});
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(windows(w.out), 7u);
  EXPECT_EQ(w.err.find("--window auto"), std::string::npos) << w.err;
}

TEST_F(AutoWindowCli, SparkApplicationIsOneWindow) {
  const auto log = testing::spark_log::generate_log(1, 1, 12, 10, 7);
  const fs::path trace = write("app-eventlog", log.text);
  const CliRun fixed =
      run({"analyze", trace.string(), "-f", "jsonl", "--no-progress", "--window", "1s"});
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  ASSERT_GT(windows(fixed.out), 1u) << "the generated application must span more than 1 s";
  const CliRun r = run({"analyze", trace.string(), "-f", "jsonl", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(windows(r.out), 1u);
  EXPECT_NE(r.err.find("--window auto chose the whole trace: a Spark application"),
            std::string::npos)
      << r.err;
  // Same from stdin, where the importer is recognised from the content.
  const fs::path out = dir_ / "stdin.out", err = dir_ / "stdin.err";
  testing::Process p({"analyze", "-", "-f", "jsonl", "--no-progress"}, out, err, trace);
  ASSERT_EQ(p.wait(), 0) << testing::slurp(err);
  EXPECT_EQ(windows(testing::slurp(out)), 1u);
}

TEST_F(AutoWindowCli, RequestAndProfilerTracesAreWhole) {
  const fs::path data = fs::path(SNAILTRAIL_SOURCE_DIR) / "tests" / "data";
  for (const char* f : {"otlp-request.json", "jaeger-request.json", "chrome-tf-timeline.json"}) {
    const CliRun r = run({"analyze", (data / f).string(), "--no-progress"});
    ASSERT_EQ(r.code, 0) << f << ": " << r.err;
    EXPECT_NE(r.out.find("1 window of whole (--window auto), "), std::string::npos) << f << r.out;
  }
}

// `report` reads traces with the same options and the same --window auto as `analyze`
// (cli/trace_input.hpp): a Spark application is one window in both, and the importer's
// own options (here --spark-delay-split) reach the importer in both.
TEST_F(AutoWindowCli, ReportChoosesAndImportsAsAnalyzeDoes) {
  const auto log = testing::spark_log::generate_log(1, 1, 12, 10, 7);
  const fs::path trace = write("app-eventlog", log.text);
  const CliRun r = run({"report", trace.string(), "-f", "json", "-o", "-", "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--window auto chose the whole trace: a Spark application"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("\"window\":\"whole\""), std::string::npos) << r.out.substr(0, 400);
  // The delay split changes the analysis; a report with another split differs, and one
  // with a bad split is refused as analyze refuses it. (A Spark log's report is "Tasks per
  // stage", whose stage CP this split happens not to move: compared on the dataflow views.)
  const CliRun flow = run(
      {"report", trace.string(), "-f", "json", "-o", "-", "--no-progress", "--view", "dataflow"});
  ASSERT_EQ(flow.code, 0) << flow.err;
  EXPECT_NE(flow.err.find("--window auto chose the whole trace: a Spark application"),
            std::string::npos)
      << flow.err;
  EXPECT_NE(flow.out.find("\"window\":\"whole\""), std::string::npos) << flow.out.substr(0, 400);
  const CliRun other = run({"report", trace.string(), "-f", "json", "-o", "-", "--no-progress",
                            "--view", "dataflow", "--spark-delay-split", "0:1"});
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_NE(other.out, flow.out);
  const CliRun bad_report = run({"report", trace.string(), "-f", "json", "-o", "-", "--no-progress",
                                 "--spark-delay-split", "x"});
  const CliRun bad_analyze =
      run({"analyze", trace.string(), "--no-progress", "--spark-delay-split", "x"});
  EXPECT_NE(bad_report.code, 0);
  EXPECT_EQ(bad_report.code, bad_analyze.code);
  EXPECT_EQ(bad_report.err, bad_analyze.err);
}

}  // namespace
}  // namespace snailtrail::test_auto_window
