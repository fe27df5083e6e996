// Kernel traces as users bring them (issue 34): CTF converted from perf (`perf data
// convert --to-ctf`, written here by tests/kernel_ctf_writer.py --perf in the shape perf's
// converter gives it), waits named by their IRQ or softirq, empty stream files, traces
// without a usable event, CTF directories given to `analyze`, and the tables' zero rows.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernel/critical_path.hpp"
#include "kernel/load.hpp"
#include "kernel/lttng_ctf.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/perf_stream.hpp"
#include "kernel/to_trace.hpp"
#include "kernel_dual_text.hpp"
#include "process_util.hpp"
#include "trace/trace.hpp"

namespace snailtrail::test_kernel_perf_ctf {
namespace {

namespace fs = std::filesystem;
using testing::DualText;
using testing::PerfStyle;
using testing::PerfText;
using testing::Process;

constexpr int64_t kBase = 6000'000'000'000;
int64_t us(int64_t x) {
  return kBase + x * 1000;
}

bool have_bt2_python() {
  static const int rc = std::system("/usr/bin/python3 -c 'import bt2' >/dev/null 2>&1");
  return rc == 0;
}

class KernelCtf : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("snailtrail-kctf-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void need_ctf() {
    if (!kernel::have_lttng_reader()) GTEST_SKIP() << "built without libbabeltrace2";
    if (!have_bt2_python()) GTEST_SKIP() << "python3-bt2 is not installed";
  }
  // The CTF trace of a spec (`perf`: as perf's converter writes it); its directory.
  std::string write_ctf(const std::string& spec, const std::string& name, bool perf) {
    const fs::path spec_file = dir_ / (name + ".spec");
    std::ofstream(spec_file) << spec;
    const fs::path out = dir_ / name;
    const std::string cmd =
        "/usr/bin/python3 " SNAILTRAIL_SOURCE_DIR "/tests/kernel_ctf_writer.py '" + out.string() +
        "' " + (perf ? "myhost --perf" : "") + " < '" + spec_file.string() + "' >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out.string();
  }
  int run(const std::vector<std::string>& args, std::string* out, std::string* err) {
    Process p(args, dir_ / "out", dir_ / "err");
    const int rc = p.wait();
    *out = p.out();
    *err = p.err();
    return rc;
  }
  fs::path dir_;
};

// A(100) blocks and is woken from IRQ 16's handler on CPU 1; B(200) blocks and is woken
// from the TASKLET softirq; then A wakes B... By hand, A's path over [0, 60]:
//   A running 0-10 | A interrupt (irq 16 (nvme0q16)) 10-20 | A preempted 20-21 |
//   A running 21-30 | A blocked-on-B: B's path 30-50: B interrupt (softirq TASKLET) 30-40,
//   B preempted 40-42, B running 42-50 | A preempted 50-51 | A running 51-60.
DualText irq_scenario() {
  DualText d;
  d.name(100, "app");
  d.name(200, "helper");
  d.sched_switch(0, us(0), 0, "R", 100);
  d.sched_switch(1, us(0), 0, "R", 200);
  d.sched_switch(1, us(5), 200, "S", 0);
  d.sched_switch(0, us(10), 100, "S", 0);
  d.irq_entry(1, us(20), 0, 16);
  d.waking(1, us(20), 0, 100, 0);
  d.irq_exit(1, us(20), 0, 16);
  d.sched_switch(0, us(21), 0, "R", 100);
  d.sched_switch(0, us(30), 100, "S", 0);
  d.softirq_entry(1, us(40), 0, 6);
  d.waking(1, us(40), 0, 200, 1);
  d.softirq_exit(1, us(40), 0, 6);
  d.sched_switch(1, us(42), 0, "R", 200);
  d.waking(1, us(50), 200, 100, 0);
  d.sched_switch(0, us(51), 0, "R", 100);
  d.sched_switch(1, us(55), 200, "S", 0);
  d.sched_switch(0, us(60), 100, "S", 0);
  return d;
}

using Row = std::tuple<int64_t, int64_t, std::string, std::string>;  // us, us, tid, state

std::vector<Row> path_rows(const kernel::KernelModel& m, int64_t to_us) {
  const auto a = m.find_tid(100);
  EXPECT_EQ(a.size(), 1u);
  if (a.size() != 1) return {};
  const kernel::CriticalPathResult r = kernel::critical_path(m, a[0], us(0), us(to_us));
  std::vector<Row> rows;
  for (const kernel::PathSegment& s : r.path) {
    std::string state(kernel::name_of(s.state));
    const std::string irq = kernel::irq_label(m.strings, s.irq);
    if (!irq.empty()) state += " " + irq;
    rows.emplace_back((s.start - kBase) / 1000, (s.end - kBase) / 1000,
                      std::to_string(m.threads[s.thread].tid), state);
  }
  return rows;
}

const std::vector<Row> kIrqPath = {
    {0, 10, "100", "running"},
    {10, 20, "100", "interrupt irq 16 (nvme0q16)"},
    {20, 21, "100", "preempted"},
    {21, 30, "100", "running"},
    {30, 40, "200", "interrupt softirq TASKLET"},
    {40, 42, "200", "preempted"},
    {42, 50, "200", "running"},
    {50, 51, "100", "preempted"},
    {51, 60, "100", "running"},
};

TEST(KernelIrq, WaitsNameTheirIrqOrSoftirq) {
  const DualText d = irq_scenario();
  const kernel::KernelModel m = kernel::build_model(kernel::parse_perf_script(d.text(), "s"));
  EXPECT_EQ(path_rows(m, 60), kIrqPath);
}

TEST(KernelIrq, LabelsOfEveryContext) {
  kernel::StringTable strings;
  const uint32_t ahci = strings.intern("ahci");
  using kernel::IrqKind;
  EXPECT_EQ(kernel::irq_label(strings, {IrqKind::irq, 16, ahci}), "irq 16 (ahci)");
  EXPECT_EQ(kernel::irq_label(strings, {IrqKind::irq, 9, 0}), "irq 9");
  EXPECT_EQ(kernel::irq_label(strings, {IrqKind::softirq, 3, 0}), "softirq NET_RX");
  EXPECT_EQ(kernel::irq_label(strings, {IrqKind::softirq, 9, 0}), "softirq RCU");
  EXPECT_EQ(kernel::irq_label(strings, {IrqKind::softirq, 12, 0}), "softirq 12");
  EXPECT_EQ(kernel::irq_label(strings, {IrqKind::hrtimer, -1, 0}), "hrtimer");
  EXPECT_EQ(kernel::irq_label(strings, {}), "");
}

// irq_scenario, plus C(300) woken from the NET_RX softirq (a packet received in it) and
// D(400) woken by an hrtimer, on CPU 2.
DualText every_interrupt_scenario() {
  DualText d = irq_scenario();
  d.name(300, "rx");
  d.name(400, "sleeper");
  d.sched_switch(2, us(61), 0, "R", 300);
  d.sched_switch(2, us(62), 300, "S", 400);
  d.sched_switch(2, us(63), 400, "S", 0);
  d.softirq_entry(2, us(70), 0, 3);
  d.net_receive(2, us(70), 0);
  d.waking(2, us(70), 0, 300, 2);
  d.softirq_exit(2, us(70), 0, 3);
  d.hrtimer_entry(2, us(75), 0);
  d.waking(2, us(75), 0, 400, 2);
  d.hrtimer_exit(2, us(75), 0);
  d.sched_switch(2, us(76), 0, "R", 300);
  d.sched_switch(2, us(80), 300, "S", 400);
  d.sched_switch(2, us(90), 400, "S", 0);
  return d;
}

// Who woke whom, as analyze sees it: (sender's worker name, receiver's, receive time in us).
using Wake = std::tuple<std::string, std::string, int64_t>;
std::vector<Wake> wakeups(const Trace& t) {
  std::vector<Wake> out;
  for (const Event& e : t.events)
    if (e.kind == EventKind::recv)
      out.emplace_back(t.worker_names.at(e.remote), t.worker_names.at(e.worker),
                       (e.ts - kBase) / 1000);
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<Wake> kEveryWakeup = {
    {"[interrupt: irq 16 (nvme0q16)]", "app:100", 20},
    {"[interrupt: softirq TASKLET]", "helper:200", 40},
    {"[network: softirq NET_RX]", "rx:300", 70},
    {"[timer]", "sleeper:400", 75},  // an hrtimer: the cause says it all
    {"helper:200", "app:100", 50},
};

// analyze, report and serve see a kernel trace through to_trace: the pseudo-workers that
// send interrupt wake-ups name their IRQ or softirq, as `kernel critical-path` does.
TEST(KernelIrq, AnalyzeNamesTheIrqOrSoftirqOfAWakeup) {
  const DualText d = every_interrupt_scenario();
  const Trace batch =
      kernel::to_trace(kernel::build_model(kernel::parse_perf_script(d.text(), "s")));
  EXPECT_EQ(wakeups(batch), kEveryWakeup);
  // serve --follow reads the same text as a stream: the same names.
  kernel::PerfSchedStream stream("s");
  Trace streamed;
  stream.feed(d.text(), streamed);
  stream.finish(streamed);
  EXPECT_EQ(wakeups(streamed), kEveryWakeup);
  // Labels of the pseudo-workers, and their order (cause, then context).
  kernel::StringTable strings;
  const uint32_t ahci = strings.intern("ahci");
  using kernel::IrqKind;
  using kernel::WakeCause;
  EXPECT_EQ(kernel::pseudo_worker_name({WakeCause::interrupt, {IrqKind::irq, 16, ahci}}, strings),
            "[interrupt: irq 16 (ahci)]");
  EXPECT_EQ(
      kernel::pseudo_worker_name({WakeCause::block_device, {IrqKind::softirq, 4, 0}}, strings),
      "[block_device: softirq BLOCK]");
  EXPECT_EQ(kernel::pseudo_worker_name({WakeCause::interrupt, {}}, strings), "[interrupt]");
  std::map<std::string, uint32_t> ids;
  for (const auto& [w, name] : batch.worker_names) ids[name] = w;
  EXPECT_LT(ids.at("[timer]"), ids.at("[network: softirq NET_RX]"));
  EXPECT_LT(ids.at("[interrupt: irq 16 (nvme0q16)]"), ids.at("[interrupt: softirq TASKLET]"));
}

TEST_F(KernelCtf, PerfConvertedCtfReadsAsPerfScriptDoes) {
  need_ctf();
  const DualText d = irq_scenario();
  const std::string perf_ctf = write_ctf(d.perf_spec, "perf-ctf", true);
  const std::string lttng = write_ctf(d.spec, "lttng", false);
  const kernel::KernelEvents ev = kernel::read_lttng_ctf(perf_ctf);
  ASSERT_EQ(ev.events.size(), 17u);  // every line of the scenario
  const kernel::KernelModel from_perf_ctf = kernel::build_model(kernel::read_lttng_ctf(perf_ctf));
  const kernel::KernelModel from_lttng = kernel::build_model(kernel::read_lttng_ctf(lttng));
  const kernel::KernelModel from_text =
      kernel::build_model(kernel::parse_perf_script(d.text(), "s"));
  EXPECT_EQ(path_rows(from_perf_ctf, 60), kIrqPath);
  EXPECT_EQ(path_rows(from_lttng, 60), kIrqPath);
  EXPECT_EQ(from_perf_ctf.threads.size(), from_text.threads.size());
  for (const auto& m : {&from_perf_ctf, &from_lttng})
    EXPECT_TRUE(m->diagnostics.items().empty()) << m->diagnostics.items()[0].first;
  ASSERT_EQ(from_perf_ctf.hosts.size(), 1u);
  EXPECT_EQ(from_perf_ctf.hosts[0], "myhost");  // perf's environment says `host`
  // The command reads it too, with times.
  std::string out, err;
  ASSERT_EQ(run({"kernel", "threads", perf_ctf}, &out, &err), 0) << err;
  EXPECT_EQ(out.rfind("17 events, 2 threads, 3 wake-ups", 0), 0u) << out;
}

TEST_F(KernelCtf, TraceWithoutUsableEventsIsAnError) {
  need_ctf();
  const std::string ctf =
      write_ctf(std::to_string(us(1)) + " 0 kmem:kmalloc _tid=7 call_site=1 ptr=2 bytes_req=64\n" +
                    std::to_string(us(2)) + " 0 kmem:kfree _tid=7 call_site=1 ptr=2\n",
                "kmem", true);
  try {
    kernel::read_lttng_ctf(ctf);
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(ctf), std::string::npos) << what;
    EXPECT_NE(what.find("2 events of other kinds"), std::string::npos) << what;
    EXPECT_NE(what.find("'kmem:kmalloc'"), std::string::npos) << what;
  }
  std::string out, err;
  EXPECT_EQ(run({"kernel", "threads", ctf}, &out, &err), 1) << out;
  EXPECT_NE(err.find("no scheduler or interrupt event read"), std::string::npos) << err;
}

TEST_F(KernelCtf, PerfScriptWithoutUsableEventsIsAnError) {
  const std::string text =
      "             app    100 [000] 6000.000001:   sched:sched_stat_runtime: comm=app pid=100 "
      "runtime=1000 [ns] vruntime=5000 [ns]\n"
      "             app    100 [000] 6000.000002:   sched:sched_stat_runtime: comm=app pid=100 "
      "runtime=1000 [ns] vruntime=6000 [ns]\n";
  try {
    kernel::parse_perf_script(text, "stat.txt");
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("2 perf script samples, none of an event the model uses"),
              std::string::npos)
        << e.what();
  }
  const std::string file = (dir_ / "stat.txt").string();
  std::ofstream(file) << text;
  std::string out, err;
  EXPECT_EQ(run({"kernel", "threads", file}, &out, &err), 1) << out;
  EXPECT_EQ(out, "");
}

TEST_F(KernelCtf, EmptyStreamFileIsNamed) {
  need_ctf();
  const std::string ctf = write_ctf(irq_scenario().spec, "cut", false);
  std::vector<fs::path> streams;
  for (const auto& e : fs::directory_iterator(ctf))
    if (e.path().filename() != "metadata") streams.push_back(e.path());
  ASSERT_EQ(streams.size(), 2u);  // one per CPU
  std::sort(streams.begin(), streams.end());
  const kernel::KernelEvents whole = kernel::read_lttng_ctf(ctf);
  EXPECT_TRUE(whole.warnings.empty());
  fs::resize_file(streams[1], 0);
  const kernel::KernelEvents cut = kernel::read_lttng_ctf(ctf);
  EXPECT_LT(cut.events.size(), whole.events.size());
  EXPECT_GT(cut.events.size(), 0u);
  EXPECT_EQ(cut.diagnostics.get("lttng.empty_stream"), 1u);
  ASSERT_EQ(cut.warnings.size(), 1u);
  EXPECT_NE(cut.warnings[0].find(streams[1].string() + " is empty (0 bytes)"), std::string::npos)
      << cut.warnings[0];
  std::string out, err;
  ASSERT_EQ(run({"kernel", "threads", ctf}, &out, &err), 0) << err;
  EXPECT_NE(err.find("warning: " + streams[1].string() + " is empty"), std::string::npos) << err;
}

// Found by fuzz/fuzz_ctf.cpp: babeltrace2 2.0 aborts the process (an assertion in its
// CTF message iterator) on a packet whose content_size reads as >= 2^63. The reader runs
// babeltrace2 in a child process: the damage is an error naming the trace, not a crash.
TEST_F(KernelCtf, DamagedPacketContextIsAnErrorNotACrash) {
  need_ctf();
  const std::string ctf = write_ctf(irq_scenario().spec, "damaged", false);
  fs::path stream;
  for (const auto& e : fs::directory_iterator(ctf))
    if (e.path().filename() != "metadata") stream = e.path();
  ASSERT_FALSE(stream.empty());
  // One packet per stream file: its context's packet_size (bits) is the file's size;
  // content_size follows it. Make content_size 2^64 - 2.
  std::string bytes;
  {
    std::ifstream in(stream, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const uint64_t bits = bytes.size() * 8;
  const std::string packet_size(reinterpret_cast<const char*>(&bits), 8);
  const size_t at = bytes.find(packet_size);
  ASSERT_LT(at, 64u) << "no packet_size in the packet context";
  const uint64_t huge = ~uint64_t{1};
  bytes.replace(at + 8, 8, std::string(reinterpret_cast<const char*>(&huge), 8));
  std::ofstream(stream, std::ios::binary | std::ios::trunc) << bytes;
  try {
    kernel::read_lttng_ctf(ctf);
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(ctf + ": read: babeltrace2 stopped on a damaged trace", 0), 0u) << what;
  }
  std::string out, err;
  EXPECT_EQ(run({"kernel", "threads", ctf}, &out, &err), 1) << out;
  EXPECT_NE(err.find("damaged trace"), std::string::npos) << err;
  // Errors babeltrace2 reports itself still come through with their text.
  std::ofstream(fs::path(ctf) / "metadata", std::ios::trunc) << "/* CTF 1.8 */\ntrace {";
  try {
    kernel::read_lttng_ctf(ctf);
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(ctf + ": ", 0), 0u) << e.what();
  }
}

TEST_F(KernelCtf, AnalyzeTakesACtfDirectory) {
  need_ctf();
  const DualText d = irq_scenario();
  for (const auto& [name, perf] : {std::pair{"perf-ctf", true}, std::pair{"lttng", false}}) {
    const std::string ctf = write_ctf(perf ? d.perf_spec : d.spec, name, perf);
    std::string out, err;
    ASSERT_EQ(run({"analyze", ctf, "--format", "jsonl"}, &out, &err), 0) << name << ": " << err;
    EXPECT_EQ(err.find("Is a directory"), std::string::npos) << err;
    // JSON lines of the threads' critical participation, app (tid 100) among them.
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(out.substr(0, out.find('\n'))).get(doc), simdjson::SUCCESS) << out;
    EXPECT_NE(out.find("app"), std::string::npos) << out;
  }
  // perf script text and both CTF shapes name the IRQs and softirqs of wake-ups alike.
  const DualText every = every_interrupt_scenario();
  const std::string text_file = (dir_ / "every.txt").string();
  std::ofstream(text_file) << every.text();
  for (const std::string& trace : {text_file, write_ctf(every.perf_spec, "every-perf", true),
                                   write_ctf(every.spec, "every-lttng", false)}) {
    EXPECT_EQ(wakeups(kernel::to_trace(kernel::load_kernel_model(trace))), kEveryWakeup) << trace;
    std::string out, err;
    ASSERT_EQ(run({"analyze", trace, "--format", "jsonl"}, &out, &err), 0) << trace << err;
    EXPECT_NE(out.find("[interrupt: irq 16 (nvme0q16)]"), std::string::npos) << trace << out;
  }
  // A session directory (kernel/ below it) is a CTF directory too.
  fs::create_directories(dir_ / "session");
  fs::rename(dir_ / "lttng", dir_ / "session" / "kernel");
  std::string out, err;
  EXPECT_EQ(run({"analyze", (dir_ / "session").string()}, &out, &err), 0) << err;
}

// A(100) waits on B(200), which runs only 200 ns of that wait after C(300) woke it: B's
// share of A's path is 0.000 ms, and its row is left out (said in a note).
TEST_F(KernelCtf, ShareTableLeavesOutZeroRows) {
  PerfText p(PerfStyle::compact);
  p.name(100, "app");
  p.name(200, "tiny");
  p.name(300, "waker");
  const int64_t t0 = kBase;
  p.sched_switch(0, t0, 0, "R", 100);
  p.sched_switch(1, t0, 0, "R", 300);
  p.sched_switch(2, t0, 0, "R", 200);
  p.sched_switch(2, t0 + 5'000, 200, "S", 0);
  p.sched_switch(0, t0 + 10'000, 100, "S", 0);
  p.waking(1, t0 + 20'000, 300, 200, 2);
  p.sched_switch(2, t0 + 20'100, 0, "R", 200);
  p.waking(2, t0 + 20'200, 200, 100, 0);
  p.sched_switch(0, t0 + 20'300, 0, "R", 100);
  p.sched_switch(2, t0 + 20'400, 200, "S", 0);
  p.sched_switch(0, t0 + 30'000'000, 100, "S", 0);
  p.sched_switch(1, t0 + 30'000'000, 300, "S", 0);
  const std::string file = (dir_ / "sched.txt").string();
  std::ofstream(file) << p.text();
  std::string out, err;
  ASSERT_EQ(run({"kernel", "critical-path", file, "--thread", "100"}, &out, &err), 0) << err;
  const std::string shares = out.substr(out.find("share per thread"));
  EXPECT_NE(shares.find("app:100"), std::string::npos) << out;
  EXPECT_NE(shares.find("waker:300"), std::string::npos) << out;
  EXPECT_EQ(shares.substr(0, shares.find("share per state")).find("tiny:200"), std::string::npos)
      << out;
  EXPECT_NE(shares.find("(1 threads under 0.001 ms left out"), std::string::npos) << out;
  // JSON keeps every thread.
  ASSERT_EQ(run({"kernel", "critical-path", file, "--thread", "100", "-f", "json"}, &out, &err), 0);
  EXPECT_NE(out.find("\"comm\": \"tiny\", \"ns\": 200"), std::string::npos) << out;
}

}  // namespace
}  // namespace snailtrail::test_kernel_perf_ctf
