// Issue 13, items 4 and 6 (docs/AUTOSCALING.md §1, §3, §4, §7):
// - DS2 parity: DS2's own policy unit tests (strymon-system/ds2,
//   controller/tests/scaling_policy_test.rs: one and two sources, epochs 0, 1 and 7)
//   rebuilt as DS2 files (topology CSV, per-instance rate files), with DS2's expected
//   parallelisms. Their rates are (true processing, true output, observed processing,
//   observed output) per operator, one instance each. The expected values are DS2's; the
//   comments redo them by hand from Eq. 4.5/4.6 with the sources' *true* output rate.
// - Skew: an operator with a saturated instance is never scaled down, the output names
//   the skew; a manager that settles while the backlog grows warns, and headroom or
//   catch-up make it settle on a configuration whose backlog does not grow.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "process_util.hpp"
#include "scale/ds2_files.hpp"
#include "scale/manager.hpp"
#include "scale/policy.hpp"
#include "scale/simulation.hpp"
#include "sim/scenario.hpp"
#include "sim/truth.hpp"

namespace snailtrail::scale::test_scale_ds2_parity {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kSec = 1'000'000'000;

std::string example(const std::string& name) {
  return std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/" + name + ".toml";
}

using Cmd = testing::CommandResult;
Cmd run(const std::string& args) {
  return testing::run_binary(args);
}

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("snailtrail-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    const fs::path p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
};

// One operator's aggregated rates in one epoch of DS2's tests.
struct Ds2Rates {
  const char* op;
  double tp, to, op_rate, oo;  // true processing, true output, observed processing, output
};
struct Ds2Epoch {
  int epoch;
  std::vector<Ds2Rates> ops;
};

// DS2's numbers (scaling_policy_test.rs). The two-source test gives both sources the
// one-source test's source rates.
const std::vector<Ds2Epoch>& one_source_epochs() {
  static const std::vector<Ds2Epoch> e = {
      {0, {{"Source", 0, 100, 0, 90}, {"Op1", 50, 400, 45, 380}, {"Op2", 100, 200, 100, 200}}},
      {1, {{"Source", 0, 200, 0, 90}, {"Op1", 40, 700, 15, 380}, {"Op2", 99, 200, 100, 200}}},
      {7, {{"Source", 0, 200, 0, 90}, {"Op1", 10, 700, 15, 380}, {"Op2", 201, 200, 100, 200}}},
  };
  return e;
}

std::vector<Ds2Epoch> two_source_epochs() {
  std::vector<Ds2Epoch> out;
  for (Ds2Epoch e : one_source_epochs()) {
    Ds2Rates s = e.ops[0];
    e.ops.erase(e.ops.begin());
    s.op = "Source2";
    e.ops.insert(e.ops.begin(), s);
    s.op = "Source1";
    e.ops.insert(e.ops.begin(), s);
    out.push_back(e);
  }
  return out;
}

// DS2's rate line of one instance: operator_id,operator_instance_id,
// total_number_of_operator_instances,epoch_timestamp,true_processing_rate,
// true_output_rate,observed_processing_rate,observed_output_rate
std::string rate_line(const Ds2Rates& r, int epoch) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s,0,1,%d,%.1f,%.1f,%.1f,%.1f\n", r.op, 1000 * (epoch + 1), r.tp,
                r.to, r.op_rate, r.oo);
  return buf;
}

const char* kTopologyHeader =
    "operator_id1,operator_name1,total_number_of_operator_instances1,operator_id2,"
    "operator_name2,total_number_of_operator_instances2\n";

// The one-source test as a DS2 metrics directory: one file NAME-EPOCH.log per instance
// and epoch, as DS2's Flink instrumentation writes them.
struct OneSourceFiles {
  TempDir dir{"ds2-one"};
  std::string topology, rates;
  OneSourceFiles() {
    topology = dir.file("topology.csv", std::string(kTopologyHeader) +
                                            "Source,Source,1,Op1,Op1,1\nOp1,Op1,1,Op2,Op2,1\n");
    for (const Ds2Epoch& e : one_source_epochs())
      for (const Ds2Rates& r : e.ops)
        dir.file("rates/" + std::string(r.op) + "-" + std::to_string(e.epoch) + ".log",
                 rate_line(r, e.epoch));
    rates = (dir.path / "rates").string();
  }
};

// The two-source test as one rates CSV: a new epoch starts when an (operator, instance)
// pair appears again, so the epochs are numbered 0, 1, 2 (DS2's 0, 1, 7).
struct TwoSourceFiles {
  TempDir dir{"ds2-two"};
  std::string topology, rates;
  TwoSourceFiles() {
    topology = dir.file("topology.csv", std::string(kTopologyHeader) +
                                            "S1,Source1,1,Op1,Op1,1\nS2,Source2,1,Op1,Op1,1\n"
                                            "Op1,Op1,1,Op2,Op2,1\n");
    std::string text =
        "# operator_id,operator_instance_id,total_number_of_operator_instances,epoch_timestamp,"
        "true_processing_rate,true_output_rate,observed_processing_rate,observed_output_rate\n";
    for (const Ds2Epoch& e : two_source_epochs())
      for (Ds2Rates r : e.ops) {
        const std::string id = r.op == std::string("Source1")   ? "S1"
                               : r.op == std::string("Source2") ? "S2"
                                                                : r.op;
        r.op = id.c_str();
        text += rate_line(r, e.epoch);
      }
    rates = dir.file("rates.csv", text);
  }
};

// (Op1, Op2) per epoch from DS2 files.
std::vector<std::pair<uint32_t, uint32_t>> decide_all(const std::string& topology,
                                                      const std::string& rates, SourceTarget st) {
  const Topology t = read_topology_csv(topology);
  const auto op1 = *t.find_name("Op1"), op2 = *t.find_name("Op2");
  std::vector<std::pair<uint32_t, uint32_t>> out;
  PolicyOptions po;
  po.source_target = st;
  for (const RatesEpoch& e : read_rates(rates, t)) {
    Topology cur = t;
    cur.parallelism = e.parallelism;
    const Decision d = ds2_decide(cur, e.instances, {}, po);
    out.push_back({d.parallelism[op1], d.parallelism[op2]});
  }
  return out;
}

using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;

TEST(ScaleDs2Parity, OneSourceEpochs017) {
  OneSourceFiles f;
  // Epoch 0: source's true output 100. Op1: ceil(100 / 50) = 2, o* = 400 / 50 * 100 = 800;
  //          Op2: ceil(800 / 100) = 8.
  // Epoch 1: 200. Op1: ceil(200 / 40) = 5, o* = 700 / 40 * 200 = 3500; Op2: ceil(3500 / 99)
  //          = ceil(35.35) = 36.
  // Epoch 7: 200. Op1: ceil(200 / 10) = 20, o* = 70 * 200 = 14000; Op2: ceil(14000 / 201)
  //          = ceil(69.65) = 70.
  EXPECT_EQ(decide_all(f.topology, f.rates, SourceTarget::true_output),
            (Pairs{{2, 8}, {5, 36}, {20, 70}}));
  // The other definition, the sources' observed output rate (90): epoch 1: Op1
  // ceil(90 / 40) = 3, Op2 ceil(700 / 40 * 90 / 99) = ceil(15.9) = 16; epoch 7: Op1 9,
  // Op2 ceil(6300 / 201) = 32. (What `scale policy` gave before issue 13.)
  EXPECT_EQ(decide_all(f.topology, f.rates, SourceTarget::observed_output),
            (Pairs{{2, 8}, {3, 16}, {9, 32}}));
  // The directory's epochs keep DS2's numbers.
  const Topology t = read_topology_csv(f.topology);
  std::vector<int64_t> epochs;
  for (const RatesEpoch& e : read_rates(f.rates, t)) epochs.push_back(e.epoch);
  EXPECT_EQ(epochs, (std::vector<int64_t>{0, 1, 7}));
}

TEST(ScaleDs2Parity, TwoSourcesEpochs017) {
  TwoSourceFiles f;
  // Op1 keeps up with both sources: epoch 0: ceil(200 / 50) = 4, o* = 8 * 200 = 1600,
  // Op2 16; epoch 1: ceil(400 / 40) = 10, o* = 17.5 * 400 = 7000, Op2 ceil(70.7) = 71;
  // epoch 7: ceil(400 / 10) = 40, o* = 28000, Op2 ceil(139.3) = 140.
  EXPECT_EQ(decide_all(f.topology, f.rates, SourceTarget::true_output),
            (Pairs{{4, 16}, {10, 71}, {40, 140}}));
  EXPECT_EQ(decide_all(f.topology, f.rates, SourceTarget::observed_output),
            (Pairs{{4, 15}, {5, 32}, {18, 63}}));
}

TEST(ScaleDs2Parity, SourceWithoutTrueOutputFallsBackToItsObservedRate) {
  Topology t;
  t.add_operator("src", 1);
  t.add_operator("map", 1);
  t.add_edge(0, 1);
  // The source has no useful time (true rates undefined), observed output 30/s; map takes
  // 10/s per instance: ceil(30 / 10) = 3 either way, and a note says which rate was used.
  const std::vector<InstanceRates> in = {{0, 0, NAN, NAN, 0, 30}, {1, 0, 10, 10, 10, 10}};
  const Decision d = ds2_decide(t, in, {});
  EXPECT_EQ(d.parallelism, (std::vector<uint32_t>{1, 3}));
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("observed output rate is the target"), std::string::npos);
  PolicyOptions o;
  o.source_target = SourceTarget::observed_output;
  EXPECT_TRUE(ds2_decide(t, in, {}, o).notes.empty());
  // A given target wins over both.
  EXPECT_EQ(ds2_decide(t, in, {50, NAN}).parallelism, (std::vector<uint32_t>{1, 5}));
}

TEST(ScaleDs2Parity, PolicyCommandGivesDs2sNumbers) {
  OneSourceFiles f;
  const Cmd r =
      run("scale policy --topology " + f.topology + " --rates " + f.rates + " --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  simdjson::dom::array a = doc;
  ASSERT_EQ(a.size(), 3u);
  const int64_t want[3][3] = {{0, 2, 8}, {1, 5, 36}, {7, 20, 70}};
  for (size_t i = 0; i < 3; ++i) {
    simdjson::dom::element e = a.at(i);
    EXPECT_EQ(int64_t(e["epoch"]), want[i][0]);
    EXPECT_EQ(int64_t(e["parallelism"]["Op1"]), want[i][1]);
    EXPECT_EQ(int64_t(e["parallelism"]["Op2"]), want[i][2]);
    EXPECT_EQ(std::string_view(e["source_target"]), "true");
  }
  // DS2's threshold ratio is true / observed output (200 / 90): ours, its inverse.
  EXPECT_NEAR(double(a.at(1)["achieved_ratio"]), 0.45, 1e-12);
  const Cmd o = run("scale policy --topology " + f.topology + " --rates " + f.rates +
                    " --source-target observed");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("observed output rate"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  Op2             1       16          1575.0            99.0"),
            std::string::npos)
      << o.out;
  EXPECT_EQ(run("scale policy --topology " + f.topology + " --rates " + f.rates +
                " --source-target maybe")
                .code,
            2);
}

TEST(ScaleDs2Parity, ManagerFollowingDs2MetricsUsesTheTrueOutputRate) {
  OneSourceFiles f;
  const Cmd r = run("scale manage --ds2-metrics " + f.rates + " --topology " + f.topology +
                    " --idle-exit 10ms --poll 5ms --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  simdjson::dom::array d = doc["decisions"];
  // Every epoch reports the 1/1/1 it ran with, so each is a decision of its own.
  ASSERT_EQ(d.size(), 3u) << r.out;
  const int64_t want[3][2] = {{2, 8}, {5, 36}, {20, 70}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(int64_t(d.at(i)["parallelism"]["Op1"]), want[i][0]);
    EXPECT_EQ(int64_t(d.at(i)["parallelism"]["Op2"]), want[i][1]);
  }
}

// ---- skew: saturated operators ------------------------------------------------------

// source -> count (4 instances, true processing 100/s each). count-0 is 99 % busy, the
// others 10 %: the averaged model calls count over-provisioned.
Topology skew_topology() {
  Topology t;
  t.add_operator("source", 1);
  t.add_operator("count", 4);
  t.add_edge(0, 1);
  return t;
}

std::vector<InstanceRates> skewed_instances() {
  return {{0, 0, 1000, 1000, 129, 129},
          {1, 0, 100, 100, 99, 99},
          {1, 1, 100, 100, 10, 10},
          {1, 2, 100, 100, 10, 10},
          {1, 3, 100, 100, 10, 10}};
}

TEST(ScaleSkewPolicy, SaturatedOperatorIsNeverScaledDownAndSkewIsNamed) {
  const Topology t = skew_topology();
  // Target 150/s: the model (average 100/s per instance) says ceil(150 / 100) = 2.
  const Decision plain = [&] {
    PolicyOptions o;
    o.saturation = 0;
    return ds2_decide(t, skewed_instances(), {150, NAN}, o);
  }();
  EXPECT_EQ(plain.parallelism, (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(plain.saturated.empty());
  const Decision d = ds2_decide(t, skewed_instances(), {150, NAN});
  EXPECT_EQ(d.parallelism, (std::vector<uint32_t>{1, 4}));  // kept, not 2
  ASSERT_EQ(d.saturated.size(), 1u);
  EXPECT_EQ(d.saturated[0].op, 1u);
  EXPECT_EQ(d.saturated[0].instance, 0u);
  EXPECT_DOUBLE_EQ(d.saturated[0].busy, 0.99);
  EXPECT_NEAR(d.saturated[0].others_busy, 0.1, 1e-12);
  EXPECT_TRUE(d.saturated[0].skew);
  EXPECT_EQ(d.saturated[0].model, 2u);
  // Sources at 129 of 150: missed, because of skew, naming the instance.
  EXPECT_NE(d.skew.find("target missed (sources at 86.0% of their target) because of skew"),
            std::string::npos)
      << d.skew;
  EXPECT_NE(d.skew.find("count-0 is 99.0% busy"), std::string::npos) << d.skew;
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("not scaled down to the model's 2"), std::string::npos);
  // A label names the worker.
  const Decision l = ds2_decide(t, skewed_instances(), {150, NAN}, {},
                                [](uint32_t, uint32_t i) { return "w" + std::to_string(i); });
  EXPECT_NE(l.skew.find("w0 is 99.0% busy"), std::string::npos) << l.skew;
  // Skew explains the shortfall: the target-rate ratio does not raise the targets.
  PolicyOptions th;
  th.threshold = 0.95;
  EXPECT_EQ(ds2_decide(t, skewed_instances(), {150, NAN}, th).compensation, 1.0);
  // Scaling up is not held back: target 1000/s needs ceil(1000 / 100) = 10.
  EXPECT_EQ(ds2_decide(t, skewed_instances(), {1000, NAN}).parallelism[1], 10u);
}

TEST(ScaleSkewPolicy, BalancedSaturationIsNotSkewButNotScaledDownEither) {
  const Topology t = skew_topology();
  std::vector<InstanceRates> in = skewed_instances();
  for (size_t i = 2; i < in.size(); ++i) in[i].observed_processing = 97;  // all busy
  const Decision d = ds2_decide(t, in, {150, NAN});
  EXPECT_EQ(d.parallelism[1], 4u);
  ASSERT_EQ(d.saturated.size(), 1u);
  EXPECT_FALSE(d.saturated[0].skew);
  EXPECT_TRUE(d.skew.empty());
  // One instance reported of four (the others had no useful time): they idle, skew.
  const Decision one = ds2_decide(t, {in[0], in[1]}, {150, NAN});
  ASSERT_EQ(one.saturated.size(), 1u);
  EXPECT_TRUE(one.saturated[0].skew);
  EXPECT_NE(one.skew.find("the other 3 instances of count idle"), std::string::npos) << one.skew;
}

// The simulated skewed word count (30 % of the words carry count-0's hot key), traced and
// given to `scale policy --trace` with the sources' target of 2000 sentences/s.
TEST(ScaleSkewPolicy, SkewedWordCountTraceKeepsCountAndNamesTheHotWorker) {
  TempDir dir("skew-policy");
  const std::string trace = (dir.path / "skew.snail").string();
  ASSERT_EQ(run("simulate " + example("wordcount-skew-30") + " -o " + trace + " -q").code, 0);
  const std::string src = dir.file("source-rates.csv", "source,500\n");
  const Cmd r = run("scale policy --trace " + trace + " --interval 10s --source-rates " + src +
                    " --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string hot =
      *sim::expected_truth(sim::load_scenario(example("wordcount-skew-30"))).hot_worker;
  ASSERT_EQ(hot, "count-0");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  simdjson::dom::array a = doc;
  ASSERT_GE(a.size(), 5u);
  size_t guarded = 0;
  for (simdjson::dom::element e : a) {
    EXPECT_GE(int64_t(e["parallelism"]["count"]), int64_t(e["current"]["count"]));
    simdjson::dom::array sat = e["saturated"];
    bool count_saturated = false;
    for (simdjson::dom::element s : sat)
      if (std::string_view(s["operator"]) == "count") {
        count_saturated = true;
        EXPECT_GE(double(s["busy"]), 0.95);
        EXPECT_TRUE(bool(s["skew"]));
        guarded += int64_t(s["model"]) < int64_t(e["current"]["count"]);
      }
    EXPECT_TRUE(count_saturated);
    const std::string_view skew = e["skew"];
    EXPECT_NE(skew.find("because of skew"), std::string_view::npos) << skew;
    EXPECT_NE(skew.find(hot + " is "), std::string_view::npos) << skew;
  }
  // The averaged model would have scaled count down (the bug this guards against).
  EXPECT_GT(guarded, 0u);
  const Cmd table = run("scale policy --trace " + trace + " --interval 10s --source-rates " + src);
  ASSERT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("because of skew: count-0 is"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("not scaled down to the model's"), std::string::npos) << table.out;
}

// ---- the manager: a growing backlog, headroom, catch-up ------------------------------

ControlledRun wordcount(ManagerOptions m, double duration_s = 900) {
  sim::Scenario s = sim::load_scenario(example("dhalion-wordcount"));
  s.duration_ns = static_cast<int64_t>(duration_s) * kSec;
  Ds2Manager ds2(topology_of(s), m);
  return run_controlled(s, ds2, {.interval_ns = 60 * kSec, .pause_ns = 30 * kSec});
}

// The least-squares slope, recomputed from the timeline by another route (sums of
// products), over the final deployment's running intervals without the first.
double slope(const ControlledRun& r) {
  const double from = r.decisions.back().effective_s;
  std::vector<std::pair<double, double>> p;
  for (const TimelinePoint& x : r.timeline)
    if (!x.paused && x.time_s > from) p.push_back({x.time_s, x.backlog});
  p.erase(p.begin());
  const double n = static_cast<double>(p.size());
  double st = 0, sb = 0, stt = 0, stb = 0;
  for (auto [t, b] : p) st += t, sb += b, stt += t * t, stb += t * b;
  return (n * stb - st * sb) / (n * stt - st * st);
}

TEST(ScaleBacklog, ExactCapacityWarnsAndHeadroomStopsTheGrowth) {
  // Factor 1: DS2 decides 10/20, exactly the capacity the input needs; the sources then
  // read 99.8 % of it and the backlog grows by ~35 records/s with no further decision.
  const ControlledRun exact = wordcount({.warmup = 1});
  ASSERT_EQ(exact.decisions.size(), 1u);
  EXPECT_EQ(exact.decisions[0].parallelism, (std::vector<uint32_t>{1, 10, 20}));
  const BacklogTrend g = backlog_trend(exact);
  ASSERT_TRUE(g.judged);
  EXPECT_TRUE(g.growing);
  EXPECT_NEAR(g.growth_per_s, slope(exact), 1e-6 * std::abs(slope(exact)));
  EXPECT_GT(g.growth_per_s, 0.001 * 16666.7);
  EXPECT_GT(g.backlog_to, g.backlog_from);
  // Headroom: busy 90 % at most -> ceil(10 / 0.9) = 12 flatmap, ceil(20 / 0.9) = 23 count.
  const ControlledRun room = wordcount({.warmup = 1, .target_utilization = 0.9});
  ASSERT_EQ(room.decisions.size(), 1u);
  EXPECT_EQ(room.decisions[0].parallelism, (std::vector<uint32_t>{1, 12, 23}));
  const BacklogTrend h = backlog_trend(room);
  ASSERT_TRUE(h.judged);
  EXPECT_FALSE(h.growing);
  EXPECT_LE(h.growth_per_s, 0);
  // The backlog of the start is worked off and stays so.
  EXPECT_LT(room.timeline.back().backlog, 0.01 * exact.timeline.back().backlog);
}

TEST(ScaleBacklog, CatchUpRaisesTheTargetsByTheBacklog) {
  // Catch-up 300 s, restart 30 s: the first decision (at 60 s) targets
  // rate + (backlog + rate x 30) / 300, taken from the run's own timeline.
  const ControlledRun r =
      wordcount({.warmup = 1, .min_change = 2, .catch_up_s = 300, .restart_s = 30});
  ASSERT_GE(r.decisions.size(), 1u);
  const TimelinePoint& at = r.timeline[0];
  ASSERT_DOUBLE_EQ(at.time_s, 60);
  const double target = at.target_rate + (at.backlog + at.target_rate * 30) / 300;
  // flatmap 600 us per sentence (1666.7/s per instance), count 60 us per word x 20 words.
  const uint32_t flatmap = ceil_parallelism(target / (1e6 / 600));
  const uint32_t count = ceil_parallelism(target * 20 / (1e6 / 60));
  // The simulated costs are sampled: allow the measured rates one instance either way.
  EXPECT_NEAR(r.decisions[0].parallelism[1], flatmap, 1);
  EXPECT_NEAR(r.decisions[0].parallelism[2], count, 1);
  EXPECT_GT(r.decisions[0].parallelism[1], 10u);  // more than the exact capacity
  EXPECT_NE(r.decisions[0].reason.find("catch-up"), std::string::npos);
  const BacklogTrend b = backlog_trend(r);
  ASSERT_TRUE(b.judged);
  EXPECT_FALSE(b.growing);
  EXPECT_LT(r.timeline.back().backlog, 0.01 * r.timeline[1].backlog);
}

TEST(ScaleBacklog, SkewedRunNeverScalesTheSaturatedOperatorDownAndSaysWhy) {
  sim::Scenario s = sim::load_scenario(example("wordcount-skew-80"));
  s.duration_ns = 300 * kSec;
  Ds2Manager m(topology_of(s), {.warmup = 1, .max_decisions = 2});
  const ControlledRun r = run_controlled(s, m, {.interval_ns = 20 * kSec, .pause_ns = 10 * kSec});
  for (const DecisionRecord& d : r.decisions) {
    EXPECT_GE(d.parallelism[2], 4u) << d.reason;  // count started at 4
    EXPECT_NE(d.reason.find("because of skew: count-0 is"), std::string::npos) << d.reason;
  }
  ASSERT_TRUE(m.last_decision().has_value());
  EXPECT_FALSE(m.last_decision()->skew.empty());
  EXPECT_TRUE(backlog_trend(r).growing);
}

TEST(ScaleBacklog, ManageJsonCarriesTheBacklogAndTheWarning) {
  const std::string base = "scale manage --simulate " + example("dhalion-wordcount") +
                           " --duration 600s --interval 60s --warmup 1 --format json";
  for (const bool headroom : {false, true}) {
    const Cmd r = run(base + (headroom ? " --target-utilization 0.9" : ""));
    ASSERT_EQ(r.code, 0) << r.out;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
    simdjson::dom::element s = doc["summary"];
    EXPECT_TRUE(bool(s["backlog_judged"]));
    EXPECT_EQ(bool(s["backlog_growing"]), !headroom);
    EXPECT_TRUE(s["backlog_growth_per_s"].is_number());
    if (headroom) {
      EXPECT_TRUE(s["warning"].is_null());
    } else {
      const std::string_view w = s["warning"];
      EXPECT_NE(w.find("backlog keeps growing"), std::string_view::npos) << w;
      EXPECT_NE(w.find("--target-utilization"), std::string_view::npos) << w;
      EXPECT_NE(w.find("--catch-up"), std::string_view::npos) << w;
    }
  }
  const Cmd table = run("scale manage --simulate " + example("dhalion-wordcount") +
                        " --duration 600s --interval 60s --warmup 1");
  EXPECT_NE(table.out.find("warning: the backlog keeps growing"), std::string::npos) << table.out;
  EXPECT_EQ(run(base + " --target-utilization 1.5").code, 2);
  EXPECT_EQ(run(base + " --catch-up soon").code, 2);
}

}  // namespace
}  // namespace snailtrail::scale::test_scale_ds2_parity
