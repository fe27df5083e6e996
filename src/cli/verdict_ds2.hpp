// DS2's number in a verdict (docs/OUTPUT.md): when a trace carries rates (operators with
// useful time and records, e.g. from `snailtrail run` or the simulator), an operator
// verdict says how many instances DS2 gives the operator: the most that any policy
// interval of the analysis' window width asks for (as `scale manage --combine max`
// combines decisions), that is the largest "optimal" of the operator that
// `snailtrail scale policy --trace TRACE --interval WIDTH` prints; one interval over the
// whole trace for `--window whole`. Computed by the same code (scale_policy.hpp).
#pragma once

#include <string>

#include "importers/importer.hpp"
#include "output/writers.hpp"

namespace snailtrail::cli {

// Fills ds2_needed/ds2_now of operator verdicts; reads the trace again the first time
// one is asked for (never for other verdicts, nor for stdin). A trace without rates, or
// one DS2 cannot size, leaves the verdict as it is; so does every input without sources
// to size for (profiler captures, Spark, span and kernel traces: docs/PAG.md §verdict).
// Also marks the verdict of a capture or kernel trace as one process (hand-offs, not the
// network).
// `interval_ns` 0: the whole trace as one interval.
VerdictEnricher ds2_enricher(const std::string& trace, const std::string& importer,
                             const importers::ImportOptions& options, int64_t interval_ns);

}  // namespace snailtrail::cli
