// Reader for LTTng kernel traces (CTF) through libbabeltrace2 (docs/KERNEL.md "LTTng"):
// a graph source.ctf.fs -> flt.utils.muxer -> our sink, which keeps the events the model
// uses (sched_switch, sched_waking/wakeup/wakeup_new, sched_process_fork/exit,
// irq_handler_*, irq_softirq_*, timer_hrtimer_expire_*, block_rq_*, net_dev_queue,
// netif_receive_skb, lttng_statedump_process_state) with their payload fields, the CPU
// from the packet context's cpu_id, and the running thread per CPU from sched_switch
// (or an event context `tid`/`_tid` field when the session added one).
//
// perf's CTF (`perf data convert --to-ctf`) is read the same way: its event classes are
// named "sched:sched_switch", ..., its payloads carry the kernel's field names (prev_pid,
// next_pid, pid, parent_pid, child_pid) and the sample's thread as `perf_tid`.
#pragma once

#include <string>

#include "kernel/ctf_dir.hpp"
#include "kernel/kernel_event.hpp"

namespace snailtrail::kernel {

// Whether this build reads CTF (libbabeltrace2 was found at configure time).
bool have_lttng_reader();

// Reads the CTF trace(s) under `path` (a trace directory, or a session directory holding
// several: every directory with a `metadata` file is read). Throws TraceError naming the
// path and babeltrace2's own error (truncated stream, bad metadata, ...). Events of other
// names are counted (`lttng.unknown_event`), discarded-event records too
// (`lttng.discarded_events`), payloads without the fields an event needs are counted
// (`lttng.missing_field`), stream files of 0 bytes are counted (`lttng.empty_stream`) and
// named in `warnings`. A trace without any event the model uses is refused (TraceError
// naming the event classes it holds).
//
// The trace is read in a child process (ctf_child.cpp): babeltrace2 2.0 aborts the process
// on some damaged stream files instead of returning an error (an assertion on a packet
// context's content_size >= 2^63, found by fuzz/fuzz_ctf.cpp), and bad input must never
// crash snailtrail. A child that dies is a TraceError naming the path and the signal.
KernelEvents read_lttng_ctf(const std::string& path);

// The same, in this process (a damaged trace may abort it): for the child and fuzz_ctf.
KernelEvents read_lttng_ctf_in_process(const std::string& path);

}  // namespace snailtrail::kernel
