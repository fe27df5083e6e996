// The verdict over every example (examples/*.toml simulated, examples/pipeline.jsonl,
// the traces in tests/data, traces of the runtime's built-in jobs) with the what-if on, one
// whole-trace window each: the entity it names maximises the what-if saving in its unit, or the
// rules say why not (docs/PAG.md §verdict). The check reads only the JSON output: the what-if rows
// are the oracle, not the verdict's code.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "process_util.hpp"

namespace snailtrail::test_verdict_suite {
namespace {

using testing::CommandResult;
using testing::run_binary;
using testing::TempDirTest;

class VerdictSuite : public TempDirTest {
 protected:
  VerdictSuite() : TempDirTest("verdict-suite") {}

  // Checks the run verdict of `analyze TRACE --what-if --window whole`.
  void check(const std::string& trace, const std::string& label) {
    SCOPED_TRACE(label);
    const CommandResult r =
        run_binary("analyze " + trace + " --what-if --window whole -f jsonl --no-progress");
    ASSERT_EQ(r.code, 0) << r.out;
    const size_t at = r.out.find("{\"run\":");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    simdjson::dom::parser parser;
    const simdjson::dom::element doc = parser.parse(line).value();
    const double span = static_cast<double>(doc["run"]["cp_ns"].get_int64().value());
    const std::string kind(doc["verdict"]["kind"].get_string().value());
    std::string name;
    std::string_view name_view;
    if (doc["verdict"]["name"].get(name_view) == simdjson::SUCCESS) name = name_view;
    const std::string text(doc["verdict"]["text"].get_string().value());
    // The best 2x saving per unit, and the named entity's own.
    double best_worker = 0, best_op = 0, own = -1;
    simdjson::dom::array rows;
    if (doc["what_if"].get(rows) == simdjson::SUCCESS) {
      for (simdjson::dom::element x : rows) {
        if (std::string(x["basis"].get_string().value()) != "factor") continue;
        const std::string k(x["kind"].get_string().value());
        const std::string n(x["name"].get_string().value());
        const auto saved = static_cast<double>(x["saved_ns"].get_int64().value());
        if (k == "worker") best_worker = std::max(best_worker, saved);
        if (k == "operator") best_op = std::max(best_op, saved);
        const bool same_unit = (k == "operator") == (kind == "operator");
        if (same_unit && k != "activity" && n == name) own = saved;
      }
    }
    const double best = std::max(best_worker, best_op);
    // Rounding of the JSON's integer nanoseconds.
    const double eps = 1;
    if (kind == "straggler") {
      ASSERT_GE(own, 0) << text;
      EXPECT_GE(own + eps, 0.05 * span) << text;
      EXPECT_GE(own + eps, 0.5 * best) << text;
    } else if (kind == "operator") {
      // The operator that saves most, or (no saving reaches 5 %) the CP rule's.
      if (best >= 0.05 * span) {
        EXPECT_GE(own + eps, best_op) << text;
      }
    } else if (kind == "worker") {
      EXPECT_GE(own + eps, best_worker) << text;
      EXPECT_LT(best_op, 0.05 * span) << text;
    } else if (kind == "wait") {
      // A kernel trace's wait (a pseudo-worker "[cause...]"): its what-if row is the one the
      // sentence quotes.
      EXPECT_EQ(name.rfind('[', 0), 0u) << text;
      ASSERT_GE(own, 0) << text;
    } else if (kind == "balanced" || kind == "communication") {
      // Nothing a worker or operator speed-up saves reaches 5 % of the span.
      EXPECT_LT(best, 0.05 * span) << text;
    }
    // Otherwise (no_cp, instrumentation, activity, input) the sentence says why no worker
    // or operator is named: unknown time, a dominant activity, the input.
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(text.find("peer median ("), std::string::npos) << text;
  }
};

TEST_F(VerdictSuite, SimulatorExamples) {
  const std::filesystem::path dir = std::filesystem::path(SNAILTRAIL_SOURCE_DIR) / "examples";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") continue;
    const std::string name = entry.path().stem().string();
    const std::string trace = path(name + ".snail").string();
    const CommandResult sim =
        run_binary("simulate " + entry.path().string() + " -d 2s --seed 5 -q -o " + trace);
    ASSERT_EQ(sim.code, 0) << sim.out;
    check(trace, name);
    ++checked;
  }
  EXPECT_GE(checked, 11);
}

TEST_F(VerdictSuite, ExampleAndTestTraces) {
  const std::string src = SNAILTRAIL_SOURCE_DIR;
  for (const char* f : {"examples/pipeline.jsonl", "tests/data/chrome-flows.json",
                        "tests/data/chrome-tf-timeline.json", "tests/data/jaeger-request.json",
                        "tests/data/otlp-request.json", "tests/data/perf-sched-timer.txt",
                        "tests/data/spark-2stage-eventlog"})
    check(src + "/" + f, f);
}

// Our own runtime's built-in jobs, traced (2 workers, short runs): closed loop, open loop
// below and above capacity, a skewed word count, NEXMark's join and windowed queries.
TEST_F(VerdictSuite, BuiltInRuntimeJobs) {
  const std::pair<const char*, const char*> jobs[] = {
      {"wordcount-skew", "wordcount --skew 0.9 --keys 1000 --rate max"},
      {"wordcount-open", "wordcount --skew 0.5 --keys 1000 --rate 200000"},
      {"keycount-over", "keycount --keys 100000 --rate 20000000"},
      {"hashcount", "hashcount --bins 16 --keys 10000 --rate max"},
      {"nexmark-q3", "nexmark-q3 --rate max"},
      {"nexmark-q5", "nexmark-q5 --rate max"},
  };
  for (const auto& [name, job] : jobs) {
    const std::string trace = path(std::string(name) + ".snail").string();
    const CommandResult run =
        run_binary(std::string("run ") + job + " --workers 2 --duration 300ms -q --trace " + trace);
    ASSERT_EQ(run.code, 0) << name << ": " << run.out;
    check(trace, name);
  }
}

}  // namespace
}  // namespace snailtrail::test_verdict_suite
