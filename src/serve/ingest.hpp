// The ingest side of `snailtrail serve`: sources (TCP connections, stdin, followed files)
// decode their bytes on their own threads and hand batches of events to the analysis
// thread through a bounded queue; a full queue blocks the sources, which stops reading
// their sockets, so producers feel TCP backpressure instead of the server buffering
// without bound.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "importers/importer.hpp"
#include "trace/stream_decoder.hpp"

namespace snailtrail::serve {

struct Batch {
  std::vector<Event> events;  // in stream order
  Trace names;                // worker/operator names that arrived with them
  bool first = false;         // the first batch of its stream: a new producer
};

class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity_events) : capacity_(capacity_events) {}
  // Blocks while the queue holds `capacity` events or more (a batch larger than the
  // capacity is still accepted into an empty queue).
  void push(Batch batch);
  // Waits up to `timeout_ms` for a batch.
  std::optional<Batch> pop(int timeout_ms);
  size_t queued_events() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Batch> batches_;
  size_t events_ = 0;
  size_t capacity_;
};

// Counters shared by every source, read by /metrics.
struct IngestCounters {
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> events{0};  // decoded
  std::atomic<uint64_t> bad_lines{0};
  std::atomic<uint64_t> bad_blocks{0};
  std::atomic<uint64_t> truncated{0};
  std::atomic<uint64_t> broken_streams{0};  // framing lost: the connection was closed
  std::atomic<uint64_t> connections_total{0};
  std::atomic<uint64_t> connections_open{0};
};

// Reads `fd` until end of stream (or until `stop` is set, after draining what is
// readable without blocking), decoding it and pushing batches. Logs a closed or broken
// stream on stderr. Does not close `fd`.
void pump_stream(int fd, const std::string& name, BatchQueue& queue, IngestCounters& counters,
                 const std::atomic<bool>& stop, bool log);

// How a followed file is read: "auto" sniffs its first bytes (our JSONL and .snail, or a
// foreign format that can stream, e.g. a Spark event log), or an importer's name.
struct FollowFormat {
  std::string importer = "auto";
  importers::ImportOptions options;
};

// Throws std::invalid_argument if `importer` cannot be followed (unknown, or a format
// that is one JSON document, like chrome and jaeger): says why and what to do instead.
void check_followable(const std::string& path, const std::string& importer);

// Like pump_stream for a file that keeps growing: reads to its end, then polls for more
// until `stop`. A file that shrinks (truncated or replaced) is read again from its start.
void follow_file(const std::string& path, const FollowFormat& format, BatchQueue& queue,
                 IngestCounters& counters, const std::atomic<bool>& stop, bool log);

}  // namespace snailtrail::serve
