// The HTTP side of `snailtrail serve`: cpp-httplib's routing and responses behind an
// event-driven front. One epoll thread accepts clients and reads their requests; only a
// request that has arrived whole (head and body) goes to one of a few worker threads,
// which run httplib on it in memory; the response is written back by the event loop. So
// idle, slow or stalled clients cost a buffer each, never a thread, and `/healthz` and
// `/metrics` answer at once whatever other clients do. Requests must arrive within
// kRequestSeconds of their first byte, responses be taken within kResponseSeconds, and a
// keep-alive connection idle for kIdleSeconds is closed, or sooner when a new client needs
// its place under the connection limit. Bodies come with a Content-Length or chunked
// (framed here, decoded by httplib). With a TLS context the same loop speaks HTTPS:
// OpenSSL on the non-blocking sockets, the handshake within the same deadlines.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <httplib.h>

struct ssl_ctx_st;

namespace snailtrail::serve {

class HttpFront : public httplib::Server {
 public:
  static constexpr int kRequestSeconds = 5;
  static constexpr int kResponseSeconds = 30;
  static constexpr int kIdleSeconds = 5;
  static constexpr size_t kMaxHead = 16 << 10;  // request line and headers
  static constexpr size_t kMaxBody = 64 << 10;

  struct Counters {
    std::atomic<uint64_t> connections_total{0}, connections_open{0}, refused{0}, timed_out{0},
        bad_requests{0}, idle_closed{0}, tls_failed{0}, too_large{0};
  };

  HttpFront();
  ~HttpFront() override;
  // Before start(): the largest request body taken (kMaxBody unless set; bodies over it are
  // answered with `too_large`'s response, or a bare 413, and the connection closed), and
  // the bytes of requests all connections may hold while they arrive (over it: 503 with
  // Retry-After, the connection closed).
  void set_body_limits(size_t max_body, size_t max_buffered,
                       std::function<std::string(std::string_view head)> too_large = {});
  // Starts answering on the listening socket `fd` (owned by the caller); over TLS with
  // `tls` (owned by the caller, outliving the front) when given.
  void start(int listen_fd, size_t max_connections, unsigned threads, ssl_ctx_st* tls = nullptr);
  // Stops every thread and closes every client.
  void shutdown();
  const Counters& counters() const { return counters_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Counters counters_;
  size_t max_body_ = kMaxBody, max_buffered_ = 256u << 20;
  std::function<std::string(std::string_view)> too_large_;
  // What a worker runs on one whole request: httplib's parsing, routing and response.
  std::string answer(const std::string& request, int fd, bool last, bool& close);
};

}  // namespace snailtrail::serve
