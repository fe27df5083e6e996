// Warnings on stderr about what an importer repaired that a user must not miss.
#pragma once

#include <fmt/format.h>

#include <cstdio>

#include "importers/importer.hpp"
#include "importers/otel/otel_importer.hpp"
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

// The span traces an importer skipped (a bad trace in a file of many), the first 20 by
// name and byte, then how many more.
inline void warn_skipped_traces(const importers::SpanStream& stream) {
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < stream.skipped.size() && i < kShown; ++i)
    fmt::print(stderr, "snailtrail: warning: trace {} at byte {} skipped: {}\n",
               stream.skipped[i].where, stream.skipped[i].byte, stream.skipped[i].error);
  if (stream.skipped.size() > kShown)
    fmt::print(stderr, "snailtrail: warning: {} more traces skipped\n",
               stream.skipped.size() - kShown);
}

}  // namespace snailtrail::cli
