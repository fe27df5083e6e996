// `scale manage` on DS2's files (issue 34): a finished directory is read to its end (no
// --idle-exit needed), `--rates` is the option's name in `policy` and `manage` alike
// (`--ds2-metrics` its alias), and on the same files the manager decides as `scale
// policy` does unless a difference is asked for (--threshold, --rollback) and said.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "process_util.hpp"

namespace snailtrail::test_scale_manage_files {
namespace {

namespace fs = std::filesystem;

std::string data(const std::string& name) {
  return std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/" + name;
}

// The binary with stdout and stderr, stopped after `seconds`.
testing::CommandResult run_limited(const std::string& args, int seconds = 30) {
  return testing::run_binary(args, seconds);
}

// Word count (source -> flatmap -> count) as DS2's Flink instrumentation writes it: one
// file NAME.INSTANCE-EPOCH.csv per instance and epoch. Per instance, flatmap processes
// 1000 sentences/s of useful time into 10 words each, count 6000 words/s; the source's
// true output (its target, DS2's definition) is 1000 sentences/s. By hand, the policy
// wants flatmap = 1000 / 1000 = 1 and count = 10000 / 6000 -> 2 in every epoch.
//   epoch 0: runs 1/1/2, the source achieves 666.7/s (2/3 of its target);
//   epoch 1: runs 1/2/3 (someone scaled up), the source achieves 500/s;
//   epoch 2: runs 1/1/2 again, 666.7/s.
struct WordCountFiles {
  fs::path dir;
  std::string topology, rates;
  WordCountFiles() {
    dir = fs::temp_directory_path() /
          ("snailtrail-wc-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "rates");
    topology = (dir / "topology.csv").string();
    std::ofstream(topology)
        << "operator_id1,operator_name1,total_number_of_operator_instances1,operator_id2,"
           "operator_name2,total_number_of_operator_instances2\n"
           "1,source,1,2,flatmap,1\n2,flatmap,1,3,count,2\n";
    rates = (dir / "rates").string();
    epoch(0, 1, 2, 666.7);
    epoch(1, 2, 3, 500);
    epoch(2, 1, 2, 666.7);
  }
  ~WordCountFiles() { fs::remove_all(dir); }
  void line(const std::string& name, int epoch, const std::string& text) const {
    std::ofstream(dir / "rates" / (name + "-" + std::to_string(epoch) + ".csv")) << text;
  }
  void epoch(int e, int flatmap, int count, double source_rate) const {
    const int ts = 1000 * (e + 1);
    char buf[256];
    std::snprintf(buf, sizeof buf, "1,0,1,%d,1000,1000,%.1f,%.1f\n", ts, source_rate, source_rate);
    line("source.0", e, buf);
    for (int i = 0; i < flatmap; ++i) {
      const double in = source_rate / flatmap;
      std::snprintf(buf, sizeof buf, "2,%d,%d,%d,1000,10000,%.1f,%.1f\n", i, flatmap, ts, in,
                    10 * in);
      line("flatmap." + std::to_string(i), e, buf);
    }
    for (int i = 0; i < count; ++i) {
      const double in = 10 * source_rate / count;
      std::snprintf(buf, sizeof buf, "3,%d,%d,%d,6000,0,%.1f,0\n", i, count, ts, in);
      line("count." + std::to_string(i), e, buf);
    }
  }
};

using Decisions = std::vector<std::tuple<int64_t, int64_t, int64_t>>;  // epoch, flatmap, count

Decisions parse_decisions(const std::string& out, const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << out;
  Decisions d;
  simdjson::dom::array a = key ? doc[key].get_array() : doc.get_array();
  for (simdjson::dom::element e : a)
    d.emplace_back(int64_t(e["epoch"]), int64_t(e["parallelism"]["flatmap"]),
                   int64_t(e["parallelism"]["count"]));
  return d;
}

TEST(ScaleManageFiles, AFinishedDirectoryIsReadToItsEnd) {
  const std::string files =
      " --topology " + data("ds2-topology.csv") + " --source-rates " + data("ds2-source-rates.csv");
  const auto r = run_limited("scale manage --rates " + data("ds2-rates-dir") + files);
  ASSERT_EQ(r.code, 0) << r.out;
  // Epoch 0 -> 1/12/34 (ScaleDs2Files.DirectoryOfEpochFiles); epoch 1 measures only the
  // source: the reported configuration is kept.
  EXPECT_EQ(r.out,
            "epoch 0 (60 s): source=1 flatmap=12 count=34\n"
            "  ds2: source=1 flatmap=12 count=34 (sources at 620/s = 3.7% of the target)\n")
      << r.out;
  // The old name is an alias, in `manage` and `policy`.
  EXPECT_EQ(run_limited("scale manage --ds2-metrics " + data("ds2-rates-dir") + files).out, r.out);
  const auto p = run_limited("scale policy --rates " + data("ds2-rates-dir") + files);
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_EQ(run_limited("scale policy --ds2-metrics " + data("ds2-rates-dir") + files).out, p.out);
  // --follow (or --idle-exit) waits for more: here it ends after 50 ms without news.
  const auto f = run_limited("scale manage --rates " + data("ds2-rates-dir") + files +
                             " --follow --idle-exit 50ms --poll 5ms -q");
  ASSERT_EQ(f.code, 0) << f.out;
  EXPECT_EQ(f.out, r.out);
}

TEST(ScaleManageFiles, ManagerAndPolicyAgreeOnTheSameFiles) {
  const WordCountFiles f;
  const std::string files = " --topology " + f.topology + " --rates " + f.rates;
  const auto p = run_limited("scale policy" + files + " --format json");
  ASSERT_EQ(p.code, 0) << p.out;
  const Decisions policy = parse_decisions(p.out, nullptr);
  const Decisions by_hand = {{0, 1, 2}, {1, 1, 2}, {2, 1, 2}};
  ASSERT_EQ(policy, by_hand);
  // The manager acts where the policy's answer differs from what ran: only in epoch 1.
  const auto m = run_limited("scale manage" + files + " --format json");
  ASSERT_EQ(m.code, 0) << m.out;
  const Decisions want = {{1, 1, 2}};
  EXPECT_EQ(parse_decisions(m.out, "decisions"), want) << m.out;
  EXPECT_EQ(m.out.find("targets raised"), std::string::npos) << m.out;
  EXPECT_EQ(m.out.find("rollback"), std::string::npos) << m.out;
}

TEST(ScaleManageFiles, DifferencesAreOptInAndSaid) {
  const WordCountFiles f;
  const std::string files = " --topology " + f.topology + " --rates " + f.rates;
  // --threshold 0.95: epoch 0's sources reach 2/3 of their target with a configuration
  // the policy finds sufficient, so the targets are raised 1.5x: flatmap 1.5 -> 2, count
  // 15000 / 6000 -> 3; --rollback then restores 1/1/2 when epoch 1's rate drops.
  const auto m = run_limited("scale manage" + files + " --threshold 0.95 --rollback");
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_NE(m.out.find("--threshold 0.95"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("epoch 0 (60 s): source=1 flatmap=2 count=3"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("targets raised 1.500x"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("epoch 1 (120 s): source=1 flatmap=1 count=2\n  rollback"),
            std::string::npos)
      << m.out;
  // Options that only make sense for a directory say so.
  EXPECT_EQ(run_limited("scale manage --trace x.jsonl --follow").code, 2);
}

}  // namespace
}  // namespace snailtrail::test_scale_manage_files
