// The thread-state model of a kernel trace (docs/KERNEL.md "Model"): per thread, the
// intervals it spent running, preempted (runnable, waiting for a CPU) and blocked, each
// blocked interval labelled by what ended it — a timer, a device (block I/O completion),
// the network (packet reception), an interrupt, or the thread that woke it.
//
// Invariants: a thread's intervals are sorted, do not overlap and have end > start; a
// blocked interval woken by a thread has waker >= 0 and ends at the wake-up time; a wait
// whose end was not seen (trace end, missed wake-up) has cause `none` and shows as
// `blocked` (unresolved). Time before a thread's first event is not modelled (`unknown`).
// A wait ended by a packet (cause `network`) whose sending was traced (on this host or,
// with several hosts' traces, on another) names the sending thread as `waker` and the
// send time as `sent` (<= end).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernel/irq_context.hpp"
#include "kernel/kernel_event.hpp"

namespace snailtrail::kernel {

enum class ThreadState : uint8_t { running, preempted, blocked };

// What ended a blocked interval.
enum class WakeCause : uint8_t { none, thread, timer, block_device, network, interrupt };

struct Interval {
  int64_t start = 0;
  int64_t end = 0;
  int64_t sent = INT64_MIN;  // cause == network with waker >= 0: when the packet was sent
  int32_t waker = -1;        // thread index when cause == thread (or a packet's sender)
  ThreadState state = ThreadState::running;
  WakeCause cause = WakeCause::none;
  IrqContext irq;  // blocked, woken from an interrupt: which one
};

struct Thread {
  int32_t tid = 0;
  uint16_t host = 0;          // index in KernelModel::hosts
  uint32_t comm = 0;          // string id (latest comm seen)
  int32_t parent = -1;        // thread index of the forking thread, if the fork was seen
  int64_t birth = INT64_MIN;  // fork time, if seen
  std::vector<Interval> intervals;
};

struct KernelModel {
  std::vector<Thread> threads;           // a tid reused after its thread died gets a new entry
  std::vector<std::string> hosts;        // machine names (one entry or none: one machine)
  std::vector<int64_t> host_offsets_ns;  // per host: added to its clock (host 0: 0)
  uint64_t packets_matched = 0;          // packet wake-ups whose sender was found
  StringTable strings;
  Counters diagnostics;  // the reader's and the model's
  std::string source;
  int64_t begin = 0, end = 0;  // first and last event time
  uint64_t events = 0;
  uint64_t wakeups = 0;  // wake-ups that ended a blocked interval

  const std::string& comm(int32_t thread) const { return strings.str(threads[thread].comm); }
  bool multi_host() const { return hosts.size() > 1; }
  // "comm:tid", or "host/comm:tid" when the model holds several machines.
  std::string thread_label(int32_t thread) const;
  // Thread indices with this tid (several if the tid was reused), in order of appearance.
  std::vector<int32_t> find_tid(int32_t tid) const;
  // Thread indices whose comm equals `name`.
  std::vector<int32_t> find_comm(std::string_view name) const;
};

// Replays events (sorted by time) through a per-CPU state machine. Inconsistencies
// (a thread switched in while we believed it blocked, unbalanced irq exits, ...) are
// repaired and counted in diagnostics under "kernel.*". With several hosts, their clocks
// are first aligned by the packets seen on both sides (align_host_clocks).
KernelModel build_model(KernelEvents&& events);

// Estimates each host's clock offset to host 0 from packets sent on one host and received
// on the other (the minimum one-way delays both ways: offset = (min a->b - min b->a) / 2,
// assuming symmetric minimum delays), shifts every host's events by it and re-sorts.
// Hosts without packets both ways to an aligned host keep offset 0 (counted under
// "kernel.host_clock_not_aligned"). Returns the offsets added, per host.
std::vector<int64_t> align_host_clocks(KernelEvents& events);

// build_model one event at a time (streaming: `serve --follow` of a perf script text).
// Events must come in time order; a thread's intervals only ever grow at the end, a
// blocked interval appearing when its wake-up is fed. Host clocks are not aligned.
class Builder;
class ModelBuilder {
 public:
  ModelBuilder();
  ~ModelBuilder();
  void feed(const KEvent& e);
  void finish();                     // ends the intervals still open at the last event's time
  const KernelModel& model() const;  // threads and intervals so far (strings: the reader's)
  Counters& diagnostics();
  const Counters& diagnostics() const;

 private:
  std::unique_ptr<Builder> b_;
};

std::string_view name_of(ThreadState s);
std::string_view name_of(WakeCause c);

}  // namespace snailtrail::kernel
