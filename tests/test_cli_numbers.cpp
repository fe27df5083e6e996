// Numbers given to flags (cli/duration.hpp parse_number): the whole text a finite number,
// else exit 2 naming the flag. `simulate --speed-up`, `send --speed` and `run --rate`
// read theirs with it.
#include <gtest/gtest.h>

#include <string>

#include "process_util.hpp"

namespace snailtrail::test_cli_numbers {
namespace {

using testing::CommandResult;
using testing::run_binary;

const std::string kSource = SNAILTRAIL_SOURCE_DIR;

TEST(CliNumbers, SpeedUpFactors) {
  const std::string sim = "simulate " + kSource + "/examples/wordcount-1-2-4.toml -o " +
                          ::testing::TempDir() + "cli-numbers.jsonl --speed-up count-0=";
  for (const char* k : {"2", "+2", "2.5", "1e1"}) EXPECT_EQ(run_binary(sim + k).code, 0) << k;
  for (const char* k : {"", "2x", "inf", "nan", "0", "-1", "x2"}) {
    const CommandResult r = run_binary(sim + "'" + k + "'");
    EXPECT_EQ(r.code, 2) << k << ": " << r.out;
    EXPECT_NE(r.out.find("expected TARGET=K with a factor K > 0"), std::string::npos) << r.out;
  }
}

TEST(CliNumbers, SendSpeed) {
  // A speed that parses gets as far as connecting (nothing listens on port 1: exit 1
  // after its retries, some seconds).
  const std::string send = "send " + kSource + "/examples/pipeline.jsonl --to 127.0.0.1:1 --speed ";
  EXPECT_EQ(run_binary(send + "2.5X").code, 1);
  for (const char* s : {"abc", "''", "infx", "0x", "-2x", "2xx"}) {
    const CommandResult r = run_binary(send + s);
    EXPECT_EQ(r.code, 2) << s << ": " << r.out;
    EXPECT_NE(r.out.find("--speed must be like 1x, 10x or max"), std::string::npos) << r.out;
  }
}

TEST(CliNumbers, RunRate) {
  const std::string run = "run keycount --records 1 --rate ";
  for (const char* r : {"abc", "''", "inf", "1e3x"}) {
    const CommandResult out = run_binary(run + r);
    EXPECT_EQ(out.code, 2) << r << ": " << out.out;
    EXPECT_NE(out.out.find("is not a number or 'max'"), std::string::npos) << out.out;
  }
  const CommandResult low = run_binary(run + "0.5");
  EXPECT_EQ(low.code, 2);
  EXPECT_NE(low.out.find("out of range [1, 1e10]"), std::string::npos) << low.out;
  // The suffixes of --rate-profile (issue 35): k/K, M, G multiply; "20G" is 2e10, too much.
  for (const char* r : {"200k", "200K", "1.5M", "1G", "2e5"})
    EXPECT_EQ(run_binary(run + r + " -q").code, 0) << r;
  const CommandResult high = run_binary(run + "20G");
  EXPECT_EQ(high.code, 2);
  EXPECT_NE(high.out.find("--rate: 20G is out of range [1, 1e10]"), std::string::npos) << high.out;
  for (const char* r : {"200m", "200kk", "k", "200 k"}) {
    const CommandResult out = run_binary(run + "'" + r + "'");
    EXPECT_EQ(out.code, 2) << r << ": " << out.out;
    EXPECT_NE(out.out.find("is not a number or 'max'"), std::string::npos) << out.out;
  }
}

}  // namespace
}  // namespace snailtrail::test_cli_numbers
