// `scale policy`'s pieces that other commands reuse (scale_command.cpp): the options,
// a trace as an observation source, and DS2's decision per interval. `analyze` sizes the
// operator of its verdict with them (verdict_ds2.hpp), so both print the same number.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/scale_args.hpp"
#include "cli/streamed_input.hpp"
#include "scale/control_loop.hpp"
#include "scale/policy.hpp"
#include "scale/scale_output.hpp"
#include "scale/sources.hpp"

namespace snailtrail::cli {

// The policy's options from its command line. Throws std::invalid_argument.
scale::PolicyOptions policy_options(const PolicyArgs& a);

// A trace (read block by block for .snail and JSONL, whole otherwise) as intervals of
// `interval_ns` from its first event; `events` keeps the names the source refers to.
std::unique_ptr<scale::ObservationSource> trace_source(const std::string& path,
                                                       const std::string& importer,
                                                       const importers::ImportOptions& options,
                                                       int64_t interval_ns,
                                                       std::unique_ptr<EventSource>& events);

// DS2's decision for every interval of `source` (what `scale policy` prints);
// `per_instance` are --source-rates (empty: none). `stop`, if given, ends after the
// interval it returns true for.
std::vector<scale::PolicyEpoch> policy_epochs(
    scale::ObservationSource& source, const scale::Topology& t,
    const std::vector<double>& per_instance, const scale::PolicyOptions& po,
    const std::function<bool(const scale::SourceInterval&)>& stop = {});

}  // namespace snailtrail::cli
