// The discrete-event loop's agenda: a binary heap of (time, sequence) entries. Equal
// times pop in insertion order, so a run is deterministic. Entries are plain values
// (no allocation per event once the heap has grown).
//
//   EventQueue q;
//   q.push(100, kWake, worker);
//   while (!q.empty()) { SimEvent e = q.pop(); ... }
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace snailtrail::sim {

struct SimEvent {
  int64_t time;
  uint64_t seq;
  uint32_t kind;  // engine-defined
  uint32_t arg;   // engine-defined (worker, message slot, ...)
};

class EventQueue {
 public:
  void push(int64_t time, uint32_t kind, uint32_t arg) {
    heap_.push_back({time, seq_++, kind, arg});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  SimEvent pop() {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    SimEvent e = heap_.back();
    heap_.pop_back();
    return e;
  }
  const SimEvent& top() const { return heap_.front(); }  // the next to pop; not empty
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }

 private:
  static bool later(const SimEvent& a, const SimEvent& b) {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
  std::vector<SimEvent> heap_;
  uint64_t seq_ = 0;
};

}  // namespace snailtrail::sim
