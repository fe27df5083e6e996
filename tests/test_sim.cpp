// The simulator: deterministic sampling, scenario files and their errors, the
// invariants of every execution model's traces, and the ground truth.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "sim/rng.hpp"
#include "sim/scenario.hpp"
#include "sim/simulator.hpp"
#include "sim/units.hpp"
#include "sim_test_util.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_sim {
namespace {

using testing::simulate_example;
constexpr int64_t kSec = 1'000'000'000;

// ---- random numbers ------------------------------------------------------------------

TEST(SimRng, SameSeedSameStreamDifferentStreamsDiffer) {
  sim::Rng a(42, 3), b(42, 3), c(42, 4), d(43, 3);
  bool differs_c = false, differs_d = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs_c |= x != c.next();
    differs_d |= x != d.next();
  }
  EXPECT_TRUE(differs_c);
  EXPECT_TRUE(differs_d);
}

TEST(SimRng, BelowIsInRangeAndRoughlyUniform) {
  sim::Rng r(7);
  std::array<int, 6> counts{};
  for (int i = 0; i < 60000; ++i) {
    const uint64_t v = r.below(6);
    ASSERT_LT(v, 6u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}

TEST(SimRng, DistributionMomentsMatchTheirParameters) {
  using sim::DistKind;
  const std::vector<sim::Distribution> dists = {
      {DistKind::fixed, 5, 0},   {DistKind::uniform, 2, 6},     {DistKind::exponential, 3, 0},
      {DistKind::normal, 10, 2}, {DistKind::lognormal, 4, 1.5},
  };
  for (const sim::Distribution& d : dists) {
    sim::Rng r(11);
    const int n = 200000;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i) {
      const double x = d.sample(r);
      ASSERT_GE(x, 0);
      sum += x;
      sq += x * x;
    }
    const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    EXPECT_NEAR(mean, d.mean(), 0.02 * d.mean()) << static_cast<int>(d.kind);
    EXPECT_NEAR(sd, d.stddev(), 0.03 * d.mean() + 1e-9) << static_cast<int>(d.kind);
    // Sums of many draws (normal approximation) keep mean and variance.
    double s2 = 0, q2 = 0;
    for (int i = 0; i < 20000; ++i) {
      const double x = d.sum(100, r);
      s2 += x;
      q2 += x * x;
    }
    const double m2 = s2 / 20000, sd2 = std::sqrt(q2 / 20000 - m2 * m2);
    EXPECT_NEAR(m2, 100 * d.mean(), 0.01 * 100 * d.mean());
    EXPECT_NEAR(sd2, 10 * d.stddev(), 0.05 * 10 * d.stddev() + 1e-9);
  }
}

TEST(SimRng, StochasticRoundingKeepsTheExpectation) {
  sim::Rng r(3);
  uint64_t total = 0;
  for (int i = 0; i < 100000; ++i) total += sim::stochastic_round(3.3, r);
  EXPECT_NEAR(static_cast<double>(total) / 100000, 3.3, 0.01);
  EXPECT_EQ(sim::stochastic_round(4.0, r), 4u);
  EXPECT_EQ(sim::stochastic_round(0.0, r), 0u);
}

// ---- units and scenario files ------------------------------------------------------------

TEST(SimUnits, DurationsRatesBandwidths) {
  EXPECT_EQ(sim::parse_duration_text("250us"), 250'000);
  EXPECT_EQ(sim::parse_duration_text("1.5s"), 1'500'000'000);
  EXPECT_EQ(sim::parse_duration_text("2m"), 120 * kSec);
  EXPECT_THROW(sim::parse_duration_text("10"), std::invalid_argument);
  EXPECT_THROW(sim::parse_duration_text("10 parsecs"), std::invalid_argument);
  EXPECT_DOUBLE_EQ(sim::parse_rate_text("1200/min"), 20.0);
  EXPECT_DOUBLE_EQ(sim::parse_rate_text("500/s"), 500.0);
  EXPECT_DOUBLE_EQ(sim::parse_rate_text("7"), 7.0);
  EXPECT_THROW(sim::parse_rate_text("5/fortnight"), std::invalid_argument);
  EXPECT_DOUBLE_EQ(sim::parse_bandwidth_text("10Gbit/s"), 1.25e9);
  EXPECT_DOUBLE_EQ(sim::parse_bandwidth_text("100MB/s"), 1e8);
  EXPECT_THROW(sim::parse_bandwidth_text("fast"), std::invalid_argument);
}

constexpr const char* kMinimal = R"(
model = "pipelined"
duration = "2s"
[[operators]]
name = "src"
rate = 1000
cost.input = "10us"
[[operators]]
name = "sink"
parallelism = 2
cost.processing = { dist = "uniform", min = "5us", max = "15us" }
[[edges]]
from = "src"
to = "sink"
partitioning = "hash"
skew = 0.5
)";

TEST(SimScenario, ParsesKeysAndDefaults) {
  sim::Scenario s = sim::parse_scenario(kMinimal, "dir/minimal.toml");
  EXPECT_EQ(s.name, "minimal");
  EXPECT_EQ(s.model, sim::Model::pipelined);
  EXPECT_EQ(s.duration_ns, 2 * kSec);
  ASSERT_EQ(s.operators.size(), 2u);
  EXPECT_TRUE(s.operators[0].is_source);
  EXPECT_FALSE(s.operators[1].is_source);
  EXPECT_EQ(s.operators[1].parallelism, 2u);
  EXPECT_EQ(s.operators[1].cost.processing.kind, sim::DistKind::uniform);
  EXPECT_DOUBLE_EQ(s.operators[1].cost.processing.mean(), 10'000);
  EXPECT_DOUBLE_EQ(s.operators[0].rate, 1000);
  ASSERT_EQ(s.edges.size(), 1u);
  EXPECT_EQ(s.edges[0].partitioning, sim::Partitioning::hash);
  EXPECT_DOUBLE_EQ(s.edges[0].skew, 0.5);
  EXPECT_EQ(s.pipelined.batch_records, 100u);  // default
  EXPECT_EQ(sim::worker_count(s), 3u);
}

// Each bad file must fail with a message naming the file, and the key or operator.
TEST(SimScenario, ErrorsNameFileLineAndKey) {
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::string op = "[[operators]]\nname = \"a\"\nrate = 10\n";
  const std::vector<Case> cases = {
      {"model = \"pipelined\"\n", "key 'operators': missing"},
      {op + "paralelism = 3\n", "bad.toml:4:14: key 'operators[0].paralelism': unknown key"},
      {"model = \"batch\"\n" + op, "key 'model': unknown model \"batch\""},
      {"duration = \"10 weeks\"\n" + op, "key 'duration'"},
      {op + "cost.processing = { dist = \"gamma\", mean = \"1us\" }\n",
       "key 'operators[0].cost.processing.dist': unknown distribution \"gamma\""},
      {op + "cost.processing = { dist = \"uniform\", min = \"3us\" }\n",
       "key 'operators[0].cost.processing.max': missing"},
      {op + "[[edges]]\nfrom = \"a\"\nto = \"b\"\n", "key 'edges[0].to': no operator named 'b'"},
      {op + "[[operators]]\nname = \"b\"\n[[edges]]\nfrom = \"a\"\nto = \"b\"\nskew = 0.3\n",
       "key 'edges[0].skew': skew needs partitioning = \"hash\""},
      {op + "[[operators]]\nname = \"b\"\nparallelism = 2\n[[edges]]\nfrom = \"a\"\nto = "
            "\"b\"\npartitioning = \"forward\"\n",
       "operator 'b': forward edge from 'a' needs equal parallelism"},
      {op + "[[operators]]\nname = \"b\"\nrate = 5\n[[edges]]\nfrom = \"a\"\nto = \"b\"\n",
       "operator 'b': key 'rate' is only allowed on sources"},
      {"model = \"microbatch\"\n[[operators]]\nname = \"a\"\n",
       "operator 'a': the microbatch model needs a source rate"},
      {op + "[[operators]]\nname = \"b\"\n[[operators]]\nname = \"c\"\n[[edges]]\nfrom = "
            "\"b\"\nto = \"c\"\n[[edges]]\nfrom = \"c\"\nto = \"b\"\n[[edges]]\nfrom = \"a\"\nto "
            "= \"b\"\n",
       "form a cycle"},
      {op + "[[operators]]\nname = \"a\"\n", "duplicate operator name 'a'"},
      {"[network]\nbandwidth = \"lots\"\n" + op, "key 'network.bandwidth'"},
      {"seed = -4\n" + op, "key 'seed': must be a non-negative integer"},
      {op + "[[edges\n", "bad.toml:4:"},
  };
  for (const Case& c : cases) {
    try {
      sim::parse_scenario(c.text, "bad.toml");
      ADD_FAILURE() << "no error for:\n" << c.text;
    } catch (const sim::ScenarioError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("bad.toml"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.expect), std::string::npos)
          << "expected \"" << c.expect << "\" in: " << msg;
    }
  }
}

TEST(SimScenario, MissingFileIsAnError) {
  EXPECT_THROW(sim::load_scenario("/nonexistent/x.toml"), sim::ScenarioError);
}

TEST(SimScenario, EveryExampleLoads) {
  for (const char* name :
       {"wordcount-skew-0", "wordcount-skew-30", "wordcount-skew-50", "wordcount-skew-80",
        "wordcount-4-2-4", "wordcount-1-2-4", "wordcount-4-4-4", "spark-microbatch",
        "timely-iterative", "dhalion-wordcount"}) {
    EXPECT_NO_THROW(sim::load_scenario(testing::example_path(name))) << name;
  }
}

TEST(SimScenario, OverridesScaleWorkersAndRates) {
  sim::Scenario s = sim::load_scenario(testing::example_path("wordcount-4-4-4"));
  sim::Overrides o;
  o.duration_ns = 3 * kSec;
  o.seed = 9;
  o.workers = 48;
  o.rate = 8000;
  sim::apply_overrides(s, o);
  EXPECT_EQ(s.duration_ns, 3 * kSec);
  EXPECT_EQ(s.seed, 9u);
  EXPECT_EQ(sim::worker_count(s), 48u);
  for (const sim::OperatorSpec& op : s.operators) EXPECT_EQ(op.parallelism, 16u);
  EXPECT_DOUBLE_EQ(s.operators[0].rate, 8000);
  sim::Overrides zero;
  zero.duration_ns = 0;
  EXPECT_THROW(sim::apply_overrides(s, zero), std::invalid_argument);
  sim::Overrides negative;
  negative.rate = -1.0;
  EXPECT_THROW(sim::apply_overrides(s, negative), std::invalid_argument);
}

// ---- trace invariants -------------------------------------------------------------------

struct Stats {
  uint64_t events = 0, messages = 0, waiting = 0;
  std::map<std::string, uint64_t> processed;   // records on processing ends, by operator
  std::map<std::string, uint64_t> received;    // records on data receives, by receiver's operator
  std::map<std::string, uint64_t> sent;        // records on data sends, by sender's operator
  std::map<std::string, uint64_t> serialized;  // records on serialization ends, by operator
};

// Checks the simulator's invariants on a trace and returns counts for further checks.
Stats check_invariants(const Trace& t) {
  Stats st;
  st.events = t.events.size();
  // Every worker and operator has a name.
  for (const Event& e : t.events) {
    EXPECT_TRUE(t.worker_names.count(e.worker)) << "worker " << e.worker << " has no name";
    if (e.has(kHasOperator)) {
      EXPECT_TRUE(t.operator_names.count(e.op));
    }
  }
  // Sends by (sender, receiver, correlator).
  struct Send {
    int64_t ts;
    bool matched = false;
  };
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, Send> sends;
  for (const Event& e : t.events)
    if (e.kind == EventKind::send) {
      EXPECT_TRUE(e.has(kHasCorrelator) && e.has(kHasRemote));
      EXPECT_TRUE(is_communication(e.activity));
      auto [it, fresh] = sends.try_emplace({e.worker, e.remote, e.correlator}, Send{e.ts});
      EXPECT_TRUE(fresh) << "duplicate correlator " << e.correlator;
    }
  struct Open {
    ActivityType type;
    int64_t start;
  };
  std::unordered_map<uint32_t, Open> open;
  std::set<std::pair<uint32_t, int64_t>> recv_at;
  std::vector<std::pair<uint32_t, int64_t>> waiting_ends;
  std::unordered_map<uint32_t, uint64_t>
      last_processed;  // per worker: records of the last processing
  int64_t prev = INT64_MIN;
  for (const Event& e : t.events) {
    EXPECT_GE(e.ts, prev) << "events not in time order";
    prev = e.ts;
    const std::string op = e.has(kHasOperator) ? t.operator_name(e.op) : "";
    switch (e.kind) {
      case EventKind::start: {
        auto it = open.find(e.worker);
        EXPECT_TRUE(it == open.end()) << t.worker_name(e.worker) << ": " << name_of(e.activity)
                                      << " at " << e.ts << " overlaps " << name_of(it->second.type);
        open[e.worker] = {e.activity, e.ts};
        break;
      }
      case EventKind::end: {
        auto it = open.find(e.worker);
        if (it == open.end()) {
          ADD_FAILURE() << t.worker_name(e.worker) << ": end without start at " << e.ts;
          break;
        }
        EXPECT_EQ(it->second.type, e.activity) << t.worker_name(e.worker) << " at " << e.ts;
        EXPECT_GT(e.ts, it->second.start) << "zero-length activity";
        open.erase(it);
        if (e.activity == ActivityType::waiting) {
          waiting_ends.emplace_back(e.worker, e.ts);
          ++st.waiting;
        }
        if (e.activity == ActivityType::processing && e.has(kHasRecords)) {
          st.processed[op] += e.records;
          last_processed[e.worker] = e.records;
        }
        if (e.activity == ActivityType::serialization && e.has(kHasRecords))
          st.serialized[op] += e.records;
        break;
      }
      case EventKind::send:
        ++st.messages;
        if (e.activity == ActivityType::data_message) {
          const std::string& w = t.worker_names.at(e.worker);
          st.sent[w.substr(0, w.rfind('-'))] += e.records;
        }
        break;
      case EventKind::recv: {
        recv_at.insert({e.worker, e.ts});
        auto it = sends.find({e.remote, e.worker, e.correlator});
        if (it == sends.end()) {
          ADD_FAILURE() << "receive without send: correlator " << e.correlator;
          break;
        }
        EXPECT_FALSE(it->second.matched) << "two receives for correlator " << e.correlator;
        EXPECT_GE(e.ts, it->second.ts) << "received before sent";
        it->second.matched = true;
        if (e.activity == ActivityType::data_message) {
          const std::string& w = t.worker_names.at(e.worker);
          st.received[w.substr(0, w.rfind('-'))] += e.records;
        }
        break;
      }
    }
  }
  EXPECT_TRUE(open.empty()) << open.size() << " activities never end";
  size_t unmatched = 0;
  for (const auto& [key, s] : sends) unmatched += s.matched ? 0 : 1;
  EXPECT_EQ(unmatched, 0u) << "sends without receive";
  size_t bad_waits = 0;
  for (const auto& we : waiting_ends) bad_waits += recv_at.count(we) ? 0 : 1;
  EXPECT_EQ(bad_waits, 0u) << "waiting activities that do not end with a receive";
  return st;
}

// The analysis sees a well-instrumented trace: no diagnostics about it.
void expect_clean_pag(const Trace& t) {
  Pag pag = build_pag(t);
  std::array<uint64_t, kIssueCount> issues{};
  for (const IssueAt& i : pag.issues) ++issues[static_cast<int>(i.issue)];
  for (int i = 0; i < kIssueCount; ++i) EXPECT_EQ(issues[i], 0u) << kIssueNames[i];
}

std::vector<ActivityType> expected_types(const std::string& model) {
  using A = ActivityType;
  std::vector<A> common = {A::processing,         A::waiting,         A::control_message,
                           A::barrier_processing, A::deserialization, A::input};
  std::vector<A> extra;
  if (model == "pipelined")
    extra = {A::data_message, A::serialization, A::buffer, A::fault_tolerance};
  else if (model == "microbatch")
    extra = {A::scheduling, A::serialization, A::io};
  else
    extra = {A::data_message, A::serialization, A::scheduling, A::busy_waiting};
  common.insert(common.end(), extra.begin(), extra.end());
  return common;
}

// Together the models emit every activity type of docs/FORMATS.md but `unknown` (which
// is what gap filling assigns to uninstrumented time).
TEST(SimInvariants, ModelsCoverEveryActivityType) {
  std::set<ActivityType> all;
  for (const char* m : {"pipelined", "microbatch", "timely"})
    for (ActivityType t : expected_types(m)) all.insert(t);
  EXPECT_EQ(all.size(), static_cast<size_t>(kActivityTypeCount - 1));
  EXPECT_FALSE(all.count(ActivityType::unknown));
}

class SimInvariants : public ::testing::TestWithParam<const char*> {};

TEST_P(SimInvariants, ActivitiesMessagesWaitingAndDeterminism) {
  const std::string name = GetParam();
  sim::SimResult a = simulate_example(name, 3 * kSec);
  ASSERT_GT(a.trace.events.size(), 1000u) << name;
  Stats st = check_invariants(a.trace);
  EXPECT_GT(st.messages, 100u);
  EXPECT_GT(st.waiting, 0u);
  expect_clean_pag(a.trace);
  // The activity types of the model show up.
  std::set<ActivityType> types;
  for (const Event& e : a.trace.events) types.insert(e.activity);
  for (ActivityType t : expected_types(a.truth.model))
    EXPECT_TRUE(types.count(t)) << name << " lacks " << name_of(t);
  EXPECT_FALSE(types.count(ActivityType::unknown));
  // Same seed, same trace (byte for byte); another seed, another trace.
  sim::SimResult b = simulate_example(name, 3 * kSec);
  ASSERT_EQ(a.trace.events.size(), b.trace.events.size());
  EXPECT_EQ(0, std::memcmp(a.trace.events.data(), b.trace.events.data(),
                           a.trace.events.size() * sizeof(Event)));
  EXPECT_EQ(a.trace.worker_names, b.trace.worker_names);
  EXPECT_EQ(a.trace.operator_names, b.trace.operator_names);
  EXPECT_EQ(sim::to_json(a.truth), sim::to_json(b.truth));
  if (name == "dhalion-wordcount") return;  // fixed costs, one instance each: nothing random
  sim::SimResult c = simulate_example(name, 3 * kSec, 12345);
  EXPECT_TRUE(c.trace.events.size() != a.trace.events.size() ||
              std::memcmp(a.trace.events.data(), c.trace.events.data(),
                          a.trace.events.size() * sizeof(Event)) != 0);
}

INSTANTIATE_TEST_SUITE_P(SimExamples, SimInvariants,
                         ::testing::Values("wordcount-skew-30", "wordcount-4-2-4",
                                           "wordcount-4-4-4", "dhalion-wordcount",
                                           "spark-microbatch", "timely-iterative"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// Pipelined word count: each flatmap step turns n sentences into exactly 10 n words;
// what is sent arrives; every record a count instance processed was received, and only
// what fits in its input buffers is still queued at the end.
TEST(SimInvariants, RecordsAreConservedThroughOperators) {
  sim::SimResult r = simulate_example("wordcount-skew-50", 5 * kSec);
  Stats st = check_invariants(r.trace);
  // Per step: serialization records = 10 x processing records (flatmap), = read (source).
  std::unordered_map<uint32_t, uint64_t> last;
  size_t steps = 0;
  for (const Event& e : r.trace.events) {
    if (e.kind != EventKind::end || !e.has(kHasRecords)) continue;
    const std::string op = r.trace.operator_name(e.op);
    if (e.activity == ActivityType::processing || e.activity == ActivityType::input) {
      last[e.worker] = e.records;
    } else if (e.activity == ActivityType::serialization) {
      ASSERT_TRUE(last.count(e.worker));
      EXPECT_EQ(e.records, (op == "flatmap" ? 10u : 1u) * last[e.worker]) << op;
      ++steps;
    }
  }
  EXPECT_GT(steps, 300u);
  // In total too, but for steps cut by the end of the run (at most one per worker).
  EXPECT_LE(st.serialized["flatmap"], 10 * st.processed["flatmap"]);
  EXPECT_LE(10 * st.processed["flatmap"] - st.serialized["flatmap"], 4 * 10 * 100u);
  // Everything sent was received (all messages are matched).
  EXPECT_EQ(st.sent["flatmap"], st.received["count"]);
  EXPECT_EQ(st.sent["source"], st.received["flatmap"]);
  // Received but not processed: at most the input buffers' capacity per channel.
  const sim::Scenario s = sim::load_scenario(testing::example_path("wordcount-skew-50"));
  const uint64_t per_channel = uint64_t{s.pipelined.buffer_capacity} * s.pipelined.batch_records;
  EXPECT_GE(st.received["count"], st.processed["count"]);
  EXPECT_LE(st.received["count"] - st.processed["count"], 16 * per_channel);
  EXPECT_GE(st.received["flatmap"], st.processed["flatmap"]);
  EXPECT_LE(st.received["flatmap"] - st.processed["flatmap"], 16 * per_channel);
  // Produced but not yet sent: what the output buffers hold at the end.
  EXPECT_GE(st.serialized["flatmap"], st.sent["flatmap"]);
  EXPECT_LE(st.serialized["flatmap"] - st.sent["flatmap"], 4 * (16 * per_channel + 10 * 100));
  // The hot key: count-0 receives about 0.5 + 0.5/4 of all words.
  uint64_t hot = 0, all = 0;
  for (const Event& e : r.trace.events)
    if (e.kind == EventKind::recv && e.activity == ActivityType::data_message &&
        r.trace.worker_name(e.worker).rfind("count", 0) == 0) {
      all += e.records;
      if (r.trace.worker_name(e.worker) == "count-0") hot += e.records;
    }
  EXPECT_NEAR(static_cast<double>(hot) / static_cast<double>(all), 0.625, 0.01);
}

// Micro-batch: the filter keeps 33 % of the records (fractional selectivity).
TEST(SimInvariants, FractionalSelectivityKeepsItsExpectation) {
  sim::SimResult r = simulate_example("spark-microbatch", 5 * kSec);
  Stats st = check_invariants(r.trace);
  ASSERT_GT(st.processed["filter"], 100000u);
  EXPECT_EQ(st.processed["filter"], st.processed["kafka"]);
  EXPECT_NEAR(static_cast<double>(st.processed["join"]) / st.processed["filter"], 0.33, 0.003);
}

// Timely: the join and the reduce see the same records in every pass (selectivity 1),
// except what is still in flight at the end.
TEST(SimInvariants, TimelyExchangesConserveRecords) {
  sim::SimResult r = simulate_example("timely-iterative", 3 * kSec);
  Stats st = check_invariants(r.trace);
  ASSERT_GT(st.processed["join"], 100000u);
  EXPECT_NEAR(static_cast<double>(st.processed["reduce"]) / st.processed["join"], 1.0, 0.05);
  // All-to-all: every worker sends data to every other worker.
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (const Event& e : r.trace.events)
    if (e.kind == EventKind::send && e.activity == ActivityType::data_message)
      pairs.insert({e.worker, e.remote});
  EXPECT_EQ(pairs.size(), 8u * 7u);
}

TEST(SimInvariants, SourcesFollowTheirRate) {
  // 2000 sentences/s for 4 s without backpressure (4/4/4 keeps up).
  sim::SimResult r = simulate_example("wordcount-4-4-4", 4 * kSec);
  uint64_t read = 0;
  for (const sim::InstanceTruth& x : r.truth.instances)
    if (x.op == "source") read += x.records_in;
  EXPECT_NEAR(static_cast<double>(read), 8000.0, 200.0);
}

TEST(SimInvariants, RateChangesTakeEffect) {
  const std::string text =
      std::string(kMinimal).replace(std::string(kMinimal).find("rate = 1000"), 11,
                                    "rate = 1000\nrate_changes = [{ at = \"1s\", rate = 4000 }]");
  sim::Scenario s = sim::parse_scenario(text, "changes.toml");
  sim::SimResult r = sim::simulate(s);
  uint64_t first = 0, second = 0;
  for (const Event& e : r.trace.events)
    if (e.kind == EventKind::end && e.activity == ActivityType::input && e.has(kHasRecords))
      (e.ts < kSec ? first : second) += e.records;
  EXPECT_NEAR(static_cast<double>(first), 1000, 150);
  EXPECT_NEAR(static_cast<double>(second), 4000, 250);
}

TEST(SimInvariants, WritesAndReadsBackAsSnail) {
  sim::SimResult r = simulate_example("wordcount-skew-30", 2 * kSec);
  const std::string path = ::testing::TempDir() + "sim_roundtrip.snail";
  write_trace(r.trace, path);
  Trace back = read_trace(path);
  ASSERT_EQ(back.events.size(), r.trace.events.size());
  EXPECT_EQ(0, std::memcmp(back.events.data(), r.trace.events.data(),
                           back.events.size() * sizeof(Event)));
  EXPECT_EQ(back.worker_names, r.trace.worker_names);
  EXPECT_EQ(back.operator_names, r.trace.operator_names);
}

// ---- ground truth -------------------------------------------------------------------------

TEST(SimTruth, HotWorkerAndBottleneck) {
  struct Case {
    const char* name;
    const char* hot;
    const char* bottleneck;
  };
  for (const Case& c :
       {Case{"wordcount-skew-0", nullptr, nullptr}, Case{"wordcount-skew-30", "count-0", "count"},
        Case{"wordcount-skew-80", "count-0", "count"}, Case{"wordcount-4-2-4", nullptr, "flatmap"},
        Case{"wordcount-1-2-4", nullptr, "flatmap"}, Case{"wordcount-4-4-4", nullptr, nullptr},
        Case{"spark-microbatch", nullptr, nullptr}, Case{"dhalion-wordcount", nullptr, "count"}}) {
    const sim::Truth t = sim::expected_truth(sim::load_scenario(testing::example_path(c.name)));
    EXPECT_EQ(t.hot_worker.value_or("null"), c.hot ? c.hot : "null") << c.name;
    EXPECT_EQ(t.bottleneck_operator.value_or("null"), c.bottleneck ? c.bottleneck : "null")
        << c.name;
  }
  const sim::Truth spark =
      sim::expected_truth(sim::load_scenario(testing::example_path("spark-microbatch")));
  ASSERT_TRUE(spark.driver_utilization.has_value());
  EXPECT_GT(*spark.driver_utilization, 0.9);
}

// The thesis' DS2 experiment: true rates give flatmap 10 and count 20 in one step.
TEST(SimTruth, DhalionTrueRatesGiveTheOptimalParallelism) {
  sim::SimResult r = simulate_example("dhalion-wordcount", 20 * kSec);
  std::map<std::string, const sim::InstanceTruth*> by_op;
  for (const sim::InstanceTruth& x : r.truth.instances) by_op[x.op] = &x;
  ASSERT_EQ(by_op.size(), 3u);
  auto rate = [](const sim::InstanceTruth* x, uint64_t n) {
    return static_cast<double>(n) / (static_cast<double>(x->useful_ns) * 1e-9);
  };
  const double flat_p = rate(by_op["flatmap"], by_op["flatmap"]->records_in);
  const double flat_o = rate(by_op["flatmap"], by_op["flatmap"]->records_out);
  const double count_p = rate(by_op["count"], by_op["count"]->records_in);
  EXPECT_NEAR(flat_p, 100000.0 / 60, 1.0);    // 100,000 sentences/min
  EXPECT_NEAR(count_p, 1000000.0 / 60, 5.0);  // 1,000,000 words/min
  // Observed rates are far lower: both are starved or backpressured at 1/1.
  EXPECT_LT(static_cast<double>(by_op["flatmap"]->records_in) / 20.0, flat_p);
  // DS2 (thesis Eq. 4.5, 4.6) with the source's target rate.
  const double target = 1000000.0 / 60;
  const double words = target * (flat_o / flat_p);
  EXPECT_EQ(std::ceil(target / flat_p - 1e-6), 10);
  EXPECT_EQ(std::ceil(words / count_p - 1e-6), 20);
}

TEST(SimTruth, JsonHasTheDocumentedSchema) {
  sim::SimResult r = simulate_example("wordcount-skew-30", 2 * kSec);
  const std::string json = sim::to_json(r.truth);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["scenario"]), "wordcount-skew-30");
  EXPECT_EQ(int64_t(doc["seed"]), 1);
  EXPECT_EQ(int64_t(doc["duration_ns"]), 2 * kSec);
  EXPECT_EQ(std::string_view(doc["hot_worker"]), "count-0");
  EXPECT_EQ(std::string_view(doc["bottleneck_operator"]), "count");
  simdjson::dom::array inst = doc["instances"];
  EXPECT_EQ(inst.size(), 12u);
  for (simdjson::dom::element x : inst) {
    const std::string_view worker = x["worker"];
    EXPECT_GT(uint64_t(x["records_in"]), 0u) << worker;
    if (std::string_view(x["operator"]) == "count") {
      const double tp = x["true_processing_rate"];
      EXPECT_NEAR(tp, 1e9 / 130e3, 0.05 * 1e9 / 130e3) << worker;  // 130 us per word
      const double op = x["observed_processing_rate"];
      EXPECT_LT(op, tp);
    }
  }
}

}  // namespace
}  // namespace snailtrail::test_sim
