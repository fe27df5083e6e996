// Incremental decoding of live trace streams (src/trace/stream_decoder.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "bench/synthetic.hpp"
#include "trace/stream_decoder.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::test_stream_decoder {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Trace small_trace() {
  bench::SyntheticOptions o;
  o.duration_ns = 400'000'000;
  o.workers = 6;
  Trace t = bench::make_synthetic_trace(o);
  EXPECT_GT(t.events.size(), 1000u);
  return t;
}

// Feeds `data` in pieces of random sizes (1 .. max_piece bytes).
Trace decode_in_pieces(const std::string& data, size_t max_piece, uint64_t seed, StreamDecoder& d) {
  std::mt19937_64 rng(seed);
  Trace out;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t n = 1 + rng() % max_piece;
    n = std::min(n, data.size() - pos);
    d.feed(bytes_of(data.substr(pos, n)), out);
    pos += n;
  }
  d.finish(out);
  return out;
}

void expect_same_events(const Trace& got, const Trace& want) {
  ASSERT_EQ(got.events.size(), want.events.size());
  for (size_t i = 0; i < got.events.size(); ++i) {
    const Event &a = got.events[i], &b = want.events[i];
    ASSERT_TRUE(a.ts == b.ts && a.worker == b.worker && a.activity == b.activity &&
                a.kind == b.kind && a.flags == b.flags && a.correlator == b.correlator &&
                a.remote == b.remote && a.op == b.op && a.records == b.records)
        << "event " << i;
  }
  EXPECT_EQ(got.worker_names, want.worker_names);
  EXPECT_EQ(got.operator_names, want.operator_names);
}

TEST(StreamDecoder, JsonlInAnyPiecesEqualsTheFile) {
  const Trace want = small_trace();
  const std::string text = to_jsonl(want);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}}) {
    StreamDecoder d("tcp");
    Trace got = decode_in_pieces(text, piece, piece, d);
    EXPECT_EQ(d.format(), StreamDecoder::Format::jsonl);
    expect_same_events(got, want);
    EXPECT_EQ(d.stats().bad_lines, 0u);
    EXPECT_EQ(d.stats().truncated, 0u);
  }
}

TEST(StreamDecoder, SnailInAnyPiecesEqualsTheFile) {
  const Trace want = small_trace();
  for (bool compress : {false, true}) {
    SnailWriteOptions o;
    o.compress = compress;
    o.events_per_block = 500;
    const std::string image = to_snail(want, o);
    for (size_t piece : {size_t{1}, size_t{13}, size_t{100000}}) {
      StreamDecoder d("tcp");
      Trace got = decode_in_pieces(image, piece, piece + compress, d);
      EXPECT_EQ(d.format(), StreamDecoder::Format::snail);
      EXPECT_FALSE(d.broken()) << d.broken_reason();
      expect_same_events(got, want);
    }
  }
}

TEST(StreamDecoder, GarbageLinesAreSkippedAndCounted) {
  const std::string text =
      "{\"ts\":1,\"worker\":0,\"activity\":\"processing\",\"event\":\"start\"}\n"
      "this is not json\n"
      "{\"ts\":2,\"worker\":0,\"activity\":\"nonsense\",\"event\":\"end\"}\n"
      "\x01\x02\xff\n"
      "{\"ts\":3,\"worker\":0,\"activity\":\"processing\",\"event\":\"end\"}\n";
  StreamDecoder d("tcp:1");
  Trace got = decode_in_pieces(text, 5, 1, d);
  ASSERT_EQ(got.events.size(), 2u);
  EXPECT_EQ(got.events[1].ts, 3);
  EXPECT_EQ(d.stats().bad_lines, 3u);
  EXPECT_NE(d.stats().first_error.find("tcp:1: line 2"), std::string::npos)
      << d.stats().first_error;
}

TEST(StreamDecoder, DisconnectMidLineOrMidBlockKeepsEverythingComplete) {
  const Trace want = small_trace();
  const std::string text = to_jsonl(want);
  {
    // Cut inside the last line.
    StreamDecoder d("tcp");
    Trace got;
    d.feed(bytes_of(text.substr(0, text.size() - 10)), got);
    d.finish(got);
    EXPECT_EQ(got.events.size(), want.events.size() - 1);
    EXPECT_EQ(d.stats().truncated, 1u);
    EXPECT_EQ(d.stats().bad_lines, 0u);
  }
  SnailWriteOptions o;
  o.events_per_block = 100;
  o.version = 1;  // as `send` writes streams: no index block after the events
  const std::string image = to_snail(want, o);
  {
    StreamDecoder d("tcp");
    Trace got;
    d.feed(bytes_of(image.substr(0, image.size() - 1)), got);
    d.finish(got);
    // All blocks but the last, which lacks one byte.
    const size_t last_block = want.events.size() % 100 ? want.events.size() % 100 : 100;
    EXPECT_EQ(got.events.size(), want.events.size() - last_block);
    EXPECT_EQ(d.stats().truncated, 1u);
  }
}

TEST(StreamDecoder, CorruptBlockIsSkippedBrokenFramingStops) {
  const Trace want = small_trace();
  SnailWriteOptions o;
  o.events_per_block = 100;
  std::string image = to_snail(want, o);
  // Find the first event block (after the header and the metadata block) and corrupt
  // one record's activity inside it.
  size_t off = 16;
  uint32_t kind, stored;
  std::memcpy(&kind, image.data() + off, 4);
  std::memcpy(&stored, image.data() + off + 12, 4);
  if (kind == 2) off += 16 + stored;
  image[off + 16 + 40 * 3 + 32] = static_cast<char>(99);
  {
    StreamDecoder d("tcp");
    Trace got = decode_in_pieces(image, 64, 3, d);
    EXPECT_FALSE(d.broken());
    EXPECT_EQ(d.stats().bad_blocks, 1u);
    EXPECT_EQ(got.events.size(), want.events.size() - 100);
  }
  // A block header with an unknown kind: the framing is lost, the stream stops.
  image[off] = 7;
  StreamDecoder d("tcp");
  Trace got = decode_in_pieces(image, 64, 4, d);
  EXPECT_TRUE(d.broken());
  EXPECT_NE(d.broken_reason().find("byte " + std::to_string(off)), std::string::npos)
      << d.broken_reason();
}

TEST(StreamDecoder, RandomBytesNeverThrow) {
  std::mt19937_64 rng(5);
  const std::string image = to_snail(small_trace());
  const std::string text = to_jsonl(small_trace());
  for (int round = 0; round < 200; ++round) {
    std::string data = round % 2 ? image : text;
    for (int k = 0; k < 5; ++k) data[rng() % data.size()] = static_cast<char>(rng());
    StreamDecoder d("fuzz");
    EXPECT_NO_THROW(decode_in_pieces(data, 1 + rng() % 5000, rng(), d));
  }
}

}  // namespace
}  // namespace snailtrail::test_stream_decoder
