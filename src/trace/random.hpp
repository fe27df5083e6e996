// splitmix64 (Steele, Lea & Flood; Vigna's constants): a tiny, well-mixed generator whose
// output is the same with every compiler and standard library.
#pragma once

#include <cstdint>

namespace snailtrail {

// One step: advances `state` and returns a well-mixed 64-bit value.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A uniform double in [0, 1) from the top 53 bits of the next value.
inline double splitmix64_uniform(uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

}  // namespace snailtrail
