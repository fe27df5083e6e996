// DS2 autoscaling (src/scale, docs/AUTOSCALING.md): the policy against hand-computed
// examples of Eq. 4.5/4.6, DS2's file formats, the rate collector against the
// simulator's ground truth, the scaling manager's knobs, the Dhalion-like baseline, the
// simulator's reconfiguration and the `scale` command end to end.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>
#include <chrono>
#include <cmath>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "operator_chain.hpp"
#include "process_util.hpp"
#include "scale/ds2_files.hpp"
#include "scale/manager.hpp"
#include "scale/policy.hpp"
#include "scale/rate_collector.hpp"
#include "scale/rates_json.hpp"
#include "scale/simulation.hpp"
#include "serve/live_rates.hpp"
#include "sim/session.hpp"
#include "sim/simulator.hpp"
#include "trace/trace.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_scale {
namespace {

using namespace scale;
namespace fs = std::filesystem;
constexpr int64_t kSec = 1'000'000'000;

std::string data(const std::string& name) {
  return std::string(SNAILTRAIL_SOURCE_DIR) + "/tests/data/" + name;
}
std::string example(const std::string& name) {
  return std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/" + name + ".toml";
}

InstanceRates inst(uint32_t op, uint32_t i, double tp, double to, double op_rate = 0,
                   double oo = 0) {
  return InstanceRates{op, i, tp, to, op_rate, oo};
}

// ---- policy: Eq. 4.5 / 4.6 by hand ---------------------------------------------------

// source -> map (2 instances) -> sink (1 instance), source target 100 records/s.
Topology chain() {
  Topology t;
  t.add_operator("source", 1);
  t.add_operator("map", 2);
  t.add_operator("sink", 1);
  t.add_edge(0, 1);
  t.add_edge(1, 2);
  return t;
}

TEST(ScalePolicy, OneSourceSelectivityTwo) {
  const Topology t = chain();
  // map instances: 20 records/s processed and 40 pushed per second of useful time each:
  //   o[lp] = 40, o[lo] = 80, per instance 20 -> pi = ceil(100 / 20) = 5;
  //   o* = 80 / 40 * 100 = 200 (Eq. 4.6).
  // sink: 50/s per instance -> pi = ceil(200 / 50) = 4.
  const auto agg = aggregate(
      t, {inst(0, 0, NAN, NAN, 0, 90), inst(1, 0, 20, 40), inst(1, 1, 20, 40), inst(2, 0, 50, 0)});
  const Decision d = ds2_policy(t, agg, {100, NAN, NAN});
  EXPECT_EQ(d.parallelism, (std::vector<uint32_t>{1, 5, 4}));
  EXPECT_DOUBLE_EQ(d.target_rate[0], 100);
  EXPECT_DOUBLE_EQ(d.target_rate[1], 100);
  EXPECT_DOUBLE_EQ(d.target_rate[2], 200);
  EXPECT_DOUBLE_EQ(d.output_rate[1], 200);
  EXPECT_DOUBLE_EQ(d.achieved_ratio, 0.9);  // observed 90 of 100
  EXPECT_FALSE(d.total_workers.has_value());
  // Without a target the source's observed output (90/s) is the rate:
  //   map ceil(90 / 20) = 5, sink ceil(180 / 50) = 4.
  const Decision m = ds2_policy(t, agg, {});
  EXPECT_EQ(m.parallelism, (std::vector<uint32_t>{1, 5, 4}));
  EXPECT_DOUBLE_EQ(m.target_rate[2], 180);
  // Scaling factor 1.5: map ceil(150 / 20) = 8, sink ceil(1.5 * 200 / 50) = 6.
  PolicyOptions f;
  f.factor = 1.5;
  EXPECT_EQ(ds2_policy(t, agg, {100, NAN, NAN}, f).parallelism, (std::vector<uint32_t>{1, 8, 6}));
}

TEST(ScalePolicy, TwoSourcesAndMultiInstanceAggregation) {
  // s1 (target 30) and s2 (target 50) -> join (2 instances, 10 and 30 processed per
  // useful second, 20 pushed in total: selectivity 0.5) -> sink (3 instances at 5/s,
  // plus one idle instance without useful time that must not lower the average).
  Topology t;
  t.add_operator("s1", 1);
  t.add_operator("s2", 1);
  t.add_operator("join", 2);
  t.add_operator("sink", 4);
  t.add_edge(0, 2);
  t.add_edge(1, 2);
  t.add_edge(2, 3);
  const auto agg = aggregate(t, {inst(0, 0, 15, 15, 15, 15), inst(1, 0, 100, 100, 50, 50),
                                 inst(2, 0, 10, 5), inst(2, 1, 30, 15), inst(3, 0, 5, 0),
                                 inst(3, 1, 5, 0), inst(3, 2, 5, 0), inst(3, 3, NAN, NAN)});
  EXPECT_EQ(agg[3].instances, 4u);
  EXPECT_EQ(agg[3].measured, 3u);
  EXPECT_DOUBLE_EQ(agg[2].true_processing, 40);
  EXPECT_DOUBLE_EQ(agg[2].true_output, 20);
  // join: input 30 + 50 = 80, per instance 40 / 2 = 20 -> pi = 4; o* = 20/40 * 80 = 40.
  // sink: 40 / (15 / 3) = 8.
  const Decision d = ds2_policy(t, agg, {30, 50, NAN, NAN});
  EXPECT_EQ(d.parallelism, (std::vector<uint32_t>{1, 1, 4, 8}));
  EXPECT_DOUBLE_EQ(d.target_rate[2], 80);
  EXPECT_DOUBLE_EQ(d.output_rate[2], 40);
  // Timely: sources sized too (s1 ceil(30 / 15) = 2, s2 ceil(50 / 100) = 1), total
  // workers 2 + 1 + 4 + 8 = 15.
  PolicyOptions tim;
  tim.system = System::timely;
  const Decision td = ds2_policy(t, agg, {30, 50, NAN, NAN}, tim);
  EXPECT_EQ(td.parallelism, (std::vector<uint32_t>{2, 1, 4, 8}));
  ASSERT_TRUE(td.total_workers.has_value());
  EXPECT_EQ(*td.total_workers, 15u);
}

TEST(ScalePolicy, TargetRateRatioCompensates) {
  // source (target 100, achieves 80) -> map (1 instance, 100/s): the model says 1
  // instance suffices, yet the source is held to 80%: with threshold 0.9 the targets
  // are raised by 100/80 = 1.25 -> map ceil(125 / 100) = 2.
  Topology t;
  t.add_operator("source", 1);
  t.add_operator("map", 1);
  t.add_edge(0, 1);
  const auto agg = aggregate(t, {inst(0, 0, 200, 200, 80, 80), inst(1, 0, 100, 100)});
  EXPECT_EQ(ds2_policy(t, agg, {100, NAN}).parallelism, (std::vector<uint32_t>{1, 1}));
  PolicyOptions o;
  o.threshold = 0.9;
  const Decision d = ds2_policy(t, agg, {100, NAN}, o);
  EXPECT_EQ(d.parallelism, (std::vector<uint32_t>{1, 2}));
  EXPECT_DOUBLE_EQ(d.compensation, 1.25);
  EXPECT_DOUBLE_EQ(d.target_rate[1], 100);  // reported unboosted
  o.threshold = 0.8;                        // achieved exactly 0.8: no compensation
  EXPECT_EQ(ds2_policy(t, agg, {100, NAN}, o).parallelism, (std::vector<uint32_t>{1, 1}));
}

TEST(ScalePolicy, UnmeasuredOperatorsKeepTheirParallelism) {
  Topology t = chain();
  const auto agg = aggregate(t, {inst(0, 0, NAN, NAN, 0, 100), inst(1, 0, NAN, NAN, 0, 0)});
  const Decision d = ds2_policy(t, agg, {100});
  EXPECT_EQ(d.parallelism, t.parallelism);
  EXPECT_EQ(d.notes.size(), 2u);  // map unmeasured, sink's upstream unknown
  EXPECT_THROW(aggregate(t, {inst(7, 0, 1, 1)}), std::invalid_argument);
  Topology cyc = chain();
  cyc.add_edge(2, 1);
  EXPECT_THROW(ds2_policy(cyc, aggregate(cyc, {}), {}), std::invalid_argument);
}

TEST(ScalePolicy, CeilToleratesRoundingOnly) {
  EXPECT_EQ(ceil_parallelism(10.0 * (1 + 1e-12)), 10u);
  EXPECT_EQ(ceil_parallelism(10.001), 11u);
  EXPECT_EQ(ceil_parallelism(0), 1u);
  EXPECT_EQ(ceil_parallelism(NAN), 1u);
}

// ---- DS2 files --------------------------------------------------------------------------

TEST(ScaleDs2Files, TopologyRatesAndSourceRates) {
  const Topology t = read_topology_csv(data("ds2-topology.csv"));
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.names, (std::vector<std::string>{"source", "flatmap", "count"}));
  EXPECT_EQ(t.ids, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_TRUE(t.is_source(0));
  EXPECT_FALSE(t.is_source(2));
  RatesDiagnostics diag;
  const auto epochs = read_rates(data("ds2-rates.csv"), t, &diag);
  ASSERT_EQ(epochs.size(), 2u);  // (1,0) appears twice
  EXPECT_EQ(epochs[0].timestamp, "1000");
  EXPECT_EQ(epochs[1].epoch, 1);
  EXPECT_EQ(diag.undefined_rates, 1u);
  const auto src = read_source_rates_csv(data("ds2-source-rates.csv"), t);
  const auto targets = total_source_rates(src, epochs[0].parallelism);
  // Epoch 0: flatmap ceil(16666.7 / 1666.7) = 10, o* = 20 * 16666.7 = 333333,
  // count ceil(333333 / 16666.7) = 20 (the thesis' answer).
  const Decision d0 = ds2_policy(t, aggregate(t, epochs[0].instances), targets);
  EXPECT_EQ(d0.parallelism, (std::vector<uint32_t>{1, 10, 20}));
  // Epoch 1: flatmap 1600/s -> ceil(10.42) = 11; count has no useful time: kept, noted.
  const Decision d1 = ds2_policy(t, aggregate(t, epochs[1].instances), targets);
  EXPECT_EQ(d1.parallelism, (std::vector<uint32_t>{1, 11, 1}));
  EXPECT_EQ(d1.notes.size(), 1u);
  // Measured source rate instead (620/s): flatmap 1, count ceil(12400 / 16666.7) = 1.
  EXPECT_EQ(ds2_policy(t, aggregate(t, epochs[0].instances), {}).parallelism,
            (std::vector<uint32_t>{1, 1, 1}));
}

TEST(ScaleDs2Files, DirectoryOfEpochFiles) {
  const Topology t = read_topology_csv(data("ds2-topology.csv"));
  RatesDiagnostics diag;
  const auto epochs = read_rates(data("ds2-rates-dir"), t, &diag);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(diag.skipped_files, 1u);  // README
  EXPECT_EQ(epochs[0].parallelism, (std::vector<uint32_t>{1, 2, 1}));
  // Epoch 0, source 16666.7/s: flatmap instances 1000 + 2000 -> 1500 per instance,
  // ceil(11.1) = 12; o* = 60000 / 3000 * 16666.7 = 333333; count ceil(33.3) = 34.
  const auto src = read_source_rates_csv(data("ds2-source-rates.csv"), t);
  const Decision d = ds2_policy(t, aggregate(t, epochs[0].instances),
                                total_source_rates(src, epochs[0].parallelism));
  EXPECT_EQ(d.parallelism, (std::vector<uint32_t>{1, 12, 34}));
}

TEST(ScaleDs2Files, ErrorsNameFileAndLine) {
  const Topology t = read_topology_csv(data("ds2-topology.csv"));
  auto error_of = [&](const std::string& text) {
    try {
      parse_rates_csv(text, "r.csv", t);
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("1,0,1,5,1,1,1\n"),
            "r.csv: line 1: expected 8 fields (operator_id,"
            "operator_instance_id,total_number_of_operator_"
            "instances,epoch_timestamp,true_processing_rate,"
            "true_output_rate,observed_processing_rate,observed_"
            "output_rate), got 7");
  EXPECT_EQ(error_of("# c\n9,0,1,5,1,1,1,1\n"),
            "r.csv: line 2: operator '9' is not in the topology");
  EXPECT_EQ(error_of("1,x,1,5,1,1,1,1\n"),
            "r.csv: line 1: operator_instance_id 'x' is not a whole number");
  EXPECT_EQ(error_of("1,0,1,5,-1,1,1,1\n"),
            "r.csv: line 1: true_processing_rate '-1' must be a finite rate >= 0");
  EXPECT_EQ(error_of("1,0,1,5,1,1,nan,1\n"),
            "r.csv: line 1: observed_processing_rate 'nan' must be a finite rate >= 0");
  EXPECT_EQ(error_of("1,0,0,5,1,1,1,1\n"),
            "r.csv: line 1: total_number_of_operator_instances must be >= 1");
  auto topo_error = [](const std::string& text) {
    try {
      parse_topology_csv(text, "t.csv");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(topo_error("1,a,1,2,b,1\n2,b,1,1,a,1\n"),
            "t.csv: topology: the dataflow has a cycle; DS2 needs a DAG");
  EXPECT_EQ(topo_error("1,a,1,2,b,1\n1,c,1,3,d,1\n"),
            "t.csv: line 2: operator id '1' is named both 'a' and 'c'");
  EXPECT_EQ(topo_error("1,a,1,2,b,1\n1,a,2,3,d,1\n"),
            "t.csv: line 2: operator 'a' has 1 and 2 instances");
  EXPECT_EQ(topo_error("# only a comment\n"), "t.csv: input: the topology has no edges");
  EXPECT_THROW(parse_source_rates_csv("flatmap,10\n", "s.csv", t), TraceError);  // not a source
  EXPECT_THROW(parse_source_rates_csv("nope,10\n", "s.csv", t), TraceError);
}

TEST(ScaleDs2Files, WatcherWaitsForCompleteEpochs) {
  const Topology t = read_topology_csv(data("ds2-topology.csv"));
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-ds2-watch-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
  };
  RatesDirectoryWatcher w(dir.string(), t);
  EXPECT_TRUE(w.poll().empty());
  write("source-0.csv", "1,0,1,0,620,620,620,620\n");
  write("flatmap-0.csv", "2,0,1,0,1666.6,33332,620,12400\n");
  EXPECT_TRUE(w.poll().empty());          // count has not reported yet
  write("count-0.csv", "3,0,1,0,16666");  // the line is still being written
  EXPECT_TRUE(w.poll().empty());
  write("count-0.csv", "3,0,1,0,16666,0,12400,0\n");
  auto e = w.poll();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].instances.size(), 3u);
  EXPECT_TRUE(w.poll().empty());  // returned once
  write("source-1.csv", "1,0,1,1,600,600,600,600\n");
  EXPECT_TRUE(w.poll().empty());
  write("source-2.csv", "1,0,1,2,600,600,600,600\n");  // a later epoch: 1 is over
  e = w.poll();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].epoch, 1);
  e = w.flush();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].epoch, 2);
  fs::remove_all(dir);
}

// ---- rate collector ---------------------------------------------------------------------

Event ev(int64_t ts, uint32_t worker, ActivityType a, EventKind k, int64_t op = -1,
         int64_t records = -1) {
  Event e;
  e.ts = ts;
  e.worker = worker;
  e.activity = a;
  e.kind = k;
  if (op >= 0) e.op = static_cast<uint32_t>(op), e.flags |= kHasOperator;
  if (records >= 0) e.records = static_cast<uint32_t>(records), e.flags |= kHasRecords;
  return e;
}

TEST(ScaleRateCollector, SplitsUsefulTimeOverIntervals) {
  RateCollector c(kSec);
  using A = ActivityType;
  using K = EventKind;
  // Worker 0 (operator 1): processing [0.5 s, 1.5 s] of 100 records, serialization
  // [1.5 s, 1.75 s] pushing 300; waiting [1.75 s, 2 s] is not useful.
  // Records are split in proportion to the activity's time in each interval.
  // Interval 0: useful 0.5 s, 50 records in.
  // Interval 1: useful 0.5 + 0.25 = 0.75 s, 50 in, 300 out -> true rates 66.7 / 400.
  c.add(ev(kSec / 2, 0, A::processing, K::start, 1));
  c.add(ev(3 * kSec / 2, 0, A::processing, K::end, 1, 100));
  c.add(ev(3 * kSec / 2, 0, A::serialization, K::start, 1));
  c.add(ev(7 * kSec / 4, 0, A::serialization, K::end, 1, 300));
  Event send = ev(7 * kSec / 4, 0, A::data_message, K::send);
  send.correlator = 9, send.remote = 1, send.flags |= kHasCorrelator | kHasRemote;
  c.add(send);
  c.add(ev(7 * kSec / 4, 0, A::waiting, K::start, 1));
  c.add(ev(2 * kSec, 0, A::waiting, K::end, 1));
  // Worker 1 (operator 2) receives message 9 and deserializes: edge 1 -> 2.
  Event recv = send;
  recv.kind = K::recv, recv.worker = 1, recv.remote = 0, recv.ts = 1900'000'000;
  c.add(recv);
  c.add(ev(1900'000'000, 1, A::deserialization, K::start, 2));
  c.add(ev(2 * kSec, 1, A::deserialization, K::end, 2));
  auto first = c.advance(kSec);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].instances.size(), 1u);
  EXPECT_DOUBLE_EQ(first[0].instances[0].useful_s, 0.5);
  EXPECT_DOUBLE_EQ(first[0].instances[0].records_in, 50);
  auto rest = c.finish();
  ASSERT_EQ(rest.size(), 1u);
  ASSERT_EQ(rest[0].instances.size(), 2u);
  const InstanceMetrics& m = rest[0].instances[0];
  EXPECT_EQ(m.op, 1u);
  EXPECT_DOUBLE_EQ(m.useful_s, 0.75);
  EXPECT_DOUBLE_EQ(m.records_in, 50);
  EXPECT_DOUBLE_EQ(m.records_out, 300);
  EXPECT_NEAR(m.rates().true_processing, 50 / 0.75, 1e-9);
  EXPECT_NEAR(m.rates().true_output, 300 / 0.75, 1e-9);
  EXPECT_DOUBLE_EQ(m.rates().observed_output, 300);
  EXPECT_NEAR(rest[0].instances[1].useful_s, 0.1, 1e-12);
  const Topology t = c.topology([](uint32_t op) { return "op" + std::to_string(op); });
  ASSERT_EQ(t.size(), 2u);
  ASSERT_EQ(t.edges.size(), 1u);
  EXPECT_EQ(t.names[t.edges[0].first], "op1");
  EXPECT_EQ(t.names[t.edges[0].second], "op2");
  // An event in a closed interval is late.
  c.add(ev(kSec / 4, 0, A::processing, K::start, 1));
  EXPECT_EQ(c.late_events(), 1u);
}

TEST(ScaleRateCollector, ActivityOpenWhenItsIntervalCloses) {
  // Processing [0.9 s, 1.1 s] of 10 records; interval 0 closes at 1 s (the watermark)
  // before the end arrives: it gets 0.1 s of useful time, and the 5 records of its part
  // go to interval 1 with the other 5 (a closed interval never changes).
  RateCollector c(kSec);
  c.add(ev(900'000'000, 0, ActivityType::processing, EventKind::start, 1));
  auto first = c.advance(kSec);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].instances.size(), 1u);
  EXPECT_NEAR(first[0].instances[0].useful_s, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(first[0].instances[0].records_in, 0);
  c.add(ev(1100'000'000, 0, ActivityType::processing, EventKind::end, 1, 10));
  auto rest = c.finish();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_NEAR(rest[0].instances[0].useful_s, 0.1, 1e-12);
  EXPECT_NEAR(rest[0].instances[0].records_in, 10, 1e-12);
  EXPECT_EQ(c.late_events(), 0u);
}

TEST(ScaleRateCollector, MatchesTheSimulatorsTruth) {
  // The collector over the whole trace sees what the simulator counted per instance.
  sim::Scenario s = sim::load_scenario(example("wordcount-4-2-4"));
  s.duration_ns = 5 * kSec;
  sim::SimResult r = sim::simulate(s);
  RateCollector c(5 * kSec);
  for (const Event& e : r.trace.events) c.add(e);
  auto intervals = c.finish();
  ASSERT_EQ(intervals.size(), 1u);
  const Topology t = c.topology([&](uint32_t op) { return r.trace.operator_name(op); });
  EXPECT_EQ(t.names, (std::vector<std::string>{"source", "flatmap", "count"}));
  EXPECT_EQ(t.parallelism, (std::vector<uint32_t>{4, 2, 4}));
  EXPECT_EQ(t.edges.size(), 2u);
  std::map<std::string, const sim::InstanceTruth*> truth;
  for (const auto& x : r.truth.instances) truth[x.worker] = &x;
  ASSERT_EQ(intervals[0].instances.size(), 10u);
  for (const InstanceMetrics& m : intervals[0].instances) {
    const std::string name = r.trace.worker_name(static_cast<uint32_t>(std::stoul(m.worker)));
    const sim::InstanceTruth& x = *truth.at(name);
    // Steps running at the cut are counted whole by the truth, clipped by the trace.
    EXPECT_NEAR(m.useful_s, x.useful_ns * 1e-9, 0.01 * x.useful_ns * 1e-9 + 0.02) << name;
    EXPECT_NEAR(m.records_in, static_cast<double>(x.records_in), 0.01 * x.records_in + 200) << name;
    if (x.op != "count") {  // the count's io has no cost, hence no event with its records
      EXPECT_NEAR(m.records_out, static_cast<double>(x.records_out), 0.01 * x.records_out + 4000)
          << name;
    }
  }
}

TEST(ScaleRateCollector, CorruptTimestampsStayCheap) {
  // A stray event near the end of the int64 range and an activity spanning 10^12
  // intervals must neither hang nor allocate per interval: idle gaps are skipped and
  // overlong activities ignored (counted).
  RateCollector c(kSec);
  c.add(ev(0, 0, ActivityType::processing, EventKind::start, 1));
  c.add(ev(kSec / 2, 0, ActivityType::processing, EventKind::end, 1, 10));
  c.add(ev(INT64_MAX - 5, 1, ActivityType::processing, EventKind::start, 2));
  c.add(ev(INT64_MAX - 1, 1, ActivityType::processing, EventKind::end, 2, 1));
  c.add(ev(3 * kSec, 2, ActivityType::serialization, EventKind::start, 3));
  c.add(ev(3 * kSec + 1'000'000'000'000'000'000, 2, ActivityType::serialization, EventKind::end, 3,
           1));
  EXPECT_EQ(c.overlong_activities(), 2u);  // its time and its records
  auto out = c.finish();
  ASSERT_EQ(out.size(), 2u);  // the first second and the stray event's interval
  EXPECT_EQ(out[0].start_ns, 0);
  EXPECT_DOUBLE_EQ(out[0].instances[0].records_in, 10);
  EXPECT_EQ(out[1].instances.size(), 1u);
  EXPECT_EQ(out[1].instances[0].op, 2u);
}

// ---- rates of a live stream (serve's /api/rates) -------------------------------------

Event message(int64_t ts, uint32_t worker, uint32_t remote, EventKind k, int64_t corr,
              int64_t records = -1) {
  Event e = ev(ts, worker, ActivityType::data_message, k, -1, records);
  e.remote = remote, e.correlator = corr, e.flags |= kHasRemote | kHasCorrelator;
  return e;
}

// source (operator 0, worker 0) -> map (operator 1, worker 1), by hand, 1 s intervals.
// Interval 0: the source reads 100 records [0, 0.2 s] and serializes them [0.2, 0.4 s]
// (useful 0.2 s); the map deserializes [0.5, 0.6], processes 100 [0.6, 0.9] and
// serializes 200 [0.9, 1.0] (useful 0.5 s). Interval 1 ends at the last event, 1.6 s:
// the source reads 50 [1.0, 1.1] and serializes them [1.1, 1.2] (useful 0.1 s); the map
// deserializes [1.3, 1.35], processes 50 [1.35, 1.5], serializes 100 [1.5, 1.6]
// (useful 0.3 s).
std::vector<std::vector<Event>> two_operator_stream() {
  using A = ActivityType;
  using K = EventKind;
  const int64_t ms = 1'000'000;
  std::vector<Event> source = {
      ev(0, 0, A::input, K::start, 0),
      ev(200 * ms, 0, A::input, K::end, 0, 100),
      ev(200 * ms, 0, A::serialization, K::start, 0),
      ev(400 * ms, 0, A::serialization, K::end, 0, 100),
      message(400 * ms, 0, 1, K::send, 1, 100),
      ev(1000 * ms, 0, A::input, K::start, 0),
      ev(1100 * ms, 0, A::input, K::end, 0, 50),
      ev(1100 * ms, 0, A::serialization, K::start, 0),
      ev(1200 * ms, 0, A::serialization, K::end, 0, 50),
      message(1200 * ms, 0, 1, K::send, 2, 50),
  };
  std::vector<Event> map = {
      message(500 * ms, 1, 0, K::recv, 1, 100),
      ev(500 * ms, 1, A::deserialization, K::start, 1),
      ev(600 * ms, 1, A::deserialization, K::end, 1),
      ev(600 * ms, 1, A::processing, K::start, 1),
      ev(900 * ms, 1, A::processing, K::end, 1, 100),
      ev(900 * ms, 1, A::serialization, K::start, 1),
      ev(1000 * ms, 1, A::serialization, K::end, 1, 200),
      message(1300 * ms, 1, 0, K::recv, 2, 50),
      ev(1300 * ms, 1, A::deserialization, K::start, 1),
      ev(1350 * ms, 1, A::deserialization, K::end, 1),
      ev(1350 * ms, 1, A::processing, K::start, 1),
      ev(1500 * ms, 1, A::processing, K::end, 1, 50),
      ev(1500 * ms, 1, A::serialization, K::start, 1),
      ev(1600 * ms, 1, A::serialization, K::end, 1, 100),
  };
  return {source, map};
}

TEST(ScaleLiveRates, HandComputedRatesOfAStream) {
  const auto workers = two_operator_stream();
  serve::LiveRates live(kSec, 10);
  Trace names;
  names.operator_names = {{0, "source"}, {1, "map"}};
  names.worker_names = {{0, "source-0"}, {1, "map-0"}};
  live.add_names(names);
  // Workers interleaved worker by worker: the map's events of interval 0, then the
  // source's, then the watermark passes 1 s; then the rest.
  for (const Event& e : workers[1])
    if (e.ts <= kSec) live.add(e);
  for (const Event& e : workers[0])
    if (e.ts < kSec) live.add(e);
  live.advance(kSec);
  const RatesPage first = parse_rates_page(live.page(INT64_MIN));
  ASSERT_EQ(first.intervals.size(), 1u);
  for (const Event& e : workers[0])
    if (e.ts >= kSec) live.add(e);
  for (const Event& e : workers[1])
    if (e.ts > kSec) live.add(e);
  live.finish();
  const RatesPage page = parse_rates_page(live.page(INT64_MIN));
  EXPECT_EQ(page.interval_ns, kSec);
  EXPECT_EQ(page.first_event_ns, 0);
  // The topology: names from the metadata, the edge from message 1.
  EXPECT_EQ(page.topology.names, (std::vector<std::string>{"source", "map"}));
  EXPECT_EQ(page.topology.ids, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(page.topology.edges, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 1}}));
  ASSERT_EQ(page.intervals.size(), 2u);
  const auto& i0 = page.intervals[0];
  const auto& i1 = page.intervals[1];
  EXPECT_EQ(i0.epoch, 0);
  EXPECT_EQ(i1.epoch, 1);
  EXPECT_EQ(i0.metrics.start_ns, 0);
  EXPECT_EQ(i0.metrics.end_ns, kSec);
  EXPECT_EQ(i1.metrics.start_ns, kSec);
  EXPECT_EQ(i1.metrics.end_ns, 1600'000'000);  // the last event
  ASSERT_EQ(i0.metrics.instances.size(), 2u);
  ASSERT_EQ(i1.metrics.instances.size(), 2u);
  EXPECT_EQ(i0.operator_names, (std::vector<std::string>{"source", "map"}));
  auto check = [](const InstanceMetrics& m, double window, double useful, double in, double out,
                  double tp, double to) {
    EXPECT_DOUBLE_EQ(m.window_s, window);
    EXPECT_NEAR(m.useful_s, useful, 1e-12);
    EXPECT_DOUBLE_EQ(m.records_in, in);
    EXPECT_DOUBLE_EQ(m.records_out, out);
    const InstanceRates r = m.rates();
    EXPECT_NEAR(r.true_processing, tp, 1e-9);
    EXPECT_NEAR(r.true_output, to, 1e-9);
    EXPECT_NEAR(r.observed_processing, in / window, 1e-9);
    EXPECT_NEAR(r.observed_output, out / window, 1e-9);
  };
  // Source: 100 read and pushed in 0.2 s of useful time; map: 100 in, 200 out in 0.5 s.
  check(i0.metrics.instances[0], 1, 0.2, 100, 100, 500, 500);
  check(i0.metrics.instances[1], 1, 0.5, 100, 200, 200, 400);
  // Interval 1 is 0.6 s long: source 50/50 in 0.1 s; map 50 in, 100 out in 0.3 s.
  check(i1.metrics.instances[0], 0.6, 0.1, 50, 50, 500, 500);
  check(i1.metrics.instances[1], 0.6, 0.3, 50, 100, 50 / 0.3, 100 / 0.3);
  // The page also carries DS2's four rates as numbers, and the workers' names.
  const std::string json = live.page(kSec);
  EXPECT_NE(json.find("\"records_processed\": 50, \"records_pushed\": 100, "
                      "\"true_processing_rate\": 166.6"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("\"epoch\": 0"), std::string::npos) << "since=1 s keeps interval 0 out";
  EXPECT_NE(json.find("\"worker_name\": \"map-0\""), std::string::npos) << json;
  // /metrics: totals over both intervals, the latest interval per operator.
  const std::string metrics = live.metrics();
  EXPECT_NE(metrics.find("snailtrail_rate_intervals_total 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("snailtrail_rate_records_processed_total 300\n"), std::string::npos);
  EXPECT_NE(metrics.find("snailtrail_rate_records_pushed_total 450\n"), std::string::npos);
  EXPECT_NE(metrics.find("snailtrail_operator_instances{operator=\"map\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("snailtrail_operator_true_processing_rate{operator=\"source\"} 500"),
            std::string::npos)
      << metrics;

  // The same events in a file, through `scale manage --trace`'s path (a RateCollector
  // whose origin is the first event): the same intervals, to the last bit.
  const fs::path file = fs::temp_directory_path() /
                        ("snailtrail-live-rates-" + std::to_string(::getpid()) + ".jsonl");
  Trace trace = names;
  for (const auto& w : workers) trace.events.insert(trace.events.end(), w.begin(), w.end());
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  write_trace(trace, file.string());
  const Trace back = read_trace(file.string());
  fs::remove(file);
  RateCollector c(kSec, back.events.front().ts);
  for (const Event& e : back.events) c.add(e);
  const std::vector<IntervalMetrics> batch = c.finish();
  ASSERT_EQ(batch.size(), page.intervals.size());
  for (size_t k = 0; k < batch.size(); ++k) {
    const IntervalMetrics& m = page.intervals[k].metrics;
    EXPECT_EQ(m.start_ns, batch[k].start_ns);
    EXPECT_EQ(m.end_ns, batch[k].end_ns);
    ASSERT_EQ(m.instances.size(), batch[k].instances.size());
    for (size_t i = 0; i < m.instances.size(); ++i) {
      EXPECT_EQ(m.instances[i].op, batch[k].instances[i].op);
      EXPECT_EQ(m.instances[i].worker, batch[k].instances[i].worker);
      EXPECT_EQ(m.instances[i].window_s, batch[k].instances[i].window_s);
      EXPECT_EQ(m.instances[i].useful_s, batch[k].instances[i].useful_s);
      EXPECT_EQ(m.instances[i].records_in, batch[k].instances[i].records_in);
      EXPECT_EQ(m.instances[i].records_out, batch[k].instances[i].records_out);
    }
  }
}

// A live stream at epoch time (far from the collector's origin, 0): the idle intervals
// before it are skipped, also while an activity is open when the watermark advances.
TEST(ScaleLiveRates, StreamFarFromTheOriginSkipsTheIdleGap) {
  const int64_t shift = 1'700'000'000 * kSec;
  auto workers = two_operator_stream();
  for (auto& w : workers)
    for (Event& e : w) e.ts += shift;
  serve::LiveRates live(kSec, 10);
  for (const Event& e : workers[1])
    if (e.ts <= shift + kSec) live.add(e);
  for (const Event& e : workers[0])
    if (e.ts < shift + kSec) live.add(e);
  live.advance(shift + kSec);
  for (const Event& e : workers[0])
    if (e.ts >= shift + kSec) live.add(e);
  for (const Event& e : workers[1])
    if (e.ts > shift + kSec) live.add(e);
  live.finish();
  const RatesPage page = parse_rates_page(live.page(INT64_MIN));
  ASSERT_EQ(page.intervals.size(), 2u);
  EXPECT_EQ(page.intervals[0].metrics.start_ns, shift);
  EXPECT_EQ(page.intervals[1].metrics.end_ns, shift + 1600'000'000);
  ASSERT_EQ(page.intervals[0].metrics.instances.size(), 2u);
  EXPECT_NEAR(page.intervals[0].metrics.instances[1].useful_s, 0.5, 1e-9);
  EXPECT_NEAR(page.intervals[1].metrics.instances[1].useful_s, 0.3, 1e-9);
}

// Issue 25 item 5: many distinct (worker, operator) pairs, and data messages linking them
// in a chain. Shutdown (the topology of every operator, each instance's rates) was
// quadratic in the operators (62.8 s at 200 k); it is linear now. This test checks the
// content; the time is measured by the benchmark BM_LiveRatesClose (bench/bench_scale.cpp,
// 25 k to 200 k instances, with its fitted complexity), never asserted here.
TEST(ScaleLiveRates, ManyOperatorInstancesCloseWithEveryInstanceAndEdge) {
  const uint32_t n = 20'000;
  serve::LiveRates live(kSec, 10);
  bench::add_operator_chain(live, n);
  live.finish();
  const RatesPage page = parse_rates_page(live.page(INT64_MIN));
  ASSERT_EQ(page.topology.size(), n);
  EXPECT_EQ(page.topology.edges.size(), n - 1);
  for (uint32_t i = 0; i < n; i += 997) {
    EXPECT_EQ(page.topology.ids[i], std::to_string(i));
    EXPECT_EQ(page.topology.find_id(std::to_string(i)), i);
  }
  ASSERT_EQ(page.intervals.size(), 1u);
  EXPECT_EQ(page.intervals[0].metrics.instances.size(), n);
}

// The topology's lookups against a scan: first of equal names or ids wins, edges are not
// duplicated, and vectors filled directly are still searched.
TEST(ScaleTopology, IndexedLookupsEqualAScan) {
  Topology t;
  const char* names[] = {"a", "b", "a", "c", "b"};
  for (int i = 0; i < 5; ++i) t.add_operator(names[i], 1, i == 3 ? "x" : std::to_string(i % 4));
  // ids: 0 1 2 x 0
  EXPECT_EQ(t.find_name("a"), 0u);
  EXPECT_EQ(t.find_name("b"), 1u);
  EXPECT_EQ(t.find_name("c"), 3u);
  EXPECT_EQ(t.find_name("d"), std::nullopt);
  EXPECT_EQ(t.find_id("0"), 0u);
  EXPECT_EQ(t.find_id("x"), 3u);
  EXPECT_EQ(t.find_id("3"), std::nullopt);
  t.add_edge(0, 1);
  t.add_edge(0, 1);
  t.add_edge(1, 1);
  t.add_edge(1, 0);
  EXPECT_EQ(t.edges.size(), 2u);
  // Filled by hand: the scan answers.
  t.names.push_back("e");
  t.ids.push_back("e-id");
  t.parallelism.push_back(1);
  EXPECT_EQ(t.find_name("e"), 5u);
  EXPECT_EQ(t.find_id("e-id"), 5u);
  EXPECT_EQ(t.add_operator("f", 1), 6u);
  EXPECT_EQ(t.find_id("f"), 6u);
  EXPECT_EQ(t.find_name("a"), 0u);
  t.edges.push_back({2, 3});
  t.add_edge(2, 3);
  EXPECT_EQ(t.edges.size(), 3u);
}

TEST(ScaleLiveRates, BadPagesAreClearErrors) {
  auto error = [](const std::string& json) {
    try {
      parse_rates_page(json);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("<html>").find("not JSON"), std::string::npos);
  EXPECT_NE(error("[]").find("not a JSON object"), std::string::npos);
  const std::string topo =
      R"("topology": {"operators": [{"id": 0, "name": "a", "instances": 1}], "edges": []})";
  EXPECT_NE(error(R"({"first_event_ns": 0, )" + topo + R"(, "intervals": []})")
                .find("no \"interval_ns\""),
            std::string::npos);
  EXPECT_NE(error(R"({"interval_ns": 0, "first_event_ns": 0, )" + topo + R"(, "intervals": []})")
                .find("must be positive"),
            std::string::npos);
  EXPECT_NE(
      error(
          R"({"interval_ns": 1, "first_event_ns": 0, "topology": {"operators": [], "edges": [[0, 1]]}, "intervals": []})")
          .find("unknown operator"),
      std::string::npos);
  EXPECT_NE(
      error(
          R"({"interval_ns": 1, "first_event_ns": 0, )" + topo +
          R"(, "intervals": [{"epoch": 0, "start_ns": 0, "end_ns": 1, "instances": [{"operator": 0, "operator_name": "a", "instance": 0, "worker": 0, "window_s": 1, "useful_s": -1, "records_processed": 0, "records_pushed": 0}]}]})")
          .find("interval 0: \"useful_s\" is not a number >= 0"),
      std::string::npos);
  EXPECT_EQ(error(R"({"interval_ns": 1, "first_event_ns": 0, )" + topo + R"(, "intervals": []})"),
            "no error");
}

// ---- scaling manager ----------------------------------------------------------------------

// source (target 100) -> map; the map's true rate per instance is 100 / wanted.
Observation obs(uint32_t current, double per_instance, double achieved = 50) {
  Observation o;
  o.parallelism = {1, current};
  o.source_target = {100, NAN};
  o.rates = {inst(0, 0, 1000, 1000, achieved, achieved)};
  for (uint32_t i = 0; i < current; ++i) o.rates.push_back(inst(1, i, per_instance, per_instance));
  return o;
}

Topology two() {
  Topology t;
  t.add_operator("source", 1);
  t.add_operator("map", 1);
  t.add_edge(0, 1);
  return t;
}

TEST(ScaleManager, ActivationCombinesDecisions) {
  ManagerOptions o;
  o.activation = 3;
  o.combine = Combine::median;
  Ds2Manager m(two(), o);
  EXPECT_FALSE(m.observe(obs(1, 10)));         // wants 10
  EXPECT_FALSE(m.observe(obs(1, 100 / 14.)));  // wants 14
  auto a = m.observe(obs(1, 100 / 12.));       // wants 12: median of 10, 14, 12
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parallelism, (std::vector<uint32_t>{1, 12}));
  o.combine = Combine::max;
  o.activation = 2;
  Ds2Manager mx(two(), o);
  EXPECT_FALSE(mx.observe(obs(1, 10)));
  a = mx.observe(obs(1, 100 / 12.));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parallelism, (std::vector<uint32_t>{1, 12}));
}

TEST(ScaleManager, WarmupMinChangeAndMaxDecisions) {
  ManagerOptions o;
  o.warmup = 2;
  o.max_decisions = 1;
  o.rollback = false;
  Ds2Manager m(two(), o);
  auto a = m.observe(obs(1, 10));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parallelism, (std::vector<uint32_t>{1, 10}));
  EXPECT_FALSE(m.observe(obs(10, 5)));  // warm-up 1 (would want 20)
  EXPECT_FALSE(m.observe(obs(10, 5)));  // warm-up 2
  EXPECT_FALSE(m.observe(obs(10, 5)));  // max decisions reached
  EXPECT_EQ(m.decisions(), 1u);
  ManagerOptions mc;
  mc.min_change = 2;
  Ds2Manager small(two(), mc);
  EXPECT_FALSE(small.observe(obs(1, 100 / 3.)));  // 1 -> 3: within 2
  a = small.observe(obs(1, 25));                  // 1 -> 4
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parallelism, (std::vector<uint32_t>{1, 4}));
}

TEST(ScaleManager, RollsBackWhenTheRateDrops) {
  Ds2Manager m(two(), {});
  auto a = m.observe(obs(1, 10, 50));
  ASSERT_TRUE(a);
  // After the change the sources achieve 40/s instead of 50/s: more than 10% less.
  a = m.observe(obs(10, 10, 40));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parallelism, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(a->reason.rfind("rollback", 0), 0u) << a->reason;
  ManagerOptions keep;
  keep.rollback = false;
  keep.threshold = 0;  // else 40 of 100 would raise the targets
  Ds2Manager n(two(), keep);
  ASSERT_TRUE(n.observe(obs(1, 10, 50)));
  EXPECT_FALSE(n.observe(obs(10, 10, 40)));  // the policy still says 10
}

TEST(ScaleManager, DhalionScalesOneOperatorOnBackpressure) {
  DhalionOptions d;
  d.warmup = 0;
  DhalionController c(two(), d);
  // The source is blocked 60% of the time and achieves 50 of 100: map is the culprit;
  // factor 1 / (1 - 0.6) = 2.5, capped at 2 -> 2.
  Observation o;
  o.parallelism = {1, 1};
  o.source_target = {100, NAN};
  o.instances = {{0, 0, "source-0", 1, 0.01, 50, 50, 0.6}, {1, 0, "map-0", 1, 0.99, 50, 50, 0}};
  auto a = c.observe(o);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->parallelism, (std::vector<uint32_t>{1, 2}));
  // No improvement after the step: map is blacklisted, nothing else to scale.
  o.parallelism = {1, 2};
  o.instances.push_back({1, 1, "map-1", 1, 0.99, 0, 0, 0});
  EXPECT_FALSE(c.observe(o));
  EXPECT_EQ(c.blacklist(), (std::vector<uint32_t>{1}));
  // Sources keeping up with the target: no backpressure, nothing to do.
  DhalionController quiet(two(), d);
  o.instances[0].records_out = 100;
  EXPECT_FALSE(quiet.observe(o));
}

// ---- the simulator's reconfiguration ------------------------------------------------------

TEST(ScaleSession, WithoutReconfigurationItIsThePlainSimulation) {
  sim::Scenario s = sim::load_scenario(example("wordcount-skew-30"));
  s.duration_ns = 2 * kSec;
  sim::SimResult plain = sim::simulate(s);
  sim::Session session(s);
  session.run_until(kSec);
  session.run_until(1500'000'000);
  sim::SimResult stepped = session.finish();
  ASSERT_EQ(plain.trace.events.size(), stepped.trace.events.size());
  for (size_t i = 0; i < plain.trace.events.size(); ++i)
    ASSERT_EQ(std::memcmp(&plain.trace.events[i], &stepped.trace.events[i], sizeof(Event)), 0) << i;
  EXPECT_EQ(sim::to_json(plain.truth), sim::to_json(stepped.truth));
}

TEST(ScaleSession, ReconfigurationHaltsPausesAndRedeploys) {
  sim::Scenario s = sim::load_scenario(example("dhalion-wordcount"));
  s.duration_ns = 8 * kSec;
  sim::Session session(s);
  session.run_until(3 * kSec);
  const double read_at_halt = session.source_read(0);
  session.reconfigure({1, 10, 20}, 2 * kSec);
  EXPECT_TRUE(session.paused());
  EXPECT_TRUE(session.counters().empty());
  session.run_until(5 * kSec - 1);  // the pause: nothing is read
  EXPECT_TRUE(session.paused());
  EXPECT_DOUBLE_EQ(session.source_read(0), read_at_halt);
  // 1M/min for 5 s: 83,333 arrived, a few thousand read at 1/1: a backlog.
  EXPECT_NEAR(session.source_arrived(0, 5 * kSec), 1e6 / 60 * 5, 1);
  session.run_until(6 * kSec);
  EXPECT_FALSE(session.paused());
  EXPECT_EQ(session.counters().size(), 31u);
  // Working off the backlog: in 1 s the source reads more than the arrival rate.
  EXPECT_GT(session.source_read(0) - read_at_halt, 1e6 / 60);
  sim::SimResult r = session.finish();
  std::set<std::string> workers;
  for (const auto& [id, name] : r.trace.worker_names) workers.insert(name);
  EXPECT_TRUE(workers.count("flatmap-9"));
  EXPECT_TRUE(workers.count("count-19"));
  EXPECT_EQ(r.truth.instances.size(), 31u);  // flatmap-0 and count-0 once, summed
  // Nothing happens in the pause, every send has its receive and per-worker order holds.
  std::unordered_map<int64_t, int> msgs;
  std::unordered_map<uint32_t, int64_t> last;
  for (const Event& e : r.trace.events) {
    EXPECT_FALSE(e.ts > 3 * kSec && e.ts < 5 * kSec) << e.ts;
    if (e.kind == EventKind::send) ++msgs[e.correlator];
    if (e.kind == EventKind::recv) --msgs[e.correlator];
    EXPECT_GE(e.ts, last[e.worker]);
    last[e.worker] = e.ts;
  }
  for (const auto& [c, n] : msgs) EXPECT_EQ(n, 0) << "message " << c;
  EXPECT_THROW(sim::Session(sim::load_scenario(example("timely-iterative"))),
               std::invalid_argument);
}

TEST(ScaleSession, BadConfigurationsAreRejected) {
  sim::Session session(sim::load_scenario(example("dhalion-wordcount")), false);
  EXPECT_THROW(session.reconfigure({1, 2}, 0), std::invalid_argument);
  EXPECT_THROW(session.reconfigure({1, 0, 2}, 0), std::invalid_argument);
  EXPECT_THROW(session.reconfigure({1, 1, 2}, -1), std::invalid_argument);
}

// ---- DS2 and the baseline in the loop (thesis §4.4.2) -------------------------------------

TEST(ScaleControlled, Ds2NeedsOneStepOnDhalionsWordCount) {
  sim::Scenario s = sim::load_scenario(example("dhalion-wordcount"));
  s.duration_ns = 600 * kSec;
  Ds2Manager m(topology_of(s), {});
  ControlledRun r = run_controlled(s, m, {});
  ASSERT_EQ(r.decisions.size(), 1u);
  EXPECT_EQ(r.decisions[0].parallelism, (std::vector<uint32_t>{1, 10, 20}));
  EXPECT_DOUBLE_EQ(r.decisions[0].time_s, 60);
  EXPECT_DOUBLE_EQ(r.decisions[0].effective_s, 90);
  // From then on the sources keep up with the 16,667 sentences/s.
  for (const TimelinePoint& p : r.timeline)
    if (p.time_s > 120) {
      EXPECT_GT(p.source_rate, 0.97 * p.target_rate) << p.time_s;
    }
}

TEST(ScaleControlled, DhalionNeedsSeveralStepsOfOneOperator) {
  sim::Scenario s = sim::load_scenario(example("dhalion-wordcount"));
  s.duration_ns = 900 * kSec;
  DhalionController c(topology_of(s), {});
  ControlledRun r = run_controlled(s, c, {});
  ASSERT_GE(r.decisions.size(), 3u);
  std::vector<uint32_t> prev = topology_of(s).parallelism;
  for (const DecisionRecord& d : r.decisions) {
    int changed = 0;
    for (size_t op = 0; op < prev.size(); ++op) changed += d.parallelism[op] != prev[op];
    EXPECT_EQ(changed, 1) << d.reason;
    prev = d.parallelism;
  }
}

// ---- the command ------------------------------------------------------------------------

using Cmd = testing::CommandResult;
Cmd run(const std::string& args) {
  return testing::run_binary(args);
}

TEST(ScaleCli, PolicyJson) {
  const Cmd r = run("scale policy --topology " + data("ds2-topology.csv") + " --rates " +
                    data("ds2-rates.csv") + " --source-rates " + data("ds2-source-rates.csv") +
                    " --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  simdjson::dom::array a = doc;
  ASSERT_EQ(a.size(), 2u);
  simdjson::dom::element e0 = a.at(0);
  EXPECT_EQ(int64_t(e0["epoch"]), 0);
  EXPECT_EQ(int64_t(e0["parallelism"]["flatmap"]), 10);
  EXPECT_EQ(int64_t(e0["parallelism"]["count"]), 20);
  EXPECT_NEAR(double(e0["target_rate"]["count"]), 1e6 / 60 * 20, 1e-3);
  EXPECT_EQ(int64_t(a.at(1)["parallelism"]["flatmap"]), 11);
  const Cmd t = run("scale policy --topology " + data("ds2-topology.csv") + " --rates " +
                    data("ds2-rates-dir") + " --system timely");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("total workers (timely): 4"), std::string::npos) << t.out;
}

TEST(ScaleCli, ErrorsAndExitCodes) {
  EXPECT_EQ(run("scale policy --rates " + data("ds2-rates.csv")).code, 2);
  EXPECT_EQ(run("scale policy --topology x --rates y --system storm").code, 2);
  const Cmd bad = run("scale policy --topology " + data("ds2-rates.csv") + " --rates x");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("ds2-rates.csv: line 4: expected 6 fields"), std::string::npos) << bad.out;
  EXPECT_EQ(run("scale manage --simulate " + example("timely-iterative")).code, 2);
  EXPECT_EQ(run("scale manage").code, 2);
}

TEST(ScaleCli, ManageSimulatedAppliesAndPlots) {
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-scale-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string log = (dir / "applied").string();
  const Cmd r = run("scale manage --simulate " + example("dhalion-wordcount") +
                    " --duration 200s --format json --svg " + (dir / "plot.svg").string() +
                    " --apply 'sh -c \"cat > " + log + "; echo \\$@ >> " + log + "\" sh'");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  simdjson::dom::array d = doc["decisions"];
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(double(d.at(0)["time_s"]), 60);
  EXPECT_EQ(int64_t(d.at(0)["parallelism"]["count"]), 20);
  simdjson::dom::array tl = doc["timeline"];
  EXPECT_GE(tl.size(), 3u);
  for (simdjson::dom::element p : tl) {
    EXPECT_TRUE(p["source_rate"].is_number());
    EXPECT_TRUE(p["target_rate"].is_number());
    EXPECT_TRUE(p["parallelism"].is_object());
  }
  std::ifstream in(log);
  std::string json, args;
  std::getline(in, json);
  std::getline(in, args);
  EXPECT_EQ(json,
            "{\"time_s\": 60, \"parallelism\": {\"source\": 1, \"flatmap\": 10, \"count\": 20}}");
  EXPECT_EQ(args, "source=1 flatmap=10 count=20");
  std::ifstream svg(dir / "plot.svg");
  std::string head;
  std::getline(svg, head);
  EXPECT_EQ(head.rfind("<svg", 0), 0u);
  fs::remove_all(dir);
}

TEST(ScaleCli, ManageFollowsAMetricsDirectory) {
  const Cmd r = run("scale manage --ds2-metrics " + data("ds2-rates-dir") + " --topology " +
                    data("ds2-topology.csv") + " --source-rates " + data("ds2-source-rates.csv") +
                    " --idle-exit 10ms --poll 5ms --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  simdjson::dom::array d = doc["decisions"];
  // Epoch 0 -> 1/12/34 (ScaleDs2Files.DirectoryOfEpochFiles); epoch 1 measures only the
  // source, so the policy keeps the reported configuration: no second decision.
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(int64_t(d.at(0)["parallelism"]["flatmap"]), 12);
  EXPECT_EQ(int64_t(d.at(0)["parallelism"]["count"]), 34);
}

}  // namespace
}  // namespace snailtrail::test_scale
