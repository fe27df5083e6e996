// `snailtrail run keycount|hashcount --bins/--native --migrate-at --strategy` end to end
// (docs/MEGAPHONE.md): --verify with migrations for every strategy, the digest equal to
// the run without migration, the "migrations" of --stats-json, the migration's
// serialization in the trace that analyze reads, and bad flags.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "process_util.hpp"

namespace snailtrail::test_megaphone_run {
namespace {

namespace fs = std::filesystem;
using testing::run_binary;

std::string digest_of(const std::string& out) {
  std::smatch m;
  if (std::regex_search(out, m, std::regex("output digest ([0-9a-f]+)"))) return m[1];
  return "";
}

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("mp-" + std::to_string(::getpid()) + "-" + name);
}

TEST(MegaphoneRun, EveryStrategyVerifiesAndKeepsTheDigest) {
  const std::string common =
      "--workers 2 --rate 200000 --records 240000 --keys 50000 --seed 7 --verify";
  for (std::string job : {"keycount", "hashcount"}) {
    const auto still = run_binary("run " + job + " --bins 64 " + common);
    ASSERT_EQ(still.code, 0) << still.out;
    const std::string want = digest_of(still.out);
    ASSERT_FALSE(want.empty()) << still.out;
    const auto native = run_binary("run " + job + " --native " + common);
    ASSERT_EQ(native.code, 0) << native.out;
    EXPECT_EQ(digest_of(native.out), want);
    for (std::string s : {"all-at-once", "fluid", "batched"}) {
      const fs::path json = temp(job + s + ".json");
      const auto r = run_binary("run " + job + " --bins 64 " + common +
                                " --migrate-at 200ms,500ms --strategy " + s + " --stats-json " +
                                json.string());
      ASSERT_EQ(r.code, 0) << r.out;
      EXPECT_NE(r.out.find("verify: "), std::string::npos) << r.out;
      EXPECT_EQ(digest_of(r.out), want) << job << " " << s;
      simdjson::dom::parser p;
      auto doc = p.load(json.string());
      ASSERT_FALSE(doc.error()) << json;
      simdjson::dom::array ms = doc["migrations"].get_array();
      ASSERT_GE(ms.size(), 1u) << r.out;
      for (simdjson::dom::element m : ms) {
        EXPECT_EQ(std::string(std::string_view(m["strategy"].get_string())), s);
        EXPECT_EQ(uint64_t(m["bins_moved"].get_uint64()), 32u);  // half of 64 bins on 2 workers
        EXPECT_GT(uint64_t(m["bytes_moved"].get_uint64()), 0u);
        const double start = m["start_s"].get_double(), end = m["end_s"].get_double();
        EXPECT_GE(start, 0.2);
        EXPECT_GE(end, start);
        EXPECT_NEAR(double(m["duration_s"].get_double()), end - start, 1e-3);
        EXPECT_GE(double(m["max_latency_ms"].get_double()), 0.0);
      }
      fs::remove(json);
    }
  }
}

TEST(MegaphoneRun, TheMigrationIsInTheTrace) {
  const fs::path trace = temp("t.snail");
  const auto r = run_binary(
      "run keycount --bins 256 --workers 2 --rate 200000 --duration 600ms "
      "--keys 200000 --migrate-at 200ms -q --trace " +
      trace.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto a = run_binary("analyze " + trace.string());
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("  serialization "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("  deserialization "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("count-M"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("no instrumentation problems found"), std::string::npos) << a.out;
  fs::remove(trace);
}

// Fig. 5.19's data: --stats-json has the process's RSS every 10 ms. Oracle: the dense
// state (8 bytes per key, every bin touched) is resident at the end, so the last sample is
// at least that large, and at least twice the bytes the migration moved (half the bins).
TEST(MegaphoneRun, StatsJsonHasTheRssTimeline) {
  const fs::path json = temp("rss.json");
  const uint64_t keys = 4'000'000;  // 30.5 MiB of counts
  const auto r = run_binary(
      "run keycount --bins 256 --workers 2 --rate 200000 --duration 1s "
      "--keys " +
      std::to_string(keys) + " --migrate-at 400ms --strategy all-at-once -q --stats-json " +
      json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  simdjson::dom::parser p;
  auto doc = p.load(json.string());
  ASSERT_FALSE(doc.error()) << json;
  simdjson::dom::array tl = doc["rss_timeline"].get_array();
  // 1 s at 10 ms: ~100 samples; a loaded machine may deschedule the sampler for a while.
  ASSERT_GE(tl.size(), 20u);
  double prev_t = -1, last_mb = 0, first_t = -1;
  for (simdjson::dom::element e : tl) {
    simdjson::dom::array pair = e.get_array();
    ASSERT_EQ(pair.size(), 2u);
    const double t = pair.at(0).get_double(), mb = pair.at(1).get_double();
    EXPECT_GT(t, prev_t) << "timestamps must increase";
    EXPECT_GT(mb, 1.0);
    EXPECT_LT(mb, 64.0 * 1024);
    if (first_t < 0) first_t = t;
    prev_t = t;
    last_mb = mb;
  }
  EXPECT_LT(first_t, 0.2);
  EXPECT_GT(prev_t, 0.6);
  EXPECT_LE(
      prev_t,
      double(doc["intervals"].at(doc["intervals"].get_array().size() - 1)["t_s"].get_double()) +
          0.05);
  const double state_mb = static_cast<double>(keys * 8) / (1 << 20);
  EXPECT_GE(last_mb, state_mb);
  simdjson::dom::array ms = doc["migrations"].get_array();
  ASSERT_EQ(ms.size(), 1u);
  const double moved_mb =
      static_cast<double>(uint64_t(ms.at(0)["bytes_moved"].get_uint64())) / (1 << 20);
  EXPECT_GT(moved_mb, 0.4 * state_mb);
  EXPECT_GE(last_mb, 2 * moved_mb * 0.99);
  fs::remove(json);
}

// The critical-path view of a migration: in 50 ms windows of a traced all-at-once run
// (8 M keys: 30 MB move, tens of ms of serialization, well above this machine's noise),
// the windows overlapping the migration (its start/end from --stats-json, in the trace's
// time base) give the migration's activity types (the state's serialization by count-M,
// its installation by count) CP above zero and more than any window away from it, where
// serialization is only the exchanges' partitioning; their top lists name count-M. `run`
// prints the analyze command for the migration's window, and that window ranks them too.
TEST(MegaphoneRun, TheMigrationWindowRanksItsActivities) {
  const fs::path trace = temp("cp.snail"), json = temp("cp.json");
  const auto r = run_binary(
      "run keycount --bins 256 --workers 2 --rate 200000 --duration 1600ms --keys 8000000 "
      "--migrate-at 600ms --strategy all-at-once --trace " +
      trace.string() + " --stats-json " + json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::smatch hint;
  ASSERT_TRUE(std::regex_search(r.out, hint,
                                std::regex("its critical path: snailtrail analyze (\\S+) --window "
                                           "whole --from ([0-9]+)us --to ([0-9]+)us")))
      << r.out;
  EXPECT_EQ(hint[1].str(), trace.string());
  simdjson::dom::parser p;
  auto doc = p.load(json.string());
  ASSERT_FALSE(doc.error()) << json;
  simdjson::dom::element m = doc["migrations"].at(0);
  const auto start_ns = static_cast<int64_t>(double(m["start_s"].get_double()) * 1e9);
  const auto end_ns = static_cast<int64_t>(double(m["end_s"].get_double()) * 1e9);
  // The JSON's times have 6 significant digits, so they are rounded to 1 us below 1 s and
  // to 10 us from 1 s on (a slow run's migration ends past 1 s): the window covers them to
  // within half that unit and 1 us.
  const auto rounding_us = [](double s) {
    return std::max<int64_t>(
        2, std::llround(0.5e6 * std::pow(10.0, std::floor(std::log10(s)) - 5)) + 1);
  };
  EXPECT_NEAR(std::stoll(hint[2].str()), start_ns / 1000,
              rounding_us(double(m["start_s"].get_double())));
  EXPECT_GE(std::stoll(hint[3].str()),
            end_ns / 1000 - rounding_us(double(m["end_s"].get_double())));

  const fs::path jsonl = temp("cp.jsonl");
  const auto a = run_binary("analyze " + trace.string() + " --window 50ms --format jsonl -o " +
                            jsonl.string());
  ASSERT_EQ(a.code, 0) << a.out;
  std::ifstream lines(jsonl);
  // Windows before 300 ms are the state's allocation (every bin's first record): left out.
  constexpr int64_t kWarm = 300'000'000;
  double in_migration = 0, away = 0;
  bool named = false;
  size_t windows = 0, away_windows = 0;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    simdjson::dom::parser lp;
    auto w = lp.parse(line);
    ASSERT_FALSE(w.error()) << line;
    if (w["window"].error()) continue;  // a run of empty windows
    ++windows;
    const int64_t ws = w["window"]["start_ns"].get_int64(), we = w["window"]["end_ns"].get_int64();
    double share = 0;
    for (const char* type : {"serialization", "deserialization"}) {
      auto v = w["activity"][type];
      if (!v.error()) share += double(v.get_double());
    }
    if (ws < end_ns && we > start_ns) {
      in_migration = std::max(in_migration, share);
      for (simdjson::dom::element t : w["top"].get_array()) {
        auto op = t["operator"];
        if (!op.error() && std::string_view(op.get_string()) == "count-M") named = true;
      }
    } else if (ws >= kWarm && (we < start_ns - 50'000'000 || ws > end_ns + 100'000'000)) {
      away = std::max(away, share);
      ++away_windows;
    }
  }
  ASSERT_GE(windows, 20u) << a.out;
  ASSERT_GE(away_windows, 4u);  // 300..550 ms at least, more after a quick migration
  EXPECT_GT(in_migration, 0.0);
  EXPECT_GT(in_migration, away) << "the migration's window must rank its activities higher";
  EXPECT_TRUE(named) << "count-M (the state's serialization) among the migration's top";

  // report: its CP-over-time series (one point per 50 ms window) has the same bump.
  const fs::path rj = temp("cp-report.json");
  const auto rep =
      run_binary("report " + trace.string() + " --window 50ms --format json -o " + rj.string());
  ASSERT_EQ(rep.code, 0) << rep.out;
  simdjson::dom::parser rp;
  auto rd = rp.load(rj.string());
  ASSERT_FALSE(rd.error()) << rj;
  std::vector<size_t> mig_types;  // indexes of serialization, deserialization in "types"
  size_t ti = 0;
  for (simdjson::dom::element t : rd["types"].get_array()) {
    const std::string_view name = t.get_string();
    if (name == "serialization" || name == "deserialization") mig_types.push_back(ti);
    ++ti;
  }
  ASSERT_EQ(mig_types.size(), 2u);
  double report_in = 0, report_away = 0;
  for (simdjson::dom::element pt : rd["series"]["points"].get_array()) {
    const int64_t ws = pt["t0"].get_int64(), we = pt["t1"].get_int64();
    double share = 0;
    for (size_t i : mig_types) share += double(pt["cp"].at(i).get_double());
    if (ws < end_ns && we > start_ns)
      report_in = std::max(report_in, share);
    else if (ws >= kWarm && (we < start_ns - 50'000'000 || ws > end_ns + 100'000'000))
      report_away = std::max(report_away, share);
  }
  EXPECT_GT(report_in, 0.0);
  EXPECT_GT(report_in, report_away);
  fs::remove(rj);

  // The printed command: the migration's window alone, its activities in the ranking.
  const auto v = run_binary("analyze " + trace.string() + " --window whole --from " +
                            hint[2].str() + "us --to " + hint[3].str() + "us");
  ASSERT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("  serialization "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("  deserialization "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("count-M"), std::string::npos) << v.out;
  fs::remove(trace);
  fs::remove(json);
  fs::remove(jsonl);
}

// Migrations whose time comes after the input ended do not run (the controller ends with
// the input): the summary and --stats-json say how many ran of those requested, and why
// the others did not (issue 35: they were dropped silently).
TEST(MegaphoneRun, MigrationsThatDoNotRunAreReported) {
  const fs::path json = temp("requests.json");
  const auto r = run_binary(
      "run keycount --bins 64 --workers 2 --rate 100000 --duration 1s --keys 10000 "
      "--migrate-at 100ms,1h,2h --stats-json " +
      json.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex("migrations: 1 of 3 requested \\(--migrate-at\\) ran; 2 did not run: the "
                 "input ended at ([0-9.]+) s, before they started \\(the first was due at "
                 "3600\\.000 s\\)")))
      << r.out;
  const double ended = std::stod(m[1]);
  EXPECT_GE(ended, 0.9);
  EXPECT_LT(ended, 60.0);
  simdjson::dom::parser p;
  auto doc = p.load(json.string());
  ASSERT_FALSE(doc.error()) << json;
  simdjson::dom::element req = doc["migrations_requested"];
  EXPECT_EQ(uint64_t(req["requested"].get_uint64()), 3u);
  EXPECT_EQ(uint64_t(req["ran"].get_uint64()), 1u);
  EXPECT_EQ(uint64_t(req["not_run"].get_uint64()), 2u);
  EXPECT_NE(std::string(std::string_view(req["why"].get_string())).find("the input ended at"),
            std::string::npos);
  EXPECT_EQ(doc["migrations"].get_array().size(), 1u);  // the one that ran
  // Every requested migration ran: said too, with no reason.
  const auto all = run_binary(
      "run keycount --bins 64 --workers 2 --rate 100000 --duration 600ms --keys 10000 "
      "--migrate-at 100ms --stats-json " +
      json.string());
  ASSERT_EQ(all.code, 0) << all.out;
  EXPECT_NE(all.out.find("migrations: 1 of 1 requested (--migrate-at) ran\n"), std::string::npos)
      << all.out;
  auto doc2 = p.load(json.string());
  ASSERT_FALSE(doc2.error()) << json;
  EXPECT_EQ(uint64_t(doc2["migrations_requested"]["not_run"].get_uint64()), 0u);
  EXPECT_EQ(std::string(std::string_view(doc2["migrations_requested"]["why"].get_string())), "");
  fs::remove(json);
}

TEST(MegaphoneRun, BadFlagsExitTwoWithTheReason) {
  for (const auto& [args, why] : std::vector<std::pair<std::string, std::string>>{
           {"--bins 100", "power of two"},
           {"--bins 0", "0 is not a number of bins: give a power of two from 1 to 2^20"},
           {"--bins 00 --native", "0 is not a number of bins"},
           {"--bins 64 --strategy sideways", "all-at-once, fluid or batched"},
           {"--bins 64 --native", "exclude each other"},
           {"--migrate-at 1s", "needs --bins"},
           {"--bins 64 --migrate-at 2s,1s", "must increase"},
           {"--bins 64 --migrate-at soon", "--migrate-at"}}) {
    const auto r = run_binary("run keycount --records 1000 " + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(why), std::string::npos) << args << ": " << r.out;
  }
  const auto w = run_binary("run wordcount --records 1000 --bins 64");
  EXPECT_EQ(w.code, 2) << w.out;
}

}  // namespace
}  // namespace snailtrail::test_megaphone_run
