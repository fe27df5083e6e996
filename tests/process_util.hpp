// Running the snailtrail binary in the background from tests (servers, producers).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace snailtrail::testing {

// The lines of `text` without their '\n'; a final unterminated line is kept.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A child process running `SNAILTRAIL_BINARY args...` with stdout and stderr in files.
class Process {
 public:
  Process(const std::vector<std::string>& args, const std::filesystem::path& out,
          const std::filesystem::path& err, const std::filesystem::path& in = "/dev/null")
      : out_(out), err_(err) {
    std::vector<std::string> strings = {SNAILTRAIL_BINARY};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, in.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Process() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  void signal(int sig) const {
    if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
  }
  // Waits for the exit; returns the exit code, or 128 + signal, or -1.
  int wait() {
    if (pid_ <= 0) return -1;
    if (!reaped_) {
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0)
        if (errno != EINTR) return -1;
      reaped_ = true;
      exited_ = WIFEXITED(status);
      signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      code_ = exited_ ? WEXITSTATUS(status) : 128 + signal_;
    }
    return code_;
  }
  // After wait(): a normal exit, or the signal that killed it.
  bool exited() const { return exited_; }
  int killed_by() const { return signal_; }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }

 private:
  std::filesystem::path out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool exited_ = false;
  int signal_ = 0;
  int code_ = -1;
};

// Waits until `path` exists and holds `key=VALUE` lines; returns VALUE of `key` (or -1).
inline int wait_for_port(const std::filesystem::path& path, const std::string& key,
                         double timeout_s = 20) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::istringstream in(slurp(path));
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(key + "=", 0) == 0) return std::stoi(line.substr(key.size() + 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// Polls `done()` every 20 ms until it holds or `timeout_s` seconds have passed; returns
// whether it held. Tests wait for a condition like this, never for a fixed time: under
// ASan or TSan on a loaded 2-core CI machine anything may take ten times longer.
template <class Done>
bool wait_until(Done&& done, double timeout_s = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Whether `sig` was sent to process `pid` and not delivered yet (its handler has not run):
// the SigPnd (main thread) and ShdPnd (process) masks of /proc/PID/status.
inline bool signal_pending(pid_t pid, int sig) {
  std::istringstream in(slurp("/proc/" + std::to_string(pid) + "/status"));
  const unsigned long long bit = 1ull << (sig - 1);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("SigPnd:", 0) == 0 || line.rfind("ShdPnd:", 0) == 0)
      if (std::stoull(line.substr(7), nullptr, 16) & bit) return true;
  return false;
}

// What `SNAILTRAIL_BINARY args 2>&1` printed and its exit code (-1: it did not exit).
struct CommandResult {
  int code = -1;
  std::string out;
};

// With `kill_after_s` > 0 the binary is killed after that many seconds (code 137 then: a
// command that never ends fails instead of hanging the suite).
inline CommandResult run_binary(const std::string& args, int kill_after_s = 0) {
  const std::string limit =
      kill_after_s > 0 ? "timeout -s KILL " + std::to_string(kill_after_s) + " " : "";
  const std::string cmd = limit + std::string(SNAILTRAIL_BINARY) + " " + args + " 2>&1";
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A test with a folder of its own under /tmp (kept when the test fails, for a look).
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("snailtrail-" + prefix_ + "-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  std::string prefix_;
  std::filesystem::path dir_;
};

}  // namespace snailtrail::testing
