// `snailtrail run keycount|hashcount --bins/--native --migrate-at --strategy` end to end
// (docs/MEGAPHONE.md): --verify with migrations for every strategy, the digest equal to
// the run without migration, the "migrations" of --stats-json, the migration's
// serialization in the trace that analyze reads, and bad flags.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "process_util.hpp"

namespace snailtrail {
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

TEST(MegaphoneRun, BadFlagsExitTwoWithTheReason) {
  for (const auto& [args, why] : std::vector<std::pair<std::string, std::string>>{
           {"--bins 100", "power of two"},
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
}  // namespace snailtrail
