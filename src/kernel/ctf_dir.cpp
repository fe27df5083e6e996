// CTF trace directories on disk (ctf_dir.hpp).
#include "kernel/ctf_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

namespace snailtrail::kernel {

bool is_ctf_directory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return false;
  if (fs::is_regular_file(fs::path(path) / "metadata", ec)) return true;
  // A session: kernel/metadata, ust/uid/1000/64-bit/metadata; a few levels at most.
  auto it = fs::recursive_directory_iterator(path, ec);
  for (int seen = 0; !ec && it != fs::end(it) && seen < 10000; it.increment(ec), ++seen) {
    if (it.depth() >= 5) it.disable_recursion_pending();
    std::error_code file_ec;
    if (it->path().filename() == "metadata" && it->is_regular_file(file_ec)) return true;
  }
  return false;
}

void check_empty_streams(const std::string& trace, KernelEvents& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> empty;
  for (auto it = fs::directory_iterator(trace, ec); !ec && it != fs::end(it); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code file_ec;
    if (name == "metadata" || name.starts_with(".") || !it->is_regular_file(file_ec)) continue;
    if (it->file_size(file_ec) == 0 && !file_ec) empty.push_back(it->path().string());
  }
  std::sort(empty.begin(), empty.end());
  for (const std::string& file : empty) {
    out.diagnostics.add("lttng.empty_stream");
    out.warnings.push_back(file +
                           " is empty (0 bytes): the events of its stream (one CPU) are "
                           "missing; the trace was cut or not flushed");
  }
}

}  // namespace snailtrail::kernel
