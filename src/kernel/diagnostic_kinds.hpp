// The kinds of the kernel importers' diagnostics (trace/diagnostic_kind.hpp): those of the
// `perf script` reader, of the LTTng reader and of the model both feed. The readers and
// the model count them by name; tests/test_diagnostic_kinds.cpp checks that every kind
// they count is declared here.
#pragma once

#include <array>

#include "trace/diagnostic_kind.hpp"

namespace snailtrail::kernel {

// `perf script` text (perf_script.cpp, perf_stream.cpp).
inline constexpr DiagnosticKind kPerfTruncatedLastLine = cut_input("perf.truncated_last_line");
inline constexpr DiagnosticKind kPerfOutOfOrder = repaired("perf.out_of_order");
inline constexpr DiagnosticKind kPerfUnknownEvent = repaired("perf.unknown_event");
inline constexpr DiagnosticKind kPerfSwitchPrevNotCurrent =
    repaired("perf.switch_prev_not_current");
inline constexpr DiagnosticKind kPerfForkParentNotCurrent =
    repaired("perf.fork_parent_not_current");
inline constexpr DiagnosticKind kPerfSkippedLine = repaired("perf.skipped_line");
inline constexpr DiagnosticKind kPerfStreamOutOfOrder = repaired("perf.stream_out_of_order");
inline constexpr std::array kPerfKinds = {
    kPerfTruncatedLastLine,    kPerfOutOfOrder,  kPerfUnknownEvent,     kPerfSwitchPrevNotCurrent,
    kPerfForkParentNotCurrent, kPerfSkippedLine, kPerfStreamOutOfOrder,
};

// LTTng CTF (lttng_ctf.cpp): babeltrace2 reports a cut stream as an error; a stream file
// of 0 bytes (a CPU's events lost) is counted as cut input.
inline constexpr std::array kLttngKinds = {
    repaired("lttng.too_many_hosts"),     repaired("lttng.unknown_event"),
    repaired("lttng.event_without_time"), repaired("lttng.missing_field"),
    repaired("lttng.discarded_events"),   repaired("lttng.discarded_packets"),
    repaired("lttng.out_of_order"),       cut_input("lttng.empty_stream"),
};

// The model (model.cpp): what it repaired in the events of either reader.
inline constexpr std::array kModelKinds = {
    repaired("kernel.packet_sender_not_traced"),
    repaired("kernel.running_without_switch_in"),
    repaired("kernel.running_without_wakeup"),
    repaired("kernel.switch_inside_interrupt"),
    repaired("kernel.current_changed_without_switch"),
    repaired("kernel.switch_in_without_wakeup"),
    repaired("kernel.switch_in_while_running"),
    repaired("kernel.interrupt_nesting_too_deep"),
    repaired("kernel.unbalanced_interrupt_exit"),
    repaired("kernel.host_clock_not_aligned"),
};

// What each importer declares (its Importer descriptor's `diagnostics`).
inline constexpr auto kPerfSchedDiagnostics = join_kinds(kPerfKinds, kModelKinds);
inline constexpr auto kLttngDiagnostics = join_kinds(kLttngKinds, kModelKinds);

}  // namespace snailtrail::kernel
