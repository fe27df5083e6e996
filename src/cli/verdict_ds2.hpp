// DS2's number in a verdict (docs/OUTPUT.md): when a trace carries rates (operators with
// useful time and records, e.g. from `snailtrail run` or the simulator), an operator
// verdict says how many instances DS2 gives the operator. The decision is the one
// `snailtrail scale policy --trace TRACE --interval D` prints for D at least the trace's
// span (one policy interval over the whole trace), computed by the same code
// (scale_policy.hpp).
#pragma once

#include <string>

#include "output/writers.hpp"

namespace snailtrail::cli {

// Fills ds2_needed/ds2_now of operator verdicts; reads the trace again the first time
// one is asked for (never for other verdicts, nor for stdin). A trace without rates, or
// one DS2 cannot size, leaves the verdict as it is.
VerdictEnricher ds2_enricher(const std::string& trace, const std::string& importer);

}  // namespace snailtrail::cli
