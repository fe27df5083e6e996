// nats-server for the NATS tests (issues 37 and 40): found on PATH (Debian installs it in
// /usr/sbin), started on a free 127.0.0.1 port with the given options, its output in a
// log file, killed at the end. Everything stays on loopback.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "process_util.hpp"

namespace snailtrail::testing {

// The nats-server binary, "" when it is not installed.
inline std::string find_nats_server() {
  std::string dirs = std::getenv("PATH") ? std::getenv("PATH") : "";
  dirs += ":/usr/sbin:/usr/local/sbin:/sbin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', pos), dirs.size());
    const std::filesystem::path p =
        std::filesystem::path(dirs.substr(pos, colon - pos)) / "nats-server";
    if (colon > pos && ::access(p.c_str(), X_OK) == 0) return p.string();
    pos = colon + 1;
  }
  return "";
}

// A loopback port nobody listens on right now.
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

inline bool loopback_accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// `nats-server -a 127.0.0.1 -p PORT -js -sd STORE OPTIONS...`, killed when destroyed.
class NatsServer {
 public:
  NatsServer() = default;
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;
  ~NatsServer() { stop(); }

  // Starts it and waits until it accepts connections (a test failure otherwise).
  void start(const std::string& binary, const std::filesystem::path& dir,
             const std::vector<std::string>& options) {
    port_ = free_loopback_port();
    ASSERT_GT(port_, 0);
    log_ = dir / "nats-server.log";
    std::vector<std::string> args = {binary,
                                     "-a",
                                     "127.0.0.1",
                                     "-p",
                                     std::to_string(port_),
                                     "-js",
                                     "-sd",
                                     (dir / "store").string()};
    args.insert(args.end(), options.begin(), options.end());
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    ASSERT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!loopback_accepts(port_) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(loopback_accepts(port_)) << slurp(log_);
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  int port() const { return port_; }
  std::string log() const { return slurp(log_); }

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  std::filesystem::path log_;
};

// `analyze TRACE --window 1ms --format jsonl` without its final run record: what the
// NATS tests compare serve's windows with.
inline std::vector<std::string> analyze_window_lines(const std::filesystem::path& trace,
                                                     const std::filesystem::path& out,
                                                     const std::filesystem::path& err) {
  Process p({"analyze", trace.string(), "--window", "1ms", "--format", "jsonl", "--no-progress"},
            out, err);
  EXPECT_EQ(p.wait(), 0) << p.err();
  std::vector<std::string> lines = lines_of(p.out());
  if (!lines.empty() && lines.back().rfind("{\"run\":", 0) == 0) lines.pop_back();
  return lines;
}

}  // namespace snailtrail::testing
