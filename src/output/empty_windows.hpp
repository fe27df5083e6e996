// The record that stands for a run of windows without events in `analyze --format jsonl`
// and `serve` (docs/OUTPUT.md): one line however long the gap, instead of one per window.
#pragma once

#include <fmt/format.h>

#include <iterator>

#include "summary/summary.hpp"

namespace snailtrail {

// {"empty_windows":{"first_index":I,"count":N,"start_ns":S,"end_ns":E}} (no newline).
inline void write_empty_windows_json(fmt::memory_buffer& out, const WindowSummary& w) {
  fmt::format_to(std::back_inserter(out),
                 "{{\"empty_windows\":{{\"first_index\":{},\"count\":{},\"start_ns\":{},"
                 "\"end_ns\":{}}}}}",
                 w.index, w.window.empty_run, w.window.start, w.window.end);
}

}  // namespace snailtrail
