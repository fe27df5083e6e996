// Parking an idle worker until a message or progress arrives for it, or a timeout
// (docs/RUNTIME.md "Scaling and idle workers", issue #35).
//
// Every local worker has a ParkSlot. A sender that put a message into one of the worker's
// rings calls wake(); the worker reads seq() before a round and, if the round found
// nothing to do, park(seen, timeout) sleeps on a futex unless something was pushed since
// it read `seen`. The Dekker pair (sender: bump seq, then read sleeping; parker: set
// sleeping, then the futex compares seq) guarantees that a push after the round's read is
// either seen by the futex's comparison or wakes the sleeper: no lost wake-up, and a
// sender pays a futex call only while its receiver sleeps.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace snailtrail::flow {

struct alignas(64) ParkSlot {
  std::atomic<uint32_t> seq{0};       // bumped by every wake()
  std::atomic<uint32_t> sleeping{0};  // the owner is in (or entering) park()
  static_assert(sizeof(std::atomic<uint32_t>) == 4, "the futex word is 32 bits");

  uint32_t read() const { return seq.load(std::memory_order_seq_cst); }
  // Sender side, after its push: the owner sees the push in its next round.
  void wake() {
    seq.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping.load(std::memory_order_seq_cst))
      ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq), FUTEX_WAKE_PRIVATE, 1, nullptr,
                nullptr, 0);
  }
  // Owner side: sleeps at most `timeout_ns` unless seq moved past `seen` (a push since the
  // round's read). Returns true if it returned before the timeout for a wake (or a
  // spurious return), false on the timeout or when nothing needed waiting for.
  bool park(uint32_t seen, int64_t timeout_ns) {
    sleeping.store(1, std::memory_order_seq_cst);
    bool woken = false;
    if (seq.load(std::memory_order_seq_cst) == seen) {
      timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                  static_cast<long>(timeout_ns % 1'000'000'000)};
      const long r = ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq), FUTEX_WAIT_PRIVATE,
                               seen, &ts, nullptr, 0);
      woken = r == 0 || (r == -1 && errno != ETIMEDOUT);
    } else {
      woken = true;
    }
    sleeping.store(0, std::memory_order_relaxed);
    return woken;
  }
};

}  // namespace snailtrail::flow
