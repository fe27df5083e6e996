// The slowest randomized tests take fewer random inputs under the sanitizers: the ASan
// and TSan builds run every code path the release build runs, at a tenth of its speed,
// and the CI has 60 minutes for all of them (docs/ARCHITECTURE.md, "Tests"). The release
// build keeps the full count.
#pragma once

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

}  // namespace snailtrail::testing
