// Little-endian fields of the binary formats (.snail blocks, the block index, profile
// entries; docs/FORMATS.md): one place that reads and writes them.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace snailtrail::le {

static_assert(std::endian::native == std::endian::little,
              "binary fields are copied as they are; a big-endian port needs byte swapping");

// Appends the bytes of `v` to `out`.
template <typename T>
void put(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

// Reads a T from the (possibly unaligned) bytes at `p`.
template <typename T>
T get(const void* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

inline uint32_t load_u32(const void* p) {
  return get<uint32_t>(p);
}
inline void store_u32(std::string& out, uint32_t v) {
  put<uint32_t>(out, v);
}

}  // namespace snailtrail::le
