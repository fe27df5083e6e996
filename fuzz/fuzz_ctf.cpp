// libFuzzer target for the CTF reader (LTTng kernel traces and perf's CTF, src/kernel
// lttng_ctf.cpp, through libbabeltrace2). An input is a trace directory in one buffer:
// the `metadata` text, a NUL byte, then the bytes of one stream file (no NUL: metadata
// only). TraceError is the only acceptable failure; whatever is read must build a model
// whose critical paths partition their range, and whose trace the PAG builder accepts.
// It reads in process (read_lttng_ctf_in_process), so that libFuzzer sees the reader's
// coverage: babeltrace2's own aborts on damaged streams (which read_lttng_ctf turns into
// errors by reading in a child process) stop it; run it with -fork=1 -ignore_crashes=1.
// Seeds: traces written by tests/kernel_ctf_writer.py (docs/FUZZING.md).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "kernel/critical_path.hpp"
#include "kernel/lttng_ctf.hpp"
#include "kernel/model.hpp"
#include "kernel/to_trace.hpp"
#include "pag/timeline.hpp"

namespace {

// One directory per fuzzing process, rewritten for every input.
const std::string& trace_dir() {
  static const std::string dir = [] {
    std::string d = "/tmp/snailtrail-fuzz-ctf-" + std::to_string(::getpid());
    std::string cmd = "mkdir -p '" + d + "'";
    if (std::system(cmd.c_str()) != 0) std::abort();
    return d;
  }();
  return dir;
}

void write_file(const std::string& path, const char* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data, static_cast<std::streamsize>(size));
}

void check_model(const snailtrail::kernel::KernelModel& model) {
  using namespace snailtrail;
  for (size_t t = 0; t < model.threads.size() && t < 8; ++t) {
    const kernel::CriticalPathResult r =
        kernel::critical_path(model, static_cast<int32_t>(t), model.begin, model.end);
    int64_t at = model.begin;
    for (const kernel::PathSegment& s : r.path) {
      if (s.start != at || s.end <= s.start) std::abort();
      at = s.end;
    }
    if (model.end > model.begin && at != model.end) std::abort();
  }
  const Trace trace = kernel::to_trace(model);
  if (!trace.events.empty()) (void)build_pag(trace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace snailtrail;
  if (!kernel::have_lttng_reader()) return 0;
  const char* bytes = reinterpret_cast<const char*>(data);
  const void* nul = std::memchr(bytes, 0, size);
  const size_t meta = nul ? static_cast<size_t>(static_cast<const char*>(nul) - bytes) : size;
  const std::string& dir = trace_dir();
  write_file(dir + "/metadata", bytes, meta);
  if (nul)
    write_file(dir + "/stream", bytes + meta + 1, size - meta - 1);
  else
    std::remove((dir + "/stream").c_str());
  kernel::KernelEvents events;
  try {
    events = kernel::read_lttng_ctf_in_process(dir);
  } catch (const TraceError&) {
    return 0;
  }
  check_model(kernel::build_model(std::move(events)));
  return 0;
}
