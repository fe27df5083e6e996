// Buffered output to a file or stdout ("-" or empty), flushed in large chunks.
#pragma once

#include <fmt/format.h>
#include <sys/types.h>
#include <cerrno>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace snailtrail::cli {

class OutputFile {
 public:
  explicit OutputFile(const std::string& path) {
    if (path.empty() || path == "-") {
      file_ = stdout;
    } else {
      file_ = std::fopen(path.c_str(), "wb");
      if (!file_)
        throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
      owned_ = true;
    }
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() {
    try {
      flush();
    } catch (...) {
    }
    if (owned_) std::fclose(file_);
  }
  fmt::memory_buffer& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() > (1 << 20)) flush();
  }
  // The offset after everything written so far (flushed first).
  uint64_t position() {
    flush();
    const off_t at = ::ftello(file_);
    if (at < 0) throw std::runtime_error(fmt::format("cannot tell: {}", std::strerror(errno)));
    return static_cast<uint64_t>(at);
  }
  // Goes on writing at `offset` (flushed first).
  void seek(uint64_t offset) {
    flush();
    if (::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0)
      throw std::runtime_error(fmt::format("cannot seek: {}", std::strerror(errno)));
  }
  void flush() {
    if (buf_.size() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size())
      throw std::runtime_error("write failed");
    buf_.clear();
    std::fflush(file_);
  }

 private:
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  fmt::memory_buffer buf_;
};

}  // namespace snailtrail::cli
