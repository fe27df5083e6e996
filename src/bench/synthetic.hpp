// Deterministic synthetic benchmark traces shaped like the Flink experiment of the SnailTrail
// paper: 48 workers, about 30 K events per second of trace time in total, every worker running
// every stage of a 4-operator pipeline (source -> map -> window -> sink) on its share of the
// data. A worker repeatedly
//   - handles a record batch that has arrived: recv, deserialization, processing and
//     serialization under the batch's operator, then sends the result to a pseudo-random
//     worker for the next stage (the sink stage writes `io` instead of sending);
//   - or, with nothing arrived, reads input (`input`, processing, serialization, send);
//   - or now and then waits for a batch still in flight (`waiting`, ended by the recv).
// Activities are separated by small jitter gaps, sometimes by longer uninstrumented ones.
//
// The generator is a small discrete-event simulation: workers advance one cycle at a time
// in order of their clocks, so every receive happens after its send. The random stream is
// a fixed SplitMix64, so traces are identical across platforms and library versions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "trace/make_event.hpp"
#include "trace/trace.hpp"

namespace snailtrail::bench {

struct SyntheticOptions {
  int64_t duration_ns = 1'000'000'000;
  int64_t origin_ns = 1'700'000'000'000'000'000;  // ns since the epoch, a whole second
  uint32_t workers = 48;
  uint64_t seed = 42;
};

namespace detail {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (the tiny modulo bias does not matter here).
  int64_t uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(uint32_t per_mille) { return next() % 1000 < per_mille; }

 private:
  uint64_t state_;
};

struct InFlight {
  int64_t arrival;
  int64_t correlator;
  uint32_t sender;
  uint32_t stage;  // pipeline stage (0-based) that will handle the data
  bool operator>(const InFlight& o) const {
    return arrival != o.arrival ? arrival > o.arrival : correlator > o.correlator;
  }
};

class Generator {
 public:
  explicit Generator(const SyntheticOptions& o)
      : opt_(o),
        rng_(o.seed),
        clock_(o.workers, o.origin_ns),
        blocked_(o.workers, false),
        mailbox_(o.workers),
        events_(o.workers) {}

  Trace run() {
    for (uint32_t w = 0; w < opt_.workers; ++w) {
      // Stagger the start a little so that workers are not in lockstep.
      clock_[w] += rng_.uniform(0, 2'000'000);
      ready_.push({clock_[w], w});
    }
    // No new input near the end, so that the pipeline drains by then.
    input_end_ = opt_.origin_ns + opt_.duration_ns - 150'000'000;
    while (!ready_.empty()) {
      const auto [clock, w] = ready_.top();
      ready_.pop();
      if (clock != clock_[w]) continue;  // stale entry
      step(w);
    }

    Trace trace;
    for (uint32_t w = 0; w < opt_.workers; ++w)
      trace.worker_names[w] = "worker-" + std::to_string(w);
    for (uint32_t s = 0; s < kStages; ++s) trace.operator_names[s + 1] = kOperatorNames[s];
    size_t total = 0;
    for (const auto& e : events_) total += e.size();
    trace.events.reserve(total);
    for (const auto& e : events_) trace.events.insert(trace.events.end(), e.begin(), e.end());
    // Interleave the workers by time, as a collector would; stable keeps per-worker order.
    std::stable_sort(trace.events.begin(), trace.events.end(),
                     [](const Event& a, const Event& b) { return a.ts < b.ts; });
    trace.source = "synthetic";
    return trace;
  }

 private:
  static constexpr uint32_t kStages = 4;
  static constexpr const char* kOperatorNames[kStages] = {"source", "map", "window", "sink"};

  // One step of worker w at its clock: handle a message that has arrived, else read input,
  // else wait for the next message.
  void step(uint32_t w) {
    auto& box = mailbox_[w];
    const bool arrived = !box.empty() && box.top().arrival <= clock_[w];
    const bool may_read = clock_[w] < input_end_;
    if (arrived || (!may_read && !box.empty())) {
      relay_cycle(w);
    } else if (may_read && (box.empty() || rng_.chance(600))) {
      source_cycle(w);
    } else if (!box.empty()) {
      relay_cycle(w);  // waits for the message first
    } else {
      blocked_[w] = true;  // woken up by the next send to w
      return;
    }
    ready_.push({clock_[w], w});
  }

  void emit(uint32_t w, int64_t ts, ActivityType a, EventKind k, uint32_t op = 0,
            uint32_t records = 0) {
    Event e = local_event(w, ts, a, k);
    if (op) set_operator(e, op);
    if (records) set_records(e, records);
    events_[w].push_back(e);
  }

  // An activity from the worker's clock; advances the clock past it and a small gap.
  void activity(uint32_t w, ActivityType a, uint32_t op, int64_t lo, int64_t hi,
                uint32_t records = 0) {
    const int64_t start = clock_[w];
    const int64_t end = start + rng_.uniform(lo, hi);
    emit(w, start, a, EventKind::start, op);
    emit(w, end, a, EventKind::end, op, records);
    clock_[w] = end + gap();
  }

  // Mostly timer jitter (closed by alignment); now and then an uninstrumented stretch.
  int64_t gap() {
    return rng_.chance(15) ? rng_.uniform(150'000, 600'000) : rng_.uniform(0, 8'000);
  }

  void message(uint32_t w, EventKind kind, uint32_t remote, int64_t correlator) {
    events_[w].push_back(
        message_event(w, clock_[w], ActivityType::data_message, kind, remote, correlator));
  }

  // Sends the output of `stage` to a pseudo-random worker (hash partitioning).
  void send(uint32_t w, uint32_t stage) {
    const auto dst = static_cast<uint32_t>(rng_.next() % opt_.workers);
    const int64_t correlator = next_correlator_++;
    message(w, EventKind::send, dst, correlator);
    const int64_t arrival = clock_[w] + rng_.uniform(40'000, 400'000);
    mailbox_[dst].push({arrival, correlator, w, stage + 1});
    if (blocked_[dst]) {
      blocked_[dst] = false;
      ready_.push({clock_[dst], dst});
    }
    clock_[w] += rng_.uniform(0, 5'000);
  }

  void source_cycle(uint32_t w) {
    activity(w, ActivityType::input, 1, 3'500'000, 9'000'000);
    activity(w, ActivityType::processing, 1, 1'500'000, 5'000'000, 100);
    activity(w, ActivityType::serialization, 1, 300'000, 1'200'000, 100);
    send(w, 0);
  }

  void relay_cycle(uint32_t w) {
    const InFlight m = mailbox_[w].top();
    mailbox_[w].pop();
    if (m.arrival > clock_[w]) {
      // Idle until the message arrives.
      emit(w, clock_[w], ActivityType::waiting, EventKind::start);
      emit(w, m.arrival, ActivityType::waiting, EventKind::end);
      clock_[w] = m.arrival;
    }
    message(w, EventKind::recv, m.sender, m.correlator);
    const uint32_t op = m.stage + 1;
    activity(w, ActivityType::deserialization, op, 300'000, 1'200'000);
    activity(w, ActivityType::processing, op, 4'500'000, 16'500'000, 100);
    if (m.stage + 1 == kStages) {
      activity(w, ActivityType::io, op, 500'000, 2'000'000);
    } else {
      activity(w, ActivityType::serialization, op, 300'000, 1'200'000, 100);
      send(w, m.stage);
    }
  }

  const SyntheticOptions opt_;
  SplitMix64 rng_;
  std::vector<int64_t> clock_;
  std::vector<bool> blocked_;
  std::vector<std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>>> mailbox_;
  std::vector<std::vector<Event>> events_;
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>,
                      std::greater<>>
      ready_;
  int64_t next_correlator_ = 1;
  int64_t input_end_ = 0;
};

}  // namespace detail

inline Trace make_synthetic_trace(const SyntheticOptions& options = {}) {
  return detail::Generator(options).run();
}

}  // namespace snailtrail::bench
