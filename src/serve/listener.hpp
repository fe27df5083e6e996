// A listening TCP socket: serve's trace listeners and HTTP API, `run --http`.
#pragma once

#include <string>

namespace snailtrail::serve {

// Binds and listens on "host:port" (port 0: any free port). Throws std::runtime_error
// when it cannot resolve or listen, std::invalid_argument for a bad address.
class Listener {
 public:
  explicit Listener(const std::string& address);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int fd() const { return fd_; }
  int port() const { return port_; }
  std::string name() const;

 private:
  int fd_ = -1;
  int port_ = 0;
  std::string host_;
};

}  // namespace snailtrail::serve
