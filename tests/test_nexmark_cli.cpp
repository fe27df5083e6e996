// `snailtrail run nexmark-qN` end to end (docs/NEXMARK.md): --verify through the binary,
// the output digest in --stats-json equal for any worker count, bad knobs.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>

#include "process_util.hpp"

namespace snailtrail::test_nexmark_cli {
namespace {

namespace fs = std::filesystem;
using testing::run_binary;

std::string digest_of(const fs::path& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(json.string());
  EXPECT_GT(double(doc["throughput"]), 0.0);
  return std::string(std::string_view(doc["output_digest"]));
}

TEST(NexmarkCli, VerifyAndTheSameDigestOnOneAndThreeWorkers) {
  const fs::path dir = fs::temp_directory_path() / ("st-nexmark-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (int q = 0; q <= 8; ++q) {
    std::string digest;
    for (int w : {1, 3}) {
      const fs::path json = dir / ("q" + std::to_string(q) + "-" + std::to_string(w) + ".json");
      const auto r =
          run_binary("run nexmark-q" + std::to_string(q) + " --workers " + std::to_string(w) +
                     " --records 20000 --event-rate 100000 --window 20ms "
                     "--window-slide 5ms --verify --stats-json " +
                     json.string());
      ASSERT_EQ(r.code, 0) << r.out;
      EXPECT_NE(r.out.find("equal to the plain single-threaded loop"), std::string::npos) << r.out;
      const std::string d = digest_of(json);
      if (digest.empty()) digest = d;
      EXPECT_EQ(d, digest) << "q" << q << " on " << w << " workers";
    }
  }
  // Open loop at a rate with a dilated event time.
  const auto r = run_binary(
      "run nexmark-q5 --workers 2 --rate 50000 --duration 300ms --dilation 20 --window 1s "
      "--window-slide 500ms --verify");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("p99="), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(NexmarkCli, BadKnobsAreClearErrors) {
  auto r = run_binary("run nexmark-q4 --records 100 --dilation 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("dilation must be a whole number"), std::string::npos) << r.out;
  r = run_binary("run nexmark-q5 --records 100 --window 10s --window-slide 3s");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("must be a multiple of the slide"), std::string::npos) << r.out;
  r = run_binary("run nexmark-q7 --records 100 --window 5x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--window: "), std::string::npos) << r.out;
  r = run_binary("run nexmark-q3 --reference");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("needs --records"), std::string::npos) << r.out;
  r = run_binary("run nexmark-q9");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("nexmark-q8"), std::string::npos) << r.out;  // the job list
}

}  // namespace
}  // namespace snailtrail::test_nexmark_cli

namespace snailtrail::test_nexmark_cli {
namespace {

// The Megaphone versions (`--bins`, `--migrate-at`, `--strategy`): --verify with
// migrations, the digest equal to the native job's, the "migrations" JSON; bad flags.
TEST(NexmarkCli, MegaphoneVersionsMigrateAndVerify) {
  const fs::path dir = fs::temp_directory_path() / ("st-nexmega-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string common =
      " --workers 2 --rate 100000 --records 40000 --dilation 20 --window 200ms "
      "--window-slide 50ms --verify --stats-json ";
  for (int q : {4, 8}) {
    const fs::path native = dir / "native.json", mega = dir / "mega.json";
    auto r =
        run_binary("run nexmark-q" + std::to_string(q) + " --native" + common + native.string());
    ASSERT_EQ(r.code, 0) << r.out;
    r = run_binary("run nexmark-q" + std::to_string(q) +
                   " --bins 32 --migrate-at 100ms,250ms --strategy batched" + common +
                   mega.string());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("equal to the plain single-threaded loop"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("migration (batched): 16 bins"), std::string::npos) << r.out;
    EXPECT_EQ(digest_of(mega), digest_of(native)) << "q" << q;
    simdjson::dom::parser parser;
    simdjson::dom::element doc = parser.load(mega.string());
    simdjson::dom::array ms = doc["migrations"];
    ASSERT_GE(ms.size(), 1u);
    for (simdjson::dom::element m : ms) {
      EXPECT_EQ(std::string_view(m["strategy"]), "batched");
      EXPECT_TRUE(bool(m["completed"]));
      EXPECT_GT(uint64_t(m["bytes_moved"]), 0u);
    }
  }
  fs::remove_all(dir);
}

TEST(NexmarkCli, MegaphoneBadFlags) {
  auto r = run_binary("run nexmark-q1 --records 100 --bins 16");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("has no keyed state"), std::string::npos) << r.out;
  r = run_binary("run nexmark-q3 --records 100 --bins 16 --native");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("exclude each other"), std::string::npos) << r.out;
  r = run_binary("run nexmark-q3 --records 100 --migrate-at 1s");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--migrate-at needs --bins"), std::string::npos) << r.out;
  r = run_binary("run nexmark-q3 --records 100 --bins 12");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("not a power of two"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace snailtrail::test_nexmark_cli
