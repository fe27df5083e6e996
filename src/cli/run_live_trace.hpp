// `snailtrail run`'s own trace on the way out: --trace-to's live stream (LiveTrace) and,
// under mpirun, every rank's events gathered to rank 0 for --trace (gather_trace).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flow/channel.hpp"
#include "serve/sender.hpp"
#include "trace/trace.hpp"

namespace snailtrail::cli {

// --trace-to: the workers' flushed events go into a queue; a thread sends what arrived
// every 50 ms as one time-ordered chunk of the .snail stream (so src/flow knows nothing
// of the network). With --trace too, every event is also kept for the file. The queue
// is bounded (`max_queued` events): a chunk that does not fit while the receiver is
// slow is dropped and counted, never blocking the workers (docs/RUNTIME.md).
class LiveTrace {
 public:
  LiveTrace(const std::string& address, uint32_t first_worker, uint32_t workers, bool keep,
            uint64_t max_queued)
      : stream_(address, 1.0), keep_(keep), max_queued_(max_queued) {
    for (uint32_t i = first_worker; i < first_worker + workers; ++i)
      names_.worker_names[i] = fmt::format("worker-{}", i);
    thread_ = std::thread([this] { loop(); });
  }
  ~LiveTrace() { stop(); }
  void add(std::vector<Event>&& events, const std::vector<std::string>& ops) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!have_ops_) {
      for (uint32_t i = 0; i < ops.size(); ++i) names_.operator_names[i] = ops[i];
      have_ops_ = true;
    }
    if (keep_) kept_.insert(kept_.end(), events.begin(), events.end());
    if (queued_.size() + events.size() > max_queued_) {
      dropped_ += events.size();
      return;
    }
    queued_.insert(queued_.end(), events.begin(), events.end());
  }
  uint64_t dropped() const { return dropped_; }
  // Sends what is left, closes the stream; rethrows a send error.
  void finish() {
    stop();
    if (error_) std::rethrow_exception(error_);
  }
  const serve::SendStats& stats() const { return stream_.stats(); }
  std::vector<Event>& kept() { return kept_; }
  const Trace& names() const { return names_; }

 private:
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void loop() {
    bool last = false;
    bool named = false;
    while (!last) {
      Trace chunk;
      std::vector<Event> events;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; });
        last = stopping_;
        events.swap(queued_);
        if (!named && have_ops_) {
          chunk.worker_names = names_.worker_names;
          chunk.operator_names = names_.operator_names;
          named = true;
        }
      }
      if (error_) continue;  // the connection broke: keep draining, report at the end
      std::stable_sort(events.begin(), events.end(),
                       [](const Event& x, const Event& y) { return x.ts < y.ts; });
      chunk.events.resize(events.size());
      std::copy(events.begin(), events.end(), chunk.events.begin());
      try {
        if (!chunk.events.empty() || !chunk.worker_names.empty()) stream_.send(chunk);
        if (last) stream_.close();
      } catch (...) {
        error_ = std::current_exception();
      }
    }
  }

  serve::TraceStream stream_;
  bool keep_;
  uint64_t max_queued_, dropped_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> queued_;
  std::vector<Event> kept_;
  Trace names_;
  bool have_ops_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// Under mpirun: rank 0 gathers every rank's events into one trace (a cross-process
// message's send and recv in the same file). Event times are relative to each process's
// clock origin, taken right after the start barrier; when every rank runs on the same
// host (equal host names) they are shifted onto one steady clock exactly, else the
// barrier is the alignment (skew: how unevenly the processes leave it).
std::vector<Event> gather_trace(flow::Transport& tr, std::vector<Event>&& mine, int64_t origin_ns);

}  // namespace snailtrail::cli
