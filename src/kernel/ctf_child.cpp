// read_lttng_ctf: the CTF reader run in a child process (lttng_ctf.hpp), its events sent
// back through a pipe, so that babeltrace2 aborting on a damaged trace is an error.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernel/lttng_ctf.hpp"
#include "trace/trace.hpp"

namespace snailtrail::kernel {
namespace {

static_assert(std::is_trivially_copyable_v<KEvent>);

// The child's answer: a status byte (0 events, 1 TraceError, 2 other error), then the
// encoded KernelEvents or the error's message.
class Writer {
 public:
  void u64(uint64_t v) { buf_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& s) {
    u64(s.size());
    buf_ += s;
  }
  void bytes(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string& buf() { return buf_; }

 private:
  std::string buf_;
};

class RecordReader {
 public:
  RecordReader(const std::string& b, size_t at) : b_(b), at_(at) {}
  uint64_t u64() {
    uint64_t v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  std::string str() {
    const uint64_t n = u64();
    return std::string(take(n), n);
  }
  const char* take(uint64_t n) {
    if (n > b_.size() - at_) throw std::length_error("short answer from the reader process");
    at_ += n;
    return b_.data() + at_ - n;
  }

 private:
  const std::string& b_;
  size_t at_;
};

std::string encode(const KernelEvents& ev) {
  Writer w;
  w.buf() += '\0';
  w.u64(ev.events.size());
  w.bytes(ev.events.data(), ev.events.size() * sizeof(KEvent));
  w.u64(ev.hosts.size());
  for (const std::string& h : ev.hosts) w.str(h);
  w.u64(ev.strings.size());
  for (size_t i = 0; i < ev.strings.size(); ++i) w.str(ev.strings.str(static_cast<uint32_t>(i)));
  w.u64(ev.diagnostics.items().size());
  for (const auto& [kind, n] : ev.diagnostics.items()) {
    w.str(kind);
    w.u64(n);
  }
  w.u64(ev.warnings.size());
  for (const std::string& s : ev.warnings) w.str(s);
  w.str(ev.source);
  return std::move(w.buf());
}

KernelEvents decode(const std::string& b) {
  RecordReader r(b, 1);
  KernelEvents ev;
  ev.events.resize(r.u64());
  std::memcpy(ev.events.data(), r.take(ev.events.size() * sizeof(KEvent)),
              ev.events.size() * sizeof(KEvent));
  for (uint64_t n = r.u64(); n > 0; --n) ev.hosts.push_back(r.str());
  // Ids are kept: the table's strings are distinct, and id 0 is "" in both.
  for (uint64_t i = 0, n = r.u64(); i < n; ++i) {
    const std::string s = r.str();
    if (i > 0) ev.strings.intern(s);
  }
  for (uint64_t n = r.u64(); n > 0; --n) {
    const std::string kind = r.str();
    ev.diagnostics.add(kind, r.u64());
  }
  for (uint64_t n = r.u64(); n > 0; --n) ev.warnings.push_back(r.str());
  ev.source = r.str();
  return ev;
}

// A TraceError's message again as a TraceError ("source: where: what").
[[noreturn]] void rethrow(const std::string& path, const std::string& message) {
  const size_t a = message.find(": ");
  const size_t b = a == std::string::npos ? a : message.find(": ", a + 2);
  if (b == std::string::npos) throw TraceError(path, "read", message);
  throw TraceError(message.substr(0, a), message.substr(a + 2, b - a - 2), message.substr(b + 2));
}

[[noreturn]] void child(int fd, const std::string& path) {
  std::string answer;
  try {
    answer = encode(read_lttng_ctf_in_process(path));
  } catch (const TraceError& e) {
    answer = std::string(1, '\1') + e.what();
  } catch (const std::exception& e) {
    answer = std::string(1, '\2') + e.what();
  }
  for (size_t at = 0; at < answer.size();) {
    const ssize_t n = ::write(fd, answer.data() + at, answer.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);
    at += static_cast<size_t>(n);
  }
  ::_exit(0);  // no atexit handlers, no flush of the parent's stdio buffers
}

}  // namespace

KernelEvents read_lttng_ctf(const std::string& path) {
  if (!have_lttng_reader()) return read_lttng_ctf_in_process(path);  // throws: no reader
  int fds[2];
  if (::pipe(fds) != 0) throw TraceError(path, "read", std::string("pipe: ") + strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw TraceError(path, "read", std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], path);
  }
  ::close(fds[1]);
  std::string answer;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw TraceError(path, "read",
                     std::string("babeltrace2 stopped on a damaged trace (") +
                         strsignal(WTERMSIG(status)) +
                         "): a stream file's packet header or context is corrupt");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || answer.empty())
    throw TraceError(path, "read", "the reader process ended without an answer");
  if (answer[0] == '\1') rethrow(path, answer.substr(1));
  if (answer[0] != '\0') throw TraceError(path, "read", answer.substr(1));
  try {
    return decode(answer);
  } catch (const std::length_error& e) {
    throw TraceError(path, "read", e.what());
  }
}

}  // namespace snailtrail::kernel
