// CTF trace directories on disk, without babeltrace2: telling one from other
// directories (input detection) and checking its stream files.
#pragma once

#include <string>

#include "kernel/kernel_event.hpp"

namespace snailtrail::kernel {

// Whether `path` is a directory holding a CTF trace: a `metadata` file in it or in a
// directory below it (an LTTng session: kernel/, ust/uid/...).
bool is_ctf_directory(const std::string& path);

// The stream files of the trace directory `trace` that are empty (0 bytes): babeltrace2
// skips them without a word, and with them a CPU's events. Each is counted in
// out.diagnostics (`lttng.empty_stream`) and named in out.warnings.
void check_empty_streams(const std::string& trace, KernelEvents& out);

}  // namespace snailtrail::kernel
