// An SVG plot of a controlled simulation (docs/AUTOSCALING.md): the sources' achieved
// and target rates over time above each operator's parallelism, decisions marked.
#pragma once

#include <string>

#include "scale/simulation.hpp"

namespace snailtrail::scale {

std::string timeline_svg(const ControlledRun& run, const std::string& title);

}  // namespace snailtrail::scale
