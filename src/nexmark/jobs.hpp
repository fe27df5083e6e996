// NEXMark as jobs of `snailtrail run`: nexmark-q0 ... nexmark-q8 (docs/NEXMARK.md).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flow/runtime.hpp"
#include "megaphone/jobs.hpp"
#include "nexmark/queries.hpp"

namespace snailtrail::nexmark {

// Adds nexmark-q0 ... nexmark-q8 to the runtime's job table (idempotent).
void register_jobs();

// Registers nexmark-qN-megaphone (N = 3 ... 8): query N with its keyed state in
// Megaphone's 2^opts.log_bins bins (megaphone_keyed.hpp) and Megaphone's controller
// migrating them at opts.migrate_at_ns with opts.strategy; migrations go into `log`.
// Returns the job's name; throws std::invalid_argument for a stateless query.
std::string register_megaphone_job(int q, const megaphone::JobOptions& opts,
                                   std::shared_ptr<megaphone::MigrationLog> log);

// The generator and window settings of a run: --seed, --rate (under --rate max the
// event-time schedule follows params["event_rate"], default 1e6 events/s), --epoch and
// the params knobs.
QueryConfig query_config(const flow::RunConfig& cfg);

// The events a run generated: worker w of G gives events w, w + G, w + 2G, ... so
// with per_stream[w] events from each, the union in event-number order.
std::vector<Event> run_events(const Generator& gen, const std::vector<uint64_t>& per_stream);

// A query's output as the run reports it: for each logical time t with output, key 2t
// holds the sum (mod 2^64) of a 64-bit hash of every row and key 2t + 1 the row count.
flow::KeyCounts output_digests(const std::vector<std::pair<flow::Time, Row>>& rows);

}  // namespace snailtrail::nexmark
