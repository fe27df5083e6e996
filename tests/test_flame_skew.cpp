// Issue 21's skew check, "critical vs on-CPU": on a skewed word count the code of the
// straggler (the count instance owning the hot word) weighs far more in the critical
// flame graph than its share of CPU time, while the on-CPU graph ranks code by busy time
// only. Deterministic: the job is the simulator's straggler case (same scenario and seed,
// same trace byte for byte), profiled by an ideal CPU-time sampler written as `perf
// script` text (one sample every 1 ms of every worker's busy time, on a fixed clock grid),
// and read back by `snailtrail flamegraph ... --trace` like any imported profile. The
// asserts are shares and ratios with wide margins (measured: on-CPU 27 %, critical 90 %),
// against an on-CPU oracle counted here from the trace itself.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "process_util.hpp"
#include "trace/trace.hpp"
#include "trace/trace_io.hpp"

namespace test_flame_skew {

using namespace snailtrail;

namespace {

constexpr int64_t kPeriod = 1'000'000;  // the sampler's grid: 1 ms

struct Busy {
  int64_t begin, end;
  ActivityType activity;
};

// Every worker's busy (non-waiting) activities, paired start to end.
std::map<uint32_t, std::vector<Busy>> busy_intervals(const Trace& t) {
  std::map<uint32_t, std::vector<const Event*>> by_worker;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!e.is_message()) by_worker[e.worker].push_back(&e);
  }
  std::map<uint32_t, std::vector<Busy>> out;
  for (auto& [w, evs] : by_worker) {
    std::stable_sort(evs.begin(), evs.end(),
                     [](const Event* a, const Event* b) { return a->ts < b->ts; });
    const Event* open = nullptr;
    for (const Event* e : evs) {
      if (e->kind == EventKind::start) {
        open = e;
      } else if (e->kind == EventKind::end && open && open->activity == e->activity) {
        if (e->activity != ActivityType::waiting && e->ts > open->ts)
          out[w].push_back({open->ts, e->ts, e->activity});
        open = nullptr;
      }
    }
  }
  return out;
}

// The leaf function an ideal profiler would see: per operator, and its (de)serialization.
std::string function_of(const std::string& worker, ActivityType a) {
  const std::string op = worker.substr(0, worker.find('-'));
  if (a == ActivityType::serialization) return op + "_serialize";
  if (a == ActivityType::deserialization) return op + "_deserialize";
  if (op == "count") return "count_update_hashmap";
  if (op == "flatmap") return "flatmap_split_words";
  return op + "_" + std::string(kActivityNames[static_cast<size_t>(a)]);
}

class FlameSkew : public snailtrail::testing::TempDirTest {
 protected:
  FlameSkew() : TempDirTest("flame-skew") {}
};

struct Shares {
  std::map<std::string, double> worker;  // worker name -> value
  double total = 0;
  double share(const std::string& w) const {
    auto it = worker.find(w);
    return it == worker.end() || total <= 0 ? 0.0 : it->second / total;
  }
};

Shares workers_of(const std::string& json_path, const Trace& t) {
  simdjson::dom::parser parser;
  simdjson::padded_string json = simdjson::padded_string::load(json_path);
  simdjson::dom::element doc = parser.parse(json);
  Shares s;
  s.total = double(doc["total"]);
  for (simdjson::dom::element w : doc["workers"].get_array()) {
    const uint32_t id = static_cast<uint32_t>(uint64_t(w["id"]));
    s.worker[t.worker_name(id)] += double(w["value"]);
  }
  return s;
}

// Folded output summed by leaf function.
std::map<std::string, double> leaves_of(const std::string& folded) {
  std::map<std::string, double> out;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const size_t sp = line.rfind(' '), semi = line.rfind(';', sp);
    if (sp == std::string::npos) continue;
    out[line.substr(semi == std::string::npos ? 0 : semi + 1,
                    sp - (semi == std::string::npos ? 0 : semi + 1))] +=
        std::stod(line.substr(sp + 1));
  }
  return out;
}

}  // namespace

TEST_F(FlameSkew, CriticalRanksTheStragglersCodeFarAboveItsShareOfCpu) {
  const std::string scenario =
      std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/wordcount-skew-50.toml";
  const std::string trace_path = path("sim.snail").string(), truth = path("truth.json").string();
  auto r = snailtrail::testing::run_binary("simulate " + scenario + " -d 5s -q -o " + trace_path +
                                           " --truth " + truth);
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser tp;
  simdjson::padded_string tj = simdjson::padded_string::load(truth);
  const std::string hot = std::string(std::string_view(tp.parse(tj)["hot_worker"]));
  ASSERT_EQ(hot, "count-0");
  const Trace t = read_trace(trace_path);

  // The ideal sampler: a sample at every multiple of 1 ms inside a busy activity, its
  // thread named like the worker (flamegraph maps threads to workers by name).
  const auto busy = busy_intervals(t);
  std::map<std::string, uint64_t> expected_on_cpu;  // worker -> samples (the oracle)
  std::string perf;
  uint64_t samples = 0;
  for (const auto& [w, list] : busy) {
    const std::string name = t.worker_name(w);
    const uint32_t tid = 1000 + w;
    for (const Busy& b : list) {
      const std::string leaf = function_of(name, b.activity);
      for (int64_t ts = (b.begin + kPeriod - 1) / kPeriod * kPeriod; ts < b.end; ts += kPeriod) {
        perf += fmt::format("{} {} [000] {}.{:09d}: 1000000 cpu-clock:\n", name, tid,
                            ts / 1'000'000'000, ts % 1'000'000'000);
        perf += fmt::format("\t    4011a0 {}+0x10 (/opt/job/bin/job)\n", leaf);
        perf += "\t    401050 worker_loop+0x40 (/opt/job/bin/job)\n";
        perf += "\t    401000 main+0x1c (/opt/job/bin/job)\n\n";
        ++expected_on_cpu[name];
        ++samples;
      }
    }
  }
  ASSERT_GT(expected_on_cpu[hot], 500u);
  std::ofstream(path("perf.txt"), std::ios::binary) << perf;
  const std::string base = "flamegraph " + path("perf.txt").string() + " --trace " + trace_path;

  r = snailtrail::testing::run_binary(base + " --mode on-cpu --format json -o " +
                                      path("on.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = snailtrail::testing::run_binary(base + " --mode critical --format json -o " +
                                      path("crit.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Shares on = workers_of(path("on.json").string(), t);
  const Shares crit = workers_of(path("crit.json").string(), t);

  // On-CPU is busy time only: exactly the oracle's sample counts per worker.
  EXPECT_EQ(on.total, double(samples));
  for (const auto& [name, n] : expected_on_cpu) EXPECT_EQ(on.worker.at(name), double(n)) << name;

  // The straggler's share: on-CPU says a quarter or so (busy time), critical says most.
  const double hot_on = on.share(hot), hot_crit = crit.share(hot);
  EXPECT_GT(hot_on, 0.15);
  EXPECT_LT(hot_on, 0.45);
  EXPECT_GT(hot_crit, 0.75);
  EXPECT_GT(hot_crit, 2.0 * hot_on);
  // The other count instances: busy on-CPU (a fifth of the hot one's or so), but never
  // critical (they wait for input the hot instance's backpressure holds back).
  for (const std::string other : {"count-1", "count-2", "count-3"}) {
    EXPECT_GT(on.share(other), 0.1 * hot_on) << other;
    EXPECT_LT(crit.share(other), 0.01 * hot_crit) << other;
  }
  // Every other worker ranks below the straggler by at least 10x in critical, while
  // on-CPU the hot count instance leads the next worker by less than 4x.
  double next_on = 0, next_crit = 0;
  for (const auto& [name, v] : on.worker)
    if (name != hot) next_on = std::max(next_on, on.share(name));
  for (const auto& [name, v] : crit.worker)
    if (name != hot) next_crit = std::max(next_crit, crit.share(name));
  EXPECT_LT(hot_on, 4.0 * next_on);
  EXPECT_GT(hot_crit, 10.0 * next_crit);

  // By function (folded, summed by leaf): on-CPU the tokenizer of the flatmaps is as busy
  // as the hash map update of the counts; on the critical path the update dominates.
  r = snailtrail::testing::run_binary(base + " --mode on-cpu -q");
  ASSERT_EQ(r.code, 0);
  const auto on_leaf = leaves_of(r.out);
  r = snailtrail::testing::run_binary(base + " --mode critical -q");
  ASSERT_EQ(r.code, 0);
  const auto crit_leaf = leaves_of(r.out);
  const double on_split = on_leaf.at("flatmap_split_words"),
               on_update = on_leaf.at("count_update_hashmap");
  const double crit_split = crit_leaf.at("flatmap_split_words"),
               crit_update = crit_leaf.at("count_update_hashmap");
  fmt::print(
      "{}: on-CPU {:.1f} %, critical {:.1f} % (next worker {:.1f} %, {:.1f} %); "
      "split/update on-CPU {:.2f}, critical {:.3f}\n",
      hot, 100 * hot_on, 100 * hot_crit, 100 * next_on, 100 * next_crit, on_split / on_update,
      crit_split / crit_update);
  EXPECT_GT(on_split, 0.5 * on_update);
  EXPECT_GT(crit_update, 5.0 * crit_split);
  // The graph's total is the critical time the sampled code carried (stderr's line).
  r = snailtrail::testing::run_binary(base + " --mode critical -o " + path("c.folded").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t at = r.out.find("critical: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double attributed = std::stod(r.out.substr(at + 10));
  EXPECT_NEAR(crit.total, attributed, 1e-6 * attributed + 1);
}

}  // namespace test_flame_skew
