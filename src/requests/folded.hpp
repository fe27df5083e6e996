// CRISP's aggregate views of critical paths (docs/IMPORTERS.md, "Aggregates"): the
// calling-context stacks of the critical path summed over traces, over the traces around
// a latency percentile, and the difference between two percentiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "requests/critical_path.hpp"

namespace snailtrail::requests {

// The traces (indices into all.traces(), in file order) whose duration lies between the
// nearest-rank (P - W)th and (P + W)th percentile durations, both inclusive (W =
// `bucket`, percentile points; the bounds are clamped to [0, 100]). Nearest rank of x
// over N traces sorted by duration: the ceil(x / 100 * N)th, at least the first.
// P = 0 selects all traces.
std::vector<size_t> traces_around(const PathCollection& all, double percentile, double bucket);

// Critical ns per calling context (all.contexts()), summed over `traces`.
std::vector<int64_t> context_weights(const PathCollection& all, const std::vector<size_t>& traces);

// "service:operation;service:operation;..." from the root to `context`.
std::string context_stack(const PathCollection& all, uint32_t context);

// One line of folded_stacks: a stack and its critical µs (rounded to the nearest).
struct FoldedRow {
  std::string stack;
  int64_t us;
};
// The lines of folded_stacks, stacks sorted; `traces`, if given, receives how many traces
// are around the percentile.
std::vector<FoldedRow> folded_rows(const PathCollection& all, double percentile, double bucket,
                                   size_t* traces = nullptr);
// Folded stacks ("stack weight\n", weight in µs rounded to the nearest, stacks sorted),
// of the traces around `percentile` (0: all).
std::string folded_stacks(const PathCollection& all, double percentile, double bucket);

// One line of folded_diff: the mean critical µs per trace around a and around b.
struct FoldedDiffRow {
  std::string stack;
  int64_t a_us, b_us;
};
// The lines of folded_diff, stacks sorted; `traces_a`, `traces_b`, if given, receive how
// many traces are around a and around b.
std::vector<FoldedDiffRow> folded_diff_rows(const PathCollection& all, double a, double b,
                                            double bucket, size_t* traces_a = nullptr,
                                            size_t* traces_b = nullptr);
// "stack a b\n" (Brendan Gregg's difffolded input): a and b the mean critical µs per
// trace of the stack in the traces around percentile `a` and around `b` (rounded).
std::string folded_diff(const PathCollection& all, double a, double b, double bucket);

}  // namespace snailtrail::requests
