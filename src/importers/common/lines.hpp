// Splits a byte stream that arrives in pieces of any size into complete lines for the
// line-based importers (Spark event logs, OTLP/JSON lines), each readable by simdjson in
// place: SIMDJSON_PADDING bytes after a line's end are always readable. Lines are handed
// over from the caller's buffer when it extends far enough past them, else from one
// reused buffer: no allocation per line once the buffer has grown to the longest line.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace snailtrail::importers {

class LineSplitter {
 public:
  // Calls on_line(const char* data, size_t len, uint64_t line_no) for every line the
  // bytes complete (without its '\n'; line numbers from 1).
  template <class OnLine>
  void feed(std::string_view bytes, OnLine&& on_line) {
    size_t pos = 0;
    while (pos < bytes.size()) {
      const void* nl = std::memchr(bytes.data() + pos, '\n', bytes.size() - pos);
      if (!nl) {
        partial_.append(bytes.substr(pos));
        return;
      }
      const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - bytes.data());
      ++line_;
      if (!partial_.empty()) {
        partial_.append(bytes.substr(pos, end - pos));
        emit_partial(on_line);
      } else if (bytes.size() - end >= simdjson::SIMDJSON_PADDING) {
        on_line(bytes.data() + pos, end - pos, line_);
      } else {
        partial_.assign(bytes.substr(pos, end - pos));
        emit_partial(on_line);
      }
      pos = end + 1;
    }
  }

  // End of input: hands over the last line if it has no '\n' (true), e.g. a log cut
  // while it was being written.
  template <class OnLine>
  bool finish(OnLine&& on_line) {
    if (partial_.empty()) return false;
    ++line_;
    emit_partial(on_line);
    return true;
  }

  // Bytes of an unterminated line held back.
  size_t pending() const { return partial_.size(); }

 private:
  template <class OnLine>
  void emit_partial(OnLine&& on_line) {
    const size_t len = partial_.size();
    partial_.resize(len + simdjson::SIMDJSON_PADDING, '\0');
    on_line(partial_.data(), len, line_);
    partial_.clear();  // keeps its capacity
  }

  std::string partial_;
  uint64_t line_ = 0;
};

}  // namespace snailtrail::importers
