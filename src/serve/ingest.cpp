#include "serve/ingest.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

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

// Decodes one piece of a stream and queues what it completed.
class Pump {
 public:
  Pump(const std::string& name, BatchQueue& queue, IngestCounters& counters)
      : decoder_(name), queue_(queue), counters_(counters) {}

  bool feed(const uint8_t* data, size_t n) {
    counters_.bytes += n;
    const bool ok = decoder_.feed(std::span<const uint8_t>(data, n), pending_);
    hand_over();
    return ok;
  }

  void finish() {
    decoder_.finish(pending_);
    hand_over();
  }

  const StreamDecoder& decoder() const { return decoder_; }

 private:
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

  StreamDecoder decoder_;
  BatchQueue& queue_;
  IngestCounters& counters_;
  Trace pending_;
  StreamStats seen_;
  bool first_ = true;
};

void log_end(const std::string& name, const StreamDecoder& d, bool log) {
  if (!log) return;
  const StreamStats& s = d.stats();
  std::string problems;
  if (s.bad_lines) problems += fmt::format(", {} bad line(s)", s.bad_lines);
  if (s.bad_blocks) problems += fmt::format(", {} bad block(s)", s.bad_blocks);
  if (s.truncated) problems += ", truncated at the end";
  if (!s.first_error.empty()) problems += "; first problem: " + s.first_error;
  fmt::print(stderr, "snailtrail serve: {} closed: {} events, {} bytes{}\n", name, s.events,
             s.bytes, problems);
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
                   pump.decoder().broken_reason());
      break;
    }
  }
  if (!pump.decoder().broken()) pump.finish();
  log_end(name, pump.decoder(), log);
}

void follow_file(const std::string& path, BatchQueue& queue, IngestCounters& counters,
                 const std::atomic<bool>& stop, bool log) {
  std::vector<uint8_t> buf(kReadSize);
  while (!stop.load()) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {  // not there yet: wait for it
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    Pump pump(path, queue, counters);
    uint64_t offset = 0;
    bool restart = false;
    while (!restart) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        offset += static_cast<uint64_t>(n);
        if (!pump.feed(buf.data(), static_cast<size_t>(n))) {
          ++counters.broken_streams;
          if (log)
            fmt::print(stderr, "snailtrail serve: {}: stopped following: {}\n", path,
                       pump.decoder().broken_reason());
          ::close(fd);
          return;
        }
        continue;
      }
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
    if (!restart) {
      pump.finish();
      log_end(path, pump.decoder(), log);
      return;
    }
  }
}

}  // namespace snailtrail::serve
