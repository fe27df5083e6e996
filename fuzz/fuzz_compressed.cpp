// libFuzzer target for the compressed-input decoders (importers/common/compressed.hpp)
// and the Spark importer reading compressed logs. The first byte picks the codec (zstd,
// gzip, lz4 LZ4Block, snappy-java) and the piece sizes; the rest is the payload.
//  1. The payload decoded as that codec: TraceError is the only acceptable failure, and
//     decoding it in pieces gives what decoding it whole gives.
//  2. The payload written in the codec's Spark framing (tests/codec_util.hpp) decodes back
//     to the payload.
//  3. As a Spark log, the framed payload imports exactly as the plain payload does (same
//     events, or an error both ways).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "../tests/codec_util.hpp"
#include "importers/common/compressed.hpp"
#include "importers/spark/spark_importer.hpp"
#include "trace/trace.hpp"
#include "trace/trace_io.hpp"

namespace {

using namespace snailtrail;
using importers::Codec;

struct Decoded {
  bool ok = false;
  bool bomb = false;
  bool cut = false;
  std::string out;
};

Decoded decode(Codec codec, std::string_view in, const uint8_t* sizes, size_t n_sizes,
               bool pieces) {
  Decoded d;
  importers::Decoder dec(codec, "fuzz", 16u << 20, 1000);
  try {
    for (size_t at = 0, k = 0; at < in.size(); ++k) {
      const size_t piece =
          pieces ? std::min<size_t>(in.size() - at, 1 + sizes[k % n_sizes] % 61) : in.size();
      dec.feed(in.substr(at, piece), [&](std::string_view s) { d.out += s; });
      at += piece;
    }
    d.ok = true;
    d.cut = dec.cut();
  } catch (const TraceError& e) {
    d.bomb = std::string_view(e.what()).find("decompression bomb") != std::string_view::npos;
  }
  return d;
}

std::string frame(Codec codec, std::string_view text) {
  namespace c = snailtrail::testing::codecs;
  switch (codec) {
    case Codec::zstd:
      return c::zstd_frames(text, 300).bytes;
    case Codec::gzip:
      return c::gzip_members(text, 300).bytes;
    case Codec::lz4_block:
      return c::lz4_block_stream(text, 1024).bytes;
    default:
      return c::snappy_java_stream(text, 700).bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  constexpr Codec kCodecs[4] = {Codec::zstd, Codec::gzip, Codec::lz4_block, Codec::snappy_java};
  const Codec codec = kCodecs[data[0] & 3];
  const std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);

  // 1. Arbitrary bytes as compressed input: whole and in pieces agree.
  const Decoded whole = decode(codec, payload, data, size, false);
  const Decoded parts = decode(codec, payload, data, size, true);
  if (!whole.bomb && !parts.bomb) {
    if (whole.ok != parts.ok) std::abort();
    if (whole.ok && (whole.out != parts.out || whole.cut != parts.cut)) std::abort();
  }

  // 2. The framing round trip.
  const std::string framed = frame(codec, payload);
  const Decoded back = decode(codec, framed, data, size, true);
  if (!back.ok || back.cut || back.out != payload) std::abort();

  // 3. The Spark importer on the framed log equals it on the plain log (a payload that is
  // itself compressed would be decoded once more by the plain import: skipped).
  if (importers::codec_of(payload) != Codec::none || payload.empty()) return 0;
  std::string plain_jsonl, framed_jsonl;
  bool plain_ok = true, framed_ok = true;
  try {
    plain_jsonl = to_jsonl(importers::spark::parse_event_log(payload, "plain"));
  } catch (const TraceError&) {
    plain_ok = false;
  }
  try {
    framed_jsonl = to_jsonl(importers::spark::parse_event_log(framed, "framed"));
  } catch (const TraceError&) {
    framed_ok = false;
  }
  if (plain_ok != framed_ok || plain_jsonl != framed_jsonl) std::abort();
  return 0;
}
