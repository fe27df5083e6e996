// Writing and reading traces piece by piece, in bounded memory (docs/FORMATS.md,
// docs/PERFORMANCE.md "Bounded memory"):
//   - TraceWriter: a .snail or JSONL file written block by block; the bytes are those
//     to_snail / to_jsonl give for the whole trace (to_snail and to_jsonl use it).
//   - JsonlChunkReader: a JSONL file or stdin read a chunk of whole lines at a time, with
//     the validation and line-numbered errors of parse_jsonl.
//   - spool_jsonl_to_snail: a JSONL input copied into a temporary .snail file (with its
//     block index), which the windowed pipeline then reads block by block.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trace/trace.hpp"
#include "trace/trace_io.hpp"

namespace snailtrail {

class TraceWriter {
 public:
  // `fd` >= 0: bytes go to it whenever 4 MiB are buffered (`name` names it in errors);
  // fd < 0: everything stays in memory (take()).
  TraceWriter(TraceFormat format, const SnailWriteOptions& options, int fd, std::string name);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Header, metadata (names of `meta`) and profile blocks; its events are ignored.
  // `names_last`: .snail only: metadata blocks are written by finish() after the events
  // instead (readers accept them anywhere; not the bytes to_snail writes).
  void begin(const Trace& meta, bool names_last = false);
  // The next events, in file order. `source` names the input in errors ("record N").
  void add(const Event* events, size_t n);
  // The last block, metadata if names_last (from `meta`), the index; flushes to the fd.
  void finish(const Trace* meta = nullptr);
  // The bytes written so far when fd < 0.
  std::string take();
  uint64_t events() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads JSONL whole lines at a time (chunks of about 4 MiB).
class JsonlChunkReader {
 public:
  // "-" reads stdin (source "<stdin>").
  explicit JsonlChunkReader(const std::string& path);
  ~JsonlChunkReader();
  JsonlChunkReader(const JsonlChunkReader&) = delete;
  JsonlChunkReader& operator=(const JsonlChunkReader&) = delete;

  // The next chunk's events replace batch.events (batch.lines: their lines); metadata
  // lines go to names(). False once the input is exhausted. Throws TraceError naming the
  // line, as parse_jsonl does.
  bool next(Trace& batch);
  // Names seen so far (the last definition of an id wins, as in parse_jsonl).
  const Trace& names() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Copies a JSONL input into a new .snail file at `snail_path` (names after the events,
// block index at the end), in bounded memory. Returns the number of events.
uint64_t spool_jsonl_to_snail(const std::string& jsonl_path, const std::string& snail_path);

}  // namespace snailtrail
