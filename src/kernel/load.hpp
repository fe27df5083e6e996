// Loads a kernel trace into the thread-state model, whatever its format (docs/KERNEL.md):
// `perf script` text, or an LTTng CTF trace directory (when built with libbabeltrace2).
#pragma once

#include <string>
#include <string_view>

#include "kernel/model.hpp"

namespace snailtrail::kernel {

// format: "auto" (a directory = CTF, else perf script text), "perf-sched" or "lttng".
// Throws TraceError for unreadable input, std::invalid_argument for an unknown format.
KernelModel load_kernel_model(const std::string& path, std::string_view format = "auto");

}  // namespace snailtrail::kernel
