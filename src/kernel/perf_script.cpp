// perf script text -> kernel events (perf_script.hpp).
#include "kernel/perf_script.hpp"

#include <memory>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "kernel/diagnostic_kinds.hpp"
#include "kernel/perf_time.hpp"
#include "trace/trace.hpp"

namespace snailtrail::kernel {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_digit(c)) return false;
  return true;
}

bool parse_int(std::string_view s, int32_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  auto r = std::from_chars(s.data(), end, out);
  return r.ec == std::errc() && r.ptr == end;
}

// "1234" or "1234/1235" (pid/tid): the tid.
bool parse_tid_token(std::string_view tok, int32_t& tid) {
  const size_t slash = tok.find('/');
  if (slash != std::string_view::npos) tok = tok.substr(slash + 1);
  if (tok.size() > 1 && tok.front() == '-') return false;
  return all_digits(tok) && parse_int(tok, tid);
}

// "[003]" -> 3
bool parse_cpu_token(std::string_view tok, int32_t& cpu) {
  if (tok.size() < 3 || tok.front() != '[' || tok.back() != ']') return false;
  return all_digits(tok.substr(1, tok.size() - 2)) && parse_int(tok.substr(1, tok.size() - 2), cpu);
}

// The value of `key=` in a key=value argument list: up to the next " ident=" (values such
// as comms may contain spaces), " ==>" or the end.
bool kv(std::string_view args, std::string_view key, std::string_view& value) {
  size_t pos = 0;
  while (true) {
    pos = args.find(key, pos);
    if (pos == std::string_view::npos) return false;
    const size_t after = pos + key.size();
    if ((pos == 0 || is_space(args[pos - 1]) || args[pos - 1] == '[') && after < args.size() + 1 &&
        after < args.size() && args[after] == '=')
      break;
    pos = after;
  }
  const size_t start = pos + key.size() + 1;
  size_t end = start;
  while (end < args.size()) {
    if (is_space(args[end])) {
      size_t k = end + 1;
      if (args.substr(k).starts_with("==>") || args.substr(k).starts_with("[")) break;
      while (k < args.size() && (std::islower(static_cast<unsigned char>(args[k])) ||
                                 args[k] == '_' || is_digit(args[k])))
        ++k;
      if (k > end + 1 && k < args.size() && args[k] == '=') break;
    }
    if (args[end] == ']' && end + 1 == args.size()) break;  // "[action=NET_RX]"
    ++end;
  }
  value = trim(args.substr(start, end - start));
  return true;
}

bool kv_int(std::string_view args, std::string_view key, int32_t& out) {
  std::string_view v;
  return kv(args, key, v) && parse_int(v, out);
}

// "comm:pid [prio]..." (libtraceevent's compact form): comm may contain ':' and spaces.
bool compact_task(std::string_view s, std::string_view& comm, int32_t& pid) {
  const size_t br = s.rfind(" [");
  if (br != std::string_view::npos) s = s.substr(0, br);
  s = trim(s);
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return false;
  comm = s.substr(0, colon);
  return parse_int(s.substr(colon + 1), pid);
}

PrevState prev_state_of(std::string_view s) {
  s = trim(s);
  if (s.empty()) return PrevState::runnable;
  if (all_digits(s) || s.starts_with("0x")) {  // numeric (old perf): 0 = TASK_RUNNING
    for (char c : s.substr(s.starts_with("0x") ? 2 : 0))
      if (c != '0') return PrevState::blocked;
    return PrevState::runnable;
  }
  if (s[0] == 'R') return PrevState::runnable;  // "R", "R+" (preempted)
  if (s[0] == 'X' || s[0] == 'Z') return PrevState::dead;
  return PrevState::blocked;  // S, D, I, T, t, P, W, K, N, "D|K", ...
}

// The head of a sample line, "COMM... TID [CPU] [FLAGS] SECONDS:", and what follows it.
struct SampleHead {
  std::string_view comm, rest;
  int32_t cpu = -1, tid = -1;
  int64_t ts = 0;
};

// Tokens up to the time stamp, then back from it: flags and [CPU] until the tid; the comm
// (which may hold spaces) is everything before. False if the line is no sample.
bool parse_head(std::string_view s, SampleHead& h) {
  size_t tok_start[64];
  size_t tok_len[64];
  int ntok = 0;
  int time_tok = -1;
  size_t p = 0;
  while (p < s.size() && ntok < 64) {
    while (p < s.size() && is_space(s[p])) ++p;
    if (p >= s.size()) break;
    const size_t b = p;
    while (p < s.size() && !is_space(s[p])) ++p;
    tok_start[ntok] = b;
    tok_len[ntok] = p - b;
    if (ntok >= 1 && parse_perf_time(s.substr(b, p - b), h.ts)) {
      time_tok = ntok++;
      break;
    }
    ++ntok;
  }
  if (time_tok < 0) return false;
  int k = time_tok - 1;
  int skipped = 0;
  while (k >= 0) {
    const std::string_view tok = s.substr(tok_start[k], tok_len[k]);
    int32_t c;
    if (parse_cpu_token(tok, c)) {
      h.cpu = c;
    } else if (parse_tid_token(tok, h.tid)) {
      break;
    } else if (++skipped > 2) {
      return false;
    }
    --k;
  }
  if (k < 0 || h.tid < 0) return false;
  h.comm = trim(s.substr(0, tok_start[k]));
  h.rest = trim(s.substr(tok_start[time_tok] + tok_len[time_tok]));
  return true;
}

// After the time: "[PERIOD] [SYS:]EVENT: ARGS" -> the event's name; `rest` becomes ARGS.
bool split_event(std::string_view& rest, std::string_view& name) {
  std::string_view ev_tok;
  while (true) {
    size_t e = 0;
    while (e < rest.size() && !is_space(rest[e])) ++e;
    ev_tok = rest.substr(0, e);
    rest = trim(rest.substr(e));
    if (all_digits(ev_tok) && !rest.empty()) continue;  // a period column
    break;
  }
  if (ev_tok.size() < 2 || ev_tok.back() != ':') return false;
  ev_tok.remove_suffix(1);
  const size_t colon = ev_tok.rfind(':');
  name = colon == std::string_view::npos ? ev_tok : ev_tok.substr(colon + 1);
  return true;
}

}  // namespace

class Reader {
 public:
  Reader(const std::string& source) { out_.source = source; }

  // Line-at-a-time use (PerfScriptLines): events appended to out_.events in input order.
  void next_line(std::string_view s, uint32_t line_no, bool cut) {
    last_line_cut_ = cut;
    line(s, line_no);
  }
  KernelEvents& out() { return out_; }

  KernelEvents run(std::string_view text) {
    size_t pos = 0;
    uint32_t line_no = 0;
    while (pos < text.size()) {
      const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
      const size_t end =
          nl ? static_cast<size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
      ++line_no;
      last_line_cut_ = nl == nullptr;
      line(text.substr(pos, end - pos), line_no);
      pos = end + 1;
    }
    if (samples_ == 0) {
      if (first_bad_line_)
        throw TraceError(out_.source, "line " + std::to_string(first_bad_line_),
                         "not a perf script sample line (expected 'COMM TID [CPU] SECONDS: "
                         "EVENT: ARGS')");
      throw TraceError(out_.source, "line 1", "no perf script samples (empty input)");
    }
    if (out_.events.empty())
      throw TraceError(out_.source, "input",
                       std::to_string(samples_) +
                           " perf script samples, none of an event the model uses "
                           "(sched:sched_switch, sched:sched_waking, ...; docs/KERNEL.md "
                           "says how to record them)");
    // perf script orders samples by time; a text merged from several sources may not be.
    auto& ev = out_.events;
    uint64_t inversions = 0;
    for (size_t i = 1; i < ev.size(); ++i)
      if (ev[i].ts < ev[i - 1].ts) ++inversions;
    if (inversions) {
      out_.diagnostics.add(kPerfOutOfOrder.name, inversions);
      std::stable_sort(ev.begin(), ev.end(),
                       [](const KEvent& x, const KEvent& y) { return x.ts < y.ts; });
    }
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(uint32_t line_no, const std::string& what) {
    throw TraceError(out_.source, "line " + std::to_string(line_no), what);
  }

  // One line: a sample's head (comm, tid, CPU, time), its event name, then the event's
  // arguments. Lines that are no sample are skipped (counted); a known event without the
  // fields it needs is an error.
  void line(std::string_view s, uint32_t line_no) {
    s = trim(s);
    if (s.empty() || s.front() == '#') return;
    SampleHead h;
    std::string_view name;
    if (!parse_head(s, h) || !split_event(h.rest, name)) return skip(line_no);
    ++samples_;
    const KType* known = tracepoint_type(name, false);
    if (!known) {
      out_.diagnostics.add(kPerfUnknownEvent.name);
      return;
    }
    KEvent ev;
    ev.ts = h.ts;
    ev.cpu = h.cpu;
    ev.tid = h.tid;
    ev.comm = out_.strings.intern(h.comm);
    ev.type = *known;
    ev.line = line_no;
    if (!args(ev, h.rest, name)) {
      if (last_line_cut_) {
        out_.diagnostics.add(kPerfTruncatedLastLine.name);
        return;
      }
      fail(line_no, std::string(name) + " without the fields it needs: '" +
                        std::string(h.rest.substr(0, 200)) + "'");
    }
    out_.events.push_back(ev);
  }

  bool args(KEvent& ev, std::string_view a, std::string_view name) {
    std::string_view v;
    switch (ev.type) {
      case KType::sched_switch: {
        if (kv(a, "prev_pid", v)) {
          int32_t prev = -1;
          std::string_view st, next_comm;
          if (!parse_int(v, prev) || !kv_int(a, "next_pid", ev.a) || !kv(a, "prev_state", st))
            return false;
          if (!kv(a, "next_comm", next_comm)) next_comm = "";
          ev.state = prev_state_of(st);
          ev.comm_a = out_.strings.intern(next_comm);
          if (prev != ev.tid) {
            out_.diagnostics.add(kPerfSwitchPrevNotCurrent.name);
            ev.tid = prev;
            std::string_view pc;
            if (kv(a, "prev_comm", pc)) ev.comm = out_.strings.intern(pc);
          }
          return true;
        }
        const size_t arrow = a.find(" ==> ");
        if (arrow == std::string_view::npos) return false;
        const std::string_view left = a.substr(0, arrow), right = a.substr(arrow + 5);
        std::string_view pc, nc;
        int32_t prev = -1;
        if (!compact_task(left, pc, prev) || !compact_task(right, nc, ev.a)) return false;
        const size_t br = left.rfind(']');
        ev.state = prev_state_of(br == std::string_view::npos ? "" : left.substr(br + 1));
        ev.comm_a = out_.strings.intern(nc);
        if (prev != ev.tid) {
          out_.diagnostics.add(kPerfSwitchPrevNotCurrent.name);
          ev.tid = prev;
          ev.comm = out_.strings.intern(pc);
        }
        return ev.a >= 0 && prev >= 0;
      }
      case KType::sched_waking:
      case KType::sched_wakeup:
      case KType::sched_wakeup_new: {
        std::string_view comm;
        if (kv(a, "pid", v)) {
          if (!parse_int(v, ev.a)) return false;
          if (!kv(a, "comm", comm)) comm = "";
        } else if (!compact_task(a, comm, ev.a)) {
          return false;
        }
        ev.comm_a = out_.strings.intern(comm);
        return ev.a >= 0;
      }
      case KType::process_fork: {
        std::string_view cc;
        int32_t parent = -1;
        if (!kv_int(a, "child_pid", ev.a) || !kv_int(a, "pid", parent)) return false;
        if (kv(a, "child_comm", cc)) ev.comm_a = out_.strings.intern(cc);
        if (parent != ev.tid) {
          out_.diagnostics.add(kPerfForkParentNotCurrent.name);
          ev.tid = parent;
          std::string_view pc;
          if (kv(a, "comm", pc)) ev.comm = out_.strings.intern(pc);
        }
        return ev.a >= 0;
      }
      case KType::process_exit: {
        int32_t pid = -1;
        if (kv_int(a, "pid", pid)) ev.tid = pid;
        return true;
      }
      case KType::irq_entry:
      case KType::irq_exit: {
        std::string_view irq_name;
        if (kv(a, "name", irq_name)) ev.comm_a = out_.strings.intern(irq_name);
        return kv_int(a, "irq", ev.a);
      }
      case KType::softirq_entry:
      case KType::softirq_exit:
        return kv_int(a, "vec", ev.a);
      default:
        (void)name;
        return true;
    }
  }

  void skip(uint32_t line_no) {
    if (!first_bad_line_) first_bad_line_ = line_no;
    out_.diagnostics.add(kPerfSkippedLine.name);
  }

  KernelEvents out_;
  uint64_t samples_ = 0;
  uint32_t first_bad_line_ = 0;
  bool last_line_cut_ = false;
};

PerfScriptLines::PerfScriptLines(const std::string& source)
    : r_(std::make_unique<Reader>(source)) {}
PerfScriptLines::~PerfScriptLines() = default;
void PerfScriptLines::line(std::string_view text, uint32_t line_no, bool last_and_cut) {
  r_->next_line(text, line_no, last_and_cut);
}
KernelEvents& PerfScriptLines::events() {
  return r_->out();
}

const KernelEvents& PerfScriptLines::events() const {
  return r_->out();
}

KernelEvents parse_perf_script(std::string_view text, const std::string& source) {
  return Reader(source).run(text);
}

int sniff_perf_script(std::string_view head) {
  // Read the complete lines of the head as perf script: one scheduler event is enough.
  const size_t nl = head.rfind('\n');
  if (nl == std::string_view::npos) return 0;
  try {
    const KernelEvents ev = parse_perf_script(head.substr(0, nl + 1), "<head>");
    for (const KEvent& e : ev.events)
      if (e.type <= KType::process_exit) return 80;
    return 0;
  } catch (const std::exception&) {
    return head.find("sched:sched_") != std::string_view::npos ? 40 : 0;
  }
}

}  // namespace snailtrail::kernel
