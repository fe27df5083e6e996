// Format dispatch for kernel traces (load.hpp).
#include "kernel/load.hpp"

#include <sys/stat.h>

#include <stdexcept>

#include "importers/importer.hpp"
#include "kernel/lttng_ctf.hpp"
#include "kernel/perf_script.hpp"
#include "trace/trace.hpp"

namespace snailtrail::kernel {

KernelModel load_kernel_model(const std::string& path, std::string_view format) {
  struct stat st {};
  const bool is_dir = path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (format == "auto") format = is_dir ? "lttng" : "perf-sched";
  if (format == "perf-sched") {
    const std::string bytes = importers::read_file_bytes(path);
    return build_model(parse_perf_script(bytes, path));
  }
  if (format == "lttng") return build_model(read_lttng_ctf(path));
  throw std::invalid_argument("unknown kernel trace format '" + std::string(format) +
                              "' (auto, perf-sched, lttng)");
}

}  // namespace snailtrail::kernel
