// The verdict in words (private to src/output): the table prints the sentence, the JSON
// writers carry it in the verdict object (output/verdict_writer.cpp).
#pragma once

#include <string>

#include "output/writers.hpp"
#include "summary/verdict.hpp"

namespace snailtrail {

// The verdict's sentence: one per verdict kind, filled from the verdict's fields.
std::string verdict_text(const Verdict& v, const Names& names);

namespace output_detail {

// The run's verdict over its windows, with what the caller adds (DS2's parallelism).
RunVerdict run_verdict(const Aggregate& agg, const VerdictEnricher& enrich);

// The run verdict's sentence, followed by the tally of what its windows find.
std::string run_verdict_text(const RunVerdict& r, const Names& names);

}  // namespace output_detail
}  // namespace snailtrail
