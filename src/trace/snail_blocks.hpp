// The block layout of .snail files (docs/FORMATS.md) shared by the reader (snail.cpp) and
// the writer (snail_write.cpp): the 16-byte block header and the metadata entry header.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/event.hpp"
#include "trace/little_endian.hpp"

namespace snailtrail::snail_blocks {

static_assert(std::endian::native == std::endian::little,
              ".snail records are read with memcpy; a big-endian port needs byte swapping");
static_assert(sizeof(Event) == 40 && offsetof(Event, ts) == 0 && offsetof(Event, correlator) == 8 &&
                  offsetof(Event, worker) == 16 && offsetof(Event, remote) == 20 &&
                  offsetof(Event, op) == 24 && offsetof(Event, records) == 28 &&
                  offsetof(Event, activity) == 32 && offsetof(Event, kind) == 33 &&
                  offsetof(Event, flags) == 34 && offsetof(Event, reserved) == 36,
              "Event layout must match the 40-byte .snail record");

inline constexpr size_t kMetaEntryHeader = 12;  // kind (1), padding (3), id (4), length (4)

struct BlockHeader {
  uint32_t kind, codec, count, stored_size;
};

inline BlockHeader load_block_header(const uint8_t* p) {
  return {le::load_u32(p), le::load_u32(p + 4), le::load_u32(p + 8), le::load_u32(p + 12)};
}

inline void append_block_header(std::string& out, uint32_t kind, uint32_t codec, uint32_t count,
                                uint32_t stored_size) {
  le::store_u32(out, kind);
  le::store_u32(out, codec);
  le::store_u32(out, count);
  le::store_u32(out, stored_size);
}

}  // namespace snailtrail::snail_blocks
