#include "flame/import.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "flame/text_lines.hpp"
#include "trace/ascii.hpp"
#include "trace/trace.hpp"

namespace snailtrail::flame {
namespace {

using namespace text;

// Folded stacks, line by line.
class FoldedReader {
 public:
  FoldedReader(const std::string& source, SampleSet& out) : source_(source), out_(out) {}
  void line(std::string_view line, uint64_t n);

 private:
  [[noreturn]] void fail(uint64_t n, const std::string& what) const {
    throw TraceError(source_, fmt::format("line {}", n), what);
  }
  const std::string& source_;
  SampleSet& out_;
  std::vector<uint32_t> frames_;
};

void FoldedReader::line(std::string_view line, uint64_t n) {
  std::string_view l = trim(line);
  if (l.empty()) return;
  size_t sp = l.size();
  while (sp > 0 && !is_space(l[sp - 1])) --sp;
  if (sp == 0) fail(n, "expected 'frame;frame;... COUNT', found no count after the stack");
  std::string_view count_text = l.substr(sp);
  uint64_t count = 0;
  if (!parse_u64(count_text, count))
    fail(n, fmt::format("count '{}' is not a non-negative integer below 2^64",
                        printable(count_text, 40)));
  std::string_view stack = trim(l.substr(0, sp));
  frames_.clear();
  size_t pos = 0;
  while (true) {
    size_t semi = stack.find(';', pos);
    std::string_view f =
        stack.substr(pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
    if (f.empty()) fail(n, fmt::format("empty frame at column {}", pos + 1));
    frames_.push_back(out_.intern_frame(f));
    if (semi == std::string_view::npos) break;
    pos = semi + 1;
  }
  if (count == 0) return;
  StackSample s;
  s.stack = out_.intern_stack(frames_);
  s.count = count;
  out_.samples.push_back(s);
}

}  // namespace

void parse_folded(std::string_view text, const std::string& source, SampleSet& out) {
  FoldedReader r(source, out);
  for_each_line(text, [&](std::string_view l, uint64_t n) { r.line(l, n); });
}

void parse_folded_file(const std::string& path, SampleSet& out) {
  FoldedReader r(path, out);
  for_each_file_line(path, [&](std::string_view l, uint64_t n) { r.line(l, n); });
}

std::string read_file_head(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, "open", std::strerror(errno));
  std::string head(max_bytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(max_bytes));
  if (in.bad()) throw TraceError(path, "read", std::strerror(errno));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

void check_text(std::string_view head, const std::string& source) {
  if (head.starts_with("PERFILE"))
    throw TraceError(source, "byte 0",
                     "a binary perf.data file: convert it with `perf script -i FILE > FILE.txt`");
  const size_t nul = head.find('\0');
  if (nul != std::string_view::npos)
    throw TraceError(source, fmt::format("byte {}", nul),
                     fmt::format("a NUL byte: binary data, not perf script text or folded "
                                 "stacks (starts with '{}')",
                                 printable(head, 16)));
}

std::string no_samples_message(const SampleSet& set, const std::string& format) {
  std::string why;
  for (auto& [kind, n] : set.diagnostics) {
    auto fl = set.first_line.find(kind);
    why += fmt::format(
        "{}{} {}{}", why.empty() ? "" : ", ", n, kind,
        fl != set.first_line.end() ? fmt::format(" (first at line {})", fl->second) : "");
  }
  return fmt::format("no stack samples read as {}{}",
                     format == "perf" ? "perf script text" : format + " stacks",
                     why.empty() ? " (empty input)" : ": " + why);
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
                  if (is_perf_header(line)) {
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
