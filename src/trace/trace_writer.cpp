#include "trace/trace_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

constexpr size_t kFlushBytes = size_t{4} << 20;

void write_fd(int fd, std::string_view data, const std::string& name) {
  while (!data.empty()) {
    const ssize_t put = ::write(fd, data.data(), data.size());
    if (put < 0) {
      if (errno == EINTR) continue;
      throw TraceError(name, "cannot write", std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(put));
  }
}

}  // namespace

struct TraceWriter::Impl {
  TraceFormat format;
  int fd;
  std::string name;
  std::string out;
  SnailWriteOptions options;
  std::string source;  // the trace's name in errors about its events
  std::optional<detail::SnailEncoder> snail;
  uint64_t events = 0;

  void maybe_flush(bool force) {
    if (fd < 0 || (!force && out.size() < kFlushBytes)) return;
    write_fd(fd, out, name);
    out.clear();
  }
};

TraceWriter::TraceWriter(TraceFormat format, const SnailWriteOptions& options, int fd,
                         std::string name)
    : impl_(std::make_unique<Impl>()) {
  impl_->format = format;
  impl_->fd = fd;
  impl_->name = std::move(name);
  impl_->options = options;
}

TraceWriter::~TraceWriter() = default;

void TraceWriter::begin(const Trace& meta, bool names_last) {
  Impl& m = *impl_;
  m.source = meta.source;
  if (m.format == TraceFormat::snail) {
    m.snail.emplace(m.options, meta.source);
    m.snail->begin(m.out, meta, names_last);
  } else {
    if (!meta.profile_blocks.empty())
      throw TraceError(m.name, "cannot write",
                       "the trace holds a profile, which only .snail can hold");
    detail::append_jsonl_metadata(m.out, meta);
  }
  m.maybe_flush(false);
}

void TraceWriter::add(const Event* events, size_t n) {
  Impl& m = *impl_;
  if (m.snail)
    m.snail->add(m.out, events, n);
  else
    detail::append_jsonl_events(m.out, events, n, m.events, m.source);
  m.events += n;
  m.maybe_flush(false);
}

void TraceWriter::finish(const Trace* meta) {
  Impl& m = *impl_;
  if (m.snail) m.snail->finish(m.out, meta);
  m.maybe_flush(true);
}

std::string TraceWriter::take() {
  return std::move(impl_->out);
}

uint64_t TraceWriter::events() const {
  return impl_->events;
}

struct JsonlChunkReader::Impl {
  int fd = -1;
  bool own = false;
  std::string source;
  std::unique_ptr<char[]> buf;
  size_t cap = 0, len = 0;  // bytes in buf
  bool eof = false;
  uint64_t next_line = 1;
  Trace names;

  ~Impl() {
    if (own && fd >= 0) ::close(fd);
  }
  void grow(size_t need) {
    if (need + detail::kJsonPadding <= cap) return;
    size_t c = std::max<size_t>(cap * 2, need + detail::kJsonPadding);
    std::unique_ptr<char[]> b(new char[c]);
    if (len) std::memcpy(b.get(), buf.get(), len);
    buf = std::move(b);
    cap = c;
  }
  // Reads until the buffer holds at least `want` bytes or the input ends.
  void fill(size_t want) {
    grow(want);
    while (!eof && len < want) {
      const ssize_t got = ::read(fd, buf.get() + len, cap - detail::kJsonPadding - len);
      if (got < 0) {
        if (errno == EINTR) continue;
        throw TraceError(source, "cannot read", std::strerror(errno));
      }
      if (got == 0) eof = true;
      len += static_cast<size_t>(got);
    }
  }
};

JsonlChunkReader::JsonlChunkReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (path == "-") {
    m.fd = STDIN_FILENO;
    m.source = "<stdin>";
  } else {
    m.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (m.fd < 0) throw TraceError(path, "cannot open", std::strerror(errno));
    m.own = true;
    m.source = path;
  }
  m.names.source = m.source;
  m.names.format = TraceFormat::jsonl;
}

JsonlChunkReader::~JsonlChunkReader() = default;

bool JsonlChunkReader::next(Trace& batch) {
  Impl& m = *impl_;
  constexpr size_t kChunk = size_t{4} << 20;
  m.fill(kChunk);
  if (m.len == 0) return false;
  // Whole lines: up to the last newline (all of it at the end of the input); a line
  // longer than the buffer makes it grow.
  size_t end = 0;
  for (;;) {
    const char* p = m.buf.get();
    const void* nl = ::memrchr(p, '\n', m.len);
    if (nl) {
      end = static_cast<size_t>(static_cast<const char*>(nl) - p) + 1;
      break;
    }
    if (m.eof) {
      end = m.len;
      break;
    }
    m.fill(m.len * 2);
  }
  // simdjson reads up to kJsonPadding bytes past the text: zero them where the chunk ends
  // at the end of the input (elsewhere the next line's bytes are there).
  std::memset(m.buf.get() + m.len, 0, detail::kJsonPadding);
  Trace t = detail::parse_jsonl_chunk(m.buf.get(), end, m.source, m.next_line);
  for (const char *p = m.buf.get(), *e = p + end;
       (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(e - p)))); ++p)
    ++m.next_line;
  if (end == m.len && m.len > 0 && m.buf[m.len - 1] != '\n') ++m.next_line;
  for (auto& [id, name] : t.worker_names) m.names.worker_names[id] = std::move(name);
  for (auto& [id, name] : t.operator_names) m.names.operator_names[id] = std::move(name);
  batch.events = std::move(t.events);
  batch.lines = std::move(t.lines);
  batch.source = m.source;
  batch.format = TraceFormat::jsonl;
  std::memmove(m.buf.get(), m.buf.get() + end, m.len - end);
  m.len -= end;
  return true;
}

const Trace& JsonlChunkReader::names() const {
  return impl_->names;
}

uint64_t spool_jsonl_to_snail(const std::string& jsonl_path, const std::string& snail_path) {
  JsonlChunkReader reader(jsonl_path);
  const int fd = ::open(snail_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw TraceError(snail_path, "cannot create", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  TraceWriter writer(TraceFormat::snail, SnailWriteOptions{}, fd, snail_path);
  writer.begin(reader.names(), true);
  Trace batch;
  while (reader.next(batch)) writer.add(batch.events.data(), batch.events.size());
  writer.finish(&reader.names());
  return writer.events();
}

}  // namespace snailtrail
