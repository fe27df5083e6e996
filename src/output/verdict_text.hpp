// The verdict in words (private to src/output): the table prints the sentence, the JSON
// writers carry it in the verdict object (output/verdict_writer.cpp).
#pragma once

#include <string>
#include <vector>

#include "output/writers.hpp"
#include "summary/verdict.hpp"

namespace snailtrail {

// The verdict's sentence: one per verdict kind, filled from the verdict's fields.
std::string verdict_text(const Verdict& v, const Names& names);

namespace output_detail {

// What each worker stands for (trace/wait_cause.hpp): empty when no worker is a kernel
// trace's pseudo-worker.
std::vector<WaitCause> wait_causes(const Names& names);

// The run's verdict over its windows, with what the caller adds (DS2's parallelism); a
// kernel trace's waits named by their cause (summary/verdict.hpp name_the_wait).
RunVerdict run_verdict(const Aggregate& agg, const Names& names, const VerdictEnricher& enrich);

// The run verdict's sentence, followed by the tally of what its windows find.
std::string run_verdict_text(const RunVerdict& r, const Names& names);

}  // namespace output_detail
}  // namespace snailtrail
