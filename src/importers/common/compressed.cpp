// Compressed input (compressed.hpp).
#include "importers/common/compressed.hpp"

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "trace/trace.hpp"

namespace snailtrail::importers {
namespace {

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    char c = s[s.size() - suffix.size() + i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != suffix[i]) return false;
  }
  return true;
}

uint32_t le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // x86-64 and every platform we build on are little-endian
}
uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} << 24 | uint32_t{u[1]} << 16 | uint32_t{u[2]} << 8 | u[3];
}
uint32_t rotl(uint32_t x, int r) {
  return (x << r) | (x >> (32 - r));
}

constexpr char kLz4Magic[8] = {'L', 'Z', '4', 'B', 'l', 'o', 'c', 'k'};
constexpr size_t kLz4Header = 8 + 1 + 4 + 4 + 4;
constexpr uint32_t kLz4Seed = 0x9747b28c;
constexpr char kSnappyMagic[8] = {'\x82', 'S', 'N', 'A', 'P', 'P', 'Y', '\0'};
constexpr size_t kSnappyHeader = 16;
// Spark's blocks are 32 KiB by default; snappy-java never writes a chunk over its block
// size. Anything larger than this is corruption, not data.
constexpr uint32_t kMaxChunk = 64u << 20;

}  // namespace

uint32_t xxh32(const void* data, size_t len, uint32_t seed) {
  constexpr uint32_t P1 = 2654435761u, P2 = 2246822519u, P3 = 3266489917u, P4 = 668265263u,
                     P5 = 374761393u;
  const char* p = static_cast<const char*>(data);
  const char* const end = p + len;
  uint32_t h;
  if (len >= 16) {
    uint32_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
    const char* const limit = end - 16;
    do {
      v1 = rotl(v1 + le32(p) * P2, 13) * P1;
      v2 = rotl(v2 + le32(p + 4) * P2, 13) * P1;
      v3 = rotl(v3 + le32(p + 8) * P2, 13) * P1;
      v4 = rotl(v4 + le32(p + 12) * P2, 13) * P1;
      p += 16;
    } while (p <= limit);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
  } else {
    h = seed + P5;
  }
  h += static_cast<uint32_t>(len);
  for (; p + 4 <= end; p += 4) h = rotl(h + le32(p) * P3, 17) * P4;
  for (; p < end; ++p) h = rotl(h + static_cast<unsigned char>(*p) * P5, 11) * P1;
  h ^= h >> 15;
  h *= P2;
  h ^= h >> 13;
  h *= P3;
  h ^= h >> 16;
  return h;
}

Codec codec_of(std::string_view h) {
  auto starts = [&](std::string_view m) { return h.substr(0, m.size()) == m; };
  if (starts(std::string_view("\x28\xB5\x2F\xFD", 4))) return Codec::zstd;
  if (starts("\x1F\x8B")) return Codec::gzip;
  if (starts(std::string_view(kLz4Magic, 8))) return Codec::lz4_block;
  if (starts(std::string_view(kSnappyMagic, 8))) return Codec::snappy_java;
  if (starts(std::string_view("\x04\x22\x4D\x18", 4))) return Codec::lz4_frame;
  if (starts(std::string_view("\xFF\x06\x00\x00sNaPpY", 10))) return Codec::snappy_framed;
  if (starts("BZh")) return Codec::bzip2;
  if (starts(std::string_view("\xFD"
                              "7zXZ\0",
                              6)))
    return Codec::xz;
  if (starts("ZV") && h.size() >= 3 && (h[2] == 0 || h[2] == 1)) return Codec::lzf;
  return Codec::none;
}

std::string_view codec_name(Codec c) {
  switch (c) {
    case Codec::zstd:
      return "zstd";
    case Codec::gzip:
      return "gzip";
    case Codec::lz4_block:
      return "lz4 (LZ4Block)";
    case Codec::snappy_java:
      return "snappy (snappy-java stream)";
    case Codec::lz4_frame:
      return "lz4 (frame format)";
    case Codec::snappy_framed:
      return "snappy (framing format)";
    case Codec::lzf:
      return "lzf";
    case Codec::bzip2:
      return "bzip2";
    case Codec::xz:
      return "xz";
    default:
      return "uncompressed";
  }
}

bool decodable(Codec c) {
  return c == Codec::zstd || c == Codec::gzip || c == Codec::lz4_block || c == Codec::snappy_java;
}

Codec codec_of_name(std::string_view path) {
  if (ends_with_ci(path, ".inprogress")) path.remove_suffix(11);
  if (ends_with_ci(path, ".zstd") || ends_with_ci(path, ".zst")) return Codec::zstd;
  if (ends_with_ci(path, ".gz")) return Codec::gzip;
  if (ends_with_ci(path, ".lz4")) return Codec::lz4_block;
  if (ends_with_ci(path, ".snappy")) return Codec::snappy_java;
  if (ends_with_ci(path, ".lzf")) return Codec::lzf;
  if (ends_with_ci(path, ".bz2")) return Codec::bzip2;
  if (ends_with_ci(path, ".xz")) return Codec::xz;
  return Codec::none;
}

struct Decoder::Impl {
  Codec codec;
  std::string source;
  uint64_t compressed = 0;  // bytes consumed
  uint64_t decoded = 0;
  uint64_t floor = kDecodedFloor, ratio = kDecodedRatio;
  // zstd
  ZSTD_DCtx* zstd = nullptr;
  size_t zstd_hint = 0;  // 0 = at a frame's end
  // gzip
  z_stream z{};
  bool z_init = false, z_in_member = false;
  // block formats: bytes of an incomplete block
  std::string pending;
  uint64_t pending_at = 0;  // compressed offset of pending[0]
  bool lz4_open = false;    // inside an LZ4Block stream (no empty end block yet)
  bool snappy_header = false;
  std::vector<char> out;

  [[noreturn]] void fail(uint64_t at, const std::string& what) const {
    throw TraceError(source, "byte " + std::to_string(at), what);
  }

  void emit(const char* data, size_t n, uint64_t at, const Sink& sink) {
    decoded += n;
    if (decoded > floor + ratio * compressed)
      fail(at, std::string(codec_name(codec)) + " data decodes to more than " +
                   std::to_string(floor >> 20) + " MiB + " + std::to_string(ratio) +
                   "x its compressed size: refused as a likely decompression bomb "
                   "(decompress it yourself if it is genuine)");
    if (n) sink(std::string_view(data, n));
  }

  void feed_zstd(std::string_view in, const Sink& sink) {
    const uint64_t base = compressed;  // offset of in[0]
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    for (;;) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      const size_t before = ib.pos;
      const size_t ret = ZSTD_decompressStream(zstd, &ob, &ib);
      if (ZSTD_isError(ret))
        fail(base + before, std::string("corrupt zstd data: ") + ZSTD_getErrorName(ret));
      zstd_hint = ret;
      compressed = base + ib.pos;
      emit(out.data(), ob.pos, base + before, sink);
      if (ib.pos == ib.size && ob.pos < ob.size) break;
    }
  }

  void feed_gzip(std::string_view in, const Sink& sink) {
    size_t pos = 0;
    for (;;) {
      if (!z_in_member) {
        if (pos == in.size()) break;
        if (inflateReset2(&z, 15 + 32) != Z_OK) fail(compressed, "zlib: cannot reset");
        z_in_member = true;
      }
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + pos));
      z.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - pos, 1u << 30));
      const uInt given = z.avail_in;
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      const int ret = inflate(&z, Z_NO_FLUSH);
      const size_t used = given - z.avail_in;
      const size_t produced = out.size() - z.avail_out;
      const uint64_t at = compressed;
      if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR)
        fail(compressed + used, std::string("corrupt gzip data: ") + (z.msg ? z.msg : "error"));
      pos += used;
      compressed += used;
      emit(out.data(), produced, at, sink);
      if (ret == Z_STREAM_END) {
        z_in_member = false;
        continue;
      }
      if (produced == out.size()) continue;  // more output may be waiting
      if (pos == in.size() || (used == 0 && produced == 0)) break;
    }
  }

  // Complete LZ4Block blocks in pending; a partial block stays.
  void feed_lz4(std::string_view in, const Sink& sink) {
    pending.append(in);
    size_t pos = 0;
    while (pending.size() - pos >= kLz4Header) {
      const char* h = pending.data() + pos;
      const uint64_t at = pending_at + pos;
      if (std::memcmp(h, kLz4Magic, 8) != 0) fail(at, "lz4: not an LZ4Block header (bad magic)");
      const unsigned token = static_cast<unsigned char>(h[8]);
      const unsigned method = token & 0xF0, level = token & 0x0F;
      const uint32_t clen = le32(h + 9), olen = le32(h + 13), check = le32(h + 17);
      const uint32_t max_block = 1u << (10 + level);
      if ((method != 0x10 && method != 0x20) || olen > max_block || clen > max_block + 4096 ||
          (method == 0x10 && clen != olen) || (olen == 0) != (clen == 0) ||
          (olen == 0 && check != 0))
        fail(at, "lz4: corrupt LZ4Block header (method " + std::to_string(method >> 4) +
                     ", compressed " + std::to_string(clen) + ", decompressed " +
                     std::to_string(olen) + " bytes)");
      if (pending.size() - pos - kLz4Header < clen) break;
      const char* body = h + kLz4Header;
      compressed = at + kLz4Header + clen;
      if (olen == 0) {  // the end of one stream; another may follow
        lz4_open = false;
        pos += kLz4Header;
        continue;
      }
      lz4_open = true;
      if (out.size() < olen) out.resize(olen);
      if (method == 0x10) {
        std::memcpy(out.data(), body, olen);
      } else {
        const int n =
            LZ4_decompress_safe(body, out.data(), static_cast<int>(clen), static_cast<int>(olen));
        if (n < 0 || static_cast<uint32_t>(n) != olen)
          fail(at, "lz4: corrupt block data (" + std::to_string(clen) + " compressed bytes)");
      }
      if ((xxh32(out.data(), olen, kLz4Seed) & 0x0FFFFFFFu) != check)
        fail(at, "lz4: block checksum mismatch");
      pos += kLz4Header + clen;
      emit(out.data(), olen, at, sink);
    }
    pending.erase(0, pos);
    pending_at += pos;
  }

  void feed_snappy(std::string_view in, const Sink& sink) {
    pending.append(in);
    size_t pos = 0;
    for (;;) {
      const size_t left = pending.size() - pos;
      const char* p = pending.data() + pos;
      const uint64_t at = pending_at + pos;
      // A header starts the stream; concatenated streams repeat it (a chunk length never
      // starts with 0x82: lengths are at most kMaxChunk), so wait for 8 bytes to tell.
      if (!snappy_header || std::memcmp(p, kSnappyMagic, std::min<size_t>(left, 8)) == 0) {
        if (left < kSnappyHeader) break;
        if (std::memcmp(p, kSnappyMagic, 8) != 0)
          fail(at, "snappy: not a snappy-java stream header");
        if (be32(p + 12) > 1)
          fail(at, "snappy: stream needs snappy-java format version " +
                       std::to_string(be32(p + 12)) + " (1 is known)");
        snappy_header = true;
        pos += kSnappyHeader;
        compressed = at + kSnappyHeader;
        continue;
      }
      if (left < 4) break;
      const uint32_t clen = be32(p);
      if (clen > kMaxChunk)
        fail(at, "snappy: chunk length " + std::to_string(clen) + " is corrupt");
      if (left - 4 < clen) break;
      size_t olen = 0;
      if (snappy_uncompressed_length(p + 4, clen, &olen) != SNAPPY_OK || olen > kMaxChunk)
        fail(at, "snappy: corrupt chunk header");
      if (out.size() < olen) out.resize(olen);
      size_t got = olen;
      if (snappy_uncompress(p + 4, clen, out.data(), &got) != SNAPPY_OK || got != olen)
        fail(at, "snappy: corrupt chunk data");
      pos += 4 + clen;
      compressed = at + 4 + clen;
      emit(out.data(), olen, at, sink);
    }
    pending.erase(0, pos);
    pending_at += pos;
  }
};

Decoder::Decoder(Codec codec, std::string source, uint64_t floor, uint64_t ratio)
    : impl_(std::make_unique<Impl>()) {
  if (!decodable(codec))
    throw std::invalid_argument("cannot decode " + std::string(codec_name(codec)));
  Impl& d = *impl_;
  d.floor = floor;
  d.ratio = ratio;
  d.codec = codec;
  d.source = std::move(source);
  if (codec == Codec::zstd) {
    d.zstd = ZSTD_createDCtx();
    if (!d.zstd) throw std::bad_alloc();
    d.out.resize(ZSTD_DStreamOutSize());
  } else if (codec == Codec::gzip) {
    if (inflateInit2(&d.z, 15 + 32) != Z_OK) throw std::bad_alloc();
    d.z_init = true;
    d.out.resize(1 << 17);
  } else {
    d.out.resize(1 << 16);
  }
}

Decoder::~Decoder() {
  if (impl_->zstd) ZSTD_freeDCtx(impl_->zstd);
  if (impl_->z_init) inflateEnd(&impl_->z);
}

void Decoder::feed(std::string_view in, const Sink& out) {
  switch (impl_->codec) {
    case Codec::zstd:
      return impl_->feed_zstd(in, out);
    case Codec::gzip:
      return impl_->feed_gzip(in, out);
    case Codec::lz4_block:
      return impl_->feed_lz4(in, out);
    default:
      return impl_->feed_snappy(in, out);
  }
}

bool Decoder::cut() const {
  const Impl& d = *impl_;
  switch (d.codec) {
    case Codec::zstd:
      return d.zstd_hint != 0;
    case Codec::gzip:
      return d.z_in_member;
    case Codec::lz4_block:
      return !d.pending.empty() || d.lz4_open;
    default:
      return !d.pending.empty();
  }
}

uint64_t Decoder::compressed_bytes() const {
  return impl_->compressed;
}
uint64_t Decoder::decoded_bytes() const {
  return impl_->decoded;
}
Codec Decoder::codec() const {
  return impl_->codec;
}

std::string decode_prefix(Codec codec, std::string_view head, size_t max_out) {
  std::string out;
  if (!decodable(codec)) return out;
  struct Full {};
  try {
    Decoder d(codec, "sniff");
    // In pieces, so a corrupt tail does not hide the good start.
    for (size_t at = 0; at < head.size(); at += 4096)
      d.feed(head.substr(at, 4096), [&](std::string_view s) {
        out.append(s.substr(0, max_out - out.size()));
        if (out.size() >= max_out) throw Full{};
      });
  } catch (const Full&) {
  } catch (const std::exception&) {
  }
  return out;
}

}  // namespace snailtrail::importers
