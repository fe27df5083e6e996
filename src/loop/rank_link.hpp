// The closed loop across processes (docs/CLOSED-LOOP.md "Across ranks"): under `mpirun
// -np P` every rank folds its own workers' trace events into DS2's per-interval
// aggregates (per operator instance: useful time, records in and out) and sends each
// closed interval to rank 0, whose Autoscaler merges them with its own and runs the DS2
// manager; its decision travels to every rank as a Megaphone migration (the control
// stream of the dataflow, as --migrate-at's do). Only the aggregates cross: about 40 bytes
// per instance of the source and the stateful operator and interval, not the raw trace.
//
//   RankLink l = transport_link(*transport, workers_per_rank);  // before the run
//   autoscaler.link_ranks(std::move(l));
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "flow/channel.hpp"
#include "scale/rate_collector.hpp"

namespace snailtrail::loop {

// How one rank's Autoscaler reaches rank 0's. procs == 1: one process, nothing crosses.
struct RankLink {
  uint32_t rank = 0, procs = 1;
  uint32_t first_worker = 0, workers = 0;  // this rank's workers [first_worker, +workers)
  // Rank > 0: sends one message to rank 0 (thread-safe; one rank's messages arrive in order).
  std::function<void(std::string&&)> send;
  // Rank 0: the messages that arrived since the last call (each rank's in order).
  std::function<std::vector<std::string>()> receive;
};

// One rank's message: the intervals its collector closed since its last message, and
// the time up to which it has every event of its workers (its watermark).
struct RankReport {
  uint32_t rank = 0;
  int64_t watermark_ns = -1;
  std::vector<scale::IntervalMetrics> intervals;
};

// Wire format (little-endian, as the transport's frames): "SLR1", rank u32, watermark
// i64, intervals u32; per interval start i64, end i64, instances u32; per instance op u32,
// worker u32, window_s, useful_s, records_in, records_out f64.
std::string encode_report(const RankReport& r);
// Throws std::runtime_error naming the offset on a truncated or malformed message.
RankReport decode_report(std::string_view bytes);
inline constexpr size_t kReportHeaderBytes = 4 + 4 + 8 + 4;
inline constexpr size_t kReportIntervalBytes = 8 + 8 + 4;
inline constexpr size_t kReportInstanceBytes = 4 + 4 + 4 * 8;

// The link over the runtime's transport (flow::Transport, the run's communicator): the
// messages are frames on a channel no worker uses (flow::kStageChannelBase), sent by the
// communication thread like the dataflow's own. `workers_per_rank`: RunConfig::workers.
RankLink transport_link(flow::Transport& t, uint32_t workers_per_rank);

}  // namespace snailtrail::loop
