// Hints (docs/OUTPUT.md): where a result says little, what to try next. Shown beside the
// verdict. Decided from the summaries and diagnostics by fixed rules; each hint has a
// stable kind for machines and a sentence for people.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace snailtrail {

struct Groups;
struct Diagnostics;

enum class HintKind : uint8_t {
  map_unknown,         // much time is `unknown`: name it (--map) or instrument it
  unmatched_messages,  // messages with one end only: no path crosses them
  missing_causes,      // nodes with no cause in the trace (Property 1)
  idle,                // long intervals where every worker waits (Property 2)
  no_cp_window,        // no CP at all: try the whole trace as one window
};

struct Hint {
  HintKind kind;
  std::string text;
};

// Thresholds: `unknown` at least this share of worker time or of the critical paths.
inline constexpr double kHintUnknownShare = 0.2;
// Idle intervals at least this share of the analyzed time.
inline constexpr double kHintIdleShare = 0.5;

// `window_ns`: the analyzed time (for the idle share); `windows`: how many windows it
// was cut into (the no-CP hint suggests `--window whole` only when there were several).
std::vector<Hint> decide_hints(const Groups& cp, const Diagnostics& d, bool has_paths,
                               int64_t window_ns, uint64_t windows);

const char* name_of(HintKind kind);

}  // namespace snailtrail
