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
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "importers/importer.hpp"
#include "serve/auth.hpp"
#include "trace/stream_decoder.hpp"

struct ssl_ctx_st;

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

// Bytes shared by every TCP connection's undecoded input (`serve --ingest-buffer`).
// Reservations are all or nothing, so a connection that holds one can always complete
// the block (or line) it is receiving, and one that cannot get one holds (almost) nothing.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(limit) {}
  bool try_reserve(size_t n);
  void release(size_t n);
  size_t used() const { return used_.load(); }
  size_t peak() const { return peak_.load(); }
  size_t limit() const { return limit_; }

 private:
  std::atomic<size_t> used_{0}, peak_{0};
  size_t limit_;
};

struct IngestCounters;
class Pump;

// The input of one TCP connection: its decoder and what it holds of the shared budget.
// Protocol, per read: admit() (false: do not read now, retry later), read at most room()
// bytes, feed() them. Invariant: buffered() <= max(kFreeBytes, reserved()).
class ConnectionInput {
 public:
  static constexpr size_t kFreeBytes = size_t{1} << 16;  // without reserving
  ConnectionInput(const std::string& name, BatchQueue& queue, IngestCounters& counters,
                  MemoryBudget& budget);
  ~ConnectionInput();  // gives its reservation and buffered bytes back
  ConnectionInput(const ConnectionInput&) = delete;
  ConnectionInput& operator=(const ConnectionInput&) = delete;

  // May the connection read now? Reserves what the unit it receives (a .snail block, a
  // JSONL line up to the decoder's 1 MiB limit) needs beyond kFreeBytes, all or nothing.
  bool admit();
  size_t room() const;
  // Decodes the bytes and queues the events (blocks while the queue is full). False once
  // the stream is broken.
  bool feed(const uint8_t* data, size_t n);
  void finish();  // end of stream (not after broken())
  size_t buffered() const;
  uint64_t bytes() const;  // received so far
  size_t reserved() const { return reserved_; }
  bool broken() const;
  const std::string& broken_reason() const;
  void log_end(bool log) const;

 private:
  void account();
  std::unique_ptr<Pump> pump_;
  IngestCounters& counters_;
  MemoryBudget& budget_;
  size_t reserved_ = 0, accounted_ = 0;
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
  std::atomic<uint64_t> connections_refused{0};       // over --max-connections
  std::atomic<uint64_t> connections_timed_out{0};     // silent for --connection-timeout
  std::atomic<uint64_t> connections_unauthorized{0};  // closed: no valid token line
  std::atomic<uint64_t> tls_failed{0};                // closed: the TLS handshake failed
  std::atomic<int64_t> buffered_bytes{0};             // TCP input received, not decoded yet
  std::atomic<int64_t> buffered_peak{0};              // the largest buffered_bytes so far
  std::atomic<uint64_t> paused_connections{0};        // waiting for the buffer budget
  // --nats: the durable consumer's position (serve/nats_source.hpp).
  std::atomic<uint64_t> nats_messages{0};     // read
  std::atomic<uint64_t> nats_pending{0};      // stored, not delivered to this consumer yet
  std::atomic<uint64_t> nats_ack_pending{0};  // read, not acknowledged yet
  std::atomic<uint64_t> nats_acked_seq{0};    // stream sequence of the last acknowledgement
  std::atomic<uint64_t> nats_redelivered{0};  // read again after the ack wait, skipped
  std::atomic<uint64_t> nats_gap_fetched{0};  // fetched by sequence to close a gap
};

// Limits of the TCP ingestion (docs/SERVE.md, "Robustness").
struct TcpLimits {
  size_t max_connections = 1024;             // more are accepted and closed at once
  int64_t idle_timeout_ns = 60'000'000'000;  // a connection silent this long is closed
  size_t buffer_bytes = size_t{256} << 20;   // budget of undecoded input, all connections
  unsigned threads = 2;                      // event loops decoding the connections
};

// With a token, a TCP stream starts with the line "Bearer TOKEN\n" (docs/SERVE.md, "Running
// across hosts"); without one such a line is skipped, so a producer that sends a token
// also works against a server that asks for none.
constexpr std::string_view kTokenLinePrefix = "Bearer ";
// A connection that has not sent its token line within this is closed.
constexpr int64_t kTokenTimeoutNs = 10'000'000'000;

// With `tls`, every connection is a TLS session (docs/SERVE.md, "Running across hosts").
// Accepts producers on `listen_fds` and reads them with `limits.threads` event loops
// (epoll): a connection costs a few hundred bytes plus what it has sent but not yet
// completed; idle connections cost no thread. Each connection's input is bounded by a
// free allowance (64 KiB) plus what it reserves from the shared budget for the block or
// line it receives; a connection that cannot reserve is not read (TCP backpressure)
// until others have decoded theirs. A full queue stops every loop (backpressure too).
// Runs until `stop`, then reads what is readable without waiting, ends every stream and
// returns from join().
class TcpIngest {
 public:
  TcpIngest(std::vector<std::pair<int, std::string>> listeners, BatchQueue& queue,
            IngestCounters& counters, const TcpLimits& limits, const std::atomic<bool>& stop,
            bool log, AuthTokens auth = {}, ssl_ctx_st* tls = nullptr);
  ~TcpIngest();
  TcpIngest(const TcpIngest&) = delete;
  TcpIngest& operator=(const TcpIngest&) = delete;
  void join();
  // Every loop has ended its streams (after `stop`).
  bool finished() const { return running_.load() == 0; }
  const MemoryBudget& budget() const { return budget_; }

 private:
  struct Loop;
  void accept_loop();
  std::vector<std::pair<int, std::string>> listeners_;
  BatchQueue& queue_;
  IngestCounters& counters_;
  TcpLimits limits_;
  const std::atomic<bool>& stop_;
  bool log_;
  AuthTokens auth_;
  ssl_ctx_st* tls_;  // with --tls-cert: every connection speaks TLS (not owned)
  MemoryBudget budget_;
  std::atomic<bool> accepting_{true};
  std::atomic<unsigned> running_{0};
  std::vector<std::unique_ptr<Loop>> loops_;
  std::thread acceptor_;
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
