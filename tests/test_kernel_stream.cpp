// A growing perf script text read as a stream (serve --follow, kernel/perf_stream.hpp):
// fed in random chunks, it must give the same events as the batch importer (to_trace on
// the whole model), up to worker ids and message correlators, with every worker's events
// in time order.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernel/model.hpp"
#include "kernel/perf_script.hpp"
#include "kernel/perf_stream.hpp"
#include "kernel/to_trace.hpp"
#include "kernel_perf_text.hpp"
#include "kernel_sim.hpp"
#include "trace/trace.hpp"

namespace snailtrail::test_kernel_stream {
namespace {

using testing::PerfStyle;
using testing::PerfText;
using testing::Sim;

// An event by names: (worker, ts, kind, activity, operator, remote worker).
using Named = std::tuple<std::string, int64_t, int, int, std::string, std::string>;

std::vector<Named> by_names(const Trace& t) {
  std::vector<Named> out;
  for (const Event& e : t.events) {
    const bool has_op = e.flags & kHasOperator;
    const bool has_remote = e.flags & kHasRemote;
    out.emplace_back(t.worker_names.at(e.worker), e.ts, static_cast<int>(e.kind),
                     static_cast<int>(e.activity), has_op ? t.operator_names.at(e.op) : "",
                     has_remote ? t.worker_names.at(e.remote) : "");
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_each_worker_in_time_order(const Trace& t) {
  std::map<uint32_t, int64_t> last;
  for (const Event& e : t.events) {
    auto [it, fresh] = last.emplace(e.worker, e.ts);
    if (!fresh) {
      EXPECT_GE(e.ts, it->second) << t.worker_names.at(e.worker);
      it->second = e.ts;
    }
  }
}

TEST(KernelStream, ChunkedStreamEqualsTheBatchImporter) {
  int compared = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const PerfStyle style = static_cast<PerfStyle>(seed % 3);
    Sim<PerfText> sim(seed, style, PerfText(style));
    sim.run(2 + static_cast<int>(seed % 5), 1 + static_cast<int>(seed % 3),
            10 + static_cast<int>(seed % 40));
    const std::string text = sim.p.text();
    const Trace batch =
        kernel::to_trace(kernel::build_model(kernel::parse_perf_script(text, "sim.perf")));
    std::mt19937_64 rng(seed);
    for (int split = 0; split < 3; ++split) {
      kernel::PerfSchedStream stream("sim.perf");
      Trace streamed;
      size_t pos = 0;
      while (pos < text.size()) {  // chunks of 1 byte .. 4 KiB, cutting lines anywhere
        const size_t n = std::min(text.size() - pos, size_t{1} + rng() % (split == 0 ? 7 : 4096));
        stream.feed(std::string_view(text).substr(pos, n), streamed);
        pos += n;
      }
      stream.finish(streamed);
      expect_each_worker_in_time_order(streamed);
      EXPECT_EQ(by_names(streamed), by_names(batch));
      EXPECT_TRUE(stream.diagnostics().empty()) << stream.diagnostics().front().first;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 180);
}

TEST(KernelStream, EventsComeOutAsIntervalsClose) {
  PerfText p;
  p.name(100, "worker");
  p.name(200, "poster");
  p.sched_switch(0, 1'000'000'000, 0, "R", 100);
  p.sched_switch(0, 1'000'010'000, 100, "S", 200);
  p.waking(0, 1'000'020'000, 200, 100);
  const std::string first = p.text();
  kernel::PerfSchedStream stream("live.perf");
  Trace out;
  stream.feed(first, out);
  // worker ran 0-10 us, then blocked 10-20 us until poster woke it: both intervals
  // closed, with the wake-up message; the open ones are not out yet.
  size_t blocked_ends = 0, messages = 0;
  for (const Event& e : out.events) {
    blocked_ends += e.kind == EventKind::end && e.activity == ActivityType::waiting;
    messages += e.kind == EventKind::recv;
  }
  EXPECT_EQ(blocked_ends, 1u);
  EXPECT_EQ(messages, 1u);
  const size_t before = out.events.size();
  stream.finish(out);
  EXPECT_GT(out.events.size(), before);  // the open intervals, closed at the end
  expect_each_worker_in_time_order(out);
}

TEST(KernelStream, BadLineNamesItsLineAndOutOfOrderIsCounted) {
  kernel::PerfSchedStream stream("bad.perf");
  Trace out;
  stream.feed("  worker   100 [000]  1.000000000: sched:sched_switch: prev_comm=worker ", out);
  EXPECT_THROW({ stream.feed("prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=x\n", out); },
               TraceError);
  kernel::PerfSchedStream late("late.perf");
  Trace out2;
  late.feed(
      "  a   100 [000]  2.000000000: sched:sched_switch: prev_comm=a prev_pid=100 "
      "prev_prio=120 prev_state=S ==> next_comm=b next_pid=200 next_prio=120\n"
      "  b   200 [000]  1.000000000: sched:sched_switch: prev_comm=b prev_pid=200 "
      "prev_prio=120 prev_state=S ==> next_comm=a next_pid=100 next_prio=120\n",
      out2);
  late.finish(out2);
  bool counted = false;
  for (const auto& [k, v] : late.diagnostics())
    counted |= k == "perf.stream_out_of_order" && v == 1;
  EXPECT_TRUE(counted);
}

}  // namespace
}  // namespace snailtrail::test_kernel_stream
