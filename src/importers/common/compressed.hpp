// Compressed input, decoded as it arrives (docs/IMPORTERS.md, "Compressed input"): the
// codecs Spark writes event logs with, each in the exact framing Spark's writer uses:
//   zstd    zstd frames (zstd-jni's ZstdOutputStream), any number, concatenated
//   gzip    gzip members (RFC 1952), concatenated; zlib streams too
//   lz4     lz4-java's LZ4BlockOutputStream: blocks of "LZ4Block" magic, token, compressed
//           and decompressed lengths (LE), XXH32 checksum (seed 0x9747b28c, top 4 bits
//           cleared) and the LZ4 block; an empty block ends a stream, streams may follow
//   snappy  snappy-java's SnappyOutputStream: "\x82SNAPPY\0" header with two big-endian
//           versions, then chunks of a big-endian length and a raw snappy block
// Every decoder enforces a decompressed-size cap (kDecodedCap) so a decompression bomb
// fails with a clear error instead of exhausting memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace snailtrail::importers {

enum class Codec : uint8_t {
  none,
  zstd,
  gzip,
  lz4_block,    // lz4-java LZ4BlockOutputStream (Spark's lz4)
  snappy_java,  // snappy-java SnappyOutputStream (Spark's snappy)
  // Recognised to explain, not decoded:
  lz4_frame,
  snappy_framed,
  lzf,
  bzip2,
  xz,
};

// The codec whose magic the bytes start with (none if unknown or too few bytes).
Codec codec_of(std::string_view head);
// Human name: "zstd", "gzip", "lz4 (LZ4Block)", ...
std::string_view codec_name(Codec c);
// Whether Decoder reads it.
bool decodable(Codec c);
// The codec a file name's extension names (Spark: app-1.lz4, events_1_app-1.zstd,
// ....snappy.inprogress), none if none.
Codec codec_of_name(std::string_view path);

// The cap: decoded bytes may not exceed kDecodedFloor + kDecodedRatio x the compressed
// bytes read so far (real Spark logs compress 5-30x; a bomb compresses 1000x and more).
inline constexpr uint64_t kDecodedFloor = uint64_t{256} << 20;  // 256 MiB
inline constexpr uint64_t kDecodedRatio = 200;

// XXH32 (the checksum lz4-java's block stream uses).
uint32_t xxh32(const void* data, size_t len, uint32_t seed);

class Decoder {
 public:
  using Sink = std::function<void(std::string_view)>;
  // Throws std::invalid_argument if the codec is not decodable. The cap's parameters are
  // for tests.
  Decoder(Codec codec, std::string source, uint64_t floor = kDecodedFloor,
          uint64_t ratio = kDecodedRatio);
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Decodes the next compressed bytes, handing decoded pieces to `out`. Throws TraceError
  // (source, "byte N", what) on corrupt data or when the cap is exceeded; N is the offset
  // in the compressed input of the frame, block or chunk at fault.
  void feed(std::string_view in, const Sink& out);
  // True if the input so far ends inside a frame, block, chunk or member (a cut file, or
  // one still being written).
  bool cut() const;
  uint64_t compressed_bytes() const;
  uint64_t decoded_bytes() const;
  Codec codec() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Best effort for sniffing: the decoded start of a compressed prefix (at most max_out
// bytes), without errors (what decodes before a problem or the prefix's end).
std::string decode_prefix(Codec codec, std::string_view head, size_t max_out);

}  // namespace snailtrail::importers
