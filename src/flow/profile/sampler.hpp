// Stack sampling of the worker threads of `snailtrail run --profile` (docs/FLAME.md).
//
// On-CPU: each attached thread has a timer on its own CPU time (timer_create with
// CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID) that sends SIGPROF every 1/hz s of CPU the
// thread used. The handler stores the time and the raw return addresses (backtrace())
// into the thread's preallocated ring and nothing else; the thread itself moves the
// ring's entries out in its idle loop, and symbols (libdw) and demangling come after the
// run. Off-CPU: when a worker starts waiting (its idle loop), its stack is taken there
// and the sample's weight is the time it waited.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace snailtrail::flow::profile {

// A run's profile, symbolized: stacks are root first, frame names demangled.
struct Profile {
  int64_t period_ns = 0;  // CPU time per on-CPU sample
  struct Sample {
    uint32_t worker = 0;
    bool off_cpu = false;
    uint8_t activity = 0xff;        // off-CPU: the wait's ActivityType (input or waiting)
    int64_t ts = 0;                 // ns since the run's origin (the trace's clock)
    uint64_t count = 1;             // on-CPU: 1 sample; off-CPU: ns waited
    uint32_t first = 0, depth = 0;  // frames[stack[first .. first + depth))
  };
  std::vector<std::string> frames;
  std::vector<uint32_t> stack;
  std::vector<Sample> samples;
  uint64_t dropped = 0;  // samples lost to a full ring
};

struct ThreadState;

class Profiler {
 public:
  // hz: samples per second of a thread's CPU time (1..10000).
  explicit Profiler(double hz);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Called on the thread to sample: starts its timer until the guard goes out of scope
  // (on the same thread); sample times count from `origin` (the trace clock's 0). Throws
  // std::runtime_error when the timer cannot be created.
  class Guard {
   public:
    Guard() = default;
    Guard(Profiler* p, ThreadState* s) : p_(p), s_(s) {}
    Guard(Guard&& o) noexcept : p_(o.p_), s_(o.s_) { o.p_ = nullptr; }
    Guard& operator=(Guard&&) = delete;
    ~Guard();

   private:
    Profiler* p_ = nullptr;
    ThreadState* s_ = nullptr;
  };
  Guard attach(uint32_t worker, std::chrono::steady_clock::time_point origin);

  // After every guard is gone: the symbolized profile.
  Profile finish();

 private:
  friend class Guard;
  void detach(ThreadState* s);
  int64_t period_ns_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ThreadState>> threads_;
};

// Hooks for a worker's idle loop (no-ops on threads that are not attached).
void wait_begins(int64_t ts, uint8_t activity);
void wait_ends(int64_t ts);

}  // namespace snailtrail::flow::profile
