// The report's flame chart data (src/flame/time_order.hpp, docs/FLAME.md "time order"):
// runs of a small hand-written profile against runs computed by hand: their paths,
// starts, ends, merges of consecutive samples, the cap, and the JSON form.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "flame/flamegraph.hpp"
#include "flame/time_order.hpp"

namespace test_flame_time_order {
namespace {

using snailtrail::flame::kNoId;
using snailtrail::flame::kNoTime;
using snailtrail::flame::Mode;
using snailtrail::flame::mode_weights;
using snailtrail::flame::SampleKind;
using snailtrail::flame::SampleSet;
using snailtrail::flame::StackSample;
using snailtrail::flame::time_order;
using snailtrail::flame::TimeOrder;

void add(SampleSet& set, const std::vector<std::string>& frames, uint32_t worker, int64_t ts,
         SampleKind kind = SampleKind::on_cpu, uint64_t count = 1, uint8_t activity = 0xff) {
  std::vector<uint32_t> ids;
  for (const std::string& f : frames) ids.push_back(set.intern_frame(f));
  StackSample s;
  s.stack = set.intern_stack(ids);
  s.worker = s.thread = worker;
  s.ts = ts;
  s.kind = kind;
  s.count = count;
  s.activity = activity;
  set.samples.push_back(s);
}

// A run as "lane|a;b;c|start|end|samples".
std::string show(const TimeOrder& t, const TimeOrder::Run& r) {
  std::vector<std::string> names;
  for (uint32_t s = r.stack; s != kNoId; s = t.stack_parent[s])
    names.insert(names.begin(), t.frames[t.stack_frame[s]]);
  std::string path;
  for (const std::string& n : names) path += (path.empty() ? "" : ";") + n;
  return t.lanes[r.lane] + "|" + path + "|" + std::to_string(r.start) + "|" +
         std::to_string(r.end) + "|" + std::to_string(r.samples);
}

std::vector<std::string> shown(const TimeOrder& t) {
  std::vector<std::string> out;
  for (const TimeOrder::Run& r : t.runs) out.push_back(show(t, r));
  return out;
}

// Period 1000 ns (times below are ts - 1e9). Worker 0 runs a;b for three ticks, a;c for one, a;b
// for one, then (after a gap of 5 ticks) a;b again; worker 1 waits 2000 ns in x;y (activity 9:
// "waiting"). Samples are added out of time order, as the sampler's per-thread rings drain them.
SampleSet profile() {
  SampleSet set;
  set.period_ns = 1000;
  add(set, {"a", "b"}, 0, 1'000'000'000 + 10000);
  add(set, {"a", "b"}, 0, 1'000'000'000 + 0);
  add(set, {"a", "b"}, 0, 1'000'000'000 + 1000);
  add(set, {"x", "y"}, 1, 1'000'000'000 + 500, SampleKind::off_cpu, 2000, 9);
  add(set, {"a", "b"}, 0, 1'000'000'000 + 2100);  // late tick: within period / 2
  add(set, {"a", "c"}, 0, 1'000'000'000 + 3000);
  add(set, {"a", "b"}, 0, 1'000'000'000 + 4000);
  add(set, {"a", "b"}, 0, kNoTime);  // no time: counted, not drawn
  return set;
}

TEST(FlameTimeOrder, RunsMergeConsecutiveSamplesOfAPathPerLane) {
  const SampleSet set = profile();
  const TimeOrder t = time_order(set, mode_weights(set, Mode::mixed), {}, 0);
  // Hand-computed: an on-CPU sample is the period before its ts, so worker 0's first
  // sample starts at ts 0 - 1000 = t0; a;b's first run ends at the late tick 2100.
  EXPECT_EQ(t.t0, 999'999'000);
  EXPECT_EQ(shown(t), (std::vector<std::string>{
                          "worker 0|a;b|0|3100|3",
                          "worker 0|a;c|3100|4000|1",  // starts when a;b ends
                          "worker 0|a;b|4000|5000|1",
                          "worker 0|a;b|10000|11000|1",  // the gap breaks the run
                          "worker 1|x;y;[off-cpu waiting]|1500|3500|1",
                      }));
  EXPECT_EQ(t.samples, 7u);
  EXPECT_EQ(t.untimed, 1u);
  EXPECT_EQ(t.merged, 0u);
  // Mixed weights: 1000 ns per on-CPU sample, the wait's ns.
  EXPECT_DOUBLE_EQ(t.runs[0].weight, 3000);
  EXPECT_DOUBLE_EQ(t.runs[4].weight, 2000);
  // Only the frames and stacks the runs use: a, b, c, x, y, the leaf; a;b, a;c, x;y;leaf.
  EXPECT_EQ(t.frames.size(), 6u);
  EXPECT_EQ(t.stack_parent.size(), 6u);  // a, a;b, a;c, x, x;y, x;y;leaf
}

TEST(FlameTimeOrder, TheViewsWeightsChooseTheSamples) {
  const SampleSet set = profile();
  const TimeOrder on = time_order(set, mode_weights(set, Mode::on_cpu), {}, 0);
  EXPECT_EQ(on.runs.size(), 4u);
  EXPECT_EQ(on.lanes, (std::vector<std::string>{"worker 0"}));
  EXPECT_DOUBLE_EQ(on.runs[0].weight, 3);  // samples
  const TimeOrder off = time_order(set, mode_weights(set, Mode::off_cpu), {}, 0);
  EXPECT_EQ(shown(off), (std::vector<std::string>{"worker 1|x;y;[off-cpu waiting]|0|2000|1"}));
  // Per-sample weights (as the critical view's): a zero leaves the sample out, so the
  // neighbours on both sides of it are one run only if no tick is missing.
  std::vector<double> w(set.samples.size(), 0.0);
  w[1] = w[2] = 0.5;  // a;b at 0 and 1000
  w[6] = 2;           // a;b at 4000
  const TimeOrder crit = time_order(set, w, {}, 0);
  EXPECT_EQ(shown(crit),
            (std::vector<std::string>{"worker 0|a;b|0|2000|2", "worker 0|a;b|4000|5000|1"}));
  EXPECT_DOUBLE_EQ(crit.runs[0].weight, 1);
  // On-CPU samples without a sampling period have no duration: left out, counted.
  SampleSet no_period = profile();
  no_period.period_ns = 0;
  const TimeOrder np = time_order(no_period, mode_weights(no_period, Mode::on_cpu), {}, 0);
  EXPECT_TRUE(np.runs.empty());
  EXPECT_EQ(np.untimed, 7u);
}

TEST(FlameTimeOrder, BeyondTheCapTheShortestMergesGoFirst) {
  const SampleSet set = profile();
  const std::vector<double> w = mode_weights(set, Mode::mixed);
  // Five runs, cap 3. Worker 0's neighbour pairs span 4000 (a;b+a;c), 1900 (a;c+a;b) and
  // 7000: a;c+a;b merge first into "a" [3100, 5000); then [0, 5000) (5000) beats
  // [3100, 11000) (7900). Worker 1's single run stays.
  const TimeOrder t = time_order(set, w, {}, 3);
  EXPECT_EQ(shown(t), (std::vector<std::string>{
                          "worker 0|a|0|5000|5",
                          "worker 0|a;b|10000|11000|1",
                          "worker 1|x;y;[off-cpu waiting]|1500|3500|1",
                      }));
  EXPECT_EQ(t.merged, 2u);
  EXPECT_DOUBLE_EQ(t.runs[0].weight, 5000);  // weights add up
  // Runs with no common root merge into the empty path; a lane never drops below one run.
  SampleSet two = profile();
  add(two, {"z"}, 0, 1'000'000'000 + 20000);
  const TimeOrder one = time_order(two, mode_weights(two, Mode::mixed), {}, 1);
  EXPECT_EQ(shown(one), (std::vector<std::string>{"worker 0||0|21000|7",
                                                  "worker 1|x;y;[off-cpu waiting]|1500|3500|1"}));
  EXPECT_EQ(one.merged, 4u);
  EXPECT_TRUE(one.frames.size() == 3u);  // x, y, the leaf: the empty path uses none
}

TEST(FlameTimeOrder, JsonHasParallelArraysAndTheTreeCarriesIt) {
  const SampleSet set = profile();
  const std::vector<double> w = mode_weights(set, Mode::mixed);
  const TimeOrder t = time_order(set, w, {}, 3);
  const std::string json = to_json(build_tree(set, w, {}), set, w, Mode::mixed, &t);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json);
  simdjson::dom::element to = doc["time_order"];
  EXPECT_EQ(int64_t(to["t0"]), 999'999'000);
  EXPECT_EQ(uint64_t(to["merged"]), 2u);
  EXPECT_EQ(uint64_t(to["max_runs"]), 3u);
  EXPECT_EQ(uint64_t(to["untimed"]), 1u);
  EXPECT_EQ(simdjson::dom::array(to["lanes"]).size(), 2u);
  simdjson::dom::element runs = to["runs"];
  for (const char* k : {"lane", "stack", "start", "end", "weight", "samples"})
    EXPECT_EQ(simdjson::dom::array(runs[k]).size(), 3u) << k;
  EXPECT_EQ(int64_t(runs["end"].at(1)), 11000);
  // Run 0's stack "a" is a root: parent -1, frame "a".
  const int64_t s0 = int64_t(runs["stack"].at(0));
  EXPECT_EQ(int64_t(to["stacks"]["parent"].at(s0)), -1);
  const int64_t f0 = int64_t(to["stacks"]["frame"].at(s0));
  EXPECT_EQ(std::string_view(to["frames"].at(f0)), "a");
  // Without a time order the tree's JSON is as before.
  const std::string plain = to_json(build_tree(set, w, {}), set, w, Mode::mixed);
  EXPECT_EQ(plain.find("time_order"), std::string::npos);
}

}  // namespace
}  // namespace test_flame_time_order
