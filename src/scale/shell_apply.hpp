// `scale manage --apply COMMAND` (docs/AUTOSCALING.md §4): every decision runs COMMAND
// through /bin/sh with the configuration as arguments (name=N ...) and as JSON on stdin
// ({"time_s": .., "parallelism": {..}, "total_workers": N}); a non-zero exit is reported
// on stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scale/topology.hpp"

namespace snailtrail::scale {

void apply_command(const std::string& cmd, const Topology& t, double time_s,
                   const std::vector<uint32_t>& parallelism, std::optional<uint32_t> total);

}  // namespace snailtrail::scale
