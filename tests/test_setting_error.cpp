// Setting errors (src/trace/setting_error.hpp): library messages name fields, never
// flags; the CLI's table (src/cli/setting_flags.hpp) renders them with its flags.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli/setting_flags.hpp"
#include "process_util.hpp"
#include "scale/serve_source.hpp"
#include "sim/scenario.hpp"
#include "trace/setting_error.hpp"

namespace test_setting_error {

namespace {

using namespace snailtrail;

TEST(SettingError, PlainTextNamesFieldsAndTheCliRendersFlags) {
  const UsageError e({field("log_bins"), ": at most 2^20"});
  EXPECT_STREQ(e.what(), "log_bins: at most 2^20");
  EXPECT_EQ(cli::error_message(e), "--bins: at most 2^20");
  const UsageError several(
      {"no source: give ", field("tcp"), ", ", field("stdin"), " or ", field("follow")});
  EXPECT_STREQ(several.what(), "no source: give tcp, stdin or follow");
  EXPECT_EQ(cli::error_message(several), "no source: give --tcp, --stdin or --follow");
  EXPECT_EQ(several.fields(), (std::vector<std::string>{"tcp", "stdin", "follow"}));
}

TEST(SettingError, UsageIsInvalidArgumentInputIsRuntimeError) {
  // The CLI's exit codes follow the class: invalid_argument exits 2, the rest 1.
  const UsageError u({field("rate"), " must be positive"});
  const InputError i({field("apply"), ": cannot run x"});
  const std::exception& ue = u;
  const std::exception& ie = i;
  EXPECT_NE(dynamic_cast<const std::invalid_argument*>(&ue), nullptr);
  EXPECT_EQ(dynamic_cast<const std::invalid_argument*>(&ie), nullptr);
  EXPECT_NE(dynamic_cast<const std::runtime_error*>(&ie), nullptr);
  EXPECT_EQ(cli::error_message(ie), "--apply: cannot run x");
  // Other exceptions read as they are.
  EXPECT_EQ(cli::error_message(std::runtime_error("--x as written")), "--x as written");
}

TEST(SettingError, FieldWithoutRowReadsAsItsFlagWouldBeSpelled) {
  EXPECT_EQ(cli::table_flag("new_knob"), "");
  EXPECT_EQ(cli::flag_of("new_knob"), "--new-knob");
  EXPECT_EQ(cli::flag_of("follow_importer"), "--importer");
}

TEST(SettingError, LibraryErrorsCarryNoFlagText) {
  sim::Scenario s;
  try {
    sim::Overrides o;
    o.workers = 0;
    sim::apply_overrides(s, o);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "workers must be at least 1");
    EXPECT_EQ(cli::error_message(e), "--workers must be at least 1");
  }
  try {
    scale::ServeSource("ftp://127.0.0.1:1", {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "serve: only http:// and https:// URLs of snailtrail serve are supported");
    EXPECT_EQ(cli::error_message(e),
              "--serve: only http:// and https:// URLs of snailtrail serve are supported");
  }
}

// Every field a library error under src/ names literally has its row in the CLI's
// table (else the user would read a guessed flag).
TEST(SettingError, EveryFieldNamedUnderSrcHasAFlag) {
  namespace fs = std::filesystem;
  const std::regex named(R"re(field\("([a-z0-9_]+)"\))re");
  std::set<std::string> fields;
  for (const auto& f : fs::recursive_directory_iterator(fs::path(SNAILTRAIL_SOURCE_DIR) / "src")) {
    if (f.path().extension() != ".cpp" && f.path().extension() != ".hpp") continue;
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator m(s.begin(), s.end(), named), end; m != end; ++m)
      fields.insert((*m)[1]);
  }
  EXPECT_GE(fields.size(), 20u);  // the scan found the throw sites
  for (const std::string& f : fields) EXPECT_NE(cli::table_flag(f), "") << f;
  for (const auto& [f, flag] : cli::kSettingFlags) {
    EXPECT_TRUE(fields.count(std::string(f))) << f << ": a row no error uses";
    EXPECT_EQ(flag.substr(0, 2), "--") << f;
  }
}

// End to end: the binary prints library errors with its flags and exits by their class.
TEST(SettingError, TheBinaryPrintsFlagsAndExitsByClass) {
  using snailtrail::testing::CommandResult;
  using snailtrail::testing::run_binary;
  const std::string scenario =
      std::string(SNAILTRAIL_SOURCE_DIR) + "/examples/wordcount-skew-0.toml";
  CommandResult r = run_binary("simulate " + scenario +
                               " --rate 0 -o /tmp/snailtrail-setting-error-unwritten.jsonl");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("snailtrail: error: --rate must be positive\n"), std::string::npos) << r.out;
  r = run_binary("run keycount --bins 4 --strategy nope --duration 1s");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(
      r.out.find("snailtrail: error: --strategy: 'nope' is not all-at-once, fluid or batched"),
      std::string::npos)
      << r.out;
  r = run_binary("serve --tcp 127.0.0.1:0 --retain 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("snailtrail: error: --retain must be at least 1\n"), std::string::npos)
      << r.out;
}

}  // namespace

}  // namespace test_setting_error
