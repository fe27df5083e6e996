// Warnings on stderr about what an importer repaired that a user must not miss.
#pragma once

#include <fmt/format.h>

#include <cstdio>

#include "importers/importer.hpp"
#include "trace/trace.hpp"

namespace snailtrail::cli {

// A file cut off mid-record (a job still writing its log) is read up to its last complete
// record; the count is in the diagnostics, under a kind its importer declares cut input
// (trace/diagnostic_kind.hpp), and this says so where people look first.
inline void warn_if_cut(const Trace& trace) {
  for (const auto& [kind, n] : trace.import_diagnostics)
    if (n > 0 && importers::is_cut_input(kind))
      fmt::print(stderr,
                 "snailtrail: warning: {}: the input ends inside a record (still being "
                 "written?); read up to the last complete record ({})\n",
                 trace.source, kind);
}

}  // namespace snailtrail::cli
