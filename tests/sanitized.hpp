// The slowest randomized tests take fewer random inputs under the sanitizers: the ASan
// and TSan builds run every code path the release build runs, at a tenth of its speed,
// and the CI has 60 minutes for all of them (docs/ARCHITECTURE.md, "Tests"). The release
// build keeps the full count.
#pragma once

#include <cstddef>

namespace snailtrail::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// `full` random inputs in the release build, `sanitized` under a sanitizer.
constexpr int random_inputs(int full, int sanitized) {
  return kSanitized ? sanitized : full;
}

// The next cut after `cut` for the tests that cut a text of `size` bytes at every byte:
// every byte in the release build (which checks every cut's result); under a sanitizer,
// every byte within 256 of either end and about every 5th between (steps of 4 to 6, so the
// cuts do not keep one offset within a repeated record).
constexpr std::size_t next_cut(std::size_t cut, std::size_t size) {
  if (!kSanitized || cut < 256 || cut + 256 > size) return cut + 1;
  return cut + 4 + (cut / 256) % 3;
}

}  // namespace snailtrail::testing
