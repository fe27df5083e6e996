// The importer descriptors (importers/importer.hpp): one table drives detection, streaming,
// the importers' options and their registration on every command that imports.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "importers/importer.hpp"
#include "importers/streaming.hpp"
#include "process_util.hpp"
#include "temp_file.hpp"

namespace snailtrail::test_importer_registry {
namespace {

using importers::Importer;
using testing::CommandResult;
using testing::run_binary;

TEST(ImporterRegistry, DescriptorsAreComplete) {
  std::set<std::string> names;
  for (const Importer& imp : importers::all_importers()) {
    EXPECT_FALSE(imp.name.empty());
    EXPECT_FALSE(imp.description.empty()) << imp.name;
    EXPECT_NE(imp.sniff, nullptr) << imp.name;
    EXPECT_NE(imp.read, nullptr) << imp.name;
    EXPECT_TRUE(names.insert(std::string(imp.name)).second) << "twice: " << imp.name;
    EXPECT_EQ(importers::find_importer(imp.name), &imp);
  }
  // Hand-written list of the formats docs/IMPORTERS.md describes.
  EXPECT_EQ(names, (std::set<std::string>{"snail", "jsonl", "spark", "snailtrail-msgpack", "chrome",
                                          "otlp", "jaeger", "perf-sched", "lttng", "logs"}));
}

TEST(ImporterRegistry, StreamingComesFromTheDescriptors) {
  const std::set<std::string> streams = {"spark", "snailtrail-msgpack", "perf-sched"};
  for (const Importer& imp : importers::all_importers()) {
    const bool streams_it = streams.count(std::string(imp.name)) > 0;
    EXPECT_EQ(imp.stream != nullptr, streams_it) << imp.name;
    EXPECT_EQ(importers::make_stream_importer(imp.name, "x", {}) != nullptr, streams_it)
        << imp.name;
  }
  EXPECT_EQ(importers::make_stream_importer("no-such-importer", "x", {}), nullptr);
  EXPECT_EQ(importers::streaming_importer_names(), "spark, snailtrail-msgpack, perf-sched");
  // Formats that cannot be followed say why (serve's error), except the kernel's CTF.
  for (std::string_view name : {"chrome", "otlp", "jaeger"})
    EXPECT_FALSE(importers::find_importer(name)->not_streamed.empty()) << name;
}

TEST(ImporterRegistry, OptionsOncePerFlagWithTheirReaders) {
  std::set<std::string> flags;
  std::string map_readers, split_readers, log_id_readers;
  for (const importers::ImportOptionUse& use : importers::import_options()) {
    EXPECT_TRUE(flags.insert(std::string(use.option->flag)).second) << use.option->flag;
    EXPECT_FALSE(use.option->help.empty()) << use.option->flag;
    if (use.option->flag == "--map") map_readers = use.readers;
    if (use.option->flag == "--spark-delay-split") split_readers = use.readers;
    if (use.option->flag == "--log-id") log_id_readers = use.readers;
  }
  EXPECT_EQ(flags,
            (std::set<std::string>{"--spark-delay-split", "--map", "--log-format", "--log-id"}));
  EXPECT_EQ(map_readers, "chrome/otlp/jaeger");
  EXPECT_EQ(split_readers, "spark");
  EXPECT_EQ(log_id_readers, "logs");
  // serve --follow: only the options of importers that stream.
  const auto streaming = importers::import_options(true);
  ASSERT_EQ(streaming.size(), 1u);
  EXPECT_EQ(streaming[0].option->flag, "--spark-delay-split");
}

TEST(ImporterRegistry, OptionChecks) {
  importers::ImportOptions o;
  EXPECT_EQ(o.spark_delay_split, "1:2");  // the one default
  EXPECT_NO_THROW(importers::check_import_options(o));
  o.spark_delay_split = "3:1";
  EXPECT_NO_THROW(importers::check_import_options(o, true));
  for (const char* bad : {"0:0", "1", "a:b", "1:-2", ""}) {
    o.spark_delay_split = bad;
    EXPECT_THROW(importers::check_import_options(o), std::invalid_argument) << bad;
    EXPECT_THROW(importers::check_import_options(o, true), std::invalid_argument) << bad;
  }
}

// Every command that imports registers the importers' options, with the one default.
TEST(ImporterRegistry, CommandsRegisterTheOptions) {
  for (const char* command : {"analyze", "report", "convert", "scale policy", "scale manage"}) {
    const CommandResult r = run_binary(std::string(command) + " --help");
    ASSERT_EQ(r.code, 0) << command << "\n" << r.out;
    EXPECT_NE(r.out.find("--spark-delay-split TEXT=1:2"), std::string::npos) << command;
    EXPECT_NE(r.out.find("--map TEXT"), std::string::npos) << command;
    EXPECT_NE(r.out.find("chrome/otlp/jaeger: TOML rules"), std::string::npos) << command;
    EXPECT_NE(r.out.find("--log-id TEXT"), std::string::npos) << command;
  }
  const CommandResult serve = run_binary("serve --help");
  ASSERT_EQ(serve.code, 0) << serve.out;
  EXPECT_NE(serve.out.find("--spark-delay-split TEXT=1:2"), std::string::npos);
  EXPECT_EQ(serve.out.find("--map TEXT"), std::string::npos);  // no followed format reads it
  EXPECT_NE(serve.out.find("spark, snailtrail-msgpack, perf-sched"), std::string::npos);
}

// `--importer auto` is resolved once per command (the stages then read the name, not the
// file): the detected name for a file, "auto" where reading must report the problem.
TEST(ImporterRegistry, ResolveImporterNamesTheDetectedReaderOrKeepsAuto) {
  const std::string jsonl = testing::write_temp(
      "resolve.jsonl", R"({"ts":1,"worker":0,"activity":"processing","event":"start"})"
                       "\n"
                       R"({"ts":5,"worker":0,"activity":"processing","event":"end"})"
                       "\n");
  EXPECT_EQ(importers::resolve_importer(jsonl, "auto"), "jsonl");
  EXPECT_EQ(importers::resolve_importer(jsonl, "spark"), "spark");  // given: kept as is
  EXPECT_EQ(importers::resolve_importer("-", "auto"), "auto");      // stdin: read whole
  EXPECT_EQ(importers::resolve_importer("", "auto"), "auto");
  const std::string missing = ::testing::TempDir() + "no-such-trace.jsonl";
  EXPECT_EQ(importers::resolve_importer(missing, "auto"), "auto");
  const std::string scenario = testing::write_temp("resolve.toml", "[job]\n");
  EXPECT_EQ(importers::resolve_importer(scenario, "auto"), "auto");
  // ... and reading it gives the reader's message, as without resolving.
  const CommandResult r = run_binary("analyze " + scenario);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("snailtrail simulate"), std::string::npos) << r.out;
  // Nothing is remembered between calls: the same path with new content is detected anew.
  testing::write_temp("resolve.jsonl",
                      R"({"Event":"SparkListenerLogStart","Spark Version":"3.5.0"})"
                      "\n");
  EXPECT_EQ(importers::resolve_importer(jsonl, "auto"), "spark");
}

}  // namespace
}  // namespace snailtrail::test_importer_registry
