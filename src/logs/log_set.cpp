// Reading plain logs into records (log_set.hpp).
#include "logs/log_set.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace snailtrail::logs {
namespace {

struct Counters {
  uint64_t binary = 0, long_lines = 0, invalid_utf8 = 0, joined = 0, no_header = 0,
           other_format = 0, time_backwards = 0, too_many_tokens = 0, no_format = 0,
           bad_timestamp = 0;
};

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
  for (std::string_view ext : {".log", ".txt", ".out"})
    if (b.size() > ext.size() && b.ends_with(ext)) b.resize(b.size() - ext.size());
  return b;
}

struct Interner {
  std::unordered_map<std::string, uint32_t> ids;
  uint32_t get(const std::string& s, std::vector<std::string>& names) {
    auto [it, fresh] = ids.try_emplace(s, static_cast<uint32_t>(names.size()));
    if (fresh) names.push_back(s);
    return it->second;
  }
};

// Lines: [begin, end) offsets, without '\n' and a trailing '\r'.
bool next_line(std::string_view bytes, size_t& pos, std::string_view& line) {
  if (pos >= bytes.size()) return false;
  const void* nl = std::memchr(bytes.data() + pos, '\n', bytes.size() - pos);
  const size_t end =
      nl ? static_cast<size_t>(static_cast<const char*>(nl) - bytes.data()) : bytes.size();
  line = bytes.substr(pos, end - pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos = end + 1;
  return true;
}

// Reads the files of a LogSet one by one into its records: each line is screened (empty,
// binary, too long, invalid UTF-8), matched against the file's header format (a record,
// or a continuation joined to the record before it), and a record gets its node, thread
// and template. What goes wrong is counted, never fatal.
class LogReader {
 public:
  // With `replay`, the reader only re-reads the records of `replay->of` (read before with
  // the same options) and gives each one's message to `replay->visit`; it adds nothing.
  struct Replay {
    const LogSet& of;
    const RecordVisit& visit;
    uint32_t next = 0;
  };
  LogReader(LogSet& set, const LogOptions& options, Replay* replay = nullptr)
      : set_(set), options_(options), replay_(replay) {
    if (!options.keep_records && (options.keep != KeepText::none || options.line_kinds))
      throw std::logic_error("LogOptions: records not kept, so no texts nor line kinds");
    if (options.keep_records && options.keep_clusters)
      throw std::logic_error("LogOptions: keep_clusters is for records not kept");
    if (options.pack_records && !options.keep_clusters)
      throw std::logic_error("LogOptions: pack_records needs keep_clusters");
    if (!options.format.empty()) given_ = format_from_option(options.format);
    for (const FormatPreset& p : format_presets())
      presets_.push_back(LogFormat::compile(p.pattern, p.name));
  }

  void read_file(uint32_t f, std::istream& in);
  void put_diagnostics();

 private:
  // A file's state while its lines are read.
  struct FileState {
    uint32_t index = 0, node = 0, line_no = 0;
    std::optional<LogFormat> format;
    bool detected = false;  // the format was detected, not given
    bool have_record = false;
    int64_t last_ts = 0;
  };

  std::optional<LogFormat> detect(std::string_view bytes) const;
  void read_line(FileState& fs, LogFile& file, std::string_view line);
  bool screen_line(std::string_view& line, LineInfo& info);
  bool match_record(const FileState& fs, std::string_view line, LineInfo& info);
  bool other_preset_header(const LogFormat& format, std::string_view line);
  bool node_from_field(const LogFormat& format);
  void add_record(FileState& fs, LineInfo& info, LogFile& file, std::string_view line);
  void replay_record(FileState& fs, const LogRecord& r);

  LogSet& set_;
  const LogOptions& options_;
  Replay* replay_;
  std::optional<LogFormat> given_;
  std::vector<LogFormat> presets_;
  Counters cnt_;
  Interner node_ids_;
  std::unordered_map<std::string, uint32_t> thread_ids_;
  std::vector<std::string_view> scratch_;
  std::string time_buf_, key_;
  std::vector<Token> tokens_;
  HeaderMatch m_;  // the header of the line being read
};

// Complete lines ('\n'-terminated) that are not binary, up to `enough`.
size_t head_lines(std::string_view bytes, size_t enough) {
  size_t n = 0, pos = 0;
  std::string_view line;
  while (n < enough && next_line(bytes, pos, line) && pos <= bytes.size())
    n += !is_binary_line(line);
  return n;
}

// A file is read a chunk at a time; only the lines' records (and the text the options
// keep) stay, so memory follows records and templates, not the file's size.
void LogReader::read_file(uint32_t f, std::istream& in) {
  LogFile& file = set_.files[f];
  const size_t chunk = std::max<size_t>(1, options_.read_chunk_bytes);
  std::string buf;
  bool eof = false;
  auto fill = [&] {
    const size_t old = buf.size();
    buf.resize(old + chunk);
    in.read(buf.data() + old, static_cast<std::streamsize>(chunk));
    if (in.bad()) throw std::runtime_error(file.path + ": cannot read");
    const size_t got = static_cast<size_t>(in.gcount());
    buf.resize(old + got);
    file.bytes += got;
    eof = got < chunk;
  };
  while (!eof && head_lines(buf, 200) < 200) fill();  // detection sees the first 200 lines
  FileState fs;
  fs.index = f;
  fs.format = given_;
  fs.detected = !given_;
  if (!fs.format) fs.format = detect(buf);
  file.format = fs.format ? fs.format->name() : "none";
  file.has_time = fs.format && !fs.format->time_fields().empty();
  if (!fs.format) ++cnt_.no_format;
  fs.node = node_ids_.get(base_name(file.path), set_.nodes);

  size_t pos = 0;
  for (;;) {
    // pos passes the end by one after a last line without '\n' (next_line).
    const size_t left = pos < buf.size() ? buf.size() - pos : 0;
    const void* nl = left ? std::memchr(buf.data() + pos, '\n', left) : nullptr;
    if (!nl && !eof) {  // an incomplete line: keep it, read on
      buf.erase(0, pos);
      pos = 0;
      fill();
      continue;
    }
    std::string_view line;
    if (!next_line(buf, pos, line)) break;
    read_line(fs, file, line);
  }
}

void LogReader::read_line(FileState& fs, LogFile& file, std::string_view line) {
  ++fs.line_no;
  LineInfo info;
  if (!screen_line(line, info)) {
    if (options_.line_kinds) file.lines.push_back(info);
  } else if (match_record(fs, line, info)) {
    add_record(fs, info, file, line);
  } else if (replay_) {
    ++cnt_.joined;
  } else {
    ++cnt_.joined;
    if (!options_.keep_records) return;
    ++set_.records.back().extra_lines;
    info.kind = LineKind::joined;
    info.record = static_cast<uint32_t>(set_.records.size() - 1);
    if (options_.line_kinds) file.lines.push_back(info);
  }
}

// The preset matching most of the first 200 lines.
std::optional<LogFormat> LogReader::detect(std::string_view bytes) const {
  std::vector<std::string_view> head;
  size_t pos = 0;
  std::string_view line;
  while (head.size() < 200 && next_line(bytes, pos, line))
    if (!is_binary_line(line)) head.push_back(line.substr(0, options_.max_line_bytes));
  return detect_format(head);
}

// Empty and binary lines hold no record (false); a long line is cut to max_line_bytes
// and invalid UTF-8 counted, but both are read.
bool LogReader::screen_line(std::string_view& line, LineInfo& info) {
  if (line.empty()) return false;
  if (is_binary_line(line)) {
    ++cnt_.binary;
    info.kind = LineKind::binary;
    return false;
  }
  if (line.size() > options_.max_line_bytes) {
    ++cnt_.long_lines;
    line = line.substr(0, options_.max_line_bytes);
  }
  bool ascii = true;
  for (char ch : line)
    if (static_cast<unsigned char>(ch) >= 0x80) {
      ascii = false;
      break;
    }
  if (!ascii && !is_valid_utf8(line)) ++cnt_.invalid_utf8;
  return true;
}

// Whether the line starts a record (its header in m_), or continues the one before it.
bool LogReader::match_record(const FileState& fs, std::string_view line, LineInfo& info) {
  if (!fs.format) {  // no header format: every line is a record, its time its number
    m_ = HeaderMatch{};
    m_.content = line;
    m_.ts = static_cast<int64_t>(fs.line_no);
    return true;
  }
  const LogFormat& format = *fs.format;
  if (match_header(format, line, false, scratch_, time_buf_, m_)) return node_from_field(format);
  if (!fs.have_record) {
    // Before the first header: a record of its own, without header.
    ++cnt_.no_header;
    m_ = HeaderMatch{};
    m_.content = line;
    m_.ts = 0;
    info.kind = LineKind::no_header;
    return true;
  }
  // A continuation (stack trace, multi-line message) unless another preset's header
  // matches it.
  if (fs.detected) return other_preset_header(format, line);
  if (!format.time_fields().empty() && format.match(line, scratch_)) {
    // The given pattern matches but its time does not parse: keep the line, with the
    // previous record's time.
    ++cnt_.bad_timestamp;
    m_.content = scratch_[format.content_field()];
    m_.thread = format.thread_field() >= 0 ? scratch_[format.thread_field()] : "";
    m_.node = format.node_field() >= 0 ? scratch_[format.node_field()] : "";
    m_.ts = fs.last_ts;
    return node_from_field(format);
  }
  return false;
}

// --node-field: the named header field (if the format has it) is the line's node.
bool LogReader::node_from_field(const LogFormat& format) {
  if (options_.node_field.empty()) return true;
  const int k = format.field_index(options_.node_field);
  if (k >= 0 && !scratch_[k].empty()) m_.node = scratch_[k];
  return true;
}

// Mixed formats in one file: a line with another preset's valid header is a record.
bool LogReader::other_preset_header(const LogFormat& format, std::string_view line) {
  for (const LogFormat& p : presets_)
    if (p.name() != format.name() && match_header(p, line, true, scratch_, time_buf_, m_)) {
      ++cnt_.other_format;
      return node_from_field(p);
    }
  return false;
}

// The record of the header in m_: its time (the previous one's if it has none), node,
// thread (interned per node) and template.
void LogReader::add_record(FileState& fs, LineInfo& info, LogFile& file, std::string_view line) {
  LogRecord r;
  r.file = fs.index;
  r.line = fs.line_no;
  r.ts = m_.ts.value_or(fs.last_ts);
  if (info.kind == LineKind::no_header) r.ts = fs.last_ts;
  if (fs.have_record && r.ts < fs.last_ts) ++cnt_.time_backwards;
  fs.last_ts = r.ts;
  r.node = m_.node.empty() ? fs.node : node_ids_.get(std::string(m_.node), set_.nodes);
  key_.assign(reinterpret_cast<const char*>(&r.node), sizeof r.node);
  key_.append(m_.thread);
  auto [it, fresh] = thread_ids_.try_emplace(key_, static_cast<uint32_t>(set_.threads.size()));
  if (fresh) set_.threads.emplace_back(r.node, std::string(m_.thread));
  r.thread = it->second;
  fs.have_record = true;
  ++file.records;
  if (replay_) return replay_record(fs, r);  // the same nodes and threads, in the same order
  if (!tokenize(m_.content, tokens_, options_.drain.max_tokens, &set_.drain.masks()))
    ++cnt_.too_many_tokens;
  r.cluster = set_.drain.add(tokens_);
  if (options_.keep != KeepText::none) {
    const bool inside = m_.content.data() >= line.data() &&
                        m_.content.data() + m_.content.size() <= line.data() + line.size();
    const size_t header = inside && options_.keep == KeepText::whole_lines
                              ? static_cast<size_t>(m_.content.data() - line.data())
                              : 0;
    set_.contents.push_back(file.text.add(line.substr(0, header), m_.content));
  }
  if (info.kind != LineKind::no_header) info.kind = LineKind::record;
  info.record = static_cast<uint32_t>(set_.records.size());
  if (options_.line_kinds) file.lines.push_back(info);
  if (options_.keep_records) set_.records.push_back(r);
  if (options_.keep_clusters) set_.clusters.push_back(r.cluster);
  if (options_.pack_records) set_.packed.add(r);
  ++set_.record_count;
}

// A record read again: it must be the one read before (a file changed in between would
// give other records, silently wrong flows): checked by file and line if the records were
// kept, else by each file's count of records and bytes (reread_records).
void LogReader::replay_record(FileState& fs, const LogRecord& read) {
  const uint32_t r = replay_->next++;
  const LogSet& of = replay_->of;
  const bool kept = !of.records.empty();
  if (r >= of.record_count ||
      (kept && (of.records[r].file != fs.index || of.records[r].line != fs.line_no)))
    throw std::runtime_error(set_.files[fs.index].path + ": changed while read (line " +
                             std::to_string(fs.line_no) + ")");
  LogRecord rec = read;
  rec.cluster = of.cluster(r);
  replay_->visit(r, rec, m_.content);
}

void LogReader::put_diagnostics() {
  auto add = [&](const char* kind, uint64_t v) {
    if (v) set_.diagnostics.emplace_back(kind, v);
  };
  add("logs.binary_lines", cnt_.binary);
  add("logs.long_lines_cut", cnt_.long_lines);
  add("logs.invalid_utf8_lines", cnt_.invalid_utf8);
  add("logs.joined_lines", cnt_.joined);
  add("logs.lines_before_first_header", cnt_.no_header);
  add("logs.other_format_lines", cnt_.other_format);
  add("logs.time_backwards", cnt_.time_backwards);
  add("logs.too_many_tokens", cnt_.too_many_tokens);
  add("logs.files_without_format", cnt_.no_format);
  add("logs.bad_timestamps", cnt_.bad_timestamp);
}

}  // namespace

bool is_binary_line(std::string_view line) {
  if (std::memchr(line.data(), '\0', line.size())) return true;
  size_t ctrl = 0;
  for (char ch : line) {
    const unsigned char c = static_cast<unsigned char>(ch);
    ctrl += (c < 0x20 && c != '\t' && c != '\r' && c != '\f' && c != 0x1b) || c == 0x7f;
  }
  return ctrl * 4 > line.size();
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07;
    else
      return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

std::string_view TextArena::add(std::string_view header, std::string_view content) {
  const uint32_t h = static_cast<uint32_t>(header.size());
  const size_t need = header.size() + content.size() + sizeof h;
  if (used_ + need > capacity_) {
    capacity_ = std::max(kBlock, need);
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(capacity_));
    used_ = 0;
  }
  char* at = blocks_.back().get() + used_;
  if (!header.empty()) std::memcpy(at, header.data(), header.size());
  if (!content.empty()) std::memcpy(at + header.size(), content.data(), content.size());
  std::memcpy(at + header.size() + content.size(), &h, sizeof h);
  used_ += need;
  return {at + header.size(), content.size()};
}

uint32_t OffsetArena::add(std::string_view s) {
  uint8_t len[kMaxVarintBytes];
  const size_t k = static_cast<size_t>(put_varint(len, s.size()) - len);
  const size_t need = k + s.size();
  size_t block = base_.size() - 1;
  if (base_.empty() || used_ + need > kBlock) {  // a new block, or consecutive ones
    const size_t blocks = (need + kBlock - 1) / kBlock;
    if (base_.size() + blocks > (size_t{1} << (32 - kShift)))
      throw std::length_error("more than 4 GiB of identifier text");
    owned_.push_back(std::make_unique_for_overwrite<char[]>(blocks * kBlock));
    block = base_.size();
    for (size_t b = 0; b < blocks; ++b) base_.push_back(owned_.back().get() + b * kBlock);
    used_ = 0;
  }
  const uint32_t handle = static_cast<uint32_t>(block << kShift | used_);
  char* at = base_[block] + used_;
  std::memcpy(at, len, k);
  if (!s.empty()) std::memcpy(at + k, s.data(), s.size());
  used_ += need;  // beyond kBlock after a large text: the next text opens a new block
  return handle;
}

void PackedRecords::add(const LogRecord& r) {
  if (files_.empty() || files_.back().first != r.file) {
    files_.emplace_back(r.file, count_);
    last_ts_ = 0, last_line_ = 0;
  }
  if (blocks_.empty() || blocks_.back().used + kMaxRecord > kBlock)
    blocks_.push_back({std::make_unique_for_overwrite<uint8_t[]>(kBlock), 0});
  Block& b = blocks_.back();
  uint8_t* at = b.bytes.get() + b.used;
  // The time's change: in whole milliseconds, zigzag, shifted by a bit set; else a 0 and
  // the change in nanoseconds, zigzag.
  const int64_t d =
      static_cast<int64_t>(static_cast<uint64_t>(r.ts) - static_cast<uint64_t>(last_ts_));
  auto zigzag = [](int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  };
  if (d % 1000000 == 0) {
    at = put_varint(at, (zigzag(d / 1000000) << 1) | 1);
  } else {
    at = put_varint(at, 0);
    at = put_varint(at, zigzag(d));
  }
  at = put_varint(at, r.line - last_line_);
  at = put_varint(at, r.thread);
  at = put_varint(at, r.node);
  b.used = static_cast<size_t>(at - b.bytes.get());
  last_ts_ = r.ts, last_line_ = r.line;
  ++count_;
}

uint32_t TextArena::header_size(std::string_view content) {
  uint32_t h;
  std::memcpy(&h, content.data() + content.size(), sizeof h);
  return h;
}

LogSet parse_logs(std::vector<std::pair<std::string, std::string>> inputs,
                  const LogOptions& options) {
  LogSet set;
  set.drain = Drain(options.drain);
  set.files.resize(inputs.size());
  LogReader reader(set, options);
  for (uint32_t f = 0; f < inputs.size(); ++f) {
    set.files[f].path = std::move(inputs[f].first);
    std::istringstream in(std::move(inputs[f].second));
    reader.read_file(f, in);
  }
  reader.put_diagnostics();
  set.drain.release_index();  // no more messages: flows need the templates, not the index
  return set;
}

LogSet read_logs(const std::vector<std::string>& paths, const LogOptions& options) {
  LogSet set;
  set.drain = Drain(options.drain);
  set.files.resize(paths.size());
  LogReader reader(set, options);
  for (uint32_t f = 0; f < paths.size(); ++f) {
    std::ifstream in(paths[f], std::ios::binary);
    if (!in) throw std::runtime_error(paths[f] + ": cannot open: " + std::strerror(errno));
    set.files[f].path = paths[f];
    reader.read_file(f, in);
  }
  reader.put_diagnostics();
  set.drain.release_index();  // no more messages: flows need the templates, not the index
  return set;
}

void reread_records(const LogSet& set, const LogOptions& options, const RecordVisit& visit) {
  LogSet scratch;  // the reader's nodes and threads, dropped
  scratch.drain = Drain(options.drain);
  scratch.files.resize(set.files.size());
  LogReader::Replay replay{set, visit};
  LogOptions o = options;
  o.keep = KeepText::none, o.line_kinds = false, o.keep_records = false, o.keep_clusters = false;
  o.pack_records = false;
  LogReader reader(scratch, o, &replay);
  for (uint32_t f = 0; f < set.files.size(); ++f) {
    std::ifstream in(set.files[f].path, std::ios::binary);
    if (!in) throw std::runtime_error(set.files[f].path + ": cannot open: " + std::strerror(errno));
    scratch.files[f].path = set.files[f].path;
    reader.read_file(f, in);
    if (scratch.files[f].bytes != set.files[f].bytes ||
        scratch.files[f].records != set.files[f].records)
      throw std::runtime_error(set.files[f].path + ": changed while read (" +
                               std::to_string(set.files[f].bytes) + " bytes, then " +
                               std::to_string(scratch.files[f].bytes) + "; " +
                               std::to_string(set.files[f].records) + " records, then " +
                               std::to_string(scratch.files[f].records) + ")");
  }
  if (replay.next != set.record_count)
    throw std::runtime_error("logs changed while read: " + std::to_string(replay.next) +
                             " records instead of " + std::to_string(set.record_count));
}

void packed_records(const LogSet& set, const RecordVisit& visit) {
  if (set.packed.size() != set.record_count || set.clusters.size() != set.record_count)
    throw std::logic_error("packed_records: the records were not packed (LogOptions)");
  set.packed.each([&](uint32_t r, const LogRecord& rec) {
    LogRecord full = rec;
    full.cluster = set.clusters[r];
    visit(r, full, {});
  });
}

void reread_messages(const LogSet& set, const LogOptions& options,
                     const std::function<void(uint32_t, std::string_view)>& visit) {
  reread_records(set, options, [&](uint32_t r, const LogRecord&, std::string_view message) {
    visit(r, message);
  });
}

}  // namespace snailtrail::logs
