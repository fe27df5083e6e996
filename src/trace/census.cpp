#include "trace/census.hpp"

#include <algorithm>

namespace snailtrail {

void CensusBuilder::merge(const CensusBuilder& o) {
  events_ += o.events_;
  if (o.small_.size() > small_.size()) small_.resize(o.small_.size());
  for (size_t id = 0; id < o.small_.size(); ++id) small_[id] += o.small_[id];
  for (const auto& [id, c] : o.large_) large_[id] += c;
  if (o.op_seen_.size() > op_seen_.size()) op_seen_.resize(o.op_seen_.size(), 0);
  for (size_t op = 0; op < o.op_seen_.size(); ++op) op_seen_[op] |= o.op_seen_[op];
  large_ops_.insert(large_ops_.end(), o.large_ops_.begin(), o.large_ops_.end());
  last_ = nullptr;
}

TraceCensus CensusBuilder::finish() {
  TraceCensus c;
  c.events = events_;
  for (uint32_t id = 0; id < small_.size(); ++id)
    if (small_[id].events > 0) c.workers.emplace_back(id, small_[id]);
  std::vector<std::pair<uint32_t, WorkerCensus>> large(large_.begin(), large_.end());
  std::sort(large.begin(), large.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  c.workers.insert(c.workers.end(), large.begin(), large.end());
  for (uint32_t op = 0; op < op_seen_.size(); ++op)
    if (op_seen_[op]) c.operators.push_back(op);
  std::sort(large_ops_.begin(), large_ops_.end());
  large_ops_.erase(std::unique(large_ops_.begin(), large_ops_.end()), large_ops_.end());
  c.operators.insert(c.operators.end(), large_ops_.begin(), large_ops_.end());
  return c;
}

}  // namespace snailtrail
