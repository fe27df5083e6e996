// Format dispatch for kernel traces (load.hpp).
#include "kernel/load.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "kernel/lttng_ctf.hpp"
#include "kernel/perf_script.hpp"
#include "trace/trace.hpp"

namespace snailtrail::kernel {
namespace {

// The whole file ("-" = stdin).
std::string read_bytes(const std::string& path) {
  FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) throw TraceError(path, "cannot open", std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f);
  if (f != stdin) std::fclose(f);
  if (failed) throw TraceError(path, "cannot read", std::strerror(errno));
  return bytes;
}

}  // namespace

KernelModel load_kernel_model(const std::string& path, std::string_view format) {
  struct stat st {};
  const bool is_dir = path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (format == "auto") format = is_dir ? "lttng" : "perf-sched";
  if (format == "perf-sched") {
    const std::string bytes = read_bytes(path);
    return build_model(parse_perf_script(bytes, path));
  }
  if (format == "lttng") {
    KernelEvents events = read_lttng_ctf(path);
    for (const std::string& w : events.warnings)
      std::fprintf(stderr, "snailtrail: warning: %s\n", w.c_str());
    return build_model(std::move(events));
  }
  throw std::invalid_argument("unknown kernel trace format '" + std::string(format) +
                              "' (auto, perf-sched, lttng)");
}

}  // namespace snailtrail::kernel
