// The workers and operators of a trace with per-worker event counts: what the PAG
// builder needs to lay out its arrays before it scans the events. A reader that touches
// every event anyway (the parallel .snail reader) counts on the fly; otherwise the PAG
// builder counts itself.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/event.hpp"

namespace snailtrail {

struct WorkerCensus {
  uint32_t events = 0, sends = 0, recvs = 0;
  WorkerCensus& operator+=(const WorkerCensus& o) {
    events += o.events;
    sends += o.sends;
    recvs += o.recvs;
    return *this;
  }
};

struct TraceCensus {
  size_t events = 0;  // how many events it counted (it describes a trace of this size)
  std::vector<std::pair<uint32_t, WorkerCensus>> workers;  // ascending worker id
  std::vector<uint32_t> operators;                         // ascending operator id
};

// Counts events one at a time; builders of disjoint parts of a trace merge into one.
class CensusBuilder {
 public:
  void add(const Event& e) {
    if (e.worker != last_id_ || !last_) {
      last_id_ = e.worker;
      last_ = &slot(e.worker);
    }
    ++last_->events;
    last_->sends += e.kind == EventKind::send;
    last_->recvs += e.kind == EventKind::recv;
    ++events_;
    if (e.has(kHasOperator)) {
      if (e.op < kSmallOp) {
        if (e.op >= op_seen_.size())
          op_seen_.resize(std::max<size_t>(e.op + 1, op_seen_.size() * 2), 0);
        op_seen_[e.op] = 1;
      } else {
        large_ops_.push_back(e.op);
      }
    }
  }

  void merge(const CensusBuilder& o);
  TraceCensus finish();

 private:
  static constexpr uint32_t kSmallId = 1u << 22, kSmallOp = 1u << 24;
  WorkerCensus& slot(uint32_t id) {
    if (id >= kSmallId) return large_[id];
    if (id >= small_.size()) small_.resize(std::max<size_t>(id + 1, small_.size() * 2));
    return small_[id];
  }

  size_t events_ = 0;
  std::vector<WorkerCensus> small_;  // by worker id, for ids below kSmallId
  std::unordered_map<uint32_t, WorkerCensus> large_;
  uint32_t last_id_ = 0;
  WorkerCensus* last_ = nullptr;  // slot of last_id_ (reset when small_ moves)
  std::vector<uint8_t> op_seen_;  // by operator id, for ids below kSmallOp
  std::vector<uint32_t> large_ops_;
};

}  // namespace snailtrail
