// Shared by the commands that read a .snail trace block by block (summary/streamed.hpp):
// deciding whether a trace can be streamed, and the stand-in PAG that carries only the
// whole trace's worker and operator ids (for Names) when no whole PAG exists.
#pragma once

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "importers/importer.hpp"
#include "pag/timeline.hpp"
#include "summary/streamed.hpp"
#include "trace/snail_index.hpp"
#include "trace/trace_writer.hpp"

namespace snailtrail::cli {

// True if `path` is a regular file starting with the .snail magic.
inline bool has_snail_magic(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;  // the importer reports it
  char magic[8] = {};
  const size_t got = std::fread(magic, 1, sizeof magic, f);
  std::fclose(f);
  return got == sizeof magic && std::string_view(magic, 8) == "SNAILTRC";
}

// True if `path` names a JSONL trace read by the native reader: --importer jsonl, or auto
// and the content says so. Never stdin (read whole: it may be a piped .snail image).
inline bool is_native_jsonl(const std::string& path, const std::string& importer) {
  if (path == "-") return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // reported later
  if (importer == "jsonl") return true;
  if (importer != "auto") return false;
  try {
    return importers::detect_importer(path).name == "jsonl";
  } catch (const std::exception&) {
    return false;  // the importer reports it
  }
}

// A JSONL trace copied line by line into a temporary .snail file (in the temporary
// directory, removed as soon as it is open: nothing is left behind) and opened for block
// by block reading. Errors name the JSONL file and line, as the whole-file reader's.
inline std::unique_ptr<SnailFile> spool_jsonl(const std::string& path) {
  std::string tmp =
      (std::filesystem::temp_directory_path() / "snailtrail-spool-XXXXXX.snail").string();
  const int fd = ::mkstemps(tmp.data(), 6);
  if (fd < 0) return nullptr;  // no temporary directory: read whole
  ::close(fd);
  struct Remove {
    const std::string& p;
    ~Remove() { ::unlink(p.c_str()); }
  } remove{tmp};
  spool_jsonl_to_snail(path, tmp);
  return std::make_unique<SnailFile>(tmp);
}

// A .snail file to read block by block, or null if the trace must be read whole: neither a
// .snail file nor a JSONL file (by `importer` and content; JSONL is spooled into a
// temporary .snail file first), or facts of the index that rule streaming out (a note on
// stderr says why).
inline std::unique_ptr<SnailFile> open_snail_streamed(const std::string& path,
                                                      const std::string& importer,
                                                      const AnalysisOptions& opt) {
  if (path == "-") return nullptr;
  std::unique_ptr<SnailFile> file;
  if (is_native_jsonl(path, importer)) {
    file = spool_jsonl(path);
    if (!file) return nullptr;
  } else {
    if (importer != "snail" && importer != "auto") return nullptr;
    if (importer == "auto" && !has_snail_magic(path)) return nullptr;
    file = std::make_unique<SnailFile>(path);
  }
  const std::string why = streamed_analysis_obstacle(file->index().facts, opt);
  if (!why.empty()) {
    if (file->index().facts.events > 0)
      fmt::print(stderr, "snailtrail: note: {}: read whole into memory: {}\n", path, why);
    return nullptr;
  }
  return file;
}

// The whole trace's ids and time range from the index, for Names and relative instants.
inline Pag names_pag(const TraceFacts& facts) {
  Pag pag;
  for (const TraceFacts::Worker& w : facts.workers) pag.worker_ids.push_back(w.id);
  pag.operator_ids = facts.operators;
  pag.first_ts = facts.first_ts;
  pag.last_ts = facts.last_ts;
  return pag;
}

// Every event of a trace in file order, for commands that fold events one by one (`scale
// --trace`): a .snail or JSONL file is read block by block (memory: a block), any other
// input whole through its importer.
class EventSource {
 public:
  EventSource(const std::string& path, const std::string& given_importer,
              const importers::ImportOptions& options = {})
      : path_(path) {
    const std::string importer = importers::resolve_importer(path, given_importer);
    if (is_native_jsonl(path, importer)) {
      file_ = spool_jsonl(path);
    } else if ((importer == "snail" || importer == "auto") && path != "-" &&
               has_snail_magic(path)) {
      try {
        file_ = std::make_unique<SnailFile>(path);
      } catch (const TraceError&) {
        file_.reset();  // the whole-file reader reports it
      }
    }
    if (file_) {
      trace_ = file_->names();
      trace_.source = path;
      first_ts_ = file_->index().facts.first_ts;
      events_ = file_->index().facts.events;
    } else {
      trace_ = importers::import_trace(path, importer, options);
      events_ = trace_.events.size();
      for (const Event& e : trace_.events) first_ts_ = std::min(first_ts_, e.ts);
    }
  }
  // Names, source and import diagnostics (and, when read whole, the events).
  const Trace& trace() const { return trace_; }
  bool streamed() const { return file_ != nullptr; }
  uint64_t size() const { return events_; }
  int64_t first_ts() const { return first_ts_; }
  template <typename F>
  void for_each(F&& f) {
    if (!file_) {
      for (const Event& e : trace_.events) f(e);
      return;
    }
    const auto& blocks = file_->index().blocks;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].kind != 1) continue;
      file_->read_block(i, buf_);
      for (const Event& e : buf_) f(e);
    }
  }

 private:
  std::string path_;
  std::unique_ptr<SnailFile> file_;
  Trace trace_;
  BigVector<Event> buf_;
  int64_t first_ts_ = INT64_MAX;
  uint64_t events_ = 0;
};

}  // namespace snailtrail::cli
