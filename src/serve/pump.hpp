// Decoding of one incoming stream for `serve` (TCP connections, stdin, followed files):
// our own formats through the StreamDecoder, foreign ones through a streaming importer;
// what it completes goes to the batch queue. Internal to src/serve.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "importers/streaming.hpp"
#include "serve/ingest.hpp"

namespace snailtrail::serve {

// Bytes read from a stream at once.
constexpr size_t kReadSize = 1 << 18;
// Events decoded per batch handed to the queue (a .snail block is decoded whole, so a
// batch holds at most this plus one block).
constexpr size_t kBatchEvents = 1 << 16;
// A JSONL line longer than this is skipped by the decoder (StreamDecoder's kMaxLine).
constexpr size_t kMaxLine = size_t{1} << 20;

// Queues what a stream's decoder completed (its events and names, which are taken out of
// `decoded`); `first` marks the stream's first batch. False when there was nothing.
inline bool queue_decoded(Trace& decoded, bool& first, BatchQueue& queue,
                          IngestCounters& counters) {
  if (decoded.events.empty() && decoded.worker_names.empty() && decoded.operator_names.empty())
    return false;
  Batch batch;
  batch.first = first;
  first = false;
  batch.events.assign(decoded.events.begin(), decoded.events.end());
  counters.events += batch.events.size();
  batch.names.worker_names.swap(decoded.worker_names);
  batch.names.operator_names.swap(decoded.operator_names);
  decoded.events.clear();
  queue.push(std::move(batch));
  return true;
}

// Decodes one piece of a stream and queues what it completed: our own formats
// (StreamDecoder), or a foreign format through its streaming importer.
class Pump {
 public:
  Pump(const std::string& name, BatchQueue& queue, IngestCounters& counters,
       std::unique_ptr<importers::StreamImporter> foreign = nullptr)
      : name_(name),
        decoder_(name),
        foreign_(std::move(foreign)),
        queue_(queue),
        counters_(counters) {
    decoder_.set_output_limit(kBatchEvents);
  }

  bool feed(const uint8_t* data, size_t n) {
    counters_.bytes += n;
    foreign_bytes_ += n;
    bool ok = true;
    if (foreign_) {
      ok = run_foreign([&] {
        foreign_->feed(std::string_view(reinterpret_cast<const char*>(data), n), pending_);
      });
      hand_over();
      return ok;
    }
    ok = decoder_.feed(std::span<const uint8_t>(data, n), pending_);
    hand_over();
    // Decoded in batches of kBatchEvents, so that a piece of input holding many blocks
    // never turns into more than one batch (and one block) of events at once.
    while (ok && decoder_.more()) {
      ok = decoder_.feed({}, pending_);
      hand_over();
    }
    return ok;
  }

  // Our own formats: bytes received, not decoded yet; and the bytes the unit being
  // received needs in total (one more than buffered for a JSONL line).
  size_t buffered() const { return decoder_.buffered(); }
  uint64_t bytes() const { return foreign_bytes_; }  // fed so far
  size_t need() const {
    const size_t unit = decoder_.unit_bytes();
    return unit ? unit : decoder_.buffered() + 1;
  }
  bool jsonl() const { return decoder_.format() != StreamDecoder::Format::snail; }

  void finish() {
    if (foreign_)
      run_foreign([&] { foreign_->finish(pending_); });
    else
      decoder_.finish(pending_);
    hand_over();
    // A foreign stream that ended inside a record: its importer's declared cut-input kinds.
    if (foreign_)
      for (const auto& [key, n] : foreign_->diagnostics())
        if (importers::is_cut_input(key)) counters_.truncated += n;
  }

  bool broken() const { return foreign_ ? !foreign_error_.empty() : decoder_.broken(); }
  const std::string& broken_reason() const {
    return foreign_ ? foreign_error_ : decoder_.broken_reason();
  }

  void log_end(bool log) const {
    if (!log) return;
    std::string problems;
    uint64_t events = 0, bytes = 0;
    if (foreign_) {
      events = foreign_events_;
      bytes = foreign_bytes_;
      for (const auto& [key, n] : foreign_->diagnostics())
        problems += fmt::format("{} {} {}", problems.empty() ? ";" : ",", key, n);
      if (!foreign_error_.empty()) problems += "; stopped at: " + foreign_error_;
    } else {
      const StreamStats& s = decoder_.stats();
      events = s.events;
      bytes = s.bytes;
      if (s.bad_lines) problems += fmt::format(", {} bad line(s)", s.bad_lines);
      if (s.bad_blocks) problems += fmt::format(", {} bad block(s)", s.bad_blocks);
      if (s.truncated) problems += ", truncated at the end";
      if (!s.first_error.empty()) problems += "; first problem: " + s.first_error;
    }
    fmt::print(stderr, "snailtrail serve: {} closed: {} events, {} bytes{}\n", name_, events, bytes,
               problems);
  }

 private:
  // Bad input ends a foreign stream: its importer cannot resynchronise.
  template <class F>
  bool run_foreign(F&& f) {
    if (!foreign_error_.empty()) return false;
    const size_t before = pending_.events.size();
    try {
      f();
    } catch (const std::exception& e) {
      foreign_error_ = e.what();
    }
    foreign_events_ += pending_.events.size() - before;
    return foreign_error_.empty();
  }

  void hand_over() {
    const StreamStats& s = decoder_.stats();
    counters_.bad_lines += s.bad_lines - seen_.bad_lines;
    counters_.bad_blocks += s.bad_blocks - seen_.bad_blocks;
    counters_.truncated += s.truncated - seen_.truncated;
    seen_ = s;
    if (!queue_decoded(pending_, first_, queue_, counters_)) return;
    if (pending_.events.capacity() > 2 * kBatchEvents) pending_.events = BigVector<Event>();
  }

  std::string name_;
  StreamDecoder decoder_;
  std::unique_ptr<importers::StreamImporter> foreign_;
  std::string foreign_error_;
  uint64_t foreign_events_ = 0, foreign_bytes_ = 0;
  BatchQueue& queue_;
  IngestCounters& counters_;
  Trace pending_;
  StreamStats seen_;
  bool first_ = true;
};

}  // namespace snailtrail::serve
