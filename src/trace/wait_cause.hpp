// What a kernel trace's pseudo-worker stands for (docs/KERNEL.md "CP across threads"). A
// thread woken by a timer, a block device, the network or an interrupt receives the
// wake-up from a pseudo-worker named "[cause]" or "[cause: interrupt context]"
// ("[timer]", "[block_device: irq 33 (nvme0q33)]", "[network: softirq NET_RX]"). The kernel
// stage writes these names (kernel/to_trace.hpp pseudo_worker_name); the verdict reads them
// back (summary/verdict.hpp) to say what the threads waited for. A thread's worker name
// is "comm:tid", which never ends in ']', so the names cannot be confused; they survive a
// conversion to .snail or JSONL with the worker names.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace snailtrail {

enum class WaitCause : uint8_t { none, timer, block_device, network, interrupt };
inline constexpr int kWaitCauseCount = 5;

// The cause's word in a pseudo-worker's name; "" for none.
inline constexpr std::array<std::string_view, kWaitCauseCount> kWaitCauseNames = {
    "", "timer", "block_device", "network", "interrupt"};

inline std::string_view name_of(WaitCause c) {
  return kWaitCauseNames[static_cast<int>(c)];
}

// The cause a worker named `name` stands for: none for anything but "[cause]" or
// "[cause: ...]" with one of the causes above.
inline WaitCause wait_cause_of(std::string_view name) {
  if (name.size() < 3 || name.front() != '[' || name.back() != ']') return WaitCause::none;
  std::string_view word = name.substr(1, name.size() - 2);
  if (const size_t colon = word.find(':'); colon != std::string_view::npos) {
    if (word.substr(colon).rfind(": ", 0) != 0) return WaitCause::none;
    word = word.substr(0, colon);
  }
  for (int c = 1; c < kWaitCauseCount; ++c)
    if (kWaitCauseNames[c] == word) return static_cast<WaitCause>(c);
  return WaitCause::none;
}

}  // namespace snailtrail
