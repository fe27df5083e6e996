// The profile of a `snailtrail run --profile` inside its trace: .snail blocks of kind 3
// (docs/FORMATS.md, "Profile payload") holding frames, stack samples with worker, time,
// activity and weight, and the sampling period.
#pragma once

#include "flame/samples.hpp"
#include "trace/trace.hpp"

namespace snailtrail::flame {

// Decodes the profile blocks of `trace` into `set` (and the trace's operator names).
// Throws TraceError ("SOURCE: byte N: ...", N the offset of the entry) when a block is
// malformed, and std::invalid_argument when the trace has no profile.
void samples_from_trace(const Trace& trace, SampleSet& set);

// Encodes `set` (frames, samples with their worker, time, kind, activity and count, the
// period) as profile blocks, each at most `max_block_bytes`, replacing trace.profile_blocks.
// Samples' `thread` and `op` are not stored (the worker and the trace's activities say them).
void samples_to_trace(const SampleSet& set, Trace& trace, size_t max_block_bytes = 1u << 24);

}  // namespace snailtrail::flame
