// A window's summary as bytes, for `mpirun analyze`: the ranks that analyze windows send
// their summaries with the rendered text, so that rank 0 aggregates every window (the
// table's totals, the whole run's verdict) exactly as one process does. Both ends are the
// same build on machines of one byte order: fields are copied as they are in memory.
#pragma once

#include <string>
#include <string_view>

#include "summary/summary.hpp"

namespace snailtrail {

void append_summary(std::string& out, const WindowSummary& s);

// Reads a summary append_summary wrote at `pos` of `in` (advancing `pos`). Throws
// std::runtime_error if `in` ends inside it.
void read_summary(std::string_view in, size_t& pos, WindowSummary& s);

}  // namespace snailtrail
