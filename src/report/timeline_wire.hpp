// A window's timeline (report.hpp) as bytes, for `mpirun ... report` (ranks send their
// windows' timelines to rank 0, docs/PERFORMANCE.md "Across processes"). The summary is
// not included: it travels in summary/summary_wire.hpp's form beside it.
#pragma once

#include <string>
#include <string_view>

#include "report/report.hpp"

namespace snailtrail::report {

void append_timeline(std::string& out, const Timeline& t);
// Reads what append_timeline wrote (all of `in`) into `t` (its summary untouched); throws
// std::runtime_error on bytes that are cut or malformed.
void read_timeline(std::string_view in, Timeline& t);

}  // namespace snailtrail::report
