// Incremental decoding of a live trace stream (a TCP connection, a pipe, a growing
// file): bytes arrive in arbitrary pieces; complete JSONL lines and complete .snail
// blocks are decoded as soon as they are whole. The format is sniffed from the first
// bytes ("SNAILTRC" = the .snail framing, anything else = JSONL).
//
// Bad input never throws: malformed JSONL lines and .snail blocks whose content is
// invalid are skipped and counted; a .snail block header that makes no sense (the
// framing is lost, there is no way to resynchronize) stops the stream with a reason.
// A stream that ends inside a line or a block counts it as truncated; everything
// complete before it is kept.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace snailtrail {

struct StreamStats {
  uint64_t bytes = 0;
  uint64_t events = 0;
  uint64_t metadata = 0;    // worker/operator names
  uint64_t bad_lines = 0;   // JSONL lines skipped
  uint64_t bad_blocks = 0;  // .snail blocks skipped (invalid content)
  uint64_t truncated = 0;   // a partial line or block at the end of the stream
  std::string first_error;  // the first problem, with its position in the stream
};

class StreamDecoder {
 public:
  enum class Format { unknown, jsonl, snail };

  explicit StreamDecoder(std::string source) : source_(std::move(source)) {}

  // Decodes what `bytes` completes; new events and names are appended to `out`
  // (events in stream order). Returns false once the stream is broken (see `broken()`).
  // Stops decoding .snail blocks once a call has appended `output_limit()` events or more:
  // `more()` then says complete blocks wait, decoded by the next call (bytes may be empty).
  bool feed(std::span<const uint8_t> bytes, Trace& out);
  // End of stream: counts a partial trailing line or block.
  void finish(Trace& out);

  // Events one feed() appends before it stops at a block boundary (a block is decoded
  // whole, so up to one block more). Unlimited by default.
  void set_output_limit(size_t events) { output_limit_ = events; }
  size_t output_limit() const { return output_limit_; }
  bool more() const { return more_; }
  // Bytes received but not decoded yet.
  size_t buffered() const { return pending_.size(); }
  // Bytes the unit being received needs in total before it can be decoded: the .snail
  // header, a block header, or a block (header and payload, at most 16 + kMaxBlockBytes);
  // 0 for JSONL, whose lines have no announced size.
  size_t unit_bytes() const;

  Format format() const { return format_; }
  bool broken() const { return !broken_reason_.empty(); }
  const std::string& broken_reason() const { return broken_reason_; }
  const StreamStats& stats() const { return stats_; }

 private:
  void decode_jsonl(Trace& out, bool at_end);
  void decode_snail(Trace& out);
  void merge(Trace& from, Trace& out);
  void note(const std::string& what);

  std::string source_;
  Format format_ = Format::unknown;
  std::vector<uint8_t> pending_;  // bytes not decoded yet
  uint64_t consumed_ = 0;         // stream offset of pending_[0]
  uint64_t line_ = 1;             // JSONL: number of the first pending line
  bool header_seen_ = false;      // .snail: the 16-byte header was checked
  size_t output_limit_ = SIZE_MAX;
  bool more_ = false;
  std::string broken_reason_;
  StreamStats stats_;
};

}  // namespace snailtrail
