// The verdict (summary/verdict.hpp): on the simulator's use cases it names the planted
// cause (the hot worker under skew, the bottleneck operator), says that a job keeping up
// with its input has nothing standing out, and every JSONL window carries one.
#include <gtest/gtest.h>

#include "output/names.hpp"
#include "process_util.hpp"
#include "summary/summary.hpp"
#include "summary/verdict.hpp"

namespace snailtrail {
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
  EXPECT_EQ(lines, 3u);
  EXPECT_EQ(verdicts, 3u);
  // --summary without verdict leaves it out.
  EXPECT_EQ(run_binary("analyze " + trace + " -f jsonl --no-progress --summary worker")
                .out.find("verdict"),
            std::string::npos);
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
  std::vector<WhatIf> wi = {{WhatIfKind::worker, 0, true, 2.5, 1e6}};
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
}  // namespace snailtrail

namespace snailtrail {
std::string verdict_text(const Verdict& v, const Names& names);  // output/writers.cpp
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
  const WhatIf twice{WhatIfKind::worker, 1, false, 2, 1.5e6};
  const WhatIf peers{WhatIfKind::op, 3, true, 3.25, 2e9};
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
}

}  // namespace
}  // namespace snailtrail
