// The kernel model as a snailtrail trace (docs/KERNEL.md "CP across threads"), so that
// `analyze`, `report` and `serve` run on kernel traces:
//   thread            -> worker "comm:tid"; running -> processing, operator = comm;
//   preempted         -> scheduling; blocked -> waiting;
//   wake-up by thread -> control_message from the waker to the wakee at the wake-up time;
//   wake-up by timer, device, network or interrupt -> control_message from the
//                        pseudo-worker "[timer]", "[block_device]", "[network]" or
//                        "[interrupt]", which is busy with `io` over the whole trace.
// The model's diagnostics become the trace's import diagnostics ("perf.*", "kernel.*").
#pragma once

#include "kernel/model.hpp"
#include "trace/trace.hpp"

namespace snailtrail::kernel {

Trace to_trace(const KernelModel& model);

}  // namespace snailtrail::kernel
