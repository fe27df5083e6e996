// Exactly-once window output across restarts (`serve --nats`, docs/SERVE.md "Through NATS
// JetStream"): the windows already in --out are found from its last complete line, and a
// line torn by a crash is cut off, so that the restarted server appends after it.
#pragma once

#include <cstdint>
#include <string>

namespace snailtrail::serve {

// Index of the last window in `path` (for an `empty_windows` record, the last window of
// its run), or -1 when the file does not exist or holds no complete line. Truncates the
// file after its last newline. Throws std::runtime_error naming the file and the byte
// offset when the last complete line is not a window line.
int64_t resume_window_output(const std::string& path);

}  // namespace snailtrail::serve
