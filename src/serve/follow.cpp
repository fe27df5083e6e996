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

#include "serve/ingest.hpp"
#include "serve/pump.hpp"

namespace snailtrail::serve {

namespace {

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
  const importers::Importer* imp = importers::find_importer(name);
  if (!imp)
    throw std::invalid_argument("unknown importer \"" + name +
                                "\" (available: " + importers::importer_names() + ")");
  if (!imp->stream) {
    throw std::invalid_argument(
        "serve --follow cannot read " + path + " as " + name + ": " +
        (imp->not_streamed.empty() ? "the " + name + " importer reads whole files only"
                                   : std::string(imp->not_streamed)) +
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

namespace {

// One followed file: read to its current end, then polled for more, and read again from
// its start when it is truncated in place or replaced (log rotation).
class Follower {
 public:
  Follower(const std::string& path, const FollowFormat& format, BatchQueue& queue,
           IngestCounters& counters, const std::atomic<bool>& stop, bool log)
      : path_(path),
        format_(format),
        queue_(queue),
        counters_(counters),
        stop_(stop),
        log_(log),
        buf_(kReadSize) {}

  void run() {
    bool said_waiting = false;
    while (!stop_.load()) {
      const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {  // not there yet: wait for it
        if (log_ && !said_waiting)
          fmt::print(stderr, "snailtrail serve: waiting for {} to appear\n", path_);
        said_waiting = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      bool ok = true;
      const bool restart = read_file(fd, ok);
      ::close(fd);
      if (!ok) return stopped();
      if (!restart) return end();
      pump_.reset();  // read it again from its start
      head_.clear();
    }
  }

 private:
  // Reads until the file ends at shutdown (false), cannot be followed (false, ok false)
  // or was truncated or replaced (true).
  bool read_file(int fd, bool& ok) {
    uint64_t offset = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buf_.data(), buf_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        offset += static_cast<uint64_t>(n);
        if (pump_) {
          ok = pump_->feed(buf_.data(), static_cast<size_t>(n));
        } else {
          head_.append(reinterpret_cast<const char*>(buf_.data()), static_cast<size_t>(n));
          ok = start_pump(false, false);
        }
        if (!ok) return false;
        continue;
      }
      if (!pump_ && !head_.empty() && !(ok = start_pump(true, false))) return false;
      if (stop_.load()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (replaced(fd, offset)) {
        if (log_)
          fmt::print(stderr, "snailtrail serve: {} was truncated or replaced: reading it again\n",
                     path_);
        return true;
      }
    }
  }

  // Truncated in place, or replaced by a new file.
  bool replaced(int fd, uint64_t offset) const {
    struct stat now {
    }, open_file{};
    return ::stat(path_.c_str(), &now) == 0 && ::fstat(fd, &open_file) == 0 &&
           (now.st_ino != open_file.st_ino || now.st_dev != open_file.st_dev ||
            static_cast<uint64_t>(now.st_size) < offset);
  }

  // Picks the decoder once the head suffices to sniff: a line, or kSniffBytes, or, at
  // the end of what is written so far, binary data (.snail, MessagePack, zstd: no
  // lines), or the end of the file at shutdown. False if the file cannot be followed.
  bool start_pump(bool at_eof, bool at_end) {
    const bool binary = std::any_of(head_.begin(), head_.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r';
    });
    if (format_.importer == "auto" && !at_end && !(at_eof && binary) &&
        head_.size() < importers::kSniffBytes && head_.find('\n') == std::string::npos)
      return true;  // wait for more
    try {
      const std::string name = followed_format(path_, format_.importer, head_);
      pump_ = std::make_unique<Pump>(
          path_, queue_, counters_,
          name.empty() ? nullptr : importers::make_stream_importer(name, path_, format_.options));
    } catch (const std::exception& e) {
      ++counters_.broken_streams;
      if (log_) fmt::print(stderr, "snailtrail serve: {}: not following it: {}\n", path_, e.what());
      return false;
    }
    const bool ok = pump_->feed(reinterpret_cast<const uint8_t*>(head_.data()), head_.size());
    head_.clear();
    return ok;
  }

  // The file cannot be followed further.
  void stopped() {
    if (!pump_) return;  // (without a pump, start_pump has said why)
    ++counters_.broken_streams;
    if (log_)
      fmt::print(stderr, "snailtrail serve: {}: stopped following: {}\n", path_,
                 pump_->broken_reason());
    pump_->log_end(log_);
  }

  // Shutdown: what the file holds is complete.
  void end() {
    if (!pump_ && !head_.empty() && !start_pump(true, true)) return;
    if (pump_) {
      if (!pump_->broken()) pump_->finish();
      pump_->log_end(log_);
    }
  }

  const std::string& path_;
  const FollowFormat& format_;
  BatchQueue& queue_;
  IngestCounters& counters_;
  const std::atomic<bool>& stop_;
  const bool log_;
  std::vector<uint8_t> buf_;
  std::unique_ptr<Pump> pump_;
  std::string head_;  // the first bytes, until the format is known
};

}  // namespace

void follow_file(const std::string& path, const FollowFormat& format, BatchQueue& queue,
                 IngestCounters& counters, const std::atomic<bool>& stop, bool log) {
  Follower(path, format, queue, counters, stop, log).run();
}

}  // namespace snailtrail::serve
