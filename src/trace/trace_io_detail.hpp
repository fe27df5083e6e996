// Internals shared by the JSONL and .snail readers/writers. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/big_vector.hpp"
#include "trace/trace.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail::detail {

// The .snail framing (docs/FORMATS.md), shared by the file reader/writer and the
// stream decoder.
namespace snail {
inline constexpr char kMagic[8] = {'S', 'N', 'A', 'I', 'L', 'T', 'R', 'C'};
inline constexpr uint32_t kVersion = 2;         // written: may end with an index block
inline constexpr uint32_t kVersionNoIndex = 1;  // still read (no index blocks)
inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kBlockHeaderSize = 16;
inline constexpr size_t kRecordSize = sizeof(Event);
inline constexpr uint32_t kBlockEvents = 1;
inline constexpr uint32_t kBlockMetadata = 2;
inline constexpr uint32_t kBlockIndex = 3;
// Stack samples of `run --profile` (src/flame/profile_io.hpp); version 2 files only, so
// that readers of version 1 refuse them with "unsupported version".
inline constexpr uint32_t kBlockProfile = 4;
inline constexpr uint32_t kCodecRaw = 0;
inline constexpr uint32_t kCodecZstd = 1;
// Limits of one block (docs/FORMATS.md), which bound the memory a reader needs per block,
// whatever its header or zstd frame claims: at most 2^18 records (10 MiB decoded) in an
// event block, at most 2^24 bytes (16 MiB) of payload in any block.
inline constexpr uint32_t kMaxBlockEvents = 1u << 18;
inline constexpr uint32_t kMaxBlockBytes = 1u << 24;
}  // namespace snail

// Decodes the .snail blocks in `bytes` (starting at a block header; `base` is their file
// offset, for error messages) into `into`, with the full validation of parse_snail.
// `index_allowed`: the file's version allows index blocks (they are skipped).
void decode_snail_blocks(std::span<const uint8_t> bytes, size_t base, const std::string& source,
                         bool index_allowed, Trace& into);

// parse_snail on a private read-only mapping of a file (MAP_PRIVATE, never written): the
// pages of its event blocks are given back to the kernel as they are decoded. Never for
// bytes in ordinary memory, which would read as zero afterwards.
Trace parse_snail_file_mapping(std::span<const uint8_t> bytes, const std::string& source);

// Bytes that must be readable (and zero) after the end of a buffer handed to
// parse_jsonl_padded; equal to SIMDJSON_PADDING.
inline constexpr size_t kJsonPadding = 64;

// The readers pre-fault what they are about to fill (trace/big_vector.hpp).
using big_memory::prefault;
using big_memory::reserve_prefaulted;

// parse_jsonl on a buffer that already has kJsonPadding readable bytes after data[len].
Trace parse_jsonl_padded(const char* data, size_t len, const std::string& source);

// Encodes a .snail file piece by piece into a caller's buffer (which the caller may drain
// between calls): the bytes of to_snail for the same trace when used as begin(), add()...,
// finish(). Implemented in snail.cpp.
class SnailEncoder {
 public:
  SnailEncoder(const SnailWriteOptions& options, std::string source);
  ~SnailEncoder();
  SnailEncoder(const SnailEncoder&) = delete;
  SnailEncoder& operator=(const SnailEncoder&) = delete;
  // Header, then (unless names_last) metadata, then profile blocks.
  void begin(std::string& out, const Trace& meta, bool names_last);
  void add(std::string& out, const Event* events, size_t n);
  // The last event block, the metadata if names_last (of `meta`), the index.
  void finish(std::string& out, const Trace* meta);
  uint64_t events() const { return events_; }

 private:
  void append(std::string& out, std::string_view bytes);
  void note_blocks(const std::string& out, size_t from);  // index entries of new blocks
  void flush_block(std::string& out);
  struct State;
  std::unique_ptr<State> s_;
  uint64_t events_ = 0;
};

// JSONL pieces of to_jsonl (jsonl.cpp): the metadata lines, and event lines (record
// numbers from `first_record` in errors).
void append_jsonl_metadata(std::string& out, const Trace& meta);
void append_jsonl_events(std::string& out, const Event* events, size_t n, uint64_t first_record,
                         const std::string& source);
// parse_jsonl_padded on whole lines numbered from `first_line`.
Trace parse_jsonl_chunk(const char* data, size_t len, const std::string& source,
                        uint64_t first_line);

// The semantic checks every event must pass, whatever format it came from. Returns nullptr
// for a valid event, else a static description of the first problem. `check_unset_zero`
// additionally requires optional fields whose flag is absent, and `reserved`, to be 0
// (binary records).
inline const char* check_event(const Event& e, bool check_unset_zero) {
  if (static_cast<unsigned>(e.activity) >= static_cast<unsigned>(kActivityTypeCount))
    return "activity out of range";
  if (static_cast<unsigned>(e.kind) >= static_cast<unsigned>(kEventKindCount))
    return "event kind out of range";
  if ((e.flags & ~kAllEventFlags) != 0) return "unknown flag bits set";
  if (e.is_message() != is_communication(e.activity)) {
    return e.is_message() ? "send/recv events need activity data_message or control_message"
                          : "start/end events need a worker-local activity, not a message type";
  }
  if (check_unset_zero) {
    if (!e.has(kHasOperator) && e.op != 0) return "operator is set but its flag is absent";
    if (!e.has(kHasCorrelator) && e.correlator != 0)
      return "correlator is set but its flag is absent";
    if (!e.has(kHasRemote) && e.remote != 0) return "remote is set but its flag is absent";
    if (!e.has(kHasRecords) && e.records != 0) return "records is set but its flag is absent";
    if (e.reserved != 0) return "reserved field must be 0";
  }
  return nullptr;
}

}  // namespace snailtrail::detail
