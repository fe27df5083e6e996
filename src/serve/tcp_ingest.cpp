#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "serve/ingest.hpp"
#include "serve/pump.hpp"

namespace snailtrail::serve {

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

}  // namespace
// One event loop: an epoll set of connections, read with one buffer.
struct TcpIngest::Loop {
  struct Conn {
    int fd = -1;
    std::string name;
    std::unique_ptr<ConnectionInput> input;
    bool paused = false;  // waiting for the budget: not in the epoll set's interest
    Clock::time_point last, opened;
    // The stream's first line while it may still be a token line (kTokenLinePrefix).
    std::string head;
    bool head_done = false;
    SSL* ssl = nullptr;  // with TLS
    bool handshaken = false;
    ~Conn() {
      if (ssl) SSL_free(ssl);
    }
  };

  TcpIngest& owner;
  int epoll_fd = -1, wake_fd = -1;
  std::mutex inbox_mu;
  std::vector<std::pair<int, std::string>> inbox;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kReadSize);
  std::string joined;  // held-back first bytes and the read after them
  RateLimitedLog unauthorized_log;
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
      c->last = c->opened = Clock::now();
      if (owner.tls_) {
        c->ssl = SSL_new(owner.tls_);
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
          ERR_clear_error();
          ::close(fd);
          --owner.counters_.connections_open;
          continue;  // c (and its SSL, if any) is freed here
        }
        SSL_set_accept_state(c->ssl);
      }
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

  // A connection without a valid token: closed with nothing of it ingested. The log never
  // shows what it sent.
  void refuse(Conn& c, const char* why) {
    ++owner.counters_.connections_unauthorized;
    unauthorized_log(owner.log_, [&](uint64_t n) {
      fmt::print(stderr,
                 "snailtrail serve: {}: closed, {} ({} such connection(s) since the last line)\n",
                 c.name, why, n);
    });
    refuse_quietly(c);  // destroys c, whose input saw nothing
  }

  // The stream's first line, while it may be a token line: collects it, checks the token
  // and leaves in [data, data + size) what follows it (or the bytes collected, when the
  // stream does not start with a token line and none is required). False if the
  // connection was refused and closed.
  bool take_head(Conn& c, const uint8_t*& data, size_t& size) {
    const size_t old = c.head.size();
    const size_t limit = kTokenLinePrefix.size() + kMaxTokenBytes + 2;
    const size_t take = std::min(size, limit + 1 - old);
    c.head.append(reinterpret_cast<const char*>(data), take);
    const size_t cmp = std::min(c.head.size(), kTokenLinePrefix.size());
    const bool token_line = c.head.compare(0, cmp, kTokenLinePrefix, 0, cmp) == 0;
    if (!token_line) {
      if (owner.auth_.enabled()) {
        refuse(c, "its first line is not its token (Bearer TOKEN)");
        return false;
      }
      // No token line: the bytes held back from earlier reads go first.
      c.head_done = true;
      if (old > 0) {
        joined.assign(c.head, 0, old);
        joined.append(reinterpret_cast<const char*>(data), size);
        data = reinterpret_cast<const uint8_t*>(joined.data());
        size = joined.size();
      }
      std::string().swap(c.head);
      return true;
    }
    const size_t nl = c.head.find('\n');
    if (nl == std::string::npos) {
      if (c.head.size() > limit) {
        refuse(c, "its token line is too long");
        return false;
      }
      data += size;  // all taken into the head
      size = 0;
      return true;
    }
    std::string_view token(c.head.data() + kTokenLinePrefix.size(), nl - kTokenLinePrefix.size());
    if (!token.empty() && token.back() == '\r') token.remove_suffix(1);
    if (!owner.auth_.may_write(token)) {
      refuse(c, "its token is not accepted");
      return false;
    }
    c.head_done = true;
    // What came after the line in this read.
    const size_t used = nl + 1 - old;
    data += used;
    size -= used;
    std::string().swap(c.head);
    return true;
  }

  // A read from the socket or the TLS session, as ::read answers: -1 with errno EAGAIN
  // when nothing is there yet, 0 at the end of the stream.
  ssize_t receive(Conn& c, size_t n) {
    if (!c.ssl) return ::read(c.fd, buf.data(), n);
    const int r = SSL_read(c.ssl, buf.data(), static_cast<int>(n));
    if (r > 0) return r;
    const int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      errno = EAGAIN;
      return -1;
    }
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN) return 0;  // close_notify: the stream's end
    // The peer vanished without close_notify, or the session broke: an end, maybe a cut
    // (a cut block or line counts as truncated, as on plain TCP).
    return 0;
  }

  // Decrypted bytes wait inside the TLS session, where epoll does not see them.
  bool tls_pending(const Conn& c) const { return c.ssl && !c.paused && SSL_pending(c.ssl) > 0; }

  // A connection closed before it is a stream (a failed TLS handshake): nothing to finish.
  void refuse_quietly(Conn& c) {
    // An abortive close (a reset, not an end of stream): the producer learns that its
    // stream was not taken, whatever it has sent so far.
    const linger abort{1, 0};
    ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    if (c.paused) --owner.counters_.paused_connections;
    ::close(c.fd);
    --owner.counters_.connections_open;
    conns.erase(c.fd);
  }

  // One read. False if the connection was closed.
  bool read_once(Conn& c) {
    if (!c.input->admit()) {
      set_paused(c, true);
      return true;
    }
    if (c.ssl && !c.handshaken) {
      const int r = SSL_do_handshake(c.ssl);
      if (r != 1) {
        const int e = SSL_get_error(c.ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
        ERR_clear_error();
        ++owner.counters_.tls_failed;
        if (owner.log_)
          fmt::print(stderr, "snailtrail serve: {}: closed, its TLS handshake failed\n", c.name);
        refuse_quietly(c);
        return false;
      }
      c.handshaken = true;
    }
    const ssize_t n = receive(c, std::min(buf.size(), c.input->room()));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) return true;
      if (owner.log_)
        fmt::print(stderr, "snailtrail serve: {}: read error: {}\n", c.name, std::strerror(errno));
      close_conn(c, true);
      return false;
    }
    if (n == 0) {
      if (!c.head_done && owner.auth_.enabled()) {
        refuse(c, "it ended before its token line");
        return false;
      }
      close_conn(c, true);
      return false;
    }
    c.last = Clock::now();
    const uint8_t* data = buf.data();
    size_t size = static_cast<size_t>(n);
    if (!c.head_done && !take_head(c, data, size)) return false;
    if (size > 0 && !c.input->feed(data, size)) {
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
        while (read_once(c) && tls_pending(c)) {
        }
      }
      // Paused connections whose reservation now fits go on.
      if (any_paused) {
        std::vector<Conn*> paused;
        for (auto& [fd, c] : conns)
          if (c->paused) paused.push_back(c.get());
        for (Conn* c : paused)
          if (c->input->admit()) {
            set_paused(*c, false);
            while (tls_pending(*c) && read_once(*c)) {
            }
          }
      }
      const auto now = Clock::now();
      if (now - last_sweep > std::chrono::milliseconds(200)) {
        last_sweep = now;
        // Without its token within kTokenTimeoutNs, a connection is refused (it holds a
        // place under --max-connections meanwhile).
        if (owner.auth_.enabled()) {
          std::vector<Conn*> mute;
          for (auto& [fd, c] : conns)
            if (!c->head_done && now - c->opened > std::chrono::nanoseconds(kTokenTimeoutNs))
              mute.push_back(c.get());
          for (Conn* c : mute) refuse(*c, "no token line within 10 s");
        }
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
        const bool pending = c->ssl && SSL_pending(c->ssl) > 0;
        if ((!pending && ::poll(&p, 1, 0) <= 0) || !c->input->admit()) break;
        if (!(open = read_once(*c))) break;
      }
      if (open) close_conn(*c, true);
    }
  }
};

TcpIngest::TcpIngest(std::vector<std::pair<int, std::string>> listeners, BatchQueue& queue,
                     IngestCounters& counters, const TcpLimits& limits,
                     const std::atomic<bool>& stop, bool log, AuthTokens auth, ssl_ctx_st* tls)
    : listeners_(std::move(listeners)),
      queue_(queue),
      counters_(counters),
      limits_(limits),
      stop_(stop),
      log_(log),
      auth_(std::move(auth)),
      tls_(tls),
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
