// The kernel model as a snailtrail trace (docs/KERNEL.md "CP across threads"), so that
// `analyze`, `report` and `serve` run on kernel traces:
//   thread            -> worker "comm:tid"; running -> processing, operator = comm;
//   preempted         -> scheduling; blocked -> waiting;
//   wake-up by thread -> control_message from the waker to the wakee at the wake-up time;
//   wake-up by timer, device, network or interrupt -> control_message from the
//                        pseudo-worker of that cause and interrupt context ("[timer]",
//                        "[interrupt: irq 16 (ahci)]", "[network: softirq NET_RX]", ...:
//                        pseudo_worker_name), busy with `io` over the whole trace.
// The model's diagnostics become the trace's import diagnostics ("perf.*", "kernel.*").
#pragma once

#include <string>
#include <utility>

#include "kernel/model.hpp"
#include "trace/trace.hpp"
#include "trace/wait_cause.hpp"

namespace snailtrail::kernel {

Trace to_trace(const KernelModel& model);

// The start and end events of one thread-state interval on worker `w` (`op`: the
// operator of a running interval), shared with the streaming reader (perf_stream.hpp).
// A pseudo-worker: the cause of a wake-up not done by a thread, with the interrupt
// context it fired in (one pseudo-worker per IRQ or softirq, as Trace Compass names them).
struct PseudoKey {
  WakeCause cause = WakeCause::none;
  IrqContext irq;
  bool operator==(const PseudoKey&) const = default;
  bool operator<(const PseudoKey& o) const {
    if (cause != o.cause) return cause < o.cause;
    if (irq.kind != o.irq.kind) return irq.kind < o.irq.kind;
    if (irq.num != o.irq.num) return irq.num < o.irq.num;
    return irq.name < o.irq.name;
  }
};

// "[cause]", or "[cause: irq label]" when the interrupt context is known
// ("[interrupt: irq 16 (ahci)]", "[timer: softirq TIMER]"; an hrtimer is "[timer]"): the
// names trace/wait_cause.hpp reads back (wait_cause_of), so the verdict can say what the
// threads waited for.
std::string pseudo_worker_name(const PseudoKey& k, const StringTable& strings);
// The cause of a wake-up by anything but a thread, as trace/wait_cause.hpp names it (none
// for `none` and `thread`).
WaitCause wait_cause(WakeCause c);

std::pair<Event, Event> interval_events(const Interval& iv, uint32_t w, uint32_t op);

// The order of a worker's events at one instant (lower first): a waker's send inside
// the interval that ends there, then the end, the receive of a wake-up, the next
// interval's start (so a wake-up at the very end of a running slice stays inside it).
inline int instant_order(EventKind kind) {
  switch (kind) {
    case EventKind::send:
      return 0;
    case EventKind::end:
      return 1;
    case EventKind::recv:
      return 2;
    case EventKind::start:
      return 3;
  }
  return 3;
}

}  // namespace snailtrail::kernel
