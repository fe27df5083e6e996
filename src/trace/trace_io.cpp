// File-level trace I/O: format by extension, whole-file reads, stdin/stdout as "-".
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

constexpr std::string_view kStdinName = "<stdin>";
constexpr std::string_view kSnailMagic = "SNAILTRC";

// A file's bytes followed by at least kJsonPadding readable zero bytes (so JSONL parses
// without a copy): either a heap buffer or a read-only memory map.
struct PaddedBuffer {
  std::unique_ptr<char[]> heap;
  void* map = nullptr;
  size_t map_len = 0;
  const char* data = nullptr;
  size_t size = 0;

  PaddedBuffer() = default;
  PaddedBuffer(const PaddedBuffer&) = delete;
  PaddedBuffer& operator=(const PaddedBuffer&) = delete;
  PaddedBuffer(PaddedBuffer&& o) noexcept
      : heap(std::move(o.heap)), map(o.map), map_len(o.map_len), data(o.data), size(o.size) {
    o.map = nullptr;
  }
  ~PaddedBuffer() {
    if (map) ::munmap(map, map_len);
  }
};

// Maps a regular file of `size` bytes (> 0) read-only, followed by anonymous zero pages so
// that the padding after the last byte is readable. Populating the mapping up front costs far
// less than copying the file (no page faults on a fresh buffer). Returns false if the kernel
// refuses; the caller then reads the file instead.
bool map_file(int fd, size_t size, PaddedBuffer& buf) {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return false;
  const size_t page = static_cast<size_t>(page_size);
  if (size > std::numeric_limits<size_t>::max() - detail::kJsonPadding - page) return false;
  const size_t total = (size + detail::kJsonPadding + page - 1) / page * page;
  void* base = ::mmap(nullptr, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return false;
  // Bytes of the last file page past the end of the file read as zero.
  void* file = ::mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0);
  if (file == MAP_FAILED) {
    ::munmap(base, total);
    return false;
  }
  buf.map = base;
  buf.map_len = total;
  buf.data = static_cast<const char*>(base);
  buf.size = size;
  return true;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

std::string errno_text(int err) {
  return std::strerror(err);
}

// Reads until EOF. `size_hint` (the size of a regular file) makes the common case a single
// read into a buffer of exactly the right size.
PaddedBuffer read_all(int fd, const std::string& name, size_t size_hint) {
  constexpr size_t kPad = detail::kJsonPadding;
  size_t capacity = size_hint > 0 ? size_hint + 1 : size_t{1} << 16;
  PaddedBuffer buf;
  buf.heap.reset(new char[capacity + kPad]);
  for (;;) {
    if (buf.size == capacity) {
      // Input larger than expected (a pipe, or a file that grew): double the buffer.
      const size_t bigger = capacity * 2;
      std::unique_ptr<char[]> data(new char[bigger + kPad]);
      std::memcpy(data.get(), buf.heap.get(), buf.size);
      buf.heap = std::move(data);
      capacity = bigger;
    }
    const ssize_t got = ::read(fd, buf.heap.get() + buf.size, capacity - buf.size);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw TraceError(name, "cannot read", errno_text(errno));
    }
    if (got == 0) break;
    buf.size += static_cast<size_t>(got);
  }
  std::memset(buf.heap.get() + buf.size, 0, kPad);
  buf.data = buf.heap.get();
  return buf;
}

void write_all(int fd, std::string_view data, const std::string& name) {
  while (!data.empty()) {
    const ssize_t put = ::write(fd, data.data(), data.size());
    if (put < 0) {
      if (errno == EINTR) continue;
      throw TraceError(name, "cannot write", errno_text(errno));
    }
    data.remove_prefix(static_cast<size_t>(put));
  }
}

Trace parse_buffer(const PaddedBuffer& buf, TraceFormat format, const std::string& source) {
  if (format == TraceFormat::snail) {
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(buf.data), buf.size);
    // A mapped file's pages are given back as its blocks are decoded.
    return buf.map ? detail::parse_snail_file_mapping(bytes, source) : parse_snail(bytes, source);
  }
  return detail::parse_jsonl_padded(buf.data, buf.size, source);
}

}  // namespace

TraceFormat format_from_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string_view file = slash == std::string::npos
                                    ? std::string_view(path)
                                    : std::string_view(path).substr(slash + 1);
  const size_t dot = file.find_last_of('.');
  if (dot == std::string_view::npos || dot == 0) {
    throw TraceError(path, "file name",
                     "no file extension to tell the format (expected .jsonl or .snail)");
  }
  std::string ext(file.substr(dot));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".jsonl" || ext == ".json" || ext == ".ndjson") return TraceFormat::jsonl;
  if (ext == ".snail") return TraceFormat::snail;
  throw TraceError(
      path, "file name",
      "unknown extension \"" + std::string(file.substr(dot)) + "\" (expected .jsonl or .snail)");
}

Trace read_trace(const std::string& path) {
  if (path == "-") {
    const std::string source(kStdinName);
    const PaddedBuffer buf = read_all(STDIN_FILENO, source, 0);
    // stdin is JSONL; a .snail image piped in is recognised by its magic.
    const bool snail = buf.size >= kSnailMagic.size() &&
                       std::string_view(buf.data, kSnailMagic.size()) == kSnailMagic;
    return parse_buffer(buf, snail ? TraceFormat::snail : TraceFormat::jsonl, source);
  }
  return read_trace(path, format_from_path(path));
}

Trace read_trace(const std::string& path, TraceFormat format) {
  if (path == "-") {
    const std::string source(kStdinName);
    return parse_buffer(read_all(STDIN_FILENO, source, 0), format, source);
  }
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw TraceError(path, "cannot open", errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw TraceError(path, "cannot stat", errno_text(errno));
  if (S_ISDIR(st.st_mode)) throw TraceError(path, "cannot read", errno_text(EISDIR));
  const size_t hint = S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<size_t>(st.st_size) : 0;
  PaddedBuffer mapped;
  if (hint > 0 && map_file(fd.get(), hint, mapped)) return parse_buffer(mapped, format, path);
  return parse_buffer(read_all(fd.get(), path, hint), format, path);
}

void write_trace(const Trace& trace, const std::string& path, const SnailWriteOptions& options) {
  if (!trace.profile_blocks.empty() &&
      (path == "-" || format_from_path(path) == TraceFormat::jsonl))
    throw TraceError(path, "cannot write", "the trace holds a profile, which only .snail can hold");
  if (path == "-") {
    write_all(STDOUT_FILENO, to_jsonl(trace), "<stdout>");
    return;
  }
  const TraceFormat format = format_from_path(path);
  const std::string data =
      format == TraceFormat::snail ? to_snail(trace, options) : to_jsonl(trace);
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw TraceError(path, "cannot create", errno_text(errno));
  write_all(fd.get(), data, path);
  if (::close(fd.release()) != 0) throw TraceError(path, "cannot write", errno_text(errno));
}

}  // namespace snailtrail
