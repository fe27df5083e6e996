#include "flame/import.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kernel/perf_time.hpp"
#include "trace/ascii.hpp"
#include "trace/trace.hpp"

namespace snailtrail::flame {
namespace {

using ascii::is_digit;
using ascii::is_hex;
using ascii::is_space;
using ascii::trim;

// Splits text into lines (without '\n' and a trailing '\r'), numbered from 1.
template <typename F>
void for_each_line(std::string_view text, F&& f) {
  uint64_t line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view l = text.substr(pos, end - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    f(l, ++line);
    pos = end + 1;
  }
}

bool parse_u64(std::string_view s, uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  v = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  return true;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_digit(c)) return false;
  return true;
}

struct Token {
  std::string_view text;
  size_t pos;
};

std::vector<Token> tokens_of(std::string_view line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t b = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > b) out.push_back({line.substr(b, i - b), b});
  }
  return out;
}

struct PerfHeader {
  std::string_view comm;
  uint32_t tid = 0;
  int64_t ts = 0;
  std::string_view event;
  std::string_view rest;  // text after the event (a frame when perf ran without -g)
};

// "COMM [PID/]TID [CPU] SECS.FRAC: [PERIOD] EVENT: [REST]"; COMM may contain spaces.
bool parse_perf_header(std::string_view line, PerfHeader& h) {
  std::vector<Token> tok = tokens_of(line);
  for (size_t t = 1; t < tok.size(); ++t) {
    if (!kernel::parse_perf_time(tok[t].text, h.ts)) continue;
    size_t k = t;
    std::string_view cpu = tok[k - 1].text;
    if (cpu.size() >= 3 && cpu.front() == '[' && cpu.back() == ']' &&
        all_digits(cpu.substr(1, cpu.size() - 2)))
      --k;
    if (k < 2) continue;  // need COMM and TID before
    std::string_view tid_tok = tok[k - 1].text;
    size_t slash = tid_tok.find('/');
    std::string_view tid_text =
        slash == std::string_view::npos ? tid_tok : tid_tok.substr(slash + 1);
    if (slash != std::string_view::npos && !all_digits(tid_tok.substr(0, slash))) continue;
    uint64_t tid = 0;
    // perf prints -1 for samples without a thread; those are read as bad headers.
    if (!parse_u64(tid_text, tid) || tid > UINT32_MAX - 1) continue;
    h.tid = static_cast<uint32_t>(tid);
    h.comm = trim(line.substr(0, tok[k - 1].pos));
    if (h.comm.empty()) continue;
    size_t e = t + 1;
    if (e < tok.size() && all_digits(tok[e].text)) ++e;  // period
    h.event = {};
    h.rest = {};
    if (e < tok.size() && tok[e].text.size() > 1 && tok[e].text.back() == ':') {
      h.event = tok[e].text.substr(0, tok[e].text.size() - 1);
      size_t after = tok[e].pos + tok[e].text.size();
      h.rest = trim(line.substr(after));
    } else if (e < tok.size()) {
      h.rest = trim(line.substr(tok[e].pos));
    }
    return true;
  }
  return false;
}

std::string_view basename_of(std::string_view path) {
  size_t s = path.rfind('/');
  return s == std::string_view::npos ? path : path.substr(s + 1);
}

// "ADDR [SYMBOL[+0xOFF]] [(DSO)]" -> frame name. False when ADDR is not hex.
bool parse_perf_frame(std::string_view line, std::string& name, bool& unknown) {
  line = trim(line);
  size_t sp = 0;
  while (sp < line.size() && !is_space(line[sp])) ++sp;
  std::string_view addr = line.substr(0, sp);
  if (addr.empty() || addr.size() > 18) return false;
  for (char c : addr)
    if (!is_hex(c)) return false;
  std::string_view rest = trim(line.substr(sp));
  std::string_view dso;
  if (!rest.empty() && rest.back() == ')') {
    size_t open = rest.rfind(" (");
    if (open != std::string_view::npos) {
      dso = rest.substr(open + 2, rest.size() - open - 3);
      rest = trim(rest.substr(0, open));
    } else if (rest.front() == '(') {
      dso = rest.substr(1, rest.size() - 2);
      rest = {};
    }
  }
  // Strip "+0xOFF".
  size_t plus = rest.rfind("+0x");
  if (plus != std::string_view::npos && plus > 0) {
    bool hex = plus + 3 < rest.size();
    for (size_t i = plus + 3; i < rest.size(); ++i) hex = hex && is_hex(rest[i]);
    if (hex) rest = rest.substr(0, plus);
  }
  unknown = rest.empty() || rest == "[unknown]";
  if (unknown) {
    if (!dso.empty() && dso != "[unknown]")
      name = fmt::format("[{}]", basename_of(dso));
    else
      name = "[unknown]";
    return true;
  }
  name.assign(rest);
  if (dso.starts_with("[kernel.") || dso == "[kernel]") name += "_[k]";
  return true;
}

}  // namespace

void parse_folded(std::string_view text, const std::string& source, SampleSet& out) {
  std::vector<uint32_t> frames;
  for_each_line(text, [&](std::string_view line, uint64_t n) {
    std::string_view l = trim(line);
    if (l.empty()) return;
    auto fail = [&](const std::string& what) {
      throw TraceError(source, fmt::format("line {}", n), what);
    };
    size_t sp = l.size();
    while (sp > 0 && !is_space(l[sp - 1])) --sp;
    if (sp == 0) fail("expected 'frame;frame;... COUNT', found no count after the stack");
    std::string_view count_text = l.substr(sp);
    uint64_t count = 0;
    if (!parse_u64(count_text, count))
      fail(fmt::format("count '{}' is not a non-negative integer below 2^64",
                       count_text.substr(0, 40)));
    std::string_view stack = trim(l.substr(0, sp));
    frames.clear();
    size_t pos = 0;
    while (true) {
      size_t semi = stack.find(';', pos);
      std::string_view f =
          stack.substr(pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
      if (f.empty()) fail(fmt::format("empty frame at column {}", pos + 1));
      frames.push_back(out.intern_frame(f));
      if (semi == std::string_view::npos) break;
      pos = semi + 1;
    }
    if (count == 0) return;
    StackSample s;
    s.stack = out.intern_stack(frames);
    s.count = count;
    out.samples.push_back(s);
  });
}

void parse_perf_script(std::string_view text, const std::string& /*source*/, SampleSet& out,
                       const PerfOptions& options) {
  bool in_sample = false;  // after a good header
  bool skip = false;       // the current sample is dropped (bad header, other event)
  PerfHeader h;
  uint64_t header_line = 0;
  std::vector<uint32_t> leaf_first;
  std::string name;
  auto finish = [&]() {
    if (in_sample && !skip) {
      if (leaf_first.empty()) {
        out.count_problem("perf.empty_stacks", header_line);
      } else {
        std::vector<uint32_t> root_first(leaf_first.rbegin(), leaf_first.rend());
        StackSample s;
        s.stack = out.intern_stack(root_first);
        s.ts = h.ts;
        s.thread = h.tid;
        out.samples.push_back(s);
        auto it = out.thread_names.find(h.tid);
        if (it == out.thread_names.end() || it->second != h.comm)
          out.thread_names[h.tid] = std::string(h.comm);
      }
    }
    in_sample = false;
    skip = false;
    leaf_first.clear();
  };
  auto add_frame = [&](std::string_view l, uint64_t n) {
    bool unknown = false;
    if (!parse_perf_frame(l, name, unknown)) {
      out.count_problem("perf.bad_frames", n);
      return;
    }
    if (unknown) out.count_problem("perf.unknown_symbols", n);
    leaf_first.push_back(out.intern_frame(name));
  };
  for_each_line(text, [&](std::string_view line, uint64_t n) {
    if (trim(line).empty()) {
      finish();
      return;
    }
    if (is_space(line.front())) {  // a frame line
      if (!in_sample || skip) {
        if (!in_sample) out.count_problem("perf.bad_frames", n);
        return;
      }
      add_frame(line, n);
      return;
    }
    finish();
    if (line.front() == '#') return;  // perf script --header comments
    header_line = n;
    in_sample = true;
    if (!parse_perf_header(line, h)) {
      out.count_problem("perf.bad_headers", n);
      skip = true;
      return;
    }
    if (!options.event.empty() && h.event != options.event &&
        !(h.event.size() > options.event.size() && h.event.starts_with(options.event) &&
          h.event[options.event.size()] == ':')) {
      out.count_problem("perf.other_events", n);
      skip = true;
      return;
    }
    if (!h.rest.empty()) {  // "ADDR SYM (DSO)" on the header line itself (no -g)
      bool unknown = false;
      if (parse_perf_frame(h.rest, name, unknown)) {
        if (unknown) out.count_problem("perf.unknown_symbols", n);
        leaf_first.push_back(out.intern_frame(name));
      }
    }
  });
  finish();
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "open", std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw TraceError(path, "read", std::strerror(errno));
  return std::move(ss).str();
}

std::string sniff_sample_format(std::string_view text) {
  std::string format = "folded";
  bool decided = false;
  bool seen_header = false;
  for_each_line(text.substr(0, std::min<size_t>(text.size(), 1 << 16)),
                [&](std::string_view line, uint64_t) {
                  if (decided || trim(line).empty() || line.front() == '#') return;
                  if (is_space(line.front())) {
                    if (seen_header) format = "perf";
                    decided = true;
                    return;
                  }
                  PerfHeader h;
                  if (parse_perf_header(line, h)) {
                    format = "perf";
                    decided = true;
                    return;
                  }
                  if (seen_header) decided = true;
                  seen_header = true;
                });
  return format;
}

}  // namespace snailtrail::flame
