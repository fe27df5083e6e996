// `snailtrail kernel critical-path` and the perf-sched importer from the command line,
// and the kernel model as events (threads as workers, wake-ups as control messages).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "importers/importer.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/to_trace.hpp"
#include "kernel_perf_text.hpp"
#include "pag/timeline.hpp"
#include "process_util.hpp"

namespace snailtrail::test_kernel_cli {
namespace {

namespace fs = std::filesystem;
using testing::PerfStyle;
using testing::PerfText;
using testing::Process;

constexpr int64_t kBase = 777'000'000'000;
int64_t us(int64_t x) {
  return kBase + x * 1000;
}

// A(100) waits on B(200), B sleeps on a timer (the nested case of test_kernel.cpp).
std::string nested_timer() {
  PerfText p(PerfStyle::kv);
  p.name(100, "client main");
  p.name(200, "worker 2");
  p.sched_switch(0, us(0), 0, "R", 100);
  p.sched_switch(1, us(0), 0, "R", 200);
  p.sched_switch(1, us(5), 200, "S", 0);
  p.sched_switch(0, us(10), 100, "S", 0);
  p.hrtimer_entry(1, us(30), 0);
  p.waking(1, us(30), 0, 200, 1);
  p.hrtimer_exit(1, us(30), 0);
  p.sched_switch(1, us(32), 0, "R", 200);
  p.waking(1, us(40), 200, 100, 0);
  p.sched_switch(0, us(41), 0, "R", 100);
  p.sched_switch(1, us(45), 200, "S", 0);
  p.sched_switch(0, us(50), 100, "S", 0);
  return p.text();
}

class KernelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("snailtrail-kcli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    trace_ = (dir_ / "sched.txt").string();
    std::ofstream(trace_) << nested_timer();
  }
  void TearDown() override { fs::remove_all(dir_); }
  int run(const std::vector<std::string>& args, std::string* out, std::string* err = nullptr) {
    Process p(args, dir_ / "out", dir_ / "err");
    const int rc = p.wait();
    if (out) *out = p.out();
    if (err) *err = p.err();
    return rc;
  }
  fs::path dir_;
  std::string trace_;
};

TEST_F(KernelCli, CriticalPathJson) {
  std::string out, err;
  ASSERT_EQ(
      run({"kernel", "critical-path", trace_, "--thread", "100", "--format", "json"}, &out, &err),
      0)
      << err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(out);
  EXPECT_EQ(int64_t(doc["thread"]["tid"]), 100);
  EXPECT_EQ(std::string_view(doc["thread"]["comm"]), "client main");
  EXPECT_EQ(int64_t(doc["from_ns"]), us(0));
  EXPECT_EQ(int64_t(doc["to_ns"]), us(50));
  const char* want[][3] = {{"0", "100", "running"},    {"10", "200", "timer"},
                           {"30", "200", "preempted"}, {"32", "200", "running"},
                           {"40", "100", "preempted"}, {"41", "100", "running"}};
  simdjson::dom::array path = doc["path"];
  ASSERT_EQ(path.size(), 6u);
  size_t k = 0;
  for (simdjson::dom::element s : path) {
    EXPECT_EQ(int64_t(s["start_ns"]), us(std::stoi(want[k][0])));
    EXPECT_EQ(int64_t(s["tid"]), std::stoi(want[k][1]));
    EXPECT_EQ(std::string_view(s["state"]), want[k][2]);
    ++k;
  }
  EXPECT_EQ(int64_t(doc["states"]["timer"]), 20'000);
  // The share per thread sums to 1: A 20 µs of 50, B 30 µs.
  simdjson::dom::array threads = doc["threads"];
  double sum = 0;
  for (simdjson::dom::element t : threads) sum += double(t["share"]);
  EXPECT_NEAR(sum, 1.0, 1e-9);
}

TEST_F(KernelCli, CriticalPathTableRangeAndName) {
  std::string out, err;
  // By comm, relative range: [20, 35] µs after the first event.
  ASSERT_EQ(run({"kernel", "critical-path", trace_, "--thread", "client main", "--from", "+20us",
                 "--to", "+35us"},
                &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("critical path of client main:100"), std::string::npos) << out;
  EXPECT_NE(out.find("worker 2:200"), std::string::npos) << out;
  EXPECT_NE(out.find("share per state"), std::string::npos) << out;
  EXPECT_NE(out.find("timer"), std::string::npos) << out;
  EXPECT_EQ(out.find("client main:100           "), std::string::npos) << out;  // not on it
}

TEST_F(KernelCli, ErrorsAndHelp) {
  std::string out, err;
  EXPECT_EQ(run({"kernel", "critical-path", trace_, "--thread", "nosuch"}, &out, &err), 2);
  EXPECT_NE(err.find("no thread with tid or comm 'nosuch'"), std::string::npos) << err;
  const std::string bad = (dir_ / "bad.txt").string();
  std::ofstream(bad) << "x 1 [000] 1.000001: sched:sched_switch: garbage\n";
  EXPECT_EQ(run({"kernel", "critical-path", bad, "--thread", "1"}, &out, &err), 1);
  EXPECT_NE(err.find("bad.txt: line 1: sched_switch"), std::string::npos) << err;
  ASSERT_EQ(run({"kernel", "critical-path", "--help"}, &out), 0);
  for (const char* flag : {"--thread", "--from", "--to", "--format", "--input-format"})
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
}

// analyze on a perf script text, detected by content: threads as workers, the timer as a
// pseudo-worker, CP along the wake-up chain.
TEST_F(KernelCli, AnalyzeDetectsPerfScript) {
  std::string out, err;
  ASSERT_EQ(run({"analyze", trace_}, &out, &err), 0) << err;
  EXPECT_NE(out.find("client main:100"), std::string::npos) << out;
  EXPECT_NE(out.find("[timer]"), std::string::npos) << out;
  const std::string snail = (dir_ / "k.snail").string();
  ASSERT_EQ(run({"convert", trace_, snail}, &out, &err), 0) << err;
  EXPECT_TRUE(fs::exists(snail));
}

TEST(KernelToTrace, ThreadsWorkersWakeupsMessages) {
  const kernel::KernelModel m =
      kernel::build_model(kernel::parse_perf_script(nested_timer(), "n.perf"));
  const Trace t = kernel::to_trace(m);
  // Workers: 2 threads + the [timer] pseudo-worker.
  EXPECT_EQ(t.worker_names.size(), 3u);
  EXPECT_EQ(t.worker_names.at(2), "[timer]");
  EXPECT_EQ(t.worker_names.at(0), "client main:100");
  int sends = 0, recvs = 0, processing = 0;
  for (const Event& e : t.events) {
    sends += e.kind == EventKind::send;
    recvs += e.kind == EventKind::recv;
    if (e.kind == EventKind::start && e.activity == ActivityType::processing) {
      ++processing;
      EXPECT_TRUE(e.has(kHasOperator));
    }
    if (e.kind == EventKind::send) {
      EXPECT_EQ(e.activity, ActivityType::control_message);
    }
  }
  EXPECT_EQ(sends, 2);  // the timer wakes B, B wakes A
  EXPECT_EQ(recvs, 2);
  EXPECT_EQ(processing, 4);  // A twice, B twice
  const Pag pag = build_pag(t);
  EXPECT_EQ(pag.messages.size(), 2u);
  for (const IssueAt& i : pag.issues)
    ADD_FAILURE() << "PAG issue " << kIssueNames[static_cast<int>(i.issue)];
}

}  // namespace
}  // namespace snailtrail::test_kernel_cli

namespace snailtrail::test_kernel_cli {
namespace {

TEST(KernelSniff, PerfScriptIsRecognisedByContent) {
  const std::string text = nested_timer();
  const importers::Importer* imp = importers::sniff_importer("trace.txt", text.substr(0, 4096));
  ASSERT_NE(imp, nullptr);
  EXPECT_EQ(imp->name, "perf-sched");
  EXPECT_EQ(kernel::sniff_perf_script("{\"traceEvents\": []}\n"), 0);
  EXPECT_EQ(kernel::sniff_perf_script("hello world\nfoo 1 [000] 1.0: cycles: x\n"), 0);
}

}  // namespace
}  // namespace snailtrail::test_kernel_cli
