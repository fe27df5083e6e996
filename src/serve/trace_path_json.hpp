// One trace's critical path as JSON: the object `critical-path --format json` writes per
// trace in its "traces" array, and `serve --otlp` writes per completed trace, one line
// each (docs/SERVE.md). One writer for both, so that they stay equal.
#pragma once

#include <fmt/format.h>

#include "requests/critical_path.hpp"

namespace snailtrail::serve {

// {"trace_id": ..., "duration_ns": ..., ..., "path": [{"span_id": ..., ...}, ...]}
void append_trace_path_json(fmt::memory_buffer& out, const requests::PathCollection& all,
                            const requests::PathCollection::TracePaths& trace);

// [{"service": ..., "critical_ns": ..., "share": ..., "spans_on_path": ...}, ...]: the
// "services" of `critical-path --format json` and of serve's /api/critical-path.
void append_services_json(fmt::memory_buffer& out, const requests::PathCollection& all,
                          const std::vector<requests::ServiceTime>& services);

}  // namespace snailtrail::serve
