// The verdict (summary/verdict.hpp): on the simulator's use cases it names the planted
// cause (the hot worker under skew, the bottleneck operator), says that a job keeping up
// with its input has nothing standing out, and every JSONL window carries one.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "output/names.hpp"
#include "output/verdict_text.hpp"
#include "process_util.hpp"
#include "sim_test_util.hpp"
#include "summary/summary.hpp"
#include "summary/verdict.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_verdict {
namespace {

using testing::CommandResult;
using testing::run_binary;
using testing::slurp;
using testing::TempDirTest;

class VerdictCli : public TempDirTest {
 protected:
  VerdictCli() : TempDirTest("verdict") {}
  // The table's verdict for a simulated example; also checks the truth file says `truth`.
  std::string verdict(const std::string& example, const std::string& truth) {
    const std::string trace = path(example + ".snail").string();
    const std::string truth_file = path(example + ".json").string();
    const CommandResult sim =
        run_binary("simulate " + std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/" + example +
                   ".toml -d 4s --seed 5 -q -o " + trace + " --truth " + truth_file);
    EXPECT_EQ(sim.code, 0) << sim.out;
    if (!truth.empty()) {
      EXPECT_NE(slurp(truth_file).find(truth), std::string::npos) << example;
    }
    const CommandResult r = run_binary("analyze " + trace + " --no-progress");
    EXPECT_EQ(r.code, 0) << r.out;
    const size_t v = r.out.find("VERDICT: ");
    if (v == std::string::npos) return r.out;
    return r.out.substr(v + 9, r.out.find("\n\n", v) - v - 9);
  }
};

TEST_F(VerdictCli, NamesThePlantedCause) {
  for (const char* skew : {"wordcount-skew-30", "wordcount-skew-50", "wordcount-skew-80"})
    EXPECT_EQ(verdict(skew, "\"hot_worker\": \"count-0\"").rfind("count-0 is the straggler", 0), 0u)
        << skew;
  for (const char* op : {"wordcount-1-2-4", "wordcount-4-2-4"})
    EXPECT_EQ(verdict(op, "\"bottleneck_operator\": \"flatmap\"")
                  .rfind("Operator flatmap is the bottleneck", 0),
              0u)
        << op;
  EXPECT_EQ(verdict("dhalion-wordcount", "\"bottleneck_operator\": \"count\"")
                .rfind("Operator count is the bottleneck", 0),
            0u);
  // Micro-batch (thesis Fig. 3.8): the driver's scheduling, on the driver.
  std::string mb;  // the verdict as one line (the table wraps it)
  for (char c : verdict("spark-microbatch", "\"model\": \"microbatch\""))
    if (c != '\n' && !(c == ' ' && !mb.empty() && mb.back() == ' ')) mb += c;
  EXPECT_EQ(mb.rfind("scheduling limits latency", 0), 0u) << mb;
  EXPECT_NE(mb.find("most on driver"), std::string::npos) << mb;
  // Balanced jobs whose sources pace them: nothing stands out.
  for (const char* balanced : {"wordcount-4-4-4", "wordcount-skew-0"}) {
    const std::string v = verdict(balanced, "\"hot_worker\": null");
    EXPECT_EQ(v.rfind("The job keeps up with its input", 0), 0u) << balanced << ": " << v;
    EXPECT_NE(v.find("no worker or operator stands out"), std::string::npos);
  }
}

TEST_F(VerdictCli, EveryJsonlWindowHasOne) {
  const std::string trace = path("t.snail").string();
  ASSERT_EQ(run_binary("simulate " + std::string(SNAILTRAIL_SOURCE_DIR) +
                       "/examples/wordcount-skew-50.toml -d 3s -q -o " + trace)
                .code,
            0);
  const CommandResult r = run_binary("analyze " + trace + " -f jsonl --no-progress");
  ASSERT_EQ(r.code, 0);
  size_t lines = 0, verdicts = 0;
  // JSON lines (stderr, merged here, notes the window --window auto chose).
  for (size_t p = 0; (p = r.out.find("\n{", p)) != std::string::npos; ++p) ++lines;
  if (r.out.rfind("{", 0) == 0) ++lines;
  for (size_t p = 0; (p = r.out.find("\"verdict\":{\"kind\":\"straggler\",\"name\":\"count-0\"",
                                     p)) != std::string::npos;
       ++p)
    ++verdicts;
  EXPECT_EQ(lines, 4u);     // 3 windows, then the run
  EXPECT_EQ(verdicts, 4u);  // each window's, and the run's
  // --summary without verdict leaves it out.
  EXPECT_EQ(run_binary("analyze " + trace + " -f jsonl --no-progress --summary worker")
                .out.find("verdict"),
            std::string::npos);
}

// The run line of `analyze -f jsonl` output (stderr's notes are merged into it).
std::string last_line(const std::string& out) {
  const size_t at = out.rfind("{\"run\":");
  EXPECT_NE(at, std::string::npos) << out;
  if (at == std::string::npos) return {};
  return out.substr(at, out.find('\n', at) - at);
}

// The run line of an analysis: {"run": {...}, "verdict": {...}}.
struct RunLine {
  std::string kind, name, text;
  int64_t windows = 0, windows_with_paths = 0;
  std::vector<std::pair<std::string, int64_t>> others;  // name, windows
  int64_t ds2_instances = 0, ds2_now = 0;
};

RunLine parse_run_line(const std::string& line) {
  RunLine r;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(line).get(doc), simdjson::SUCCESS) << line;
  simdjson::dom::element v;
  EXPECT_EQ(doc["run"].error(), simdjson::SUCCESS) << line;
  if (doc["verdict"].get(v) != simdjson::SUCCESS) return r;
  r.kind = std::string(std::string_view(v["kind"]));
  if (!v["name"].is_null()) r.name = std::string(std::string_view(v["name"]));
  r.text = std::string(std::string_view(v["text"]));
  r.windows = int64_t(v["windows"]);
  r.windows_with_paths = int64_t(v["windows_with_paths"]);
  for (simdjson::dom::element o : simdjson::dom::array(v["others"]))
    r.others.emplace_back(std::string(std::string_view(o["name"])), int64_t(o["windows"]));
  simdjson::dom::element ds2;
  if (v["ds2"].get(ds2) == simdjson::SUCCESS) {
    r.ds2_instances = int64_t(ds2["instances"]);
    r.ds2_now = int64_t(ds2["now"]);
  }
  return r;
}

// The whole run's verdict on the simulator's use cases: the planted cause, decided by
// most windows (the JSONL run line agrees with the table's VERDICT).
TEST_F(VerdictCli, RunVerdictNamesThePlantedCauseOverWindows) {
  struct Case {
    const char* example;
    const char* kind;
    const char* name;  // the truth file's
  };
  for (const Case& c : {Case{"wordcount-skew-50", "straggler", "count-0"},
                        Case{"wordcount-4-2-4", "operator", "flatmap"},
                        Case{"dhalion-wordcount", "operator", "count"},
                        Case{"wordcount-4-4-4", "input", "input"}}) {
    SCOPED_TRACE(c.example);
    const std::string trace = path(std::string(c.example) + ".snail").string();
    ASSERT_EQ(run_binary("simulate " + std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/" +
                         c.example + ".toml -d 4s --seed 5 -q -o " + trace)
                  .code,
              0);
    const CommandResult r = run_binary("analyze " + trace + " -f jsonl --no-progress");
    ASSERT_EQ(r.code, 0) << r.out;
    const RunLine run = parse_run_line(last_line(r.out));
    EXPECT_EQ(run.kind, c.kind) << run.text;
    EXPECT_EQ(run.name, c.name) << run.text;
    EXPECT_EQ(run.windows_with_paths, 4);
    // Most windows find it (every one, for these steady runs).
    EXPECT_GE(2 * run.windows, run.windows_with_paths) << run.text;
    EXPECT_NE(run.text.find(" Windows: "), std::string::npos) << run.text;
    EXPECT_NE(run.text.find(" find this"), std::string::npos) << run.text;
  }
}

// A run whose straggler changes after 3 s: count-0 holds the hot key, then count-2. The
// run's verdict names the one that dominates in total (count-0: 3 of 5 windows) and
// mentions the other with its windows.
TEST_F(VerdictCli, BottleneckChangingHalfwayNamesTheDominantOneAndMentionsTheOther) {
  auto run_with_hot = [](uint32_t hot, int64_t seconds) {
    sim::Scenario sc = sim::load_scenario(testing::example_path("wordcount-skew-50"));
    for (sim::EdgeSpec& e : sc.edges)
      if (e.skew > 0) e.hot_instance = hot;
    sim::Overrides o;
    o.duration_ns = seconds * 1'000'000'000;
    sim::apply_overrides(sc, o);
    return sim::simulate(sc);
  };
  sim::SimResult a = run_with_hot(0, 3), b = run_with_hot(2, 2);
  ASSERT_EQ(a.truth.hot_worker.value_or(""), "count-0");
  ASSERT_EQ(b.truth.hot_worker.value_or(""), "count-2");
  // The second run after the first: shifted to start at 3 s, its correlators apart.
  Trace t = std::move(a.trace);
  int64_t max_corr = 0;
  for (const Event& e : t.events) max_corr = std::max(max_corr, e.correlator);
  for (Event e : b.trace.events) {
    e.ts += 3'000'000'000;
    if (e.has(kHasCorrelator)) e.correlator += max_corr + 1;
    t.events.push_back(e);
  }
  const std::string file = path("halfway.snail").string();
  write_trace(t, file);
  const CommandResult r = run_binary("analyze " + file + " -f jsonl --window 1s --no-progress");
  ASSERT_EQ(r.code, 0) << r.out;
  const RunLine run = parse_run_line(last_line(r.out));
  EXPECT_EQ(run.kind, "straggler") << run.text;
  EXPECT_EQ(run.name, "count-0") << run.text;
  EXPECT_EQ(run.windows_with_paths, 5) << run.text;
  EXPECT_EQ(run.windows, 3) << run.text;
  ASSERT_EQ(run.others.size(), 1u) << run.text;
  EXPECT_EQ(run.others[0], (std::pair<std::string, int64_t>("count-2", 2))) << run.text;
  EXPECT_NE(run.text.find("Windows: 3 of 5 find this; 2 find straggler count-2."),
            std::string::npos)
      << run.text;
  // The table opens with the same verdict.
  const CommandResult table = run_binary("analyze " + file + " --window 1s --no-progress");
  std::string flat;  // the table's text as one line (it wraps the verdict)
  for (char c : table.out)
    if (c != '\n' && !(c == ' ' && !flat.empty() && flat.back() == ' '))
      flat += c == '\n' ? ' ' : c;
  EXPECT_NE(flat.find("VERDICT: count-0 is the straggler"), std::string::npos) << table.out;
  EXPECT_NE(flat.find("2 find straggler count-2."), std::string::npos) << table.out;
}

// DS2's number in the verdict of an overloaded operator: the simulated word count with
// two flatmap instances for four sources (the truth file's bottleneck). The number is the
// largest "optimal" of `scale policy --trace` with the analysis' window width as its
// interval, with that interval's current parallelism; for --window whole, the one
// interval over the whole trace. (Traces of `snailtrail run keycount --cost-us` were
// tried too: their critical paths are mostly exchange messages, a communication verdict,
// so they do not give an operator verdict reliably.)
TEST_F(VerdictCli, Ds2NumberOfAnOverloadedOperatorIsScalePolicys) {
  const std::string trace = path("w.snail").string();
  ASSERT_EQ(run_binary("simulate " + std::string(SNAILTRAIL_SOURCE_DIR) +
                       "/examples/wordcount-4-2-4.toml -d 4s --seed 5 -q -o " + trace)
                .code,
            0);
  auto policy = [&](const std::string& interval) {
    const CommandResult p =
        run_binary("scale policy --trace " + trace + " --interval " + interval + " --format json");
    EXPECT_EQ(p.code, 0) << p.out;
    std::pair<int64_t, int64_t> most{0, 0};  // optimal, current
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    EXPECT_EQ(parser.parse(p.out.substr(p.out.find('['))).get(doc), simdjson::SUCCESS) << p.out;
    for (simdjson::dom::element e : simdjson::dom::array(doc)) {
      const int64_t optimal = int64_t(e["parallelism"]["flatmap"]);
      if (optimal > most.first) most = {optimal, int64_t(e["current"]["flatmap"])};
    }
    return most;
  };
  for (const auto& [window, interval] : {std::pair<std::string, std::string>("1s", "1s"),
                                         std::pair<std::string, std::string>("whole", "1h")}) {
    SCOPED_TRACE("--window " + window);
    const auto want = policy(interval);
    EXPECT_GT(want.first, want.second) << "flatmap is not overloaded";
    const CommandResult r =
        run_binary("analyze " + trace + " -f jsonl --no-progress --window " + window);
    ASSERT_EQ(r.code, 0) << r.out;
    const RunLine run = parse_run_line(last_line(r.out));
    ASSERT_EQ(run.kind, "operator") << run.text;
    ASSERT_EQ(run.name, "flatmap") << run.text;
    EXPECT_EQ(run.ds2_instances, want.first) << run.text;
    EXPECT_EQ(run.ds2_now, want.second) << run.text;
    EXPECT_NE(
        run.text.find("Next: add instances of flatmap: DS2 says " + std::to_string(want.first) +
                      " (now " + std::to_string(want.second) + ")."),
        std::string::npos)
        << run.text;
  }
  // From stdin the trace cannot be read twice: the general advice, no number.
  const CommandResult r = run_binary("analyze - -f jsonl --no-progress --window 1s < " + trace);
  const RunLine run = parse_run_line(last_line(r.out));
  EXPECT_EQ(run.ds2_instances, 0) << run.text;
  EXPECT_NE(run.text.find("gives the number when rates are known"), std::string::npos) << run.text;
}

// The run verdict's rules on hand-made tallies (shares and weights computed by hand).
TEST(RunVerdict, FromTheWindowsVerdicts) {
  Groups cp, conv;
  cp.worker = {0.5, 0.1, 0.3};
  conv.worker = {0.3, 0.3, 0.4};
  auto verdict = [](VerdictKind k, uint32_t id, double share) {
    Verdict v;
    v.kind = k;
    v.id = id;
    v.cp = share;
    return v;
  };
  // No window with paths: no CP.
  EXPECT_EQ(decide_run_verdict({}, cp, conv, {}).verdict.kind, VerdictKind::no_cp);
  // 6 windows of worker 0, 4 of worker 2 (equal lengths): worker 0, worker 2 mentioned;
  // the evidence is the run's mean share, not a window's.
  VerdictTally t;
  for (int i = 0; i < 6; ++i) t.add(verdict(VerdictKind::straggler, 0, 0.7), 100);
  for (int i = 0; i < 4; ++i) t.add(verdict(VerdictKind::straggler, 2, 0.7), 100);
  RunVerdict r = decide_run_verdict(t, cp, conv, {});
  EXPECT_EQ(r.verdict.kind, VerdictKind::straggler);
  EXPECT_EQ(r.verdict.id, 0u);
  EXPECT_EQ(r.verdict.cp, 0.5);
  EXPECT_EQ(r.verdict.busy, 0.3);
  EXPECT_EQ(r.windows, 6u);
  EXPECT_EQ(r.windows_with_paths, 10u);
  ASSERT_EQ(r.others.size(), 1u);
  EXPECT_EQ(r.others[0].id, 2u);
  EXPECT_EQ(r.others[0].windows, 4u);
  EXPECT_DOUBLE_EQ(r.others[0].critical_ns, 4 * 0.7 * 100);
  // Fewer windows but more critical time wins: 4 windows at 0.9 (360) over 6 at 0.5 (300).
  VerdictTally u;
  for (int i = 0; i < 6; ++i) u.add(verdict(VerdictKind::op, 7, 0.5), 100);
  for (int i = 0; i < 4; ++i) u.add(verdict(VerdictKind::straggler, 1, 0.9), 100);
  r = decide_run_verdict(u, cp, conv, {});
  EXPECT_EQ(r.verdict.kind, VerdictKind::straggler);
  EXPECT_EQ(r.verdict.id, 1u);
  ASSERT_EQ(r.others.size(), 1u);
  EXPECT_EQ(r.others[0].kind, VerdictKind::op);
  // Long windows weigh more: 1 window of 900 ns against 3 of 100 ns.
  VerdictTally w;
  w.add(verdict(VerdictKind::straggler, 2, 0.6), 900);
  for (int i = 0; i < 3; ++i) w.add(verdict(VerdictKind::straggler, 0, 0.6), 100);
  r = decide_run_verdict(w, cp, conv, {});
  EXPECT_EQ(r.verdict.id, 2u);
  EXPECT_EQ(r.windows, 1u);
  // A balanced run with one window's straggler: nothing stands out; the window is named.
  VerdictTally b;
  b.add(verdict(VerdictKind::balanced, 1, 0.3), 100);
  b.add(verdict(VerdictKind::balanced, 2, 0.3), 100);
  b.add(verdict(VerdictKind::straggler, 0, 0.6), 100);
  r = decide_run_verdict(b, cp, conv, {});
  EXPECT_EQ(r.verdict.kind, VerdictKind::balanced);
  EXPECT_EQ(r.verdict.id, 0u);  // the run's most critical worker
  EXPECT_EQ(r.windows, 2u);
  ASSERT_EQ(r.others.size(), 1u);
  EXPECT_EQ(r.others[0].kind, VerdictKind::straggler);
  // A bottleneck that moves among five workers (20 % each, under kRunCoverage): nothing
  // stands out; the two most critical are named.
  VerdictTally m;
  cp.worker = {0.2, 0.2, 0.2, 0.2, 0.2};
  for (uint32_t k = 0; k < 5; ++k) m.add(verdict(VerdictKind::straggler, k, 0.5 + 0.01 * k), 100);
  r = decide_run_verdict(m, cp, conv, {});
  EXPECT_EQ(r.verdict.kind, VerdictKind::balanced);
  EXPECT_EQ(r.windows, 0u);
  ASSERT_EQ(r.others.size(), 2u);
  EXPECT_EQ(r.others[0].id, 4u);
  EXPECT_EQ(r.others[1].id, 3u);
  // Exactly at the coverage and equal to the balanced windows: it stands out.
  VerdictTally e;
  e.add(verdict(VerdictKind::op, 3, 0.5), 100);
  e.add(verdict(VerdictKind::balanced, 0, 0.2), 100);
  e.add(verdict(VerdictKind::communication, 12, 0.3), 100);
  e.add(verdict(VerdictKind::input, 6, 0.2), 100);
  r = decide_run_verdict(e, cp, conv, {});
  EXPECT_EQ(r.verdict.kind, VerdictKind::op);
  EXPECT_EQ(r.others.size(), 2u);  // communication, input: 25 % each, above kRunMention
}

// The rules on hand-made summaries.
TEST(Verdict, Rules) {
  Groups cp, conv;
  cp.worker = {0.1, 0.1, 0.1};
  conv.worker = {0.33, 0.33, 0.34};
  EXPECT_EQ(decide_verdict(cp, conv, false, {}).kind, VerdictKind::no_cp);
  EXPECT_EQ(decide_verdict(cp, conv, true, {}).kind, VerdictKind::balanced);
  cp.activity[static_cast<int>(ActivityType::unknown)] = 0.6;
  EXPECT_EQ(decide_verdict(cp, conv, true, {}).kind, VerdictKind::instrumentation);
  cp.activity[static_cast<int>(ActivityType::unknown)] = 0;
  cp.activity[static_cast<int>(ActivityType::scheduling)] = 0.45;
  Verdict v = decide_verdict(cp, conv, true, {});
  EXPECT_EQ(v.kind, VerdictKind::activity);
  EXPECT_EQ(v.id, static_cast<uint32_t>(ActivityType::scheduling));
  cp.activity[static_cast<int>(ActivityType::scheduling)] = 0;
  // A worker with most CP, twice the next and twice its work share: a straggler.
  cp.worker = {0.7, 0.2, 0.1};
  conv.worker = {0.3, 0.35, 0.35};
  std::vector<WhatIf> wi = {{WhatIfKind::worker, 0, true, 2.5, 1e6, 0, 0, 0, 0, 0}};
  v = decide_verdict(cp, conv, true, wi);
  EXPECT_EQ(v.kind, VerdictKind::straggler);
  EXPECT_EQ(v.id, 0u);
  ASSERT_NE(v.what_if, nullptr);
  EXPECT_EQ(v.what_if->saved_ns, 1e6);
  EXPECT_EQ(v.busy_rank, 3u);  // 0.3 is the least busy of the three
  // As busy as it is critical: not a straggler; its operator holds the paths.
  conv.worker = {0.7, 0.2, 0.1};
  cp.op = {{3, 0.9}};
  conv.op = {{3, 0.8}};
  v = decide_verdict(cp, conv, true, {});
  EXPECT_EQ(v.kind, VerdictKind::op);
  EXPECT_EQ(v.id, 3u);
  cp.op = {{3, 0.2}};
  cp.activity[static_cast<int>(ActivityType::data_message)] = 0.35;
  EXPECT_EQ(decide_verdict(cp, conv, true, {}).kind, VerdictKind::communication);
}

}  // namespace
}  // namespace snailtrail::test_verdict

namespace snailtrail::test_verdict {
namespace {

// Every verdict kind's sentence, written out by hand (the texts before they became one
// table): the table-driven formatter must give them byte for byte.
TEST(VerdictText, EveryKindAgainstHandWrittenSentences) {
  Trace trace;
  trace.worker_names[7] = "exec 7";
  trace.operator_names[3] = "flatmap";
  Pag pag;
  pag.worker_ids = {5, 7};
  const Names names(trace, pag);
  const WhatIf twice{WhatIfKind::worker, 1, false, 2, 1.5e6, 0, 0, 0, 0, 0};
  const WhatIf peers{WhatIfKind::op, 3, true, 3.25, 2e9, 0, 0, 0, 0, 0};
  auto v = [](VerdictKind k, uint32_t id, const WhatIf* w = nullptr) {
    Verdict x;
    x.kind = k;
    x.id = id;
    x.cp = 0.4567;
    x.busy = 0.125;
    x.busy_rank = 3;
    x.top_worker = 1;
    x.top_worker_cp = 0.25;
    x.what_if = w;
    return x;
  };
  Verdict first = v(VerdictKind::op, 3, &peers);
  first.busy_rank = 1;
  const std::pair<Verdict, std::string> cases[] = {
      {v(VerdictKind::no_cp, 0),
       "No transient critical path: at some instant every worker waits with no message in "
       "flight, or messages are unmatched; nothing can be ranked (see DIAGNOSTICS)."},
      {v(VerdictKind::instrumentation, 0),
       "Most critical time is unknown (45.7% of the critical paths): the trace misses "
       "activities. Next: instrument the gaps, or map names to activity types with --map."},
      {v(VerdictKind::activity, static_cast<uint32_t>(ActivityType::io)),
       "io limits latency: 45.7% of the critical paths, 12.5% of all time (conventional "
       "profiling ranks it #3); most on exec 7 (25.0%). Next: make the I/O cheaper (faster "
       "storage, fewer or larger reads and writes)."},
      {v(VerdictKind::straggler, 1, &twice),
       "exec 7 is the straggler: on 45.7% of the critical paths while doing 12.5% of the work "
       "(conventional profiling ranks it #3). Twice as fast, it would shorten the critical "
       "path by 1.5ms. Next: look for a hot key or a skewed partition on it (split the key, "
       "rebalance)."},
      {first,
       "Operator flatmap is the bottleneck: 45.7% of the critical paths, 12.5% of the busy "
       "time (conventional profiling ranks it first). As fast as its peers' median, it would "
       "shorten the critical path by 2s. Next: add instances of flatmap (`snailtrail scale "
       "policy` gives the number when rates are known)."},
      {v(VerdictKind::communication, 0),
       "Communication limits latency: messages are 45.7% of the critical paths. Next: "
       "co-locate the operators that talk most, batch messages, or check the network."},
      {v(VerdictKind::input, 0),
       "The job keeps up with its input: 45.7% of the critical paths are sources reading "
       "input; no worker or operator stands out."},
      {v(VerdictKind::balanced, 0),
       "Nothing stands out: the critical paths spread over workers, operators and "
       "activities (the most critical worker, 5, holds 45.7%)."},
  };
  for (const auto& [verdict, text] : cases)
    EXPECT_EQ(verdict_text(verdict, names), text) << name_of(verdict.kind);
  // With DS2's number (rates known): more instances, or the current ones suffice.
  Verdict more = v(VerdictKind::op, 3);
  more.ds2_needed = 4;
  more.ds2_now = 2;
  EXPECT_EQ(verdict_text(more, names),
            "Operator flatmap is the bottleneck: 45.7% of the critical paths, 12.5% of the busy "
            "time (conventional profiling ranks it #3). Next: add instances of flatmap: DS2 "
            "says 4 (now 2).");
  more.ds2_needed = 2;
  EXPECT_EQ(verdict_text(more, names),
            "Operator flatmap is the bottleneck: 45.7% of the critical paths, 12.5% of the busy "
            "time (conventional profiling ranks it #3). Next: DS2 says 2 instances of flatmap "
            "keep up with the sources' observed rate (now 2); for a higher rate, `snailtrail "
            "scale policy --source-rates` sizes it.");
}

}  // namespace
}  // namespace snailtrail::test_verdict
