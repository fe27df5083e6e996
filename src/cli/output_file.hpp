// Buffered output to a file or stdout ("-" or empty), flushed in large chunks.
#pragma once

#include <fmt/format.h>
#include <cerrno>
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
