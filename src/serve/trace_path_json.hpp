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

}  // namespace snailtrail::serve
