// Message timing: every worker has one network interface that sends its messages one
// after the other at the configured bandwidth; a message arrives one latency after its
// last byte left. Messages between two workers therefore arrive in the order they were
// sent (FIFO channels), which in-band watermarks and progress messages rely on.
//
//   Network net(spec, workers);
//   int64_t at = net.arrival(sender, now, bytes);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/scenario.hpp"

namespace snailtrail::sim {

class Network {
 public:
  Network(const NetworkSpec& spec, size_t workers)
      : latency_(spec.latency_ns),
        ns_per_byte_(1e9 / spec.bytes_per_second),
        control_bytes_(spec.control_bytes),
        nic_free_(workers, 0) {}

  // Arrival time of `bytes` sent by `from` at `t` to a worker on another machine.
  int64_t arrival(uint32_t from, int64_t t, uint64_t bytes) {
    const int64_t start = std::max(t, nic_free_[from]);
    const auto transfer =
        static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * ns_per_byte_));
    nic_free_[from] = start + transfer;
    return start + transfer + latency_;
  }

  // Arrival of a message between workers that share memory: a fixed 1 us hand-over.
  static int64_t local_arrival(int64_t t) { return t + kLocalLatency; }

  uint32_t control_bytes() const { return control_bytes_; }
  int64_t latency() const { return latency_; }

  static constexpr int64_t kLocalLatency = 1'000;

 private:
  int64_t latency_;
  double ns_per_byte_;
  uint32_t control_bytes_;
  std::vector<int64_t> nic_free_;
};

}  // namespace snailtrail::sim
