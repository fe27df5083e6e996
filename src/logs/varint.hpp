// Little-endian base-128 numbers (7 bits a byte, the high bit set on all but the last),
// for the logs stage's own compact stores: the identifier arena (OffsetArena), the packed
// record headers (PackedRecords) and the miner's template blocks (Drain). They read only
// bytes this process wrote, so nothing here checks bounds; parsers of outside bytes
// (OTLP, msgpack) keep their checked readers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace snailtrail::logs {

constexpr size_t kMaxVarintBytes = 10;  // a 64-bit value

inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// Writes v at p and returns the byte after it.
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  for (; v >= 0x80; v >>= 7) *p++ = static_cast<uint8_t>(v | 0x80);
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Reads a value written by put_varint and moves p past it.
inline uint64_t get_varint(const uint8_t*& p) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7Fu} << shift;
    if (b < 0x80) return v;
  }
}

}  // namespace snailtrail::logs
