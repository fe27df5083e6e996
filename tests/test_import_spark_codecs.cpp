// Compressed Spark event logs (src/importers/common/compressed.hpp), rolling event-log
// directories and Spark 1.x logs without job times (src/importers/spark). The compressed
// fixtures are written here in the exact framing Spark's writers use, built from the
// specs with the codec libraries: lz4-java's LZ4BlockOutputStream, snappy-java's
// SnappyOutputStream, zstd frames, gzip members.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codec_util.hpp"
#include "importers/common/compressed.hpp"
#include "importers/importer.hpp"
#include "importers/spark/spark_importer.hpp"
#include "importers/streaming.hpp"
#include "spark_log_util.hpp"
#include "trace/trace_io.hpp"

namespace test_import_spark_codecs {

namespace {

using namespace snailtrail;
namespace fs = std::filesystem;
namespace spark = snailtrail::importers::spark;
using importers::Codec;
using namespace snailtrail::testing::spark_log;
using namespace snailtrail::testing::codecs;

fs::path temp_dir() {
  const fs::path dir =
      fs::temp_directory_path() / ("snailtrail-codecs-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

void write_bytes(const fs::path& p, std::string_view s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

uint64_t diagnostic(const Trace& t, const std::string& name) {
  for (const auto& [k, v] : t.import_diagnostics)
    if (k == name) return v;
  return 0;
}

struct CodecCase {
  const char* name;
  const char* extension;  // Spark names a log after its codec
  Encoded (*encode)(std::string_view);
};
const CodecCase kCodecs[] = {
    {"zstd", ".zstd", [](std::string_view t) { return zstd_frames(t, 200 * 1024); }},
    {"lz4", ".lz4", [](std::string_view t) { return lz4_block_stream(t); }},
    {"snappy", ".snappy", [](std::string_view t) { return snappy_java_stream(t); }},
    {"gzip", ".gz", [](std::string_view t) { return gzip_members(t, 200 * 1024); }},
};

// The decoded stream, fed in pieces of random sizes.
std::string decode_in_pieces(Codec codec, std::string_view bytes, uint64_t seed) {
  importers::Decoder d(codec, "t");
  std::mt19937_64 rng(seed);
  std::string out;
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min<size_t>(bytes.size() - at, 1 + rng() % 9000);
    d.feed(bytes.substr(at, n), [&](std::string_view s) { out += s; });
    at += n;
  }
  EXPECT_FALSE(d.cut());
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------------------------------

TEST(Compressed, Xxh32MatchesTheLz4Tool) {
  // The content checksum of `printf %s STRING | lz4 --content-size` (XXH32, seed 0), an
  // independent implementation.
  const std::pair<std::string, uint32_t> cases[] = {
      {"", 0x02cc5d05},
      {"a", 0x550d7456},
      {"abc", 0x32d153ff},
      {"Nobody inspects the spammish repetition", 0xe2293b2f},
      {"0123456789abcdef0123456789abcdef-xyz", 0x1b14b2ca},
  };
  for (const auto& [text, want] : cases)
    EXPECT_EQ(importers::xxh32(text.data(), text.size(), 0), want) << '"' << text << '"';
}

TEST(Compressed, MagicsAndNames) {
  EXPECT_EQ(importers::codec_of("LZ4Block\x25"), Codec::lz4_block);
  EXPECT_EQ(importers::codec_of(std::string_view("\x82SNAPPY\0\0", 9)), Codec::snappy_java);
  EXPECT_EQ(importers::codec_of("\x1F\x8B\x08"), Codec::gzip);
  EXPECT_EQ(importers::codec_of("\x28\xB5\x2F\xFD"), Codec::zstd);
  EXPECT_EQ(importers::codec_of(std::string_view("ZV\0\0", 4)), Codec::lzf);
  EXPECT_EQ(importers::codec_of("{\"Event\""), Codec::none);
  EXPECT_EQ(importers::codec_of_name("events_3_app-1.lz4"), Codec::lz4_block);
  EXPECT_EQ(importers::codec_of_name("app-1.snappy.inprogress"), Codec::snappy_java);
  EXPECT_EQ(importers::codec_of_name("app-1.zstd"), Codec::zstd);
  EXPECT_EQ(importers::codec_of_name("app-1"), Codec::none);
}

TEST(Compressed, EveryCodecDecodesInAnyPieces) {
  const GeneratedLog g = generate_log(3, 2, 12, 40, 5, true);
  ASSERT_GT(g.text.size(), 200'000u);  // several blocks, frames and members
  for (const CodecCase& c : kCodecs) {
    const Encoded e = c.encode(g.text);
    ASSERT_GT(e.blocks.size(), 1u) << c.name;
    const Codec codec = importers::codec_of(e.bytes);
    ASSERT_TRUE(importers::decodable(codec)) << c.name;
    for (uint64_t seed = 1; seed <= 3; ++seed)
      EXPECT_EQ(decode_in_pieces(codec, e.bytes, seed), g.text) << c.name;
  }
  // lz4-java's reader and ours take concatenated streams (Spark does not stop at an end
  // block); snappy-java's reader takes a repeated header.
  const std::string two = lz4_block_stream("ab\n").bytes + lz4_block_stream("cd\n").bytes;
  EXPECT_EQ(decode_in_pieces(Codec::lz4_block, two, 1), "ab\ncd\n");
  const std::string s2 = snappy_java_stream("ab\n").bytes + snappy_java_stream("cd\n").bytes;
  EXPECT_EQ(decode_in_pieces(Codec::snappy_java, s2, 1), "ab\ncd\n");
}

TEST(Compressed, ConcatenatedStreamsDecodeByteByByte) {
  // Two streams back to back (a repeated snappy-java header, an lz4 stream after an end
  // block, two zstd frames, two gzip members), fed one byte at a time.
  const std::string text = "line one\nline two\n";
  for (const CodecCase& c : kCodecs) {
    const std::string bytes = c.encode(text.substr(0, 9)).bytes + c.encode(text.substr(9)).bytes;
    importers::Decoder d(importers::codec_of(bytes), "t");
    std::string out;
    for (char ch : bytes) {
      d.feed(std::string_view(&ch, 1), [&](std::string_view s) { out += s; });
    }
    EXPECT_EQ(out, text) << c.name;
    EXPECT_FALSE(d.cut()) << c.name;
  }
}

TEST(Compressed, EveryCodecIsDetectedWithoutImporterAndGivesThePlainTrace) {
  const GeneratedLog g = generate_log(3, 2, 12, 40, 9, true);
  const Trace plain = spark::parse_event_log(g.text, "x");
  ASSERT_GT(plain.events.size(), 1000u);
  for (const CodecCase& c : kCodecs) {
    const fs::path path = temp_dir() / (std::string("app-1") + c.extension);
    write_bytes(path, c.encode(g.text).bytes);
    EXPECT_EQ(importers::detect_importer(path.string()).name, "spark") << c.name;
    const Trace t = importers::import_trace(path.string());
    EXPECT_EQ(to_jsonl(t), to_jsonl(plain)) << c.name;
    EXPECT_TRUE(t.import_diagnostics.empty()) << c.name;
    // Without the codec in the name too: the magic decides.
    const fs::path bare = temp_dir() / "eventlog";
    write_bytes(bare, c.encode(g.text).bytes);
    EXPECT_EQ(importers::detect_importer(bare.string()).name, "spark") << c.name;
  }
}

TEST(Compressed, ZstdLogWhoseFirstBlockExceedsTheSniffHeadIsDetected) {
  // zstd-jni writes 128 KiB blocks: on a log of varied numbers the first compressed block
  // is larger than the 4 KiB the sniffers used to see, and decoding 4 KiB gave nothing.
  std::string text;
  std::mt19937_64 rng(3);
  text += "{\"Event\":\"SparkListenerLogStart\",\"Spark Version\":\"3.5.0\"}\n";
  const GeneratedLog g = generate_log(4, 4, 30, 200, 17, true);
  text += g.text;
  std::string z(ZSTD_compressBound(text.size()), '\0');
  z.resize(ZSTD_compress(z.data(), z.size(), text.data(), text.size(), 1));
  ASSERT_EQ(importers::decode_prefix(Codec::zstd, std::string_view(z).substr(0, 4096), 4096), "")
      << "the fixture no longer reproduces the problem";
  const fs::path path = temp_dir() / "app-20231114-0002.zstd";
  write_bytes(path, z);
  EXPECT_EQ(importers::detect_importer(path.string()).name, "spark");
  EXPECT_EQ(to_jsonl(importers::import_trace(path.string())),
            to_jsonl(spark::parse_event_log(text, "x")));
}

TEST(Compressed, StreamInPiecesEqualsBatch) {
  const GeneratedLog g = generate_log(3, 2, 9, 30, 13, true);
  const Trace batch = spark::parse_event_log(g.text, "x");
  for (const CodecCase& c : kCodecs) {
    const std::string bytes = c.encode(g.text).bytes;
    std::mt19937_64 rng(7);
    auto stream = spark::make_stream("s", {});
    Trace t;
    for (size_t at = 0; at < bytes.size();) {
      const size_t n = std::min<size_t>(bytes.size() - at, 1 + rng() % 5000);
      stream->feed(std::string_view(bytes).substr(at, n), t);
      at += n;
    }
    stream->finish(t);
    t.worker_names = batch.worker_names;
    t.operator_names = batch.operator_names;
    EXPECT_EQ(to_jsonl(t), to_jsonl(batch)) << c.name;
  }
}

TEST(Compressed, CutInputIsCountedAndCorruptInputNamesTheOffset) {
  const GeneratedLog g = generate_log(3, 2, 9, 40, 21, true);
  const Trace plain = spark::parse_event_log(g.text, "x");
  for (const CodecCase& c : kCodecs) {
    const Encoded e = c.encode(g.text);
    ASSERT_GE(e.blocks.size(), 2u) << c.name;
    // Cut inside the second block: what decoded before is used, the cut is counted.
    const std::string cut = e.bytes.substr(0, e.blocks[1] + 30);
    const Trace t = spark::parse_event_log(cut, "cut");
    EXPECT_EQ(diagnostic(t, "spark.truncated_compressed_data"), 1u) << c.name;
    EXPECT_LT(t.events.size(), plain.events.size()) << c.name;
    // The second block (frame, member) starts with a corrupt byte: an error naming the
    // codec and an offset, that of the block (lz4, snappy) or of where the decoding call
    // that met it began (zstd, gzip: at or before the block).
    std::string bad = e.bytes;
    bad[e.blocks[1]] = static_cast<char>(bad[e.blocks[1]] ^ 0x5A);
    const std::string what = error_of([&] { spark::parse_event_log(bad, "bad.log"); });
    const size_t at = what.find("bad.log: byte ");
    ASSERT_NE(at, std::string::npos) << c.name << ": " << what;
    EXPECT_NE(what.find(c.name), std::string::npos) << c.name << ": " << what;
    const uint64_t offset = std::stoull(what.substr(at + 14));
    EXPECT_LE(offset, e.blocks[1] + 16) << c.name << ": " << what;
    EXPECT_GT(offset, 0u) << c.name << ": " << what;
    if (std::string_view(c.name) == "lz4" || std::string_view(c.name) == "snappy") {
      EXPECT_EQ(offset, e.blocks[1]) << c.name << ": " << what;
    }
  }
  // The block formats name the block at fault exactly: a bad checksum (lz4) or length
  // (snappy) in the second block.
  const Encoded lz4 = lz4_block_stream(g.text);
  std::string bad = lz4.bytes;
  bad[lz4.blocks[1] + 17] ^= 1;  // the checksum's low byte
  EXPECT_NE(error_of([&] {
              spark::parse_event_log(bad, "l");
            }).find("l: byte " + std::to_string(lz4.blocks[1]) + ": lz4: block checksum"),
            std::string::npos);
  const Encoded sn = snappy_java_stream(g.text);
  bad = sn.bytes;
  bad[sn.blocks[1]] = '\x7F';  // a chunk length of ~2 GB
  EXPECT_NE(error_of([&] {
              spark::parse_event_log(bad, "s");
            }).find("s: byte " + std::to_string(sn.blocks[1]) + ": snappy: chunk length"),
            std::string::npos);
}

TEST(Compressed, ADecompressionBombIsRefused) {
  // 64 MiB of one byte compresses to little: past the cap's floor (1 MiB here, 256 MiB by
  // default) decoding stops once the output exceeds the ratio (100x here, 200x by
  // default). Snappy is not tried: its format cannot expand even 30x.
  const std::string same(64 << 20, 'x');
  for (const CodecCase& c : kCodecs) {
    if (std::string_view(c.name) == "snappy") continue;
    const std::string bytes = c.encode(same).bytes;
    ASSERT_LT(bytes.size() * 150, same.size()) << c.name;
    importers::Decoder d(importers::codec_of(bytes), "bomb", 1 << 20, 100);
    uint64_t got = 0;
    const std::string what =
        error_of([&] { d.feed(bytes, [&](std::string_view s) { got += s.size(); }); });
    EXPECT_NE(what.find("bomb: byte "), std::string::npos) << c.name << ": " << what;
    EXPECT_NE(what.find("decompression bomb"), std::string::npos) << c.name << ": " << what;
    EXPECT_LT(got, same.size() / 2) << c.name;
  }
  // The same data within the cap decodes.
  importers::Decoder ok(Codec::zstd, "fine", 128 << 20, 100);
  uint64_t got = 0;
  ok.feed(zstd_frames(same, same.size()).bytes, [&](std::string_view s) { got += s.size(); });
  EXPECT_EQ(got, same.size());
}

TEST(Compressed, UnreadableInputIsExplained) {
  const fs::path dir = temp_dir();
  // lzf (Spark's other codec) is recognised, not read.
  const fs::path lzf = dir / "app-20231114-0001.lzf";
  write_bytes(lzf, std::string_view("ZV\x01\x00\x10\x00\x20...", 11));
  EXPECT_EQ(importers::detect_importer(lzf.string()).name, "spark");
  EXPECT_NE(error_of([&] { importers::import_trace(lzf.string()); }).find("compressed with lzf"),
            std::string::npos);
  // A gzip file that is not a Spark log: "looks gzip-compressed".
  const fs::path gz = dir / "notes.txt.gz";
  write_bytes(gz, gzip_members("just some notes\n").bytes);
  const std::string what = error_of([&] { importers::detect_importer(gz.string()); });
  EXPECT_NE(what.find("looks gzip-compressed"), std::string::npos) << what;
  // A .lz4 name without the LZ4Block magic (say the lz4 tool's frame format).
  const fs::path frame = dir / "app-1.lz4";
  write_bytes(frame, std::string_view("\x04\x22\x4D\x18\x64\x40\xA7", 7));
  EXPECT_NE(error_of([&] {
              importers::import_trace(frame.string(), "spark");
            }).find("lz4 (frame format)"),
            std::string::npos);
}

TEST(Compressed, StdinSaysHowItIsRead) {
  const fs::path dir = temp_dir();
  const fs::path gz = dir / "stdin.gz";
  write_bytes(gz, gzip_members("not a trace\n").bytes);
  auto run = [](const std::string& cmd) {
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    return out;
  };
  const std::string bin = SNAILTRAIL_BINARY;
  std::string out = run(bin + " analyze - < " + gz.string());
  EXPECT_NE(out.find("stdin is read as"), std::string::npos) << out;
  EXPECT_NE(out.find("looks gzip-compressed"), std::string::npos) << out;
  const fs::path txt = dir / "stdin.txt";
  write_bytes(txt, "hello\n");
  out = run(bin + " analyze - < " + txt.string());
  EXPECT_NE(out.find("stdin is read as snailtrail JSONL"), std::string::npos) << out;
  // A compressed Spark log on stdin is recognised.
  const GeneratedLog g = generate_log(2, 2, 3, 5, 1, true);
  const fs::path lz = dir / "stdin.lz4";
  write_bytes(lz, lz4_block_stream(g.text).bytes);
  out = run(bin + " analyze - --window whole --format jsonl < " + lz.string());
  EXPECT_NE(out.find("\"activity\""), std::string::npos) << out;
}

// ---------------------------------------------------------------------------------------
// Rolling event logs (Spark 3: spark.eventLog.rolling.enabled): eventlog_v2_<appId>/ with
// events_<n>_<appId>[.codec] parts, each compressed on its own, and appstatus_<appId>.

TEST(RollingEventLog, ThreePartsReadInOrderAsOneLog) {
  const GeneratedLog g = generate_log(3, 2, 9, 30, 31, true);
  // Cut at line boundaries into three parts; the third is numbered 10 so that name order
  // (events_10 < events_2) is not number order.
  const size_t a = g.text.find('\n', g.text.size() / 3) + 1;
  const size_t b = g.text.find('\n', 2 * g.text.size() / 3) + 1;
  const fs::path dir = temp_dir() / "eventlog_v2_app-20231114-0003";
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_bytes(dir / "events_1_app-20231114-0003.zstd", zstd_frames(g.text.substr(0, a)).bytes);
  write_bytes(dir / "events_2_app-20231114-0003.lz4",
              lz4_block_stream(g.text.substr(a, b - a)).bytes);
  write_bytes(dir / "events_10_app-20231114-0003", g.text.substr(b));
  write_bytes(dir / "appstatus_app-20231114-0003", "");
  EXPECT_EQ(importers::detect_importer(dir.string()).name, "spark");
  const Trace whole = spark::parse_event_log(g.text, "x");
  const Trace t = importers::import_trace(dir.string());
  EXPECT_EQ(to_jsonl(t), to_jsonl(whole));
  EXPECT_TRUE(t.import_diagnostics.empty());
  // In name order (1, 10, 2) the log would not be the same.
  const Trace wrong =
      spark::parse_event_log(g.text.substr(0, a) + g.text.substr(b) + g.text.substr(a, b - a), "x");
  EXPECT_NE(to_jsonl(wrong), to_jsonl(whole));
  // Errors name the part.
  write_bytes(dir / "events_2_app-20231114-0003.lz4", "LZ4Block\x25garbage-garbage-garbage");
  EXPECT_NE(error_of([&] {
              importers::import_trace(dir.string());
            }).find("events_2_app-20231114-0003.lz4: byte 0"),
            std::string::npos);
  // An empty rolling directory is explained.
  const fs::path empty = temp_dir() / "eventlog_v2_app-empty";
  fs::create_directories(empty);
  EXPECT_NE(error_of([&] { importers::import_trace(empty.string()); }).find("no events_"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Spark 1.x logs: SparkListenerJobStart without "Submission Time" (it has "Stage IDs"),
// SparkListenerJobEnd without "Completion Time", no SparkListenerExecutorAdded (executors
// get slots on demand), StageInfo without "Stage Attempt ID". The job spans its stages:
// first submission (or first task launch) to last completion (or last result).

std::string v1_stage(const char* event, int id, const std::string& times) {
  return std::string("{\"Event\":\"") + event +
         "\",\"Stage Info\":{\"Stage ID\":" + std::to_string(id) +
         ",\"Stage Name\":\"map at Job.scala:" + std::to_string(id) +
         "\",\"Number of Tasks\":2,\"RDD Info\":[],\"Emitted Task Size Warning\":false" + times +
         "}}\n";
}

// Job 0 = stages 0 and 1 (stage 0 submitted at 5, completed at 60; stage 1 at 61-120);
// job 1 = stage 2, whose StageSubmitted has no time (tasks launch at 130). With
// `explicit_times`, the job events carry the times the rule infers.
std::string spark1_log(bool explicit_times) {
  const int64_t t0 = 1'700'000'000'000;
  auto ms = [&](int64_t x) { return std::to_string(t0 + x); };
  auto sub = [&](int64_t x) { return ",\"Submission Time\":" + ms(x); };
  auto done = [&](int64_t a, int64_t b) { return sub(a) + ",\"Completion Time\":" + ms(b); };
  std::string s =
      "{\"Event\":\"SparkListenerApplicationStart\",\"App Name\":\"Spark Pi\",\"Timestamp\":" +
      ms(0) + ",\"User\":\"u\"}\n" +
      "{\"Event\":\"SparkListenerBlockManagerAdded\",\"Block Manager ID\":{\"Executor "
      "ID\":\"<driver>\",\"Host\":\"h\",\"Port\":1},\"Maximum Memory\":1}\n";
  s += "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":0,\"Stage IDs\":[0,1]," +
       std::string(explicit_times ? "\"Submission Time\":" + ms(5) + "," : "") +
       "\"Properties\":{}}\n";
  s += v1_stage("SparkListenerStageSubmitted", 0, sub(5));
  s += task_end(0, 0, "0", t0 + 7, t0 + 40, metrics(1, 30, 1));
  s += task_end(0, 1, "0", t0 + 8, t0 + 58, metrics(1, 47, 1));
  s += v1_stage("SparkListenerStageCompleted", 0, done(5, 60));
  s += v1_stage("SparkListenerStageSubmitted", 1, sub(61));
  s += task_end(1, 2, "0", t0 + 62, t0 + 100, metrics(0, 37, 0));
  s += task_end(1, 3, "1", t0 + 63, t0 + 118, metrics(0, 54, 0));
  s += v1_stage("SparkListenerStageCompleted", 1, done(61, 120));
  s += "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":0," +
       std::string(explicit_times ? "\"Completion Time\":" + ms(120) + "," : "") +
       "\"Job Result\":{\"Result\":\"JobSucceeded\"}}\n";
  s += "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":1,\"Stage IDs\":[2]," +
       std::string(explicit_times ? "\"Submission Time\":" + ms(130) + "," : "") +
       "\"Properties\":{}}\n";
  s += v1_stage("SparkListenerStageSubmitted", 2, "");
  s += task_end(2, 4, "1", t0 + 130, t0 + 150, metrics(0, 19, 0));
  s += task_end(2, 5, "0", t0 + 131, t0 + 149, metrics(0, 17, 0));
  s += v1_stage("SparkListenerStageCompleted", 2, ",\"Completion Time\":" + ms(152));
  s += "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":1," +
       std::string(explicit_times ? "\"Completion Time\":" + ms(152) + "," : "") +
       "\"Job Result\":{\"Result\":\"JobSucceeded\"}}\n";
  s += "{\"Event\":\"SparkListenerApplicationEnd\",\"Timestamp\":" + ms(160) + "}\n";
  return s;
}

TEST(Spark1Log, JobTimesComeFromItsStagesAndAreCounted) {
  const Trace v1 = spark::parse_event_log(spark1_log(false), "v1");
  const Trace v2 = spark::parse_event_log(spark1_log(true), "v2");
  EXPECT_EQ(diagnostic(v1, "spark.jobs_without_submission_time"), 2u);
  EXPECT_EQ(diagnostic(v1, "spark.jobs_without_completion_time"), 2u);
  EXPECT_EQ(diagnostic(v1, "spark.jobs_without_end"), 0u);
  EXPECT_EQ(diagnostic(v2, "spark.jobs_without_submission_time"), 0u);
  ASSERT_GT(v1.events.size(), 20u);
  EXPECT_EQ(to_jsonl(v1), to_jsonl(v2));
  // Detected without --importer, and a job whose stages never ran draws nothing.
  const fs::path path = temp_dir() / "app-20150101000000-0000";
  write_bytes(path, spark1_log(false));
  EXPECT_EQ(importers::detect_importer(path.string()).name, "spark");
  const Trace lone = spark::parse_event_log(
      "{\"Event\":\"SparkListenerJobStart\",\"Job ID\":7,\"Stage IDs\":[9]}\n"
      "{\"Event\":\"SparkListenerJobEnd\",\"Job ID\":7,\"Job Result\":{\"Result\":"
      "\"JobSucceeded\"}}\n",
      "lone");
  EXPECT_EQ(diagnostic(lone, "spark.jobs_without_submission_time"), 1u);
  EXPECT_EQ(lone.events.size(), 0u);
}

}  // namespace

}  // namespace test_import_spark_codecs
