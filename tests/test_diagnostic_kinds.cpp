// Import diagnostics as typed kinds (trace/diagnostic_kind.hpp): every kind an importer
// counts is declared by it, and a cut input is found by its declared kind (the CLI's
// warning, serve's truncated-streams counter), never by the spelling of its name.
// Per importer that can meet a cut file: the cut file yields its declared cut kind, seen
// by warn_if_cut and by serve's counter; the whole file yields none.
#include <gtest/gtest.h>
#include <zstd.h>
#include <msgpack.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli/import_warnings.hpp"
#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
#include "importers/streaming.hpp"
#include "process_util.hpp"
#include "serve/pump.hpp"

namespace snailtrail::test_diagnostic_kinds {
namespace {

namespace fs = std::filesystem;
using Diagnostics = std::vector<std::pair<std::string, uint64_t>>;

const fs::path kData = fs::path(SNAILTRAIL_SOURCE_DIR) / "tests/data";

fs::path temp_file(const std::string& name, std::string_view bytes) {
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-diagkinds-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

// The names in `d` whose declared kind means a cut input; fails on an undeclared name.
std::set<std::string> cut_kinds(const Diagnostics& d) {
  std::set<std::string> cut;
  for (const auto& [name, n] : d) {
    const DiagnosticKind* kind = importers::find_diagnostic_kind(name);
    EXPECT_NE(kind, nullptr) << name << " is counted but declared by no importer";
    if (kind && kind->cut_input() && n > 0) cut.insert(name);
  }
  return cut;
}

std::string cut_warning(const Trace& t) {
  ::testing::internal::CaptureStderr();
  cli::warn_if_cut(t);
  return ::testing::internal::GetCapturedStderr();
}

// What serve counts as truncated streams after `bytes` came through the named streaming
// importer, fed in pieces of 7 bytes.
uint64_t served_truncated(std::string_view importer, std::string_view bytes) {
  serve::BatchQueue queue(size_t{1} << 30);
  serve::IngestCounters counters;
  serve::Pump pump("test", queue, counters, importers::make_stream_importer(importer, "test", {}));
  for (size_t at = 0; at < bytes.size(); at += 7) {
    const std::string_view piece = bytes.substr(at, 7);
    EXPECT_TRUE(pump.feed(reinterpret_cast<const uint8_t*>(piece.data()), piece.size()));
  }
  pump.finish();
  EXPECT_FALSE(pump.broken()) << pump.broken_reason();
  return counters.truncated.load();
}

// The whole input has no cut kind; cut, it has exactly `kind`, which the warning names
// and (for a streaming importer) serve counts once.
void expect_cut_seen(const std::string& importer, const std::string& file, std::string_view whole,
                     std::string_view cut, const std::string& kind) {
  SCOPED_TRACE(importer + " " + kind);
  const Trace all = importers::import_trace(temp_file(file, whole).string(), importer);
  EXPECT_TRUE(cut_kinds(all.import_diagnostics).empty());
  EXPECT_EQ(cut_warning(all), "");
  const Trace part = importers::import_trace(temp_file("cut-" + file, cut).string(), importer);
  EXPECT_EQ(cut_kinds(part.import_diagnostics), std::set<std::string>{kind});
  const std::string warning = cut_warning(part);
  EXPECT_NE(warning.find("ends inside a record"), std::string::npos) << warning;
  EXPECT_NE(warning.find(kind), std::string::npos) << warning;
  EXPECT_LT(part.events.size(), all.events.size() + 1);
  if (importers::find_importer(importer)->stream) {
    EXPECT_EQ(served_truncated(importer, whole), 0u);
    EXPECT_EQ(served_truncated(importer, cut), 1u);
  }
}

// Without its last `n` bytes and its final newline: cut inside the last line.
std::string_view cut_last_line(std::string_view text, size_t n) {
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text.substr(0, text.size() - n);
}

TEST(DiagnosticKinds, DeclaredOnceWithOneMeaning) {
  size_t declared = 0, cut = 0;
  for (const importers::Importer& imp : importers::all_importers()) {
    std::set<std::string_view> own;
    for (const DiagnosticKind& k : imp.diagnostics) {
      ++declared;
      cut += k.cut_input();
      EXPECT_TRUE(own.insert(k.name).second) << imp.name << " declares " << k.name << " twice";
      const size_t dot = k.name.find('.');
      EXPECT_TRUE(dot != std::string_view::npos && dot > 0 && dot + 1 < k.name.size()) << k.name;
      EXPECT_EQ(k.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_."),
                std::string_view::npos)
          << k.name;
      // A name several importers declare (the kernel model's) means the same everywhere.
      const DiagnosticKind* found = importers::find_diagnostic_kind(k.name);
      ASSERT_NE(found, nullptr) << k.name;
      EXPECT_EQ(found->meaning, k.meaning) << k.name;
    }
  }
  EXPECT_GT(declared, 80u);
  EXPECT_GE(cut, 8u);
}

TEST(DiagnosticKinds, RepairedKindsAreNotCutInput) {
  // Declared kinds that are not cut input, some with "cut" in their name, and an
  // undeclared name spelled like a cut kind: none is cut input, none warns.
  Trace t;
  t.source = "repaired.json";
  t.import_diagnostics = {{"chrome.unmatched_ends", 2},
                          {"logs.long_lines_cut", 3},
                          {"otlp.cut_traces", 1},
                          {"spark.tasks_without_end", 4},
                          {"kernel.running_without_wakeup", 1},
                          {"made.up.truncated_file", 1}};
  for (const auto& [name, n] : t.import_diagnostics) {
    EXPECT_FALSE(importers::is_cut_input(name)) << name;
    if (name != "made.up.truncated_file") {
      EXPECT_NE(importers::find_diagnostic_kind(name), nullptr) << name;
    }
  }
  EXPECT_EQ(importers::find_diagnostic_kind("made.up.truncated_file"), nullptr);
  EXPECT_EQ(cut_warning(t), "");
  t.import_diagnostics.emplace_back("otlp.truncated_file", 1);
  EXPECT_NE(cut_warning(t).find("otlp.truncated_file"), std::string::npos);
}

TEST(DiagnosticKinds, RepairedProblemIsNotCountedAsTruncatedStream) {
  // A msgpack log with a bogus event code in a complete record: counted, not cut.
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  for (const int code : {1, 5, 2}) {  // start, bogus, end
    pk.pack_uint64(100 + code);
    pk.pack_uint64(0);
    pk.pack_uint64(1);  // processing
    pk.pack_uint64(static_cast<uint64_t>(code));
    for (int i = 0; i < 3; ++i) pk.pack_int64(-1);
  }
  const std::string_view bytes(buf.data(), buf.size());
  const Trace t = importers::import_trace(temp_file("bogus.msgpack", bytes).string());
  ASSERT_EQ(t.import_diagnostics, (Diagnostics{{"msgpack.bogus_events", 1}}));
  EXPECT_TRUE(cut_kinds(t.import_diagnostics).empty());
  EXPECT_EQ(cut_warning(t), "");
  EXPECT_EQ(served_truncated("snailtrail-msgpack", bytes), 0u);
}

TEST(DiagnosticKinds, ChromeCutFile) {
  const std::string text = testing::slurp(kData / "chrome-flows.json");
  expect_cut_seen("chrome", "t.json", text, std::string_view(text).substr(0, text.size() / 2),
                  "chrome.truncated_file");
}

TEST(DiagnosticKinds, OtlpCutDocumentAndCutLastLine) {
  const std::string text = testing::slurp(kData / "otlp-request.json");
  expect_cut_seen("otlp", "t.json", text, std::string_view(text).substr(0, text.size() * 2 / 3),
                  "otlp.truncated_file");
  // One request per line, as the collector's file exporter writes them.
  std::string line = text;
  std::erase(line, '\n');
  const std::string two = line + "\n" + line + "\n";
  expect_cut_seen("otlp", "lines.json", two, cut_last_line(two, line.size() / 2),
                  "otlp.truncated_last_line");
}

TEST(DiagnosticKinds, JaegerCutFileWholeAndSpanBySpan) {
  const std::string text = testing::slurp(kData / "jaeger-request.json");
  const std::string_view cut = std::string_view(text).substr(0, text.size() * 2 / 3);
  expect_cut_seen("jaeger", "t.json", text, cut, "jaeger.truncated_file");
  // Read in chunks of 64 bytes the trace is read span by span (jaeger_big_trace.cpp).
  importers::set_stream_chunk_bytes(64);
  const fs::path path = temp_file("big.json", cut);
  const importers::SpanStream s =
      importers::stream_spans(path.string(), "jaeger", 1, [](size_t, const importers::SpanSet&) {});
  importers::set_stream_chunk_bytes(4 << 20);
  EXPECT_GT(s.span_by_span, 0u);
  EXPECT_EQ(cut_kinds(s.diagnostics), std::set<std::string>{"jaeger.truncated_file"});
}

TEST(DiagnosticKinds, SparkCutLastLineAndCutCompressedData) {
  const std::string text = testing::slurp(kData / "spark-2stage-eventlog");
  expect_cut_seen("spark", "app-1", text, cut_last_line(text, 30), "spark.truncated_last_line");
  std::string z(ZSTD_compressBound(text.size()), '\0');
  z.resize(ZSTD_compress(z.data(), z.size(), text.data(), text.size(), 3));
  SCOPED_TRACE("zstd");
  const Trace t = importers::import_trace(
      temp_file("app-2.zstd", std::string_view(z).substr(0, z.size() - 40)).string(), "spark");
  EXPECT_EQ(cut_kinds(t.import_diagnostics),
            std::set<std::string>{"spark.truncated_compressed_data"});
  EXPECT_NE(cut_warning(t).find("spark.truncated_compressed_data"), std::string::npos);
}

TEST(DiagnosticKinds, MsgpackCutRecord) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  for (int i = 0; i < 4; ++i) {
    pk.pack_uint64(100 + static_cast<uint64_t>(i) * 10);
    pk.pack_uint64(0);
    pk.pack_uint64(1);                                   // processing
    pk.pack_uint64(static_cast<uint64_t>(1 + (i & 1)));  // start, end
    for (int k = 0; k < 3; ++k) pk.pack_int64(-1);
  }
  const std::string_view bytes(buf.data(), buf.size());
  expect_cut_seen("snailtrail-msgpack", "t.msgpack", bytes, bytes.substr(0, bytes.size() - 3),
                  "msgpack.truncated_record");
}

TEST(DiagnosticKinds, PerfScriptCutLastLine) {
  const std::string text = testing::slurp(kData / "perf-sched-timer.txt");
  expect_cut_seen("perf-sched", "t.txt", text, cut_last_line(text, 40), "perf.truncated_last_line");
}

TEST(DiagnosticKinds, EveryKindCountedOnTheFixturesIsDeclared) {
  // Each fixture and example as its importer reads it, whole and cut in half.
  size_t files = 0, counted = 0;
  for (const fs::path& dir : {kData, fs::path(SNAILTRAIL_SOURCE_DIR) / "examples"})
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string text = testing::slurp(entry.path());
      const std::string name = entry.path().filename().string();
      for (const std::string_view bytes :
           {std::string_view(text), std::string_view(text).substr(0, text.size() / 2)}) {
        Trace t;
        try {
          t = importers::import_trace(temp_file(name, bytes).string());
        } catch (const std::exception&) {
          continue;  // not a trace (a .toml, a .csv), or cut before its first record
        }
        ++files;
        counted += t.import_diagnostics.size();
        for (const auto& [kind, n] : t.import_diagnostics)
          EXPECT_NE(importers::find_diagnostic_kind(kind), nullptr) << name << ": " << kind;
      }
    }
  EXPECT_GE(files, 8u);
  EXPECT_GT(counted, 0u);
}

}  // namespace
}  // namespace snailtrail::test_diagnostic_kinds
