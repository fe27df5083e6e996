// Numbers with a k/M/G suffix (flow::parse_scaled): `run --rate` and the profiles' values
// read them alike (issue 35: --rate 200k was refused while --rate-profile took it).
#include <gtest/gtest.h>

#include "flow/runtime.hpp"

namespace snailtrail::flow {
namespace {

TEST(FlowScaled, SuffixesMultiplyAndTheWholeTextIsANumber) {
  const std::pair<const char*, double> good[] = {
      {"200", 200}, {"200k", 2e5}, {"200K", 2e5}, {"1.5M", 1.5e6},
      {"2G", 2e9},  {"2e5", 2e5},  {"0.5k", 500}, {"+3k", 3000},
  };
  for (const auto& [text, want] : good) {
    const auto got = parse_scaled(text);
    ASSERT_TRUE(got.has_value()) << text;
    EXPECT_DOUBLE_EQ(*got, want) << text;
  }
  for (const char* text : {"", "k", "M", "200m", "200kk", "200 k", " 200", "2x", "inf", "nan",
                           "1e400", "1e300G", "k200"})
    EXPECT_FALSE(parse_scaled(text).has_value()) << "'" << text << "'";
}

TEST(FlowScaled, ProfilesTakeTheSameSuffixes) {
  const auto ns = [](const std::string& t) { return int64_t{std::stoll(t)} * 1'000'000'000; };
  const auto p = parse_profile("0:100k,10:1.5M,20:1G", "rate_profile", ns);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0].second, 1e5);
  EXPECT_DOUBLE_EQ(p[1].second, 1.5e6);
  EXPECT_DOUBLE_EQ(p[2].second, 1e9);
}

}  // namespace
}  // namespace snailtrail::flow
