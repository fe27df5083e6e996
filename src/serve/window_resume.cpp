#include "serve/window_resume.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace snailtrail::serve {
namespace {

// The last line is looked for in at most this much of the file's end.
constexpr off_t kTailBytes = off_t{64} << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("cannot resume the windows in " + path + ": " + what);
}

int64_t window_index(const std::string& path, std::string_view line, off_t offset) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string where = " (line at byte offset " + std::to_string(offset) + ")";
  if (parser.parse(line.data(), line.size()).get(doc))
    fail(path, "the last line is not JSON" + where);
  int64_t index = 0, count = 0;
  if (!doc["window"]["index"].get(index)) return index;
  if (!doc["empty_windows"]["first_index"].get(index) && !doc["empty_windows"]["count"].get(count))
    return index + count - 1;
  fail(path, "the last line is not a window of `serve`/`analyze --format jsonl`" + where);
}

}  // namespace

int64_t resume_window_output(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    fail(path, std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail(path, std::strerror(errno));
  }
  const off_t from = st.st_size > kTailBytes ? st.st_size - kTailBytes : 0;
  std::vector<char> tail(static_cast<size_t>(st.st_size - from));
  if (::pread(fd, tail.data(), tail.size(), from) != static_cast<ssize_t>(tail.size())) {
    ::close(fd);
    fail(path, "short read");
  }
  std::string_view text(tail.data(), tail.size());
  const size_t end = text.rfind('\n');
  if (end == std::string_view::npos && from > 0) {
    ::close(fd);
    fail(path, "no line end in its last 64 MiB");
  }
  // A line torn by a crash (no newline yet) is cut off: its window is written again.
  const off_t keep = end == std::string_view::npos ? 0 : from + static_cast<off_t>(end) + 1;
  if (keep < st.st_size && ::ftruncate(fd, keep) != 0) {
    ::close(fd);
    fail(path, std::string("cannot cut the torn last line: ") + std::strerror(errno));
  }
  ::close(fd);
  if (end == std::string_view::npos) return -1;
  const size_t start = end == 0 ? 0 : text.rfind('\n', end - 1);
  const size_t first = start == std::string_view::npos || end == 0 ? 0 : start + 1;
  return window_index(path, text.substr(first, end - first), from + static_cast<off_t>(first));
}

}  // namespace snailtrail::serve
