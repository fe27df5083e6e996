// Reading and writing traces in the native formats (docs/FORMATS.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "trace/trace.hpp"

namespace snailtrail {

// Parse JSONL text. `source` names the input in errors. Throws TraceError.
Trace parse_jsonl(std::string_view text, const std::string& source);

// Lenient JSONL for live streams: malformed lines are skipped and counted instead of
// stopping the parse. `first_line` numbers the first line (for messages).
struct LenientStats {
  uint64_t bad_lines = 0;
  std::string first_error;  // the first skipped line's problem
};
Trace parse_jsonl_lenient(std::string_view text, const std::string& source, LenientStats& stats,
                          uint64_t first_line = 1);

// Parse a .snail binary image. Throws TraceError naming the byte offset.
Trace parse_snail(std::span<const uint8_t> bytes, const std::string& source);

struct SnailWriteOptions {
  bool compress = false;  // zstd-compress event blocks
  int compression_level = 3;
  uint32_t events_per_block = 1u << 16;
  // 2: ends with a block index (docs/FORMATS.md) for seeking by time and bounded-memory
  // reads. 1: the format before the index (what older readers accept).
  uint32_t version = 2;
};

std::string to_jsonl(const Trace& trace);
std::string to_snail(const Trace& trace, const SnailWriteOptions& options = {});

// By extension: ".jsonl" (also ".json", ".ndjson") or ".snail"; anything else is an error.
TraceFormat format_from_path(const std::string& path);

// Read a whole file ("-" is stdin for JSONL). Throws TraceError.
Trace read_trace(const std::string& path);
// Read a whole file in the given format whatever its extension ("-" is stdin).
Trace read_trace(const std::string& path, TraceFormat format);
void write_trace(const Trace& trace, const std::string& path,
                 const SnailWriteOptions& options = {});

}  // namespace snailtrail
