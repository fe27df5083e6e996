// LTTng CTF kernel traces through libbabeltrace2: the tests write real CTF with
// babeltrace2's own writer (sink.ctf.fs fed by a Python source component,
// tests/kernel_ctf_writer.py, Debian python3-bt2), shaped like LTTng's kernel events, and
// check that the CTF reader and the perf script reader give the same model and critical
// path for the same scenario.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernel/critical_path.hpp"
#include "kernel/lttng_ctf.hpp"
#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/to_trace.hpp"
#include "kernel_dual_text.hpp"
#include "kernel_sim.hpp"
#include "trace/trace.hpp"

namespace snailtrail::test_kernel_lttng {
namespace {

namespace fs = std::filesystem;
using testing::PerfStyle;
using testing::PerfText;

bool have_bt2_python() {
  static const int rc = std::system("/usr/bin/python3 -c 'import bt2' >/dev/null 2>&1");
  return rc == 0;
}

using testing::DualText;
using Dual = DualText;

class KernelLttng : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernel::have_lttng_reader()) GTEST_SKIP() << "built without libbabeltrace2";
    if (!have_bt2_python()) GTEST_SKIP() << "python3-bt2 is not installed";
    dir_ = fs::temp_directory_path() /
           ("snailtrail-lttng-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // Writes the CTF trace of a spec; returns its directory.
  std::string write_ctf(const std::string& spec, const std::string& name = "trace",
                        const std::string& hostname = "") {
    const fs::path spec_file = dir_ / (name + ".spec");
    std::ofstream(spec_file) << spec;
    const fs::path out = dir_ / name;
    const std::string cmd =
        "/usr/bin/python3 " SNAILTRAIL_SOURCE_DIR "/tests/kernel_ctf_writer.py '" + out.string() +
        "' " + hostname + " < '" + spec_file.string() + "' >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out.string();
  }
  fs::path dir_;
};

constexpr int64_t kBase = 5000'000'000'000;
int64_t us(int64_t x) {
  return kBase + x * 1000;
}

// Seed 002's nested case with a network wait: A(100) waits on B(200); B waits for a
// packet (NET_RX softirq); B forks C(300) which runs briefly.
Dual scenario() {
  Dual d;
  d.name(100, "client main");
  d.name(200, "server");
  d.name(300, "helper 3");
  d.sched_switch(0, us(0), 0, "R", 100);
  d.sched_switch(1, us(1), 0, "R", 200);
  d.sched_switch(1, us(5), 200, "S", 0);
  d.sched_switch(0, us(10), 100, "S", 0);
  d.softirq_entry(1, us(30), 0, 3);
  d.net_receive(1, us(30), 0);
  d.waking(1, us(30), 0, 200);
  d.softirq_exit(1, us(31), 0, 3);
  d.sched_switch(1, us(32), 0, "R", 200);
  d.fork(1, us(33), 200, 300);
  d.waking(1, us(40), 200, 100);
  d.sched_switch(0, us(41), 0, "R", 100);
  d.sched_switch(1, us(42), 200, "R+", 300);
  d.hrtimer_entry(0, us(44), 100);
  d.hrtimer_exit(0, us(44), 100);
  d.sched_switch(1, us(45), 300, "X", 200);
  d.sched_switch(0, us(50), 100, "S", 0);
  d.sched_switch(1, us(52), 200, "S", 0);
  return d;
}

void expect_same_models(const kernel::KernelModel& a, const kernel::KernelModel& b) {
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) {
    const kernel::Thread& x = a.threads[i];
    const kernel::Thread& y = b.threads[i];
    EXPECT_EQ(x.tid, y.tid);
    EXPECT_EQ(a.comm(static_cast<int32_t>(i)), b.comm(static_cast<int32_t>(i)));
    EXPECT_EQ(x.parent, y.parent);
    EXPECT_EQ(x.birth, y.birth);
    ASSERT_EQ(x.intervals.size(), y.intervals.size()) << "tid " << x.tid;
    for (size_t k = 0; k < x.intervals.size(); ++k) {
      EXPECT_EQ(x.intervals[k].start, y.intervals[k].start);
      EXPECT_EQ(x.intervals[k].end, y.intervals[k].end);
      EXPECT_EQ(x.intervals[k].state, y.intervals[k].state);
      EXPECT_EQ(x.intervals[k].cause, y.intervals[k].cause);
      EXPECT_EQ(x.intervals[k].waker, y.intervals[k].waker);
    }
  }
}

TEST_F(KernelLttng, SameModelAndCriticalPathAsPerfScript) {
  const Dual d = scenario();
  const std::string ctf = write_ctf(d.spec);
  const kernel::KernelModel from_ctf = kernel::build_model(kernel::read_lttng_ctf(ctf));
  const kernel::KernelModel from_perf =
      kernel::build_model(kernel::parse_perf_script(d.text(), "s.perf"));
  EXPECT_EQ(from_ctf.events, from_perf.events);
  expect_same_models(from_ctf, from_perf);
  EXPECT_TRUE(from_ctf.diagnostics.items().empty()) << from_ctf.diagnostics.items()[0].first;
  // By hand: A running 0-10 | B network 10-30 | B preempted 30-32 | B running 32-40 |
  //          A preempted 40-41 | A running 41-50.
  const auto idx = from_ctf.find_tid(100);
  ASSERT_EQ(idx.size(), 1u);
  const auto r = kernel::critical_path(from_ctf, idx[0], us(0), us(50));
  std::vector<std::tuple<int64_t, int64_t, int, std::string>> got;
  for (const auto& s : r.path)
    got.emplace_back((s.start - kBase) / 1000, (s.end - kBase) / 1000,
                     from_ctf.threads[s.thread].tid, std::string(kernel::name_of(s.state)));
  const std::vector<std::tuple<int64_t, int64_t, int, std::string>> want = {
      {0, 10, 100, "running"},  {10, 30, 200, "network"},   {30, 32, 200, "preempted"},
      {32, 40, 200, "running"}, {40, 41, 100, "preempted"}, {41, 50, 100, "running"}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(from_ctf.comm(idx[0]), "client main");
}

// A session directory (as `lttng create` makes: kernel/ below it) is searched for traces.
TEST_F(KernelLttng, SessionDirectoryAndStatedump) {
  Dual d;
  d.name(100, "waiter");
  d.name(200, "poster");
  // Statedump at the start: 100 is blocked (status 5 = WAIT) before any of its events.
  d.line(us(0), 0, "lttng_statedump_process_state tid=100 pid=100 ppid=1 name=waiter status=5");
  d.sched_switch(0, us(1), 0, "R", 200);
  d.waking(0, us(20), 200, 100);
  d.sched_switch(0, us(21), 200, "S", 100);
  d.sched_switch(0, us(30), 100, "S", 0);
  d.line(us(31), 0, "sched_stat_runtime comm=x tid=100 runtime=5 vruntime=6");
  fs::create_directories(dir_ / "session");
  write_ctf(d.spec, "session/kernel");
  const kernel::KernelModel m =
      kernel::build_model(kernel::read_lttng_ctf((dir_ / "session").string()));
  EXPECT_EQ(m.diagnostics.get("lttng.unknown_event"), 1u);
  const auto idx = m.find_tid(100);
  ASSERT_EQ(idx.size(), 1u);
  const auto& ivs = m.threads[idx[0]].intervals;
  ASSERT_FALSE(ivs.empty());
  // Thanks to the statedump the wait from 0 to 20 is known, and resolved to its waker.
  EXPECT_EQ(ivs[0].start, us(0));
  EXPECT_EQ(ivs[0].end, us(20));
  EXPECT_EQ(ivs[0].cause, kernel::WakeCause::thread);
  EXPECT_EQ(m.threads[ivs[0].waker].tid, 200);
}

// Random schedules (tests/kernel_sim.hpp) written as perf text and as CTF: the two
// readers give the same model, and the model equals the simulation's truth.
TEST_F(KernelLttng, RandomSchedulesSameModelBothReaders) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    testing::Sim<DualText> sim(seed, PerfStyle::kv, DualText());
    sim.run(3 + static_cast<int>(seed % 4), 1 + static_cast<int>(seed % 3), 30);
    const std::string ctf = write_ctf(sim.p.spec, "sim" + std::to_string(seed));
    const kernel::KernelModel a = kernel::build_model(kernel::read_lttng_ctf(ctf));
    const kernel::KernelModel b =
        kernel::build_model(kernel::parse_perf_script(sim.p.text(), "sim.perf"));
    EXPECT_EQ(a.events, b.events);
    expect_same_models(a, b);
    EXPECT_TRUE(a.diagnostics.items().empty()) << a.diagnostics.items()[0].first;
    size_t truth_intervals = 0, model_intervals = 0;
    for (const auto& [tid, t] : sim.th) truth_intervals += t.ivs.size();
    for (const auto& t : a.threads) model_intervals += t.intervals.size();
    EXPECT_EQ(model_intervals, truth_intervals);
  }
}

// Seed 002's client and server on two hosts over the network, as lttng-relayd stores a
// two-host session (one trace per host, each with its `hostname`), with lttng-modules'
// extended network headers on net_dev_queue / net_if_receive_skb. Host B's clock reads
// `skew_ns` more than host A's.
std::string two_host_spec(bool host_b, int64_t skew_ns) {
  auto t = [&](int64_t us_) { return std::to_string(kBase + us_ * 1000 + (host_b ? skew_ns : 0)); };
  auto sw = [&](int64_t at, int prev, const char* pcomm, int pstate, int next, const char* ncomm) {
    return t(at) + " 0 sched_switch prev_comm=" + pcomm + " prev_tid=" + std::to_string(prev) +
           " prev_prio=20 prev_state=" + std::to_string(pstate) + " next_comm=" + ncomm +
           " next_tid=" + std::to_string(next) + " next_prio=20\n";
  };
  auto net = [&](int64_t at, const char* event, const char* tcp) {
    return t(at) + " 0 " + event + " skbaddr=1 len=100 name=eth0 tcp=" + tcp + "\n";
  };
  auto rx_wake = [&](int64_t at, const char* tcp, int tid, const char* comm) {
    return t(at) + " 0 irq_softirq_entry vec=3\n" + net(at, "net_if_receive_skb", tcp) + t(at) +
           " 0 sched_waking comm=" + comm + " tid=" + std::to_string(tid) +
           " prio=20 target_cpu=0\n" + t(at) + " 0 irq_softirq_exit vec=3\n";
  };
  const char* request = "10.0.0.1:40000>10.0.0.2:80,1000,5000,0x18";
  const char* reply = "10.0.0.2:80>10.0.0.1:40000,5000,1100,0x18";
  if (!host_b)  // the client: sends the request at 10, blocks at 11, the reply wakes it at 35
    return sw(0, 0, "swapper/0", 0, 100, "client") + net(10, "net_dev_queue", request) +
           sw(11, 100, "client", 1, 0, "swapper/0") + rx_wake(35, reply, 100, "client") +
           sw(36, 0, "swapper/0", 0, 100, "client") + sw(40, 100, "client", 1, 0, "swapper/0");
  // The server: blocked from 1 until the request arrives at 15, replies at 30.
  return sw(0, 0, "swapper/0", 0, 200, "server") + sw(1, 200, "server", 1, 0, "swapper/0") +
         rx_wake(15, request, 200, "server") + sw(16, 0, "swapper/0", 0, 200, "server") +
         net(30, "net_dev_queue", reply) + sw(31, 200, "server", 1, 0, "swapper/0");
}

using PathRow = std::tuple<int64_t, int64_t, std::string, std::string>;
std::vector<PathRow> path_rows(const kernel::KernelModel& m, int32_t thread, int64_t from,
                               int64_t to) {
  std::vector<PathRow> got;
  for (const auto& s : kernel::critical_path(m, thread, from, to).path)
    got.emplace_back((s.start - kBase) / 1000, (s.end - kBase) / 1000, m.thread_label(s.thread),
                     std::string(kernel::name_of(s.state)));
  return got;
}

TEST_F(KernelLttng, ClientAndServerOnTwoHostsOverTheNetwork) {
  for (const int64_t skew : {int64_t{0}, int64_t{1'000'000'000}, int64_t{-250'000'000}}) {
    SCOPED_TRACE("host b's clock ahead by " + std::to_string(skew) + " ns");
    const fs::path session = dir_ / ("relayd" + std::to_string(skew));
    fs::create_directories(session / "a" / "s");
    fs::create_directories(session / "b" / "s");
    write_ctf(two_host_spec(false, skew), session.filename().string() + "/a/s/kernel", "hosta");
    write_ctf(two_host_spec(true, skew), session.filename().string() + "/b/s/kernel", "hostb");
    const kernel::KernelModel m = kernel::build_model(kernel::read_lttng_ctf(session.string()));
    ASSERT_EQ(m.hosts.size(), 2u);
    EXPECT_TRUE(m.multi_host());
    // Both packets match their sender; host b's clock is brought back onto host a's (the
    // minimum delays are 5 us both ways, so the estimate is exact).
    EXPECT_EQ(m.packets_matched, 2u);
    ASSERT_EQ(m.host_offsets_ns.size(), 2u);
    const size_t b = m.hosts[0] == "hostb" ? 0 : 1;
    EXPECT_EQ(m.host_offsets_ns[b] - m.host_offsets_ns[1 - b], -skew);
    const auto client = m.find_comm("client");
    ASSERT_EQ(client.size(), 1u);
    EXPECT_EQ(m.thread_label(client[0]), "hosta/client:100");
    // By hand: the client runs 0-11 and waits for the reply 11-35. The reply left the
    // server at 30 (network 30-35); before, the server ran 16-30, was runnable 15-16 after
    // the request's arrival woke it, and the request was in flight over 11-15 (it left the
    // client at 10, before the wait began: no further hop).
    const int64_t shift = m.host_offsets_ns[m.threads[client[0]].host];
    const std::vector<PathRow> want = {
        {0, 11, "hosta/client:100", "running"},    {11, 15, "hostb/server:200", "network"},
        {15, 16, "hostb/server:200", "preempted"}, {16, 30, "hostb/server:200", "running"},
        {30, 35, "hosta/client:100", "network"},   {35, 36, "hosta/client:100", "preempted"},
        {36, 40, "hosta/client:100", "running"}};
    EXPECT_EQ(path_rows(m, client[0], kBase + shift, kBase + shift + 40'000), want);
    // The CP view: the packets become data messages between the two hosts' threads.
    const Trace tr = kernel::to_trace(m);
    int data_messages = 0;
    for (const Event& e : tr.events)
      if (e.kind == EventKind::send && e.activity == ActivityType::data_message) {
        ++data_messages;
        EXPECT_NE(tr.worker_names.at(e.worker).substr(0, 6),
                  tr.worker_names.at(e.remote).substr(0, 6));
      }
    EXPECT_EQ(data_messages, 2);
  }
}

// Without the other host's trace the reply's sender is unknown: the wait stays `network`
// (as with perf script text, which has no packet identity), and nothing is shifted.
TEST_F(KernelLttng, PacketFromAnUntracedHostEndsThePathInNetwork) {
  const std::string ctf = write_ctf(two_host_spec(false, 0), "alone", "hosta");
  const kernel::KernelModel m = kernel::build_model(kernel::read_lttng_ctf(ctf));
  EXPECT_FALSE(m.multi_host());
  EXPECT_EQ(m.packets_matched, 0u);
  const auto client = m.find_comm("client");
  ASSERT_EQ(client.size(), 1u);
  const std::vector<PathRow> want = {{0, 11, "client:100", "running"},
                                     {11, 35, "client:100", "network"},
                                     {35, 36, "client:100", "preempted"},
                                     {36, 40, "client:100", "running"}};
  EXPECT_EQ(path_rows(m, client[0], kBase, kBase + 40'000), want);
}

TEST_F(KernelLttng, BadTracesAreClearErrors) {
  const std::string ctf = write_ctf(scenario().spec);
  // Truncated stream files.
  for (const auto& e : fs::directory_iterator(ctf))
    if (e.path().filename().string().starts_with("stream"))
      fs::resize_file(e.path(), fs::file_size(e.path()) / 2);
  try {
    kernel::read_lttng_ctf(ctf);
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(ctf), std::string::npos) << e.what();
  }
  EXPECT_THROW(kernel::read_lttng_ctf((dir_ / "nothing").string()), TraceError);
  fs::create_directories(dir_ / "empty");
  EXPECT_THROW(kernel::read_lttng_ctf((dir_ / "empty").string()), TraceError);
  // Garbage metadata.
  fs::create_directories(dir_ / "garbage");
  std::ofstream(dir_ / "garbage" / "metadata") << "/* CTF 1.8 */ trace { major = ; };";
  EXPECT_THROW(kernel::read_lttng_ctf((dir_ / "garbage").string()), TraceError);
}

}  // namespace
}  // namespace snailtrail::test_kernel_lttng
