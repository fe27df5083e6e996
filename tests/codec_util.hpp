// Writers of the compressed framings Spark uses for event logs, from their specs, for
// tests and fuzzers (the readers are src/importers/common/compressed.hpp):
// lz4-java's LZ4BlockOutputStream, snappy-java's SnappyOutputStream, zstd frames, gzip.
#pragma once

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "importers/common/compressed.hpp"

namespace snailtrail::testing::codecs {

inline void le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
inline void be32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A compressed stream and where each block (or frame, member) starts in it.
struct Encoded {
  std::string bytes;
  std::vector<size_t> blocks;
};

// lz4-java LZ4BlockOutputStream(out, block_size): per block "LZ4Block", token = method
// (0x10 raw, 0x20 lz4) | (log2(block_size) - 10), compressed and original lengths (LE),
// XXH32(seed 0x9747b28c) & 0x0FFFFFFF (LE), then the data; raw when LZ4 does not shrink
// it; close() writes an empty raw block.
inline Encoded lz4_block_stream(std::string_view text, uint32_t block_size = 32 * 1024) {
  int level = 0;
  while ((1u << (10 + level)) < block_size) ++level;
  Encoded e;
  auto header = [&](unsigned method, uint32_t clen, uint32_t olen, uint32_t check) {
    e.bytes += "LZ4Block";
    e.bytes += static_cast<char>(method | static_cast<unsigned>(level));
    le32(e.bytes, clen);
    le32(e.bytes, olen);
    le32(e.bytes, check);
  };
  for (size_t at = 0; at < text.size(); at += block_size) {
    const std::string_view block = text.substr(at, block_size);
    std::string c(static_cast<size_t>(LZ4_compressBound(static_cast<int>(block.size()))), '\0');
    c.resize(static_cast<size_t>(LZ4_compress_default(
        block.data(), c.data(), static_cast<int>(block.size()), static_cast<int>(c.size()))));
    const uint32_t check = importers::xxh32(block.data(), block.size(), 0x9747b28c) & 0x0FFFFFFF;
    e.blocks.push_back(e.bytes.size());
    const auto olen = static_cast<uint32_t>(block.size());
    if (c.size() >= block.size()) {
      header(0x10, olen, olen, check);
      e.bytes += block;
    } else {
      header(0x20, static_cast<uint32_t>(c.size()), olen, check);
      e.bytes += c;
    }
  }
  header(0x10, 0, 0, 0);
  return e;
}

// snappy-java SnappyOutputStream(out, block_size): "\x82SNAPPY\0", version 1 and minimum
// compatible version 1 (big-endian ints), then per block a big-endian length and the raw
// snappy block.
inline Encoded snappy_java_stream(std::string_view text, size_t block_size = 32 * 1024) {
  Encoded e;
  e.bytes.append("\x82SNAPPY\0", 8);
  be32(e.bytes, 1);
  be32(e.bytes, 1);
  for (size_t at = 0; at < text.size(); at += block_size) {
    const std::string_view block = text.substr(at, block_size);
    size_t n = snappy_max_compressed_length(block.size());
    std::string c(n, '\0');
    if (snappy_compress(block.data(), block.size(), c.data(), &n) != SNAPPY_OK)
      throw std::runtime_error("snappy_compress");
    c.resize(n);
    e.blocks.push_back(e.bytes.size());
    be32(e.bytes, static_cast<uint32_t>(n));
    e.bytes += c;
  }
  return e;
}

// zstd-jni writes one frame per stream; Spark's rolling writer a frame per part.
inline Encoded zstd_frames(std::string_view text, size_t frame_size = 1 << 20) {
  Encoded e;
  for (size_t at = 0; at < text.size(); at += frame_size) {
    const std::string_view part = text.substr(at, frame_size);
    std::string z(ZSTD_compressBound(part.size()), '\0');
    z.resize(ZSTD_compress(z.data(), z.size(), part.data(), part.size(), 3));
    e.blocks.push_back(e.bytes.size());
    e.bytes += z;
  }
  return e;
}

// gzip members (RFC 1952), one per member_size bytes (concatenated members are one file).
inline Encoded gzip_members(std::string_view text, size_t member_size = 1 << 20) {
  Encoded e;
  for (size_t at = 0; at < text.size(); at += member_size) {
    const std::string_view part = text.substr(at, member_size);
    z_stream z{};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error("deflateInit2");
    std::string out(deflateBound(&z, static_cast<uLong>(part.size())) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(part.data()));
    z.avail_in = static_cast<uInt>(part.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
    out.resize(z.total_out);
    deflateEnd(&z);
    e.blocks.push_back(e.bytes.size());
    e.bytes += out;
  }
  return e;
}

}  // namespace snailtrail::testing::codecs
