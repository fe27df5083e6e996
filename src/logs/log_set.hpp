// Plain-text logs of one or more nodes -> records with a time, a node, a thread and a
// template (docs/LOGS.md). Each file is one node (named by its file name, or by a
// <Node>/<Host> header field). A file's header format is given or detected from its first
// lines (log_format.hpp). A record is a line whose header matches; a line that does not
// match (a stack trace, a multi-line message) is joined to the record before it, unless
// another preset's header matches it (mixed formats: counted). Bad input is skipped and
// counted, never fatal: binary lines, lines longer than max_line_bytes (cut), invalid
// UTF-8, time going backwards, lines before the first header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "logs/drain.hpp"
#include "logs/log_format.hpp"
#include "logs/varint.hpp"

namespace snailtrail::logs {

// What the reader keeps of each record's text (files are read in chunks, never whole):
// the whole first line (for --id, which searches header fields too), only the message
// (for parameters and identifiers), or nothing (template counts only).
enum class KeepText : uint8_t { whole_lines, messages, none };

struct LogOptions {
  std::string format;  // preset name or pattern; empty = detect per file
  // A header field whose text names the node (e.g. Component, Logrecord); empty = the
  // <Node>/<Host> field, else the file.
  std::string node_field;
  DrainOptions drain;
  size_t max_line_bytes = 64 * 1024;  // longer lines: the message is cut for mining
  KeepText keep = KeepText::whole_lines;
  bool line_kinds = true;             // fill LogFile::lines (per-line output; 8 bytes a line)
  size_t read_chunk_bytes = 1 << 20;  // bytes read at a time (tests make it tiny)
  // false: records are only counted (LogSet::record_count), not kept: the templates table
  // needs per-template counts only, so memory follows templates, not lines. Needs keep
  // none and no line kinds (both refer to records).
  bool keep_records = true;
  // With keep_records false: still keep each record's template (LogSet::clusters, 4 bytes
  // a record): `flows` on files takes the rest from pack_records, or else reads the files
  // again (reread_records).
  bool keep_clusters = false;
  // With keep_clusters: also keep each record's header fields packed (LogSet::packed,
  // about 4 bytes a record), so that passes over the records read them from there
  // (packed_records) instead of reading the files and matching each header again.
  bool pack_records = false;
};

struct LogRecord {
  uint32_t file = 0;
  uint32_t line = 0;         // 1-based line of the header
  uint32_t extra_lines = 0;  // continuation lines joined to it
  uint32_t thread = 0;       // index into LogSet::threads ((node, thread) pairs)
  uint32_t node = 0;         // index into LogSet::nodes
  uint32_t cluster = 0;      // template
  int64_t ts = 0;            // ns since the epoch (the line number if the file has no time)
};  // 32 bytes: the kept texts are in LogSet::contents, not here (most runs keep none)

// The kept texts of a file's records, in blocks that never move (records view into them).
// Each text is followed by the length of its header (4 bytes), for LogSet::whole_line.
class TextArena {
 public:
  // Stores header + content; returns the view of the content.
  std::string_view add(std::string_view header, std::string_view content);
  static uint32_t header_size(std::string_view content);

 private:
  static constexpr size_t kBlock = 1 << 20;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t used_ = 0, capacity_ = 0;
};

// Texts by a 4-byte handle (its byte offset) instead of a 16-byte view, for tables of
// millions of short values (the flows' identifiers): each text is varint(length) and its
// bytes, in 1 MiB blocks that never move; a text larger than a block gets consecutive
// blocks of its own. At most 4 GiB of text (std::length_error beyond).
class OffsetArena {
 public:
  uint32_t add(std::string_view s);
  std::string_view text(uint32_t handle) const {
    const auto* p = reinterpret_cast<const uint8_t*>(base_[handle >> kShift] + (handle & kMask));
    const size_t n = get_varint(p);
    return {reinterpret_cast<const char*>(p), n};
  }

 private:
  static constexpr unsigned kShift = 20;
  static constexpr size_t kBlock = size_t{1} << kShift, kMask = kBlock - 1;
  std::vector<char*> base_;  // per block of the handles' space
  std::vector<std::unique_ptr<char[]>> owned_;
  size_t used_ = 0;  // in the last block
};

// The records' header fields (time, line, thread, node; the file from the order) packed
// in record order, for passes over records not kept (LogOptions::pack_records): per record
// varints of its time's change since the record before in its file (zigzag; in whole
// milliseconds when it is some: a flag bit, else a 0 and the change in nanoseconds), its
// line's change, its thread and its node. A log with
// a millisecond clock, a few threads and nodes takes 4 bytes a record (LogRecord: 32).
// Blocks that never move: no growth by doubling.
class PackedRecords {
 public:
  void add(const LogRecord& r);  // in record order, file by file
  size_t size() const { return count_; }
  size_t bytes() const { return blocks_.size() * kBlock; }  // allocated
  size_t used() const {
    size_t n = 0;
    for (const Block& b : blocks_) n += b.used;
    return n;
  }
  // visit(index, record) in record order; the record's cluster and extra_lines are 0.
  template <class Visit>
  void each(Visit&& visit) const;

 private:
  static constexpr size_t kBlock = 1 << 20, kMaxRecord = 4 * 10;
  struct Block {
    std::unique_ptr<uint8_t[]> bytes;
    size_t used = 0;
  };
  std::vector<Block> blocks_;
  std::vector<std::pair<uint32_t, size_t>> files_;  // (file, its first record)
  size_t count_ = 0;
  int64_t last_ts_ = 0;
  uint32_t last_line_ = 0;
};

template <class Visit>
void PackedRecords::each(Visit&& visit) const {
  size_t r = 0, next_file = 0;
  LogRecord rec;
  for (const Block& b : blocks_) {
    const uint8_t* at = b.bytes.get();
    const uint8_t* const end = at + b.used;
    while (at < end) {
      if (next_file < files_.size() && files_[next_file].second == r) {
        rec.file = files_[next_file++].first;
        rec.ts = 0, rec.line = 0;
      }
      const uint64_t t = get_varint(at);
      const uint64_t zz = t & 1 ? t >> 1 : get_varint(at);
      const uint64_t d = (zz >> 1) ^ (0 - (zz & 1));
      rec.ts = static_cast<int64_t>(static_cast<uint64_t>(rec.ts) + (t & 1 ? d * 1000000 : d));
      rec.line += static_cast<uint32_t>(get_varint(at));
      rec.thread = static_cast<uint32_t>(get_varint(at));
      rec.node = static_cast<uint32_t>(get_varint(at));
      visit(static_cast<uint32_t>(r++), static_cast<const LogRecord&>(rec));
    }
  }
}

// What became of each input line, for per-line output.
enum class LineKind : uint8_t { record, joined, binary, empty, no_header };
struct LineInfo {
  LineKind kind = LineKind::empty;
  uint32_t record = 0;  // record or joined: the record
};

struct LogFile {
  std::string path;
  TextArena text;
  std::string format;  // the format used ("none" if no header was found)
  bool has_time = false;
  uint64_t bytes = 0;           // read (a second pass checks that the file did not change)
  uint64_t records = 0;         // records read (likewise)
  std::vector<LineInfo> lines;  // empty unless LogOptions::line_kinds
};

struct LogSet {
  std::vector<LogFile> files;
  std::vector<LogRecord> records;  // file by file, in line order (none if !keep_records)
  uint64_t record_count = 0;       // records read, kept or not
  // Per record its template, when only these are kept (LogOptions::keep_clusters).
  std::vector<uint32_t> clusters;
  PackedRecords packed;  // LogOptions::pack_records: the rest of each record
  // Per record its message (first line), into LogFile::text; empty if no text is kept.
  std::vector<std::string_view> contents;
  std::vector<std::string> nodes;
  std::vector<std::pair<uint32_t, std::string>> threads;  // (node, thread name)
  Drain drain;
  std::vector<std::pair<std::string, uint64_t>> diagnostics;  // kind -> count, nonzero only

  // Record r's template (kept in its record, or alone).
  uint32_t cluster(size_t r) const { return records.empty() ? clusters[r] : records[r].cluster; }

  // Record r's message (first line); empty if the reader kept no text (LogOptions::keep).
  std::string_view content(size_t r) const {
    return r < contents.size() ? contents[r] : std::string_view();
  }

  // Record r's whole first line, header included (the message runs to the line's end);
  // only the message if the reader kept only messages (LogOptions::keep).
  std::string_view whole_line(size_t r) const {
    const std::string_view c = content(r);
    if (c.data() == nullptr) return {};
    const uint32_t h = TextArena::header_size(c);
    return {c.data() - h, h + c.size()};
  }

  // The message tokens of record r (into `scratch`), as the miner saw them.
  const std::vector<Token>& tokens(size_t r, std::vector<Token>& scratch) const {
    tokenize(content(r), scratch, drain.options().max_tokens, &drain.masks());
    return scratch;
  }
};

// Reads files (throws std::runtime_error naming a file that cannot be read).
LogSet read_logs(const std::vector<std::string>& paths, const LogOptions& options);
// The same from in-memory contents: (name, bytes) per file.
LogSet parse_logs(std::vector<std::pair<std::string, std::string>> files,
                  const LogOptions& options);

// Reads the files of `set` (read_logs with the same options) again, giving each record's
// message, in record order, to visit(record, message): a second pass over regular files,
// so that the records need not keep their texts. Throws if a file changed in between.
void reread_messages(const LogSet& set, const LogOptions& options,
                     const std::function<void(uint32_t, std::string_view)>& visit);

// The same, giving each record as the first read made it (its template from the kept
// record or LogSet::clusters; extra_lines is not counted, 0) with its message: so that a
// pass over the records needs none of them kept.
using RecordVisit = std::function<void(uint32_t, const LogRecord&, std::string_view)>;
void reread_records(const LogSet& set, const LogOptions& options, const RecordVisit& visit);

// The same records (the message empty) from LogSet::packed and LogSet::clusters, with no
// reading (LogOptions::pack_records). Throws std::logic_error if they were not packed.
void packed_records(const LogSet& set, const RecordVisit& visit);

// Whether a line looks binary (NUL, or more than a quarter control characters).
bool is_binary_line(std::string_view line);
bool is_valid_utf8(std::string_view s);

}  // namespace snailtrail::logs
