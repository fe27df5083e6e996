// Reading plain logs into records (log_set.hpp).
#include "logs/log_set.hpp"

#include <cstring>
#include <fstream>
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

LogSet parse_logs(std::vector<std::pair<std::string, std::string>> inputs,
                  const LogOptions& options) {
  LogSet set;
  set.drain = Drain(options.drain);
  set.files.resize(inputs.size());  // never moved again: records point into their bytes
  for (size_t f = 0; f < inputs.size(); ++f) {
    set.files[f].path = std::move(inputs[f].first);
    set.files[f].bytes = std::move(inputs[f].second);
  }
  std::optional<LogFormat> given;
  if (!options.format.empty()) given = format_from_option(options.format);
  std::vector<LogFormat> presets;
  for (const FormatPreset& p : format_presets())
    presets.push_back(LogFormat::compile(p.pattern, p.name));

  Counters cnt;
  Interner node_ids;
  std::unordered_map<std::string, uint32_t> thread_ids;
  std::vector<std::string_view> scratch;
  std::string time_buf, key;
  std::vector<Token> tokens;
  HeaderMatch m;

  for (uint32_t f = 0; f < set.files.size(); ++f) {
    LogFile& file = set.files[f];
    const std::string_view bytes = file.bytes;
    // Lines: [begin, end) offsets, without '\n' and a trailing '\r'.
    auto next_line = [&](size_t& pos, std::string_view& line) {
      if (pos >= bytes.size()) return false;
      const void* nl = std::memchr(bytes.data() + pos, '\n', bytes.size() - pos);
      const size_t end =
          nl ? static_cast<size_t>(static_cast<const char*>(nl) - bytes.data()) : bytes.size();
      line = bytes.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos = end + 1;
      return true;
    };
    // The format: given, or the preset matching most of the first 200 lines.
    std::optional<LogFormat> format = given;
    const bool detected = !given;
    if (!format) {
      std::vector<std::string_view> head;
      size_t pos = 0;
      std::string_view line;
      while (head.size() < 200 && next_line(pos, line))
        if (!is_binary_line(line)) head.push_back(line.substr(0, options.max_line_bytes));
      format = detect_format(head);
    }
    file.format = format ? format->name() : "none";
    file.has_time = format && !format->time_fields().empty();
    if (!format) ++cnt.no_format;
    const std::string base = base_name(file.path);
    const uint32_t file_node = node_ids.get(base, set.nodes);

    size_t pos = 0;
    std::string_view line;
    uint32_t line_no = 0;
    int64_t last_ts = 0;
    bool have_record = false;
    while (next_line(pos, line)) {
      ++line_no;
      LineInfo info;
      if (line.empty()) {
        file.lines.push_back(info);
        continue;
      }
      if (is_binary_line(line)) {
        ++cnt.binary;
        info.kind = LineKind::binary;
        file.lines.push_back(info);
        continue;
      }
      if (line.size() > options.max_line_bytes) {
        ++cnt.long_lines;
        line = line.substr(0, options.max_line_bytes);
      }
      bool ascii = true;
      for (char ch : line)
        if (static_cast<unsigned char>(ch) >= 0x80) {
          ascii = false;
          break;
        }
      if (!ascii && !is_valid_utf8(line)) ++cnt.invalid_utf8;

      bool is_record = false;
      if (!format) {
        m = HeaderMatch{};
        m.content = line;
        m.ts = static_cast<int64_t>(line_no);
        is_record = true;
      } else if (match_header(*format, line, false, scratch, time_buf, m)) {
        is_record = true;
      } else if (have_record) {
        // A continuation (stack trace, multi-line message) unless another preset's
        // header matches it.
        if (detected)
          for (const LogFormat& p : presets)
            if (p.name() != format->name() && match_header(p, line, true, scratch, time_buf, m)) {
              is_record = true;
              ++cnt.other_format;
              break;
            }
        if (!is_record && !format->time_fields().empty() && format->match(line, scratch) &&
            !detected) {
          // The given pattern matches but its time does not parse: keep the line, with
          // the previous record's time.
          ++cnt.bad_timestamp;
          m.content = scratch[format->content_field()];
          m.thread = format->thread_field() >= 0 ? scratch[format->thread_field()] : "";
          m.node = format->node_field() >= 0 ? scratch[format->node_field()] : "";
          m.ts = last_ts;
          is_record = true;
        }
        if (!is_record) {
          ++cnt.joined;
          ++set.records.back().extra_lines;
          info.kind = LineKind::joined;
          info.record = static_cast<uint32_t>(set.records.size() - 1);
          file.lines.push_back(info);
          continue;
        }
      } else {
        // Before the first header: a record of its own, without header.
        ++cnt.no_header;
        m = HeaderMatch{};
        m.content = line;
        m.ts = 0;
        is_record = true;
        info.kind = LineKind::no_header;
      }
      LogRecord r;
      r.file = f;
      r.line = line_no;
      r.ts = m.ts.value_or(last_ts);
      if (info.kind == LineKind::no_header) r.ts = last_ts;
      if (have_record && r.ts < last_ts) ++cnt.time_backwards;
      last_ts = r.ts;
      r.node = m.node.empty() ? file_node : node_ids.get(std::string(m.node), set.nodes);
      key.assign(reinterpret_cast<const char*>(&r.node), sizeof r.node);
      key.append(m.thread);
      auto [it, fresh] = thread_ids.try_emplace(key, static_cast<uint32_t>(set.threads.size()));
      if (fresh) set.threads.emplace_back(r.node, std::string(m.thread));
      r.thread = it->second;
      r.content = m.content;
      if (!tokenize(r.content, tokens, options.drain.max_tokens)) ++cnt.too_many_tokens;
      r.cluster = set.drain.add(tokens);
      if (info.kind != LineKind::no_header) info.kind = LineKind::record;
      info.record = static_cast<uint32_t>(set.records.size());
      file.lines.push_back(info);
      set.records.push_back(r);
      have_record = true;
    }
  }
  auto add = [&](const char* kind, uint64_t v) {
    if (v) set.diagnostics.emplace_back(kind, v);
  };
  add("logs.binary_lines", cnt.binary);
  add("logs.long_lines_cut", cnt.long_lines);
  add("logs.invalid_utf8_lines", cnt.invalid_utf8);
  add("logs.joined_lines", cnt.joined);
  add("logs.lines_before_first_header", cnt.no_header);
  add("logs.other_format_lines", cnt.other_format);
  add("logs.time_backwards", cnt.time_backwards);
  add("logs.too_many_tokens", cnt.too_many_tokens);
  add("logs.files_without_format", cnt.no_format);
  add("logs.bad_timestamps", cnt.bad_timestamp);
  return set;
}

LogSet read_logs(const std::vector<std::string>& paths, const LogOptions& options) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::runtime_error(p + ": cannot open: " + std::strerror(errno));
    std::string bytes;
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size > 0) {
      bytes.resize(static_cast<size_t>(size));
      in.seekg(0);
      in.read(bytes.data(), size);
      bytes.resize(static_cast<size_t>(in.gcount()));
    } else {
      in.clear();
      in.seekg(0);
      std::ostringstream s;
      s << in.rdbuf();
      bytes = s.str();
    }
    if (in.bad()) throw std::runtime_error(p + ": cannot read");
    inputs.emplace_back(p, std::move(bytes));
  }
  return parse_logs(std::move(inputs), options);
}

}  // namespace snailtrail::logs
