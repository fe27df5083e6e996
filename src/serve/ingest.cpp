#include "serve/ingest.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "importers/streaming.hpp"

namespace snailtrail::serve {

void BatchQueue::push(Batch batch) {
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [&] { return events_ < capacity_ || batches_.empty(); });
  events_ += batch.events.size();
  batches_.push_back(std::move(batch));
  not_empty_.notify_one();
}

std::optional<Batch> BatchQueue::pop(int timeout_ms) {
  std::unique_lock lock(mu_);
  if (!not_empty_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return !batches_.empty(); }))
    return std::nullopt;
  Batch b = std::move(batches_.front());
  batches_.pop_front();
  events_ -= b.events.size();
  not_full_.notify_all();
  return b;
}

size_t BatchQueue::queued_events() const {
  std::lock_guard lock(mu_);
  return events_;
}

namespace {

constexpr size_t kReadSize = 1 << 18;

// Decodes one piece of a stream and queues what it completed: our own formats
// (StreamDecoder), or a foreign format through its streaming importer.
class Pump {
 public:
  Pump(const std::string& name, BatchQueue& queue, IngestCounters& counters,
       std::unique_ptr<importers::StreamImporter> foreign = nullptr)
      : name_(name),
        decoder_(name),
        foreign_(std::move(foreign)),
        queue_(queue),
        counters_(counters) {}

  bool feed(const uint8_t* data, size_t n) {
    counters_.bytes += n;
    foreign_bytes_ += n;
    bool ok = true;
    if (foreign_)
      ok = run_foreign([&] {
        foreign_->feed(std::string_view(reinterpret_cast<const char*>(data), n), pending_);
      });
    else
      ok = decoder_.feed(std::span<const uint8_t>(data, n), pending_);
    hand_over();
    return ok;
  }

  void finish() {
    if (foreign_)
      run_foreign([&] { foreign_->finish(pending_); });
    else
      decoder_.finish(pending_);
    hand_over();
    if (foreign_)
      for (const auto& [key, n] : foreign_->diagnostics())
        if (importers::is_cut_input(key)) counters_.truncated += n;
  }

  bool broken() const { return foreign_ ? !foreign_error_.empty() : decoder_.broken(); }
  const std::string& broken_reason() const {
    return foreign_ ? foreign_error_ : decoder_.broken_reason();
  }

  void log_end(bool log) const {
    if (!log) return;
    std::string problems;
    uint64_t events = 0, bytes = 0;
    if (foreign_) {
      events = foreign_events_;
      bytes = foreign_bytes_;
      for (const auto& [key, n] : foreign_->diagnostics())
        problems += fmt::format("{} {} {}", problems.empty() ? ";" : ",", key, n);
      if (!foreign_error_.empty()) problems += "; stopped at: " + foreign_error_;
    } else {
      const StreamStats& s = decoder_.stats();
      events = s.events;
      bytes = s.bytes;
      if (s.bad_lines) problems += fmt::format(", {} bad line(s)", s.bad_lines);
      if (s.bad_blocks) problems += fmt::format(", {} bad block(s)", s.bad_blocks);
      if (s.truncated) problems += ", truncated at the end";
      if (!s.first_error.empty()) problems += "; first problem: " + s.first_error;
    }
    fmt::print(stderr, "snailtrail serve: {} closed: {} events, {} bytes{}\n", name_, events, bytes,
               problems);
  }

 private:
  // Bad input ends a foreign stream: its importer cannot resynchronise.
  template <class F>
  bool run_foreign(F&& f) {
    if (!foreign_error_.empty()) return false;
    const size_t before = pending_.events.size();
    try {
      f();
    } catch (const std::exception& e) {
      foreign_error_ = e.what();
    }
    foreign_events_ += pending_.events.size() - before;
    return foreign_error_.empty();
  }

  void hand_over() {
    const StreamStats& s = decoder_.stats();
    counters_.bad_lines += s.bad_lines - seen_.bad_lines;
    counters_.bad_blocks += s.bad_blocks - seen_.bad_blocks;
    counters_.truncated += s.truncated - seen_.truncated;
    seen_ = s;
    if (pending_.events.empty() && pending_.worker_names.empty() && pending_.operator_names.empty())
      return;
    Batch batch;
    batch.first = first_;
    first_ = false;
    batch.events.assign(pending_.events.begin(), pending_.events.end());
    counters_.events += batch.events.size();
    batch.names.worker_names.swap(pending_.worker_names);
    batch.names.operator_names.swap(pending_.operator_names);
    pending_.events.clear();
    queue_.push(std::move(batch));
  }

  std::string name_;
  StreamDecoder decoder_;
  std::unique_ptr<importers::StreamImporter> foreign_;
  std::string foreign_error_;
  uint64_t foreign_events_ = 0, foreign_bytes_ = 0;
  BatchQueue& queue_;
  IngestCounters& counters_;
  Trace pending_;
  StreamStats seen_;
  bool first_ = true;
};

// The importer that reads a followed file: `importer`, or sniffed from its first bytes.
// "" for our own formats (the stream decoder tells JSONL and .snail apart itself).
std::string followed_format(const std::string& path, const std::string& importer,
                            std::string_view head) {
  std::string name = importer;
  if (name == "auto") {
    const importers::Importer* imp = importers::sniff_importer(path, head);
    name = imp ? std::string(imp->name) : "jsonl";  // unknown: JSONL, which counts bad lines
  }
  if (name == "jsonl" || name == "snail") return "";
  if (!importers::find_importer(name))
    throw std::invalid_argument("unknown importer \"" + name +
                                "\" (available: " + importers::importer_names() + ")");
  if (!importers::make_stream_importer(name, path, {})) {
    const bool document = name == "chrome" || name == "jaeger";
    throw std::invalid_argument(
        "serve --follow cannot read " + path + " as " + name + ": " +
        (document ? "a " + name +
                        " trace is one JSON document, complete only at its end, so there is "
                        "nothing to analyze while it grows"
         : name == "otlp" ? std::string("a span's parent, children and links may come "
                                        "in any later line, so no part of an OTLP file "
                                        "is final before its end")
                          : "the " + name + " importer reads whole files only") +
        ". Analyze the finished file with `snailtrail analyze " + path +
        "`, or convert it (`snailtrail convert`) and replay it with `snailtrail send`. "
        "Formats serve can follow: jsonl, snail, " +
        importers::streaming_importer_names());
  }
  return name;
}

}  // namespace

void pump_stream(int fd, const std::string& name, BatchQueue& queue, IngestCounters& counters,
                 const std::atomic<bool>& stop, bool log) {
  Pump pump(name, queue, counters);
  std::vector<uint8_t> buf(kReadSize);
  bool draining = false;
  for (;;) {
    if (!draining && stop.load()) draining = true;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, draining ? 0 : 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (draining) break;  // nothing more readable right now: stop here
      continue;
    }
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (log)
        fmt::print(stderr, "snailtrail serve: {}: read error: {}\n", name, std::strerror(errno));
      break;
    }
    if (n == 0) break;
    if (!pump.feed(buf.data(), static_cast<size_t>(n))) {
      ++counters.broken_streams;
      if (log)
        fmt::print(stderr, "snailtrail serve: {}: closing the stream: {}\n", name,
                   pump.broken_reason());
      break;
    }
  }
  if (!pump.broken()) pump.finish();
  pump.log_end(log);
}

void check_followable(const std::string& path, const std::string& importer) {
  std::string head;
  if (importer == "auto") {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;  // not there yet: sniffed when it appears
    head.resize(importers::kSniffBytes);
    const ssize_t n = ::read(fd, head.data(), head.size());
    ::close(fd);
    head.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (head.empty()) return;
  }
  followed_format(path, importer, head);
}

void follow_file(const std::string& path, const FollowFormat& format, BatchQueue& queue,
                 IngestCounters& counters, const std::atomic<bool>& stop, bool log) {
  std::vector<uint8_t> buf(kReadSize);
  while (!stop.load()) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {  // not there yet: wait for it
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    std::unique_ptr<Pump> pump;
    std::string head;  // the first bytes, until the format is known
    // Picks the decoder once the head suffices to sniff: a line, or kSniffBytes, or, at
    // the end of what is written so far, binary data (.snail, MessagePack, zstd: no
    // lines), or the end of the file at shutdown. False if the file cannot be followed.
    auto start_pump = [&](bool at_eof, bool at_end) {
      const bool binary = std::any_of(head.begin(), head.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r';
      });
      if (format.importer == "auto" && !at_end && !(at_eof && binary) &&
          head.size() < importers::kSniffBytes && head.find('\n') == std::string::npos)
        return true;  // wait for more
      try {
        const std::string name = followed_format(path, format.importer, head);
        pump = std::make_unique<Pump>(
            path, queue, counters,
            name.empty() ? nullptr : importers::make_stream_importer(name, path, format.options));
      } catch (const std::exception& e) {
        ++counters.broken_streams;
        if (log) fmt::print(stderr, "snailtrail serve: {}: not following it: {}\n", path, e.what());
        return false;
      }
      const bool ok = pump->feed(reinterpret_cast<const uint8_t*>(head.data()), head.size());
      head.clear();
      return ok;
    };
    uint64_t offset = 0;
    bool restart = false, ok = true;
    while (!restart && ok) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        offset += static_cast<uint64_t>(n);
        if (pump) {
          ok = pump->feed(buf.data(), static_cast<size_t>(n));
        } else {
          head.append(reinterpret_cast<const char*>(buf.data()), static_cast<size_t>(n));
          ok = start_pump(false, false);
        }
        continue;
      }
      if (!pump && !head.empty() && !(ok = start_pump(true, false))) break;
      if (stop.load()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      // Truncated in place, or replaced by a new file (log rotation): start over.
      struct stat now {
      }, open_file{};
      if (::stat(path.c_str(), &now) == 0 && ::fstat(fd, &open_file) == 0 &&
          (now.st_ino != open_file.st_ino || now.st_dev != open_file.st_dev ||
           static_cast<uint64_t>(now.st_size) < offset)) {
        if (log)
          fmt::print(stderr, "snailtrail serve: {} was truncated or replaced: reading it again\n",
                     path);
        restart = true;
      }
    }
    ::close(fd);
    if (!ok) {
      if (pump) {  // (without a pump, start_pump has said why)
        ++counters.broken_streams;
        if (log)
          fmt::print(stderr, "snailtrail serve: {}: stopped following: {}\n", path,
                     pump->broken_reason());
        pump->log_end(log);
      }
      return;
    }
    if (!restart) {
      if (!pump && !head.empty() && !start_pump(true, true)) return;
      if (pump) {
        if (!pump->broken()) pump->finish();
        pump->log_end(log);
      }
      return;
    }
  }
}

}  // namespace snailtrail::serve
