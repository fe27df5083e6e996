#include "sim/recorder.hpp"

#include <algorithm>
#include <unordered_set>

#include "trace/make_event.hpp"

namespace snailtrail::sim {
namespace {

// The start event of an activity; its end is the same event with another ts and kind.
Event start_event(uint32_t worker, ActivityType type, int64_t start, uint32_t op) {
  Event e = local_event(worker, start, type, EventKind::start);
  if (op != kNoOp) set_operator(e, op);
  return e;
}

// The record count, when known (>= 0), saturated to the field's range.
void set_records_if_known(Event& e, int64_t records) {
  if (records >= 0) set_records(e, static_cast<uint32_t>(std::min<int64_t>(records, UINT32_MAX)));
}

// Truncates a worker's local events from index `from` on at `cutoff`: drops the sends of
// the messages in `dropped` or sent after the cutoff and the activities that start at or
// after it (with `whole_waits`, also a waiting that ends after it), and ends the others by
// the cutoff. Returns how many events it dropped.
size_t truncate(std::vector<Event>& v, size_t from, int64_t cutoff,
                const std::unordered_set<int64_t>& dropped, bool whole_waits) {
  size_t out = from;
  bool dropping = false;  // inside an activity that is dropped
  for (size_t i = from; i < v.size(); ++i) {
    Event e = v[i];
    if (e.kind == EventKind::send) {
      if (dropped.count(e.correlator) || e.ts > cutoff) continue;
    } else if (e.kind == EventKind::start) {
      dropping = e.ts >= cutoff;
      if (!dropping && whole_waits && e.activity == ActivityType::waiting) {
        // Find its end: a waiting that ends after the cutoff is dropped.
        for (size_t j = i + 1; j < v.size(); ++j)
          if (v[j].kind == EventKind::end) {
            dropping = v[j].ts > cutoff;
            break;
          }
      }
      if (dropping) continue;
    } else if (e.kind == EventKind::end) {
      if (dropping) {
        dropping = false;
        continue;
      }
      e.ts = std::min(e.ts, cutoff);
    }
    v[out++] = e;
  }
  const size_t dropped_events = v.size() - out;
  v.resize(out);
  return dropped_events;
}

}  // namespace

uint32_t Recorder::add_worker(std::string name) {
  const auto id = static_cast<uint32_t>(workers_.size());
  by_name_.emplace(name, id);
  workers_.push_back(Worker{std::move(name), {}, {}});
  return id;
}

uint32_t Recorder::worker(const std::string& name) {
  auto it = by_name_.find(name);
  return it != by_name_.end() ? it->second : add_worker(name);
}

void Recorder::name_operator(uint32_t op, std::string name) {
  operator_names_[op] = std::move(name);
}

void Recorder::activity(uint32_t worker, ActivityType type, int64_t start, int64_t end, uint32_t op,
                        int64_t records) {
  if (end <= start || !recording_) return;
  Event e = start_event(worker, type, start, op);
  std::vector<Event>& out = workers_[worker].local;
  out.push_back(e);
  e.ts = end;
  e.kind = EventKind::end;
  set_records_if_known(e, records);
  out.push_back(e);
  events_ += 2;
}

void Recorder::open(uint32_t worker, ActivityType type, int64_t start, uint32_t op) {
  if (!recording_) return;
  Worker& w = workers_[worker];
  w.open = w.local.size();
  w.local.push_back(start_event(worker, type, start, op));
  ++events_;
}

void Recorder::close(uint32_t worker, int64_t end) {
  if (!recording_) return;
  Worker& w = workers_[worker];
  if (w.open == SIZE_MAX) return;
  Event e = w.local[w.open];
  if (end <= e.ts && w.open + 1 == w.local.size()) {
    // Zero length and nothing written since: no activity at all.
    w.local.pop_back();
    --events_;
  } else {
    e.ts = end;
    e.kind = EventKind::end;
    w.local.push_back(e);
    ++events_;
  }
  w.open = SIZE_MAX;
}

int64_t Recorder::send(uint32_t worker, ActivityType type, int64_t ts, uint32_t to,
                       int64_t records) {
  const int64_t correlator = next_correlator_++;
  if (!recording_) return correlator;
  Event e = message_event(worker, ts, type, EventKind::send, to, correlator);
  set_records_if_known(e, records);
  workers_[worker].local.push_back(e);
  ++events_;
  return correlator;
}

void Recorder::recv(uint32_t worker, ActivityType type, int64_t ts, uint32_t from,
                    int64_t correlator, int64_t records) {
  if (!recording_) return;
  Event e = message_event(worker, ts, type, EventKind::recv, from, correlator);
  set_records_if_known(e, records);
  workers_[worker].recvs.push_back(e);
  ++events_;
}

void Recorder::cut(int64_t cutoff) {
  std::unordered_set<int64_t> late;  // correlators of messages received after the cutoff
  for (Worker& w : workers_) {
    const size_t before = w.recvs.size();
    std::erase_if(w.recvs, [&](const Event& e) {
      if (e.ts <= cutoff) return false;
      late.insert(e.correlator);
      return true;
    });
    events_ -= before - w.recvs.size();
  }
  for (Worker& w : workers_) events_ -= truncate(w.local, 0, cutoff, late, true);
}

void Recorder::halt(int64_t t, const std::vector<int64_t>& in_flight) {
  if (!recording_) return;
  const std::unordered_set<int64_t> dropped(in_flight.begin(), in_flight.end());
  for (Worker& w : workers_) {
    if (w.open != SIZE_MAX) {
      // A wait that no receive ends: the worker stopped.
      w.local.erase(w.local.begin() + static_cast<ptrdiff_t>(w.open));
      --events_;
      w.open = SIZE_MAX;
    }
    events_ -= truncate(w.local, w.halted, t, dropped, false);
    w.halted = w.local.size();
  }
}

void Recorder::discard_before(int64_t t) {
  for (Worker& w : workers_) {
    // The prefix ends where no activity is open and the next event is at or after t.
    size_t keep_from = 0;
    int depth = 0;
    for (size_t i = 0; i < w.local.size() && w.local[i].ts < t; ++i) {
      const Event& e = w.local[i];
      if (e.kind == EventKind::start) ++depth;
      if (e.kind == EventKind::end) --depth;
      if (depth == 0) keep_from = i + 1;
    }
    if (w.open != SIZE_MAX && w.open < keep_from) keep_from = w.open;
    w.local.erase(w.local.begin(), w.local.begin() + static_cast<ptrdiff_t>(keep_from));
    if (w.open != SIZE_MAX) w.open -= keep_from;
    w.halted = w.halted > keep_from ? w.halted - keep_from : 0;
    events_ -= keep_from + std::erase_if(w.recvs, [&](const Event& e) { return e.ts < t; });
  }
}

Trace Recorder::finish(int64_t cutoff) {
  Trace trace;
  trace.source = "<simulation>";
  for (Worker& w : workers_)
    if (w.open != SIZE_MAX) {
      w.local.erase(w.local.begin() + static_cast<ptrdiff_t>(w.open));
      --events_;
      w.open = SIZE_MAX;
    }
  if (cutoff != INT64_MAX) cut(cutoff);
  // k-way merge of 2 sorted runs per worker with a binary heap of run heads.
  struct Run {
    const Event* cur;
    const Event* end;
    uint32_t id;
  };
  std::vector<Run> runs;
  for (Worker& w : workers_) {
    for (std::vector<Event>* v : {&w.local, &w.recvs}) {
      auto by_ts = [](const Event& a, const Event& b) { return a.ts < b.ts; };
      if (!std::is_sorted(v->begin(), v->end(), by_ts))
        std::stable_sort(v->begin(), v->end(), by_ts);
      if (!v->empty())
        runs.push_back({v->data(), v->data() + v->size(), static_cast<uint32_t>(runs.size())});
    }
  }
  auto later = [](const Run& a, const Run& b) {
    return a.cur->ts != b.cur->ts ? a.cur->ts > b.cur->ts : a.id > b.id;
  };
  std::make_heap(runs.begin(), runs.end(), later);
  trace.events.reserve(events_);
  while (!runs.empty()) {
    std::pop_heap(runs.begin(), runs.end(), later);
    Run& r = runs.back();
    // Copy the run's events up to the next run head's time in one go.
    const int64_t limit = runs.size() > 1 ? runs.front().cur->ts : INT64_MAX;
    do {
      trace.events.push_back(*r.cur++);
    } while (r.cur != r.end && r.cur->ts < limit);
    if (r.cur == r.end)
      runs.pop_back();
    else
      std::push_heap(runs.begin(), runs.end(), later);
  }
  for (uint32_t i = 0; i < workers_.size(); ++i) trace.worker_names[i] = workers_[i].name;
  trace.operator_names = std::move(operator_names_);
  workers_.clear();
  by_name_.clear();
  operator_names_.clear();
  events_ = 0;
  return trace;
}

}  // namespace snailtrail::sim
