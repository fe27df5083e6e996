// Hints (summary/hints.hpp): each rule on hand-made summaries, on both sides of its
// threshold; and through the CLI, on traces built to be stuck (mostly `unknown` time, no
// CP at all): the table and the JSONL say what to try, and the diagnostics that explain
// an empty result are shown even when --summary left them out.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "process_util.hpp"
#include "summary/hints.hpp"
#include "summary/summary.hpp"

namespace snailtrail::test_hints {
namespace {

using testing::CommandResult;
using testing::run_binary;
using testing::TempDirTest;

bool has(const std::vector<Hint>& hints, HintKind kind) {
  return std::any_of(hints.begin(), hints.end(), [&](const Hint& h) { return h.kind == kind; });
}

TEST(Hints, UnknownTimeSuggestsMap) {
  Groups cp;
  Diagnostics d;
  d.unknown_share = 0.3;
  auto h = decide_hints(cp, d, true, 1000, 1);
  ASSERT_TRUE(has(h, HintKind::map_unknown));
  EXPECT_NE(h[0].text.find("--map"), std::string::npos);
  EXPECT_NE(h[0].text.find("30%"), std::string::npos);
  d.unknown_share = 0.1;
  EXPECT_FALSE(has(decide_hints(cp, d, true, 1000, 1), HintKind::map_unknown));
  // Little unknown time, but much of the critical paths.
  cp.activity[static_cast<int>(ActivityType::unknown)] = 0.25;
  EXPECT_TRUE(has(decide_hints(cp, d, true, 1000, 1), HintKind::map_unknown));
  // A healthy window has no hint at all.
  EXPECT_TRUE(decide_hints(Groups{}, Diagnostics{}, true, 1000, 1).empty());
}

TEST(Hints, NoCpSaysWhy) {
  Groups cp;
  Diagnostics d;
  d.issues[static_cast<int>(Issue::unmatched_recv)] = 2;
  d.issues[static_cast<int>(Issue::message_without_correlator)] = 1;
  d.property1_violations = 4;
  auto h = decide_hints(cp, d, false, 1000, 3);
  ASSERT_TRUE(has(h, HintKind::unmatched_messages));
  EXPECT_NE(h[0].text.find("3 message end(s)"), std::string::npos) << h[0].text;
  EXPECT_TRUE(has(h, HintKind::missing_causes));
  EXPECT_TRUE(has(h, HintKind::no_cp_window));
  // One window (already whole): no point suggesting --window whole.
  EXPECT_FALSE(has(decide_hints(cp, d, false, 1000, 1), HintKind::no_cp_window));
  // With paths everywhere, unmatched messages cut none: no hint, nor for Property 1.
  h = decide_hints(cp, d, true, 1000, 3);
  EXPECT_FALSE(has(h, HintKind::unmatched_messages));
  EXPECT_FALSE(has(h, HintKind::missing_causes));
  d.no_path_segments = 1;
  EXPECT_TRUE(has(decide_hints(cp, d, true, 1000, 3), HintKind::unmatched_messages));
}

TEST(Hints, IdleTime) {
  Diagnostics d;
  d.property2_violations = 2;
  d.property2_ns = 600;
  EXPECT_TRUE(has(decide_hints(Groups{}, d, true, 1000, 1), HintKind::idle));
  d.property2_ns = 400;
  EXPECT_FALSE(has(decide_hints(Groups{}, d, true, 1000, 1), HintKind::idle));
}

class HintsCli : public TempDirTest {
 protected:
  HintsCli() : TempDirTest("hints") {}
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = path(name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

std::string activity(int worker, const char* type, int64_t start, int64_t end) {
  auto ev = [&](int64_t ts, const char* e) {
    return "{\"ts\":" + std::to_string(ts) + ",\"worker\":" + std::to_string(worker) +
           ",\"activity\":\"" + type + "\",\"event\":\"" + e + "\"}\n";
  };
  return ev(start, "start") + ev(end, "end");
}

TEST_F(HintsCli, MostlyUnknownSuggestsMap) {
  // Two workers, each 100 ms steps: 3 of 4 steps `unknown`.
  std::string t;
  for (int k = 0; k < 8; ++k)
    for (int w = 0; w < 2; ++w)
      t += activity(w, k % 4 == 0 ? "processing" : "unknown", k * 100'000'000LL,
                    (k + 1) * 100'000'000LL);
  const std::string trace = write("unknown.jsonl", t);
  const CommandResult table = run_binary("analyze " + trace + " --no-progress");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("HINT: 75% of the workers' time"), std::string::npos) << table.out;
  const CommandResult j = run_binary("analyze " + trace + " --no-progress -f jsonl");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"hints\":[{\"kind\":\"map_unknown\""), std::string::npos) << j.out;
}

TEST_F(HintsCli, NoCpShowsDiagnosticsAndWhatToTry) {
  // Two workers that only wait, over 2.5 s: every instant is idle, no window has CP.
  const std::string trace = write("idle.jsonl", activity(0, "waiting", 0, 2'500'000'000LL) +
                                                    activity(1, "waiting", 0, 2'500'000'000LL));
  const CommandResult table = run_binary("analyze " + trace + " --no-progress --summary worker");
  ASSERT_EQ(table.code, 0) << table.out;
  // 2.5 s idle of the 3 analyzed 1 s windows.
  EXPECT_NE(table.out.find("HINT: For 83% of the time every worker waits"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("HINT: No window has a transient critical path: try --window whole"),
            std::string::npos)
      << table.out;
  // --summary left the diagnostics out; they explain the empty result, so they are shown.
  EXPECT_NE(table.out.find("DIAGNOSTICS"), std::string::npos) << table.out;
  const CommandResult j =
      run_binary("analyze " + trace + " --no-progress -f jsonl --summary worker,verdict");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"diagnostics\":{\"no_paths\":true"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("{\"kind\":\"idle\""), std::string::npos) << j.out;
}

}  // namespace
}  // namespace snailtrail::test_hints
