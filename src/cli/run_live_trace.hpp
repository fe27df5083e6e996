// `snailtrail run`'s own trace on the way out: --trace-to's live stream (LiveTrace) and,
// under mpirun, every rank's events gathered to rank 0 for --trace (gather_trace).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/run_event_queue.hpp"
#include "flow/channel.hpp"
#include "serve/nats_link.hpp"
#include "serve/producer_link.hpp"
#include "serve/sender.hpp"
#include "trace/trace.hpp"

namespace snailtrail::cli {

// --trace-to's destination: serve's TCP listener (HOST:PORT) or a JetStream stream
// (nats://HOST:PORT/STREAM, each chunk published at once, docs/SERVE.md); TCP with the
// token line and TLS when `auth` has them (docs/SERVE.md, "Running across hosts"); NATS
// with TLS (auth.tls_ca) and a credentials file (auth.nats_creds).
class TraceSink {
 public:
  TraceSink(const std::string& address, const serve::ClientAuth& auth) {
    if (serve::is_nats_address(address)) {
      if (!auth.token.empty())
        throw std::invalid_argument(auth.token_flag +
                                    " applies to HOST:PORT destinations, not nats:// (put the "
                                    "NATS token in the URL: nats://TOKEN@HOST:PORT/STREAM)");
      serve::NatsAuth nats_auth;
      nats_auth.tls_ca = auth.tls_ca;
      nats_auth.ca_flag = auth.ca_flag;
      nats_auth.creds = auth.nats_creds;
      nats_auth.creds_flag = "--trace-to-nats-creds";
      nats_auth.tls_cert = auth.nats_tls_cert;
      nats_auth.tls_key = auth.nats_tls_key;
      nats_auth.cert_flag = "--trace-to-nats-tls-cert";
      nats_auth.key_flag = "--trace-to-nats-tls-key";
      nats_ = std::make_unique<serve::NatsPublisher>(serve::parse_nats_address(address), 1.0, 4096,
                                                     serve::NatsIdentity{}, nats_auth);
    } else {
      if (!auth.nats_creds.empty() || !auth.nats_tls_cert.empty() || !auth.nats_tls_key.empty())
        throw std::invalid_argument(
            "--trace-to-nats-creds, --trace-to-nats-tls-cert and --trace-to-nats-tls-key apply "
            "to nats:// destinations");
      tcp_ = std::make_unique<serve::TraceStream>(address, 1.0, auth);
    }
  }
  void send(const Trace& chunk) {
    if (!nats_) return tcp_->send(chunk);
    nats_->add(chunk);
    nats_->flush();
  }
  void close() { nats_ ? nats_->finish(5) : tcp_->close(); }
  void interrupt() {
    if (tcp_) tcp_->interrupt();  // a NATS finish is bounded by its own timeout
  }
  serve::SendStats stats() const {
    if (tcp_) return tcp_->stats();
    serve::SendStats s;
    s.events = nats_->stats().events;
    s.bytes = nats_->stats().bytes;
    return s;
  }

 private:
  std::unique_ptr<serve::TraceStream> tcp_;
  std::unique_ptr<serve::NatsPublisher> nats_;
};

// --trace-to: the workers' flushed events go into a queue (run_event_queue.hpp); its thread
// sends what arrived every 50 ms as one time-ordered chunk of the .snail stream (so
// src/flow knows nothing of the network). With --trace too, every event is also kept for
// the file. The queue is bounded (`max_queued` events): a chunk that does not fit while
// the receiver is slow is dropped and counted, never blocking the workers
// (docs/RUNTIME.md). The end is bounded too: a receiver that takes nothing (stopped) gets
// `finish`'s bound, then the stream is cut and what it did not take is counted (unsent()).
class LiveTrace {
 public:
  LiveTrace(const std::string& address, const serve::ClientAuth& auth, uint32_t first_worker,
            uint32_t workers, bool keep, uint64_t max_queued)
      : stream_(address, auth), queue_(first_worker, workers, keep, max_queued) {
    queue_.start([this](std::vector<Event>& events, const Trace* names, bool last) {
      send(events, names, last);
    });
  }
  ~LiveTrace() { stop(); }
  void add(flow::TraceBuffer events, const std::vector<std::string>& ops) {
    queue_.add(std::move(events), ops);
  }
  uint64_t dropped() const { return queue_.dropped(); }
  // Sends what is left and closes the stream, waiting at most `bound` for the receiver;
  // rethrows a send error, unless the bound cut the stream (then see unsent()).
  void finish(std::chrono::milliseconds bound = std::chrono::milliseconds(1000)) {
    stop(bound);
    if (error_ && !cut_) std::rethrow_exception(error_);
  }
  // After finish: events not sent because the connection broke or the bound cut it.
  uint64_t unsent() const { return unsent_; }
  bool cut() const { return cut_; }
  serve::SendStats stats() const { return stream_.stats(); }
  // With --trace, after finish: every event, in time order.
  std::vector<Event> take_kept() { return queue_.take_kept(); }

 private:
  void stop(std::chrono::milliseconds bound = std::chrono::milliseconds(1000)) {
    if (stopped_) return;
    stopped_ = true;
    cut_ = !queue_.stop(bound);
    if (cut_) stream_.interrupt();  // a blocked send or close fails at once
    queue_.join();
  }
  // The queue's thread.
  void send(std::vector<Event>& events, const Trace* names, bool last) {
    if (error_) {  // the connection broke: keep draining, report at the end
      unsent_ += events.size();
      return;
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& x, const Event& y) { return x.ts < y.ts; });
    Trace chunk;
    if (names) {
      chunk.worker_names = names->worker_names;
      chunk.operator_names = names->operator_names;
    }
    chunk.events.resize(events.size());
    std::copy(events.begin(), events.end(), chunk.events.begin());
    bool sent = false;
    try {
      if (!chunk.events.empty() || !chunk.worker_names.empty()) stream_.send(chunk);
      sent = true;
      if (last) stream_.close();
    } catch (...) {
      error_ = std::current_exception();
      if (!sent) unsent_ += chunk.events.size();
    }
  }

  TraceSink stream_;
  uint64_t unsent_ = 0;  // the queue thread's; read after it ended
  std::exception_ptr error_;
  bool stopped_ = false;
  bool cut_ = false;     // finish's bound passed: the stream was cut
  RunEventQueue queue_;  // last: its thread stops before the members above go
};

// Under mpirun: rank 0 gathers every rank's events into one trace (a cross-process
// message's send and recv in the same file). Event times are relative to each process's
// clock origin, taken right after the start barrier; when every rank runs on the same
// host (equal host names) they are shifted onto one steady clock exactly, else the
// barrier is the alignment (skew: how unevenly the processes leave it).
std::vector<Event> gather_trace(flow::Transport& tr, std::vector<Event>&& mine, int64_t origin_ns);

}  // namespace snailtrail::cli
