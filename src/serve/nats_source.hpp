// `serve --nats nats://HOST:PORT/STREAM --durable NAME`: reads a JetStream stream through a
// durable pull consumer into the batch queue, like a TCP connection (docs/SERVE.md,
// "Through NATS JetStream"). Messages are acknowledged (AckAll) once every window holding
// their events has been written to --out and synced: the analysis thread says how far
// that is (NatsProgress::written_until).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "serve/ingest.hpp"
#include "serve/nats_link.hpp"

struct __natsSubscription;
struct __natsMsg;

namespace snailtrail::serve {

struct NatsSourceOptions {
  std::string address;  // nats://HOST:PORT/STREAM or tls://..., maybe with credentials
  NatsAuth auth;        // --nats-creds, --nats-tls-ca, ...
  std::string durable;  // consumer name
  bool drain = false;   // end once the consumer has read everything stored so far
  double connect_timeout_s = 5;
  // Unacknowledged messages are delivered again after this long (skipped by their stream
  // sequence); windows held back for longer cost bandwidth, not output.
  double ack_wait_s = 300;
};

// Shared by the consumer thread and the analysis thread (the consumer's position is in
// IngestCounters, for /metrics).
struct NatsProgress {
  // End (exclusive) of the windows written and synced so far: messages whose events all
  // lie before it are acknowledged.
  std::atomic<int64_t> written_until{INT64_MIN};
  std::atomic<bool> drained{false};  // --drain: everything stored was read
};

class NatsSource {
 public:
  // Connects, creates the stream if missing, and starts the durable consumer at the
  // stream's first message (an existing one is replaced: the analysis is rebuilt from
  // the start, windows already in --out are not written again). Throws
  // std::runtime_error when the server is unreachable or refuses.
  NatsSource(const NatsSourceOptions& options, NatsProgress& progress, IngestCounters& counters,
             bool log);
  ~NatsSource();
  NatsSource(const NatsSource&) = delete;
  NatsSource& operator=(const NatsSource&) = delete;

  // Reads until `stop` (or, with drain, until everything stored was read).
  void run(BatchQueue& queue, const std::atomic<bool>& stop);
  // Acknowledges the messages whose events lie before written_until (any thread, but
  // not concurrently with run()).
  void acknowledge();

 private:
  struct Unacked {
    uint64_t seq;
    int64_t max_ts;
    std::string reply;
  };
  bool all_read(BatchQueue& queue);
  bool fill_gap(uint64_t until, BatchQueue& queue);
  int pull(BatchQueue& queue);  // a natsStatus
  void deliver(__natsMsg* msg, BatchQueue& queue);
  void take(uint64_t seq, const char* subject, const char* data, int n, const char* reply,
            BatchQueue& queue);

  NatsSourceOptions options_;
  NatsProgress& progress_;
  IngestCounters& counters_;
  bool log_;
  NatsLink link_;
  __natsSubscription* sub_ = nullptr;        // made the consumer; not read
  __natsSubscription* inbox_sub_ = nullptr;  // answers to our pull requests
  std::string inbox_, next_subject_;
  std::deque<Unacked> unacked_;
  uint64_t last_seq_ = 0;  // stream sequence of the last message taken
  bool first_ = true;
};

}  // namespace snailtrail::serve
