// The control loop of `scale` over one observation source (scale/control_loop.hpp): the
// order of the hooks, the source targets it fills in, restarts, decisions that the source
// does not deploy, and the end at on_decision's word, against a scripted source and a
// scripted controller; and the simulator as a source giving what run_controlled gives.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "scale/control_loop.hpp"
#include "scale/simulation.hpp"
#include "sim/scenario.hpp"

namespace snailtrail::scale::test_scale_loop {
namespace {

Topology two_ops(const std::string& second) {
  Topology t;
  t.add_operator("src", 1);
  t.add_operator(second, 2);
  t.add_edge(0, 1);
  return t;
}

// Intervals as scripted; interval 3 belongs to a new dataflow; deploy refuses epoch 2's
// decision (as the simulator refuses a decision equal to what runs).
class ScriptedSource : public ObservationSource {
 public:
  ScriptedSource() : t_(two_ops("map")) {}
  const Topology& topology() const override { return t_; }
  std::optional<SourceInterval> next() override {
    if (epoch_ >= 5) return std::nullopt;
    SourceInterval in;
    in.epoch = epoch_++;
    if (in.epoch == 3) {
      t_ = two_ops("flatmap");
      restarted_ = true;
    }
    in.observation.time_s = static_cast<double>(in.epoch);
    in.observation.parallelism = {1, static_cast<uint32_t>(in.epoch + 1)};
    if (in.epoch == 4) in.observation.source_target = {7, NAN};  // given by the source
    in.decide = in.epoch != 1;
    log.push_back("next " + std::to_string(in.epoch));
    return in;
  }
  bool restarted() override { return std::exchange(restarted_, false); }
  bool deploy(const Action& a, const SourceInterval& in) override {
    log.push_back("deploy " + std::to_string(in.epoch) + " " + a.reason);
    return in.epoch != 2;
  }
  std::vector<std::string> log;

 private:
  Topology t_;
  int64_t epoch_ = 0;
  bool restarted_ = false;
};

class ScriptedController : public Controller {
 public:
  ScriptedController(std::string name, std::vector<std::string>& log)
      : name_(std::move(name)), log_(log) {}
  std::string_view name() const override { return name_; }
  std::optional<Action> observe(const Observation& o) override {
    std::string targets;
    for (double x : o.source_target) targets += std::isnan(x) ? " nan" : " " + std::to_string(x);
    log_.push_back(name_ + " observes " + std::to_string(o.time_s).substr(0, 3) + targets);
    return Action{o.parallelism, std::nullopt, name_};
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
};

TEST(ScaleLoop, HooksInOrderWithRestartsAndRefusedDecisions) {
  ScriptedSource src;
  std::vector<std::unique_ptr<ScriptedController>> made;
  LoopHooks h;
  h.controller = [&](const Topology& t) -> Controller& {
    src.log.push_back("controller for " + t.names[1]);
    made.push_back(std::make_unique<ScriptedController>(t.names[1], src.log));
    return *made.back();
  };
  h.source_rates = [&](const Topology& t) {
    src.log.push_back("source rates for " + t.names[1]);
    return std::vector<double>{2, NAN};
  };
  h.on_interval = [&](const SourceInterval& in) {
    src.log.push_back("interval " + std::to_string(in.epoch));
  };
  h.on_decision = [&](const Action&, const SourceInterval& in) {
    src.log.push_back("decision " + std::to_string(in.epoch));
    return in.epoch < 3;  // stop after the decision on epoch 3
  };
  EXPECT_EQ(run_control_loop(src, h), 2u);
  // Per-instance target 2 x parallelism 1 = 2 for the source, NaN for the map; epoch 4 is
  // never read (the loop ended at epoch 3's decision).
  const std::vector<std::string> expected = {
      "source rates for map",
      "controller for map",  // the topology is known up front
      "next 0",
      "interval 0",
      "map observes 0.0 2.000000 nan",
      "deploy 0 map",
      "decision 0",
      "next 1",
      "interval 1",  // decide = false
      "next 2",
      "interval 2",
      "map observes 2.0 2.000000 nan",
      "deploy 2 map",  // refused
      "next 3",
      "source rates for flatmap",
      "controller for flatmap",
      "interval 3",
      "flatmap observes 3.0 2.000000 nan",
      "deploy 3 flatmap",
      "decision 3"};
  EXPECT_EQ(src.log, expected);
}

TEST(ScaleLoop, SourceTargetsGivenByTheSourceAreKept) {
  ScriptedSource src;
  std::vector<std::unique_ptr<ScriptedController>> made;
  LoopHooks h;
  h.controller = [&](const Topology& t) -> Controller& {
    made.push_back(std::make_unique<ScriptedController>(t.names[1], src.log));
    return *made.back();
  };
  EXPECT_EQ(run_control_loop(src, h), 3u);  // epochs 0, 3 and 4 (2 refused, 1 not decided)
  EXPECT_EQ(src.log.back(), "deploy 4 flatmap");
  EXPECT_EQ(src.log[src.log.size() - 2], "flatmap observes 4.0 7.000000 nan");
  // Without source rates the targets are unknown (NaN per operator).
  EXPECT_EQ(src.log[1], "map observes 0.0 nan nan");
}

// The simulator as a source: run_controlled (which runs the loop) and the loop driven
// here with a second controller give the same decisions and timeline.
TEST(ScaleLoop, SimulatorSourceIsRunControlled) {
  const sim::Scenario s =
      sim::load_scenario(std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/wordcount-4-2-4.toml");
  SimControlOptions so;
  so.interval_ns = 10'000'000'000;
  so.pause_ns = 5'000'000'000;
  sim::Scenario shorter = s;
  shorter.duration_ns = 120'000'000'000;
  Ds2Manager m1(topology_of(shorter), {});
  const ControlledRun a = run_controlled(shorter, m1, so);
  Ds2Manager m2(topology_of(shorter), {});
  std::vector<double> decided;
  SimulatorSource src(shorter, so, [&](const DecisionRecord& d) { decided.push_back(d.time_s); });
  LoopHooks h;
  h.controller = [&](const Topology&) -> Controller& { return m2; };
  run_control_loop(src, h);
  const ControlledRun b = src.finish();
  ASSERT_EQ(a.decisions.size(), b.decisions.size());
  ASSERT_FALSE(a.decisions.empty());
  for (size_t i = 0; i < a.decisions.size(); ++i) {
    EXPECT_EQ(a.decisions[i].parallelism, b.decisions[i].parallelism);
    EXPECT_EQ(a.decisions[i].time_s, b.decisions[i].time_s);
    EXPECT_EQ(decided[i], b.decisions[i].time_s);
  }
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].backlog, b.timeline[i].backlog);
    EXPECT_EQ(a.timeline[i].paused, b.timeline[i].paused);
  }
  // Every running interval but the last is one observation; pauses are not.
  size_t running = 0;
  for (const TimelinePoint& p : b.timeline) running += !p.paused;
  EXPECT_GT(running, a.decisions.size());
}

}  // namespace
}  // namespace snailtrail::scale::test_scale_loop
