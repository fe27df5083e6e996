#include "serve/sender.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "serve/producer_link.hpp"
#include "trace/setting_error.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail::serve {
namespace {

using Clock = std::chrono::steady_clock;

bool selected(const SendOptions& o, uint32_t worker) {
  return o.workers.empty() ||
         std::find(o.workers.begin(), o.workers.end(), worker) != o.workers.end();
}

// The events to send, in event-time order across workers (each worker's own order kept),
// `repeat` times: copy r has timestamps + r * span and correlators + r * their range.
class Replay {
 public:
  Replay(const Trace& trace, const SendOptions& o) : trace_(trace) {
    order_.reserve(trace.events.size());
    for (uint32_t i = 0; i < trace.events.size(); ++i)
      if (selected(o, trace.events[i].worker)) order_.push_back(i);
    std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      return trace.events[a].ts < trace.events[b].ts;
    });
    if (o.repeat == 0) throw UsageError({field("repeat"), " must be at least 1"});
    if (!order_.empty()) {
      span_ = trace.events[order_.back()].ts - trace.events[order_.front()].ts + 1;
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (uint32_t i : order_)
        if (trace.events[i].has(kHasCorrelator)) {
          lo = std::min(lo, trace.events[i].correlator);
          hi = std::max(hi, trace.events[i].correlator);
        }
      if (hi >= lo) corr_range_ = hi - lo + 1;
    }
    total_ = order_.size() * o.repeat;
  }

  size_t total() const { return total_; }
  int64_t first_ts() const { return order_.empty() ? 0 : trace_.events[order_.front()].ts; }
  Event at(size_t g) const {
    const size_t per_copy = order_.size();
    Event e = trace_.events[order_[g % per_copy]];
    const auto r = static_cast<int64_t>(g / per_copy);
    e.ts += r * span_;
    if (e.has(kHasCorrelator)) e.correlator += r * corr_range_;
    return e;
  }

 private:
  const Trace& trace_;
  std::vector<uint32_t> order_;
  int64_t span_ = 1, corr_range_ = 1;
  size_t total_ = 0;
};

// One chunk as it goes on the wire: JSONL, or .snail blocks (one header per stream).
std::string encode_chunk(const Trace& chunk, const SendOptions& o, bool first) {
  if (o.jsonl) return to_jsonl(chunk);
  SnailWriteOptions w;
  w.events_per_block = static_cast<uint32_t>(std::max<size_t>(o.batch_events, 1));
  w.version = 1;  // a stream has no index: chunks are concatenated
  std::string bytes = to_snail(chunk, w);
  if (!first) bytes.erase(0, detail::snail::kHeaderSize);  // one header per stream
  return bytes;
}

// Sends the replay in chunks as their events become due.
void send_paced(ProducerLink& link, const Trace& trace, const Replay& replay, const SendOptions& o,
                Clock::time_point start, SendStats& stats) {
  const size_t total = replay.total();
  const int64_t t0 = replay.first_ts();
  auto due = [&](size_t i) { return send_due(o, start, replay.at(i).ts - t0, i); };
  Trace chunk;
  chunk.source = trace.source;
  // Names go with the first chunk: this producer's workers and every operator.
  for (const auto& [id, name] : trace.worker_names)
    if (selected(o, id)) chunk.worker_names.emplace(id, name);
  chunk.operator_names = trace.operator_names;
  bool first = true;
  size_t i = 0;
  while (i < total || first) {
    size_t j = i;
    const auto now = Clock::now();
    while (j < total && j - i < o.batch_events && due(j) <= now) ++j;
    if (j == i && i < total) {
      std::this_thread::sleep_until(std::min(due(i), now + std::chrono::milliseconds(50)));
      continue;
    }
    chunk.events.resize(j - i);
    for (size_t k = i; k < j; ++k) chunk.events[k - i] = replay.at(k);
    const std::string bytes = encode_chunk(chunk, o, first);
    link.write(bytes);
    stats.bytes += bytes.size();
    stats.events += j - i;
    chunk.worker_names.clear();
    chunk.operator_names.clear();
    first = false;
    i = j;
  }
}

}  // namespace

std::chrono::steady_clock::time_point send_due(const SendOptions& o,
                                               std::chrono::steady_clock::time_point start,
                                               int64_t offset_ns, size_t i) {
  double s = 0;
  if (o.speed > 0) s = static_cast<double>(offset_ns) / 1e9 / o.speed;
  if (o.rate > 0) s = std::max(s, static_cast<double>(i) / o.rate);
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

SendStats send_trace(const Trace& trace, const SendOptions& o) {
  if (o.speed < 0 || o.rate < 0) throw std::invalid_argument("speed and rate must be positive");
  if (o.resume) throw std::invalid_argument("--resume applies to nats:// destinations only");
  const Replay replay(trace, o);
  ClientAuth auth;
  auth.token = o.token;
  auth.tls_ca = o.tls_ca;
  ProducerLink link(o.to, o.connect_timeout_s, auth);
  SendStats stats;
  const auto start = Clock::now();
  send_paced(link, trace, replay, o, start, stats);
  link.finish();
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return stats;
}

TraceStream::TraceStream(std::string address, double connect_timeout_s, const ClientAuth& auth)
    : address_(std::move(address)),
      link_(std::make_unique<ProducerLink>(address_, connect_timeout_s, auth)) {}

TraceStream::~TraceStream() = default;

void TraceStream::send(const Trace& chunk) {
  if (closed_) throw std::runtime_error("stream to " + address_ + " is closed");
  if (chunk.events.empty() && chunk.worker_names.empty() && chunk.operator_names.empty() && !first_)
    return;
  SnailWriteOptions w;
  w.version = 1;  // a stream has no index: chunks are concatenated
  std::string bytes = to_snail(chunk, w);
  if (!first_) bytes.erase(0, detail::snail::kHeaderSize);  // one header per stream
  link_->write(bytes);
  first_ = false;
  stats_.bytes += bytes.size();
  stats_.events += chunk.events.size();
}

void TraceStream::close() {
  if (closed_) return;
  if (first_) send(Trace{});  // a stream with no events still has its header
  closed_ = true;
  link_->finish();
}

void TraceStream::interrupt() {
  link_->interrupt();
}

}  // namespace snailtrail::serve
