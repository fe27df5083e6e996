#include "serve/ingest.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <unordered_map>

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
// Events decoded per batch handed to the queue (a .snail block is decoded whole, so a
// batch holds at most this plus one block).
constexpr size_t kBatchEvents = 1 << 16;
// A JSONL line longer than this is skipped by the decoder (StreamDecoder's kMaxLine).
constexpr size_t kMaxLine = size_t{1} << 20;

}  // namespace

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
        counters_(counters) {
    decoder_.set_output_limit(kBatchEvents);
  }

  bool feed(const uint8_t* data, size_t n) {
    counters_.bytes += n;
    foreign_bytes_ += n;
    bool ok = true;
    if (foreign_) {
      ok = run_foreign([&] {
        foreign_->feed(std::string_view(reinterpret_cast<const char*>(data), n), pending_);
      });
      hand_over();
      return ok;
    }
    ok = decoder_.feed(std::span<const uint8_t>(data, n), pending_);
    hand_over();
    // Decoded in batches of kBatchEvents, so that a piece of input holding many blocks
    // never turns into more than one batch (and one block) of events at once.
    while (ok && decoder_.more()) {
      ok = decoder_.feed({}, pending_);
      hand_over();
    }
    return ok;
  }

  // Our own formats: bytes received, not decoded yet; and the bytes the unit being
  // received needs in total (one more than buffered for a JSONL line).
  size_t buffered() const { return decoder_.buffered(); }
  uint64_t bytes() const { return foreign_bytes_; }  // fed so far
  size_t need() const {
    const size_t unit = decoder_.unit_bytes();
    return unit ? unit : decoder_.buffered() + 1;
  }
  bool jsonl() const { return decoder_.format() != StreamDecoder::Format::snail; }

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
    if (pending_.events.capacity() > 2 * kBatchEvents) pending_.events = BigVector<Event>();
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

bool MemoryBudget::try_reserve(size_t n) {
  size_t used = used_.load();
  do {
    if (n > limit_ || used > limit_ - n) return false;
  } while (!used_.compare_exchange_weak(used, used + n));
  size_t peak = peak_.load();
  while (used + n > peak && !peak_.compare_exchange_weak(peak, used + n)) {
  }
  return true;
}

void MemoryBudget::release(size_t n) {
  used_ -= n;
}

namespace {

using Clock = std::chrono::steady_clock;

// Logs at most one line per second for a repeated event, with the count since the last.
class RateLimitedLog {
 public:
  template <class F>
  void operator()(bool log, F&& line) {
    if (!log) return;
    std::lock_guard lock(mu_);
    ++count_;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    line(count_);
    count_ = 0;
    last_ = now;
  }

 private:
  std::mutex mu_;
  uint64_t count_ = 0;
  Clock::time_point last_{};
};

void add_buffered(IngestCounters& c, int64_t delta) {
  if (delta == 0) return;
  const int64_t now = (c.buffered_bytes += delta);
  int64_t peak = c.buffered_peak.load();
  while (now > peak && !c.buffered_peak.compare_exchange_weak(peak, now)) {
  }
}

}  // namespace

ConnectionInput::ConnectionInput(const std::string& name, BatchQueue& queue,
                                 IngestCounters& counters, MemoryBudget& budget)
    : pump_(std::make_unique<Pump>(name, queue, counters)), counters_(counters), budget_(budget) {}

ConnectionInput::~ConnectionInput() {
  add_buffered(counters_, -static_cast<int64_t>(accounted_));
  budget_.release(reserved_);
}

bool ConnectionInput::admit() {
  const size_t need = pump_->need();
  if (need <= std::max(kFreeBytes, reserved_)) return true;
  const size_t want = pump_->jsonl() ? kMaxLine + kFreeBytes : need;
  if (want > reserved_ && budget_.try_reserve(want - reserved_)) {
    reserved_ = want;
    return true;
  }
  return false;
}

size_t ConnectionInput::room() const {
  const size_t allowance = std::max(kFreeBytes, reserved_);
  const size_t have = pump_->buffered();
  return allowance > have ? allowance - have : 0;
}

bool ConnectionInput::feed(const uint8_t* data, size_t n) {
  const bool ok = pump_->feed(data, n);
  account();
  return ok;
}

void ConnectionInput::finish() {
  pump_->finish();
  account();
}

void ConnectionInput::account() {
  const size_t now = pump_->buffered();
  add_buffered(counters_, static_cast<int64_t>(now) - static_cast<int64_t>(accounted_));
  accounted_ = now;
  // Done with the large unit: back to the free allowance.
  if (reserved_ && now <= kFreeBytes && pump_->need() <= kFreeBytes) {
    budget_.release(reserved_);
    reserved_ = 0;
  }
}

uint64_t ConnectionInput::bytes() const {
  return pump_->bytes();
}

size_t ConnectionInput::buffered() const {
  return pump_->buffered();
}
bool ConnectionInput::broken() const {
  return pump_->broken();
}
const std::string& ConnectionInput::broken_reason() const {
  return pump_->broken_reason();
}
void ConnectionInput::log_end(bool log) const {
  pump_->log_end(log);
}

// One event loop: an epoll set of connections, read with one buffer.
struct TcpIngest::Loop {
  struct Conn {
    int fd = -1;
    std::string name;
    std::unique_ptr<ConnectionInput> input;
    bool paused = false;  // waiting for the budget: not in the epoll set's interest
    Clock::time_point last;
  };

  TcpIngest& owner;
  int epoll_fd = -1, wake_fd = -1;
  std::mutex inbox_mu;
  std::vector<std::pair<int, std::string>> inbox;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kReadSize);
  std::thread thread;

  explicit Loop(TcpIngest& o) : owner(o) {
    epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_fd < 0 || wake_fd < 0)
      throw std::runtime_error(std::string("cannot create an event loop: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);
  }
  ~Loop() {
    for (auto& [fd, c] : conns) ::close(fd);
    if (epoll_fd >= 0) ::close(epoll_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void hand(int fd, std::string name) {
    {
      std::lock_guard lock(inbox_mu);
      inbox.emplace_back(fd, std::move(name));
    }
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  void adopt() {
    uint64_t v;
    [[maybe_unused]] ssize_t n = ::read(wake_fd, &v, sizeof v);
    std::vector<std::pair<int, std::string>> fresh;
    {
      std::lock_guard lock(inbox_mu);
      fresh.swap(inbox);
    }
    for (auto& [fd, name] : fresh) {
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->name = std::move(name);
      c->input =
          std::make_unique<ConnectionInput>(c->name, owner.queue_, owner.counters_, owner.budget_);
      c->last = Clock::now();
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = c.get();
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
      conns.emplace(fd, std::move(c));
    }
  }

  void set_paused(Conn& c, bool paused) {
    if (c.paused == paused) return;
    c.paused = paused;
    epoll_event ev{};
    ev.events = paused ? 0u : static_cast<uint32_t>(EPOLLIN);
    ev.data.ptr = &c;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
    if (paused)
      ++owner.counters_.paused_connections;
    else {
      --owner.counters_.paused_connections;
      c.last = Clock::now();
    }
  }

  void close_conn(Conn& c, bool finish) {
    if (finish && !c.input->broken()) c.input->finish();
    c.input->log_end(owner.log_);
    if (c.paused) --owner.counters_.paused_connections;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    --owner.counters_.connections_open;
    conns.erase(c.fd);  // destroys c
  }

  // One read. False if the connection was closed.
  bool read_once(Conn& c) {
    if (!c.input->admit()) {
      set_paused(c, true);
      return true;
    }
    const ssize_t n = ::read(c.fd, buf.data(), std::min(buf.size(), c.input->room()));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return true;
      if (owner.log_)
        fmt::print(stderr, "snailtrail serve: {}: read error: {}\n", c.name, std::strerror(errno));
      close_conn(c, true);
      return false;
    }
    if (n == 0) {
      close_conn(c, true);
      return false;
    }
    c.last = Clock::now();
    if (!c.input->feed(buf.data(), static_cast<size_t>(n))) {
      ++owner.counters_.broken_streams;
      if (owner.log_)
        fmt::print(stderr, "snailtrail serve: {}: closing the stream: {}\n", c.name,
                   c.input->broken_reason());
      close_conn(c, false);
      return false;
    }
    return true;
  }

  void run() {
    std::vector<epoll_event> events(64);
    const auto idle = std::chrono::nanoseconds(owner.limits_.idle_timeout_ns);
    auto last_sweep = Clock::now();
    while (!owner.stop_.load()) {
      bool any_paused = false;
      for (auto& [fd, c] : conns) any_paused |= c->paused;
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                                 any_paused ? 10 : 100);
      for (int i = 0; i < n; ++i) {
        if (!events[i].data.ptr) {
          adopt();
          continue;
        }
        Conn& c = *static_cast<Conn*>(events[i].data.ptr);
        if (c.paused) {
          // Only errors are reported for a paused connection: its peer is gone.
          if (events[i].events & (EPOLLERR | EPOLLHUP)) close_conn(c, true);
          continue;
        }
        read_once(c);
      }
      // Paused connections whose reservation now fits go on.
      if (any_paused) {
        std::vector<Conn*> paused;
        for (auto& [fd, c] : conns)
          if (c->paused) paused.push_back(c.get());
        for (Conn* c : paused)
          if (c->input->admit()) set_paused(*c, false);
      }
      const auto now = Clock::now();
      if (now - last_sweep > std::chrono::milliseconds(200)) {
        last_sweep = now;
        std::vector<Conn*> silent;
        for (auto& [fd, c] : conns)
          if (!c->paused && now - c->last > idle) silent.push_back(c.get());
        for (Conn* c : silent) {
          ++owner.counters_.connections_timed_out;
          if (owner.log_)
            fmt::print(stderr, "snailtrail serve: {}: silent for {:.3g} s: closing it\n", c->name,
                       std::chrono::duration<double>(idle).count());
          close_conn(*c, true);
        }
      }
    }
    // Stopping: read what is readable without waiting (as far as the budget allows),
    // then end every stream.
    while (owner.accepting_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    adopt();
    std::vector<Conn*> all;
    for (auto& [fd, c] : conns) all.push_back(c.get());
    for (Conn* c : all) {
      // What is queued in the socket now, not what a fast producer keeps sending.
      int queued = 0;
      if (::ioctl(c->fd, FIONREAD, &queued) != 0) queued = 0;
      uint64_t until = c->input->bytes() + static_cast<uint64_t>(std::max(queued, 0));
      bool open = true;
      while (c->input->bytes() < until) {
        pollfd p{c->fd, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0 || !c->input->admit()) break;
        if (!(open = read_once(*c))) break;
      }
      if (open) close_conn(*c, true);
    }
  }
};

TcpIngest::TcpIngest(std::vector<std::pair<int, std::string>> listeners, BatchQueue& queue,
                     IngestCounters& counters, const TcpLimits& limits,
                     const std::atomic<bool>& stop, bool log)
    : listeners_(std::move(listeners)),
      queue_(queue),
      counters_(counters),
      limits_(limits),
      stop_(stop),
      log_(log),
      budget_(limits.buffer_bytes) {
  if (limits_.threads == 0) limits_.threads = 1;
  for (unsigned i = 0; i < limits_.threads; ++i) loops_.push_back(std::make_unique<Loop>(*this));
  running_ = static_cast<unsigned>(loops_.size());
  for (auto& l : loops_)
    l->thread = std::thread([this, loop = l.get()] {
      loop->run();
      --running_;
    });
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpIngest::~TcpIngest() {
  join();
}

void TcpIngest::join() {
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& l : loops_)
    if (l->thread.joinable()) l->thread.join();
}

void TcpIngest::accept_loop() {
  std::vector<pollfd> fds;
  for (const auto& [fd, name] : listeners_) fds.push_back({fd, POLLIN, 0});
  std::vector<uint64_t> numbers(listeners_.size(), 0);
  RateLimitedLog refused_log, error_log;
  size_t next = 0;
  while (!stop_.load()) {
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      const int fd = ::accept4(fds[i].fd, reinterpret_cast<sockaddr*>(&peer), &len,
                               SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          error_log(log_, [&](uint64_t n) {
            fmt::print(stderr, "snailtrail serve: tcp {}: cannot accept ({} time(s)): {}\n",
                       listeners_[i].second, n, std::strerror(errno));
          });
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        continue;
      }
      const uint64_t number = ++numbers[i];
      if (counters_.connections_open.load() >= limits_.max_connections) {
        // Count before closing: a client that sees the close may read the metric at once.
        ++counters_.connections_refused;
        ::close(fd);
        refused_log(log_, [&](uint64_t n) {
          fmt::print(stderr,
                     "snailtrail serve: tcp {}: refused {} connection(s): {} open, the limit "
                     "(--max-connections)\n",
                     listeners_[i].second, n, limits_.max_connections);
        });
        continue;
      }
      ++counters_.connections_total;
      ++counters_.connections_open;
      std::string name = fmt::format("tcp {} connection {}", listeners_[i].second, number);
      if (log_) fmt::print(stderr, "snailtrail serve: {} opened\n", name);
      loops_[next++ % loops_.size()]->hand(fd, std::move(name));
    }
  }
  accepting_ = false;
}

}  // namespace snailtrail::serve
