// `perf script` text into a SampleSet (import.hpp, docs/FLAME.md): sample headers of every
// perf version (with or without time, CPU, period), frame lines indented or not.
#include <fmt/format.h>

#include "flame/import.hpp"
#include "flame/text_lines.hpp"
#include "kernel/perf_time.hpp"

namespace snailtrail::flame {
namespace {

using namespace text;

struct PerfHeader {
  std::string_view comm;
  uint32_t tid = 0;
  uint32_t pid = kNoId;
  int64_t ts = kNoTime;
  uint64_t period = 0;
  bool has_period = false;
  std::string_view event;
  std::string_view rest;  // text after the event (a frame when perf ran without -g)
};

bool is_cpu_token(std::string_view t) {
  return t.size() >= 3 && t.front() == '[' && t.back() == ']' &&
         all_digits(t.substr(1, t.size() - 2));
}

// "[PID/]TID" at tok[k] and a non-empty COMM before it.
bool read_thread(std::string_view line, const std::vector<Token>& tok, size_t k, PerfHeader& h) {
  if (k < 1) return false;
  const std::string_view t = tok[k].text;
  const size_t slash = t.find('/');
  uint64_t tid = 0, pid = 0;
  if (slash != std::string_view::npos &&
      (!parse_u64(t.substr(0, slash), pid) || pid > UINT32_MAX - 1))
    return false;
  // perf prints -1 for samples without a thread; those are read as bad headers.
  if (!parse_u64(slash == std::string_view::npos ? t : t.substr(slash + 1), tid) ||
      tid > UINT32_MAX - 1)
    return false;
  h.comm = trim(line.substr(0, tok[k].pos));
  if (h.comm.empty()) return false;
  h.tid = static_cast<uint32_t>(tid);
  h.pid = slash == std::string_view::npos ? kNoId : static_cast<uint32_t>(pid);
  return true;
}

bool is_event_token(std::string_view t) {
  return t.size() > 1 && t.back() == ':' && !all_digits(t.substr(0, t.size() - 1));
}

// The optional period at tok[e] and the event after it; the rest of the line after that.
void read_event(std::string_view line, const std::vector<Token>& tok, size_t e, PerfHeader& h) {
  h.has_period = e < tok.size() && parse_u64(tok[e].text, h.period);
  if (h.has_period) ++e;
  h.event = {};
  h.rest = {};
  if (e < tok.size() && is_event_token(tok[e].text)) {
    h.event = tok[e].text.substr(0, tok[e].text.size() - 1);
    h.rest = trim(line.substr(tok[e].pos + tok[e].text.size()));
  } else if (e < tok.size()) {
    h.rest = trim(line.substr(tok[e].pos));
  }
}

// "COMM [PID/]TID [[CPU]] SECS.FRAC: [PERIOD] EVENT: [REST]"; COMM may contain spaces.
bool header_with_time(std::string_view line, const std::vector<Token>& tok, PerfHeader& h) {
  for (size_t t = 1; t < tok.size(); ++t) {
    if (!kernel::parse_perf_time(tok[t].text, h.ts)) continue;
    const size_t k = is_cpu_token(tok[t - 1].text) ? t - 1 : t;
    if (k < 2 || !read_thread(line, tok, k - 1, h)) continue;
    read_event(line, tok, t + 1, h);
    return true;
  }
  return false;
}

// Old perf without time (and CPU): "COMM [PID/]TID [[CPU]] [PERIOD] EVENT: [REST]". The
// event is needed here: it tells a header from a frame line in column 0.
bool header_without_time(std::string_view line, const std::vector<Token>& tok, PerfHeader& h) {
  for (size_t e = 2; e < tok.size(); ++e) {
    if (!is_event_token(tok[e].text)) continue;
    // With a period first ("java 3244 250000 cycles:u:" is tid 3244), then without.
    for (size_t before : {e - 1, e}) {
      if (before < e && !all_digits(tok[before].text)) continue;
      size_t k = before;
      if (k >= 1 && is_cpu_token(tok[k - 1].text)) --k;
      if (k < 2 || !read_thread(line, tok, k - 1, h)) continue;
      h.ts = kNoTime;
      read_event(line, tok, before, h);
      return true;
    }
  }
  return false;
}

bool parse_perf_header(std::string_view line, PerfHeader& h) {
  const std::vector<Token> tok = tokens_of(line);
  return header_with_time(line, tok, h) || header_without_time(line, tok, h);
}

std::string_view basename_of(std::string_view path) {
  size_t s = path.rfind('/');
  return s == std::string_view::npos ? path : path.substr(s + 1);
}

// Kernel code: [kernel.kallsyms], a module ("[nf_tables]") or a vmlinux file; not the
// user-space mappings perf also names in brackets.
bool is_kernel_dso(std::string_view dso) {
  if (dso.ends_with("vmlinux")) return true;
  if (dso.size() < 3 || dso.front() != '[' || dso.back() != ']') return false;
  for (std::string_view user : {"[unknown]", "[vdso]", "[vsyscall]", "[heap]", "[stack]"})
    if (dso == user) return false;
  return !dso.starts_with("[anon") && !dso.starts_with("[jit");
}

// stackcollapse-perf.pl's tidying: ';' -> ':', the parameter list and what follows cut at
// the first '(' (not "(anonymous namespace)"; nothing cut in Go's "pkg.(*T).f"), quotes out.
void tidy_name(std::string& name) {
  for (char& c : name)
    if (c == ';') c = ':';
  const size_t go = name.find(".(");
  const bool go_method = go != std::string::npos && name.find(").", go) != std::string::npos;
  if (!go_method) {
    for (size_t p = name.find('('); p != std::string::npos; p = name.find('(', p + 1))
      if (name.compare(p, 21, "(anonymous namespace)") != 0) {
        name.resize(p);
        break;
      }
  }
  std::erase_if(name, [](char c) { return c == '"' || c == '\''; });
}

// "ADDR [SYMBOL[+0xOFF]] [(DSO)]" -> frame name. False when ADDR is not hex.
bool parse_perf_frame(std::string_view line, const PerfOptions& o, std::string& name,
                      bool& unknown) {
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
  } else {
    name.assign(rest);
    if (o.tidy_names) tidy_name(name);
  }
  if (o.annotate_kernel && is_kernel_dso(dso)) name += "_[k]";
  return true;
}

// `perf script` text, line by line: a header line, frame lines (indented or not), a
// blank line.
class PerfReader {
 public:
  PerfReader(SampleSet& out, const PerfOptions& o) : out_(out), o_(o), event_(o.event) {}
  void line(std::string_view line, uint64_t n);
  void finish();

 private:
  bool other_event(std::string_view event);
  void start(std::string_view line, uint64_t n);
  void add_frame(std::string_view l, uint64_t n);

  SampleSet& out_;
  const PerfOptions& o_;
  std::string event_;       // the event kept (o.event, or the first met)
  bool in_sample_ = false;  // after a header
  bool skip_ = false;       // the current sample is dropped (bad header, other event)
  PerfHeader h_;
  uint32_t comm_ = kNoId;
  // A copy: h_.comm points into the line, which a chunked file read may have freed by
  // the time the sample ends (the next header, or the end of the file).
  std::string comm_name_;
  uint64_t header_line_ = 0;
  std::vector<uint32_t> leaf_first_, root_first_;
  std::string name_;
};

void PerfReader::finish() {
  if (in_sample_ && !skip_) {
    if (leaf_first_.empty()) {
      out_.count_problem("perf.empty_stacks", header_line_);
    } else {
      root_first_.assign(leaf_first_.rbegin(), leaf_first_.rend());
      StackSample s;
      s.stack = out_.intern_stack(root_first_);
      s.ts = h_.ts;
      s.thread = h_.tid;
      s.pid = h_.pid;
      s.comm = comm_;
      if (o_.weight_period) {
        if (h_.has_period)
          s.count = h_.period;
        else
          out_.count_problem("perf.no_period", header_line_);
      }
      out_.samples.push_back(s);
      auto it = out_.thread_names.find(h_.tid);
      if (it == out_.thread_names.end() || it->second != comm_name_)
        out_.thread_names[h_.tid] = comm_name_;
    }
  }
  in_sample_ = false;
  skip_ = false;
  leaf_first_.clear();
}

void PerfReader::add_frame(std::string_view l, uint64_t n) {
  bool unknown = false;
  if (!parse_perf_frame(l, o_, name_, unknown)) {
    out_.count_problem("perf.bad_frames", n);
    return;
  }
  if (unknown) out_.count_problem("perf.unknown_symbols", n);
  leaf_first_.push_back(out_.intern_frame(name_));
}

bool PerfReader::other_event(std::string_view event) {
  if (event_.empty()) {
    if (o_.first_event_only) event_ = event;
    return false;
  }
  if (o_.event.empty()) return event != event_;  // the first event met: exact
  return event != event_ && !(event.size() > event_.size() && event.starts_with(event_) &&
                              event[event_.size()] == ':');
}

void PerfReader::start(std::string_view line, uint64_t n) {
  header_line_ = n;
  in_sample_ = true;
  if (!parse_perf_header(line, h_)) {
    out_.count_problem("perf.bad_headers", n);
    skip_ = true;
    return;
  }
  if (other_event(h_.event)) {
    out_.count_problem("perf.other_events", n);
    skip_ = true;
    return;
  }
  comm_ = out_.intern_comm(h_.comm);
  comm_name_.assign(h_.comm);
  if (!h_.rest.empty()) {  // "ADDR SYM (DSO)" on the header line itself (no -g)
    bool unknown = false;
    if (parse_perf_frame(h_.rest, o_, name_, unknown)) {
      if (unknown) out_.count_problem("perf.unknown_symbols", n);
      leaf_first_.push_back(out_.intern_frame(name_));
    }
  }
}

void PerfReader::line(std::string_view line, uint64_t n) {
  if (trim(line).empty()) {
    finish();
    return;
  }
  if (is_space(line.front())) {  // a frame line
    if (!in_sample_) out_.count_problem("perf.bad_frames", n);
    if (in_sample_ && !skip_) add_frame(line, n);
    return;
  }
  if (line.front() == '#') {  // perf script --header comments
    finish();
    return;
  }
  // Column 0: a header, or (some perf versions) an unindented frame of the open sample.
  PerfHeader probe;
  if (in_sample_ && !parse_perf_header(line, probe)) {
    bool unknown = false;
    if (parse_perf_frame(line, o_, name_, unknown)) {
      if (!skip_) add_frame(line, n);
      return;
    }
  }
  finish();
  start(line, n);
}

}  // namespace

bool is_perf_header(std::string_view line) {
  PerfHeader h;
  return parse_perf_header(line, h);
}

void parse_perf_script(std::string_view text, const std::string& /*source*/, SampleSet& out,
                       const PerfOptions& options) {
  PerfReader r(out, options);
  for_each_line(text, [&](std::string_view l, uint64_t n) { r.line(l, n); });
  r.finish();
}

void parse_perf_script_file(const std::string& path, SampleSet& out, const PerfOptions& options) {
  PerfReader r(out, options);
  for_each_file_line(path, [&](std::string_view l, uint64_t n) { r.line(l, n); });
  r.finish();
}

}  // namespace snailtrail::flame
