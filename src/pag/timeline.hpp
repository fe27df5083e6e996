// Building the PAG of a whole trace (pag.hpp): each worker's timeline with gap filling
// (timeline_builder.hpp), then its messages matched (message_join.hpp). docs/PAG.md.
#pragma once

#include "pag/pag.hpp"
#include "trace/trace.hpp"

namespace snailtrail {

// Builds the PAG of a whole trace. Throws TraceError (naming the event's location)
// when a worker's events go back in time.
Pag build_pag(const Trace& trace, const PagOptions& options = {});

}  // namespace snailtrail
