#include "serve/http_front.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "serve/server.hpp"

namespace snailtrail::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxRequestsPerConnection = 1000;

// A whole request in memory, the response into a string: what httplib reads and writes.
class MemoryStream : public httplib::Stream {
 public:
  MemoryStream(const std::string& in, std::string& out, int fd) : in_(in), out_(out), fd_(fd) {}
  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* p, size_t n) override {
    n = std::min(n, in_.size() - pos_);
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* p, size_t n) override {
    out_.append(p, n);
    return static_cast<ssize_t>(n);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(::getsockname, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  template <class F>
  void address(F f, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    port = 0;
    if (f(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }
  const std::string& in_;
  std::string& out_;
  size_t pos_ = 0;
  int fd_;
};

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

std::string simple_response(int status, const char* reason, const char* more = "") {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n" + more +
         "Content-Length: 0\r\nConnection: close\r\n\r\n";
}

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  return v;
}

// The framing of a chunked body that starts at `from` in `in`: chunks "SIZE[;ext]\r\n
// DATA\r\n" up to the last one "0\r\n", then trailer lines and an empty line.
struct Chunked {
  enum State { incomplete, whole, malformed, too_large } state = incomplete;
  size_t end = 0;  // with `whole`: where the request ends
};
Chunked frame_chunked(std::string_view in, size_t from, size_t max_body) {
  size_t pos = from, data = 0;
  for (;;) {
    const size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos)
      return {in.size() - pos > 1024 ? Chunked::malformed : Chunked::incomplete};
    std::string_view line = in.substr(pos, eol - pos);
    line = trimmed(line.substr(0, line.find(';')));
    size_t size = 0;
    if (line.empty() || line.size() > 15) return {Chunked::malformed};
    for (char ch : line) {
      const int digit = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                        : std::isxdigit(static_cast<unsigned char>(ch))
                            ? std::tolower(static_cast<unsigned char>(ch)) - 'a' + 10
                            : -1;
      if (digit < 0) return {Chunked::malformed};
      size = size * 16 + static_cast<size_t>(digit);
    }
    pos = eol + 2;
    if (size == 0) {  // trailers, then the empty line
      if (in.substr(pos, 2) == "\r\n") return {Chunked::whole, pos + 2};
      const size_t blank = in.find("\r\n\r\n", pos);
      if (blank == std::string_view::npos) return {Chunked::incomplete};
      return {Chunked::whole, blank + 4};
    }
    data += size;
    if (data > max_body) return {Chunked::too_large};
    if (in.size() < pos + size + 2) return {Chunked::incomplete};
    if (in.substr(pos + size, 2) != "\r\n") return {Chunked::malformed};
    pos += size + 2;
  }
}

}  // namespace

struct HttpFront::Impl {
  struct Conn {
    uint64_t id;
    int fd;
    std::string in, out;
    size_t out_pos = 0;
    size_t requests = 0;
    bool busy = false;         // a worker has its request
    bool close_after = false;  // close once `out` is written
    bool linger = false;       // then read and drop what the client still sends, briefly
    bool lingering = false;
    bool continued = false;  // "100 Continue" sent for the request that is arriving
    SSL* ssl = nullptr;      // with TLS
    bool handshaken = false;
    Clock::time_point deadline;
  };
  struct Task {
    uint64_t id;
    int fd;
    std::string request;
    bool last;
  };
  struct Done {
    uint64_t id;
    std::string response;
    bool close;
  };

  HttpFront& front;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  SSL_CTX* tls = nullptr;
  size_t max_connections = 256;
  size_t buffered = 0;  // bytes of requests held by all connections
  std::atomic<bool> stopping{false};
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_id = 2;  // 0: the listener, 1: the wake-up eventfd
  std::mutex mu;
  std::condition_variable task_ready;
  std::deque<Task> tasks;
  std::deque<Done> done;
  std::thread loop;
  std::vector<std::thread> workers;

  explicit Impl(HttpFront& f) : front(f) {}

  void watch(Conn& c, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    ::epoll_ctl(epoll_fd, op, c.fd, &ev);
  }

  void close_conn(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, it->second->fd, nullptr);
    if (SSL* ssl = it->second->ssl) {
      if (it->second->handshaken) SSL_shutdown(ssl);  // one try: the close_notify alert
      SSL_free(ssl);
      ERR_clear_error();
    }
    ::close(it->second->fd);
    buffered -= it->second->in.size();
    conns.erase(it);
    --front.counters_.connections_open;
  }

  void respond_and_close(Conn& c, std::string response, bool linger = false) {
    ++front.counters_.bad_requests;
    buffered -= c.in.size();
    c.in.clear();
    c.linger = linger && !c.ssl;
    c.out = std::move(response);
    c.out_pos = 0;
    c.close_after = true;
    c.deadline = Clock::now() + std::chrono::seconds(kResponseSeconds);
    watch(c, EPOLLOUT, EPOLL_CTL_MOD);
  }

  // The bytes a connection may hold of one request: its head, its body, and a chunked
  // body's framing (more is answered as too large).
  size_t most_held() const { return kMaxHead + front.max_body_ + front.max_body_ / 8 + 4096; }

  // If `c.in` starts with a whole request, hands it to a worker.
  void try_dispatch(Conn& c) {
    if (c.busy || c.out_pos < c.out.size()) return;
    size_t head_end = c.in.find("\r\n\r\n");
    size_t sep = 4;
    if (head_end == std::string::npos) {
      head_end = c.in.find("\n\n");
      sep = 2;
    }
    if (head_end == std::string::npos) {
      if (c.in.size() > kMaxHead)
        respond_and_close(c, simple_response(431, "Request Header Fields Too Large"));
      return;
    }
    if (head_end > kMaxHead)
      return respond_and_close(c, simple_response(431, "Request Header Fields Too Large"));
    size_t body = 0;
    bool chunked = false, expect_continue = false;
    const std::string_view head(c.in.data(), head_end);
    const auto too_large = [&] {
      ++front.counters_.too_large;
      respond_and_close(
          c, front.too_large_ ? front.too_large_(head) : simple_response(413, "Payload Too Large"),
          /*linger=*/true);
    };
    for (size_t at = 0; at < head.size();) {
      size_t nl = head.find('\n', at);
      if (nl == std::string_view::npos) nl = head.size();
      const std::string_view line = head.substr(at, nl - at);
      if (iequals_prefix(line, "transfer-encoding:")) {
        std::string value(trimmed(line.substr(18)));
        for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (value != "chunked")
          return respond_and_close(c, simple_response(501, "Not Implemented"));
        chunked = true;
      }
      if (iequals_prefix(line, "expect:"))
        expect_continue = iequals_prefix(trimmed(line.substr(7)), "100-continue");
      if (iequals_prefix(line, "content-length:")) {
        const std::string value(line.substr(15));
        char* end = nullptr;
        const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
        if (n > front.max_body_) return too_large();
        body = static_cast<size_t>(n);
      }
      at = nl + 1;
    }
    size_t total = head_end + sep + body;
    if (chunked) {
      const Chunked f = frame_chunked(c.in, head_end + sep, front.max_body_);
      if (f.state == Chunked::too_large) return too_large();
      if (f.state == Chunked::malformed)
        return respond_and_close(c, simple_response(400, "Bad Request"));
      total = f.state == Chunked::whole ? f.end : std::string::npos;
    }
    if (c.in.size() < total) {  // the body is still coming
      if (c.in.size() > most_held()) return too_large();
      // A client that asked waits for this before it sends the body (curl: 1 s).
      if (expect_continue && !c.continued) {
        c.continued = true;
        c.out = "HTTP/1.1 100 Continue\r\n\r\n";
        c.out_pos = 0;
        watch(c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
      }
      return;
    }
    Task t{c.id, c.fd, c.in.substr(0, total), ++c.requests >= kMaxRequestsPerConnection};
    c.in.erase(0, total);
    buffered -= total;
    c.continued = false;
    c.busy = true;
    watch(c, 0, EPOLL_CTL_MOD);
    {
      std::lock_guard lock(mu);
      tasks.push_back(std::move(t));
    }
    task_ready.notify_one();
  }

  // The socket's (or TLS session's) bytes: > 0 read or written, -1 would block, 0 the
  // connection is over (closed, an error).
  static ssize_t tls_result(Conn& c, int r) {
    if (r > 0) return r;
    const int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -1;
    ERR_clear_error();
    return 0;
  }
  static ssize_t receive(Conn& c, char* p, size_t n) {
    if (c.ssl) return tls_result(c, SSL_read(c.ssl, p, static_cast<int>(n)));
    for (;;) {
      const ssize_t r = ::read(c.fd, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno == EAGAIN) return -1;
      return r < 0 ? 0 : r;
    }
  }
  static ssize_t transmit(Conn& c, const char* p, size_t n) {
    if (c.ssl)
      return tls_result(c, SSL_write(c.ssl, p, static_cast<int>(std::min<size_t>(n, 1 << 30))));
    for (;;) {
      const ssize_t r = ::send(c.fd, p, n, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno == EAGAIN) return -1;
      return r < 0 ? 0 : r;
    }
  }

  // Drives the TLS handshake; true once it is done. False: wait for the socket (or the
  // connection was closed: a client that does not speak TLS, e.g. plain HTTP).
  bool handshake(Conn& c) {
    const int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      c.handshaken = true;
      watch(c, EPOLLIN, EPOLL_CTL_MOD);
      return true;
    }
    const int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      watch(c, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT, EPOLL_CTL_MOD);
      return false;
    }
    ++front.counters_.tls_failed;
    close_conn(c.id);
    return false;
  }

  void on_readable(Conn& c) {
    if (c.ssl && !c.handshaken && !handshake(c)) return;
    char buf[16384];
    if (c.lingering) {  // the answer is out: drop the rest until the client closes
      for (;;) {
        const ssize_t n = receive(c, buf, sizeof buf);
        if (n < 0) return;
        if (n == 0) return close_conn(c.id);
      }
    }
    const size_t most = most_held();
    for (;;) {
      const ssize_t n = receive(c, buf, sizeof buf);
      if (n < 0) break;
      if (n == 0) return close_conn(c.id);
      if (c.in.empty()) c.deadline = Clock::now() + std::chrono::seconds(kRequestSeconds);
      c.in.append(buf, static_cast<size_t>(n));
      buffered += static_cast<size_t>(n);
      if (buffered > front.max_buffered_) {
        ++front.counters_.refused;
        return respond_and_close(c,
                                 simple_response(503, "Service Unavailable", "Retry-After: 1\r\n"));
      }
      if (c.in.size() > most) break;
      // A TLS session may hold decrypted bytes the socket no longer signals: read on.
      if (!c.ssl && static_cast<size_t>(n) < sizeof buf) break;
    }
    try_dispatch(c);
  }

  void on_writable(Conn& c) {
    if (c.ssl && !c.handshaken) return on_readable(c);
    while (c.out_pos < c.out.size()) {
      const ssize_t n = transmit(c, c.out.data() + c.out_pos, c.out.size() - c.out_pos);
      if (n < 0) return;
      if (n == 0) return close_conn(c.id);
      c.out_pos += static_cast<size_t>(n);
    }
    if (c.close_after && c.linger) {
      // Closing with unread input would reset the connection and could destroy the answer
      // on its way: the client gets the end of the stream and a moment to stop sending.
      ::shutdown(c.fd, SHUT_WR);
      c.lingering = true;
      c.deadline = Clock::now() + std::chrono::seconds(kRequestSeconds);
      watch(c, EPOLLIN, EPOLL_CTL_MOD);
      return;
    }
    if (c.close_after) return close_conn(c.id);
    c.out.clear();
    c.out.shrink_to_fit();
    c.out_pos = 0;
    // Keep-alive: the next request (maybe already here), or idle until kIdleSeconds.
    c.deadline = Clock::now() + std::chrono::seconds(c.in.empty() ? kIdleSeconds : kRequestSeconds);
    watch(c, EPOLLIN, EPOLL_CTL_MOD);
    try_dispatch(c);
    // Bytes the TLS session decrypted already (pipelined requests) raise no epoll event.
    if (c.ssl && !c.busy && SSL_pending(c.ssl) > 0) on_readable(c);
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      if (conns.size() >= max_connections && !close_oldest_idle()) {
        ::close(fd);
        ++front.counters_.refused;
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Conn>();
      c->id = next_id++;
      c->fd = fd;
      c->deadline = Clock::now() + std::chrono::seconds(kIdleSeconds);
      if (tls) {
        c->ssl = SSL_new(tls);
        if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
          if (c->ssl) SSL_free(c->ssl);
          ERR_clear_error();
          ::close(fd);
          ++front.counters_.tls_failed;
          continue;
        }
        SSL_set_accept_state(c->ssl);
      }
      watch(*c, EPOLLIN, EPOLL_CTL_ADD);
      conns.emplace(c->id, std::move(c));
      ++front.counters_.connections_total;
      ++front.counters_.connections_open;
    }
  }

  // At the limit, a new client takes the place of the longest-connected one that has sent
  // nothing of a request and waits for no response (a browser's spare keep-alive sockets),
  // so idle sockets never lock real clients out.
  bool close_oldest_idle() {
    uint64_t oldest = 0;
    for (const auto& [id, c] : conns)
      if (!c->busy && c->in.empty() && c->out_pos >= c->out.size() && (!oldest || id < oldest))
        oldest = id;
    if (!oldest) return false;
    close_conn(oldest);
    ++front.counters_.idle_closed;
    return true;
  }

  void collect_done() {
    uint64_t v;
    [[maybe_unused]] ssize_t n = ::read(wake_fd, &v, sizeof v);
    std::deque<Done> ready;
    {
      std::lock_guard lock(mu);
      ready.swap(done);
    }
    for (Done& d : ready) {
      auto it = conns.find(d.id);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      c.busy = false;
      c.out = std::move(d.response);
      c.out_pos = 0;
      c.close_after = d.close;
      c.deadline = Clock::now() + std::chrono::seconds(kResponseSeconds);
      watch(c, EPOLLOUT, EPOLL_CTL_MOD);
      on_writable(c);
    }
  }

  void run_loop() {
    std::vector<epoll_event> events(128);
    while (!stopping.load()) {
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 100);
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == 0) {
          accept_all();
          continue;
        }
        if (id == 1) {
          collect_done();
          continue;
        }
        auto it = conns.find(id);
        if (it == conns.end()) continue;
        Conn& c = *it->second;
        if (events[i].events & EPOLLOUT)
          on_writable(c);
        else if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
          on_readable(c);
      }
      // Clients that take too long to send a request, to take a response, or idle.
      const auto now = Clock::now();
      std::vector<uint64_t> late;
      for (const auto& [id, c] : conns)
        if (!c->busy && now > c->deadline) late.push_back(id);
      for (uint64_t id : late) {
        ++front.counters_.timed_out;
        close_conn(id);
      }
    }
  }

  void run_worker() {
    for (;;) {
      Task t;
      {
        std::unique_lock lock(mu);
        task_ready.wait(lock, [&] { return stopping.load() || !tasks.empty(); });
        if (tasks.empty()) return;
        t = std::move(tasks.front());
        tasks.pop_front();
      }
      bool close = false;
      std::string response = front.answer(t.request, t.fd, t.last, close);
      {
        std::lock_guard lock(mu);
        done.push_back({t.id, std::move(response), close});
      }
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
    }
  }
};

std::string HttpFront::answer(const std::string& request, int fd, bool last, bool& close) {
  std::string out;
  MemoryStream stream(request, out, fd);
  bool closed = false;
  process_request(stream, last, closed, [](httplib::Request&) {});
  close = closed || last || out.empty();
  if (out.empty()) out = simple_response(400, "Bad Request");
  return out;
}

void HttpFront::set_body_limits(size_t max_body, size_t max_buffered,
                                std::function<std::string(std::string_view head)> too_large) {
  max_body_ = max_body;
  max_buffered_ = max_buffered;
  too_large_ = std::move(too_large);
}

void HttpFront::start(int listen_fd, size_t max_connections, unsigned threads, SSL_CTX* tls) {
  impl_ = std::make_unique<Impl>(*this);
  Impl& m = *impl_;
  m.tls = tls;
  m.listen_fd = listen_fd;
  m.max_connections = max_connections;
  const int flags = ::fcntl(listen_fd, F_GETFL);
  ::fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK);
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m.epoll_fd < 0 || m.wake_fd < 0)
    throw std::runtime_error(std::string("cannot create an event loop: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
  ev.data.u64 = 1;
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &ev);
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    m.workers.emplace_back([&m] { m.run_worker(); });
  m.loop = std::thread([&m] { m.run_loop(); });
}

void HttpFront::shutdown() {
  if (!impl_) return;
  Impl& m = *impl_;
  m.stopping = true;
  m.task_ready.notify_all();
  if (m.loop.joinable()) m.loop.join();
  for (std::thread& t : m.workers) t.join();
  std::vector<uint64_t> ids;
  for (const auto& [id, c] : m.conns) ids.push_back(id);
  for (uint64_t id : ids) m.close_conn(id);
  ::close(m.epoll_fd);
  ::close(m.wake_fd);
  impl_.reset();
}

HttpFront::HttpFront() = default;

HttpFront::~HttpFront() {
  shutdown();
}

}  // namespace snailtrail::serve
