#include "flow/profile/sampler.hpp"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <execinfo.h>
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "trace/setting_error.hpp"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

namespace snailtrail::flow::profile {

namespace {
constexpr int kMaxFrames = 64;
constexpr uint32_t kRing = 1024;  // samples a thread may take between two drains

struct RawSample {
  int64_t mono_ns;
  int64_t periods;  // 1 + the timer's overruns: CPU timers fire at most once a kernel tick
  int n;
  void* pc[kMaxFrames];
};

int64_t mono_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

struct ThreadState {
  uint32_t worker = 0;
  int64_t origin_ns = 0;
  timer_t timer{};
  // Written by the SIGPROF handler (head, slots) and by the thread itself (tail); both run
  // on this thread only, so atomics order them against the signal.
  std::unique_ptr<RawSample[]> ring{new RawSample[kRing]};
  std::atomic<uint32_t> head{0}, tail{0};
  std::atomic<uint64_t> dropped{0};
  struct Taken {
    int64_t ts;
    uint64_t count;
    bool off;
    uint8_t activity;
    uint32_t first, n;  // addrs[first .. first + n), leaf first, leaf exact when !off
  };
  std::vector<Taken> taken;
  std::vector<void*> addrs;
  int64_t wait_start = -1;
  uint8_t wait_activity = 0xff;
  int wait_n = 0;
  void* wait_pc[kMaxFrames];
};

namespace {

thread_local ThreadState* tls_state = nullptr;

// Async-signal-safe: clock_gettime, backtrace (its unwinder loaded beforehand, see
// attach), atomics on preallocated memory; errno preserved.
void on_sigprof(int, siginfo_t*, void*) {
  const int saved = errno;
  ThreadState* s = tls_state;
  if (s) {
    const uint32_t h = s->head.load(std::memory_order_relaxed);
    const uint32_t t = s->tail.load(std::memory_order_acquire);
    if (h - t >= kRing) {
      s->dropped.fetch_add(1, std::memory_order_relaxed);
    } else {
      RawSample& r = s->ring[h % kRing];
      r.mono_ns = mono_now();
      const int overrun = timer_getoverrun(s->timer);
      r.periods = 1 + (overrun > 0 ? overrun : 0);
      r.n = backtrace(r.pc, kMaxFrames);
      s->head.store(h + 1, std::memory_order_release);
    }
  }
  errno = saved;
}

void install_handler() {
  static const bool installed = [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, nullptr) != 0)
      throw InputError({field("profile"), std::string(": sigaction: ") + std::strerror(errno)});
    return true;
  }();
  (void)installed;
}

// Moves the ring's samples out (on the thread itself, outside the handler).
void drain(ThreadState* s) {
  uint32_t t = s->tail.load(std::memory_order_relaxed);
  const uint32_t h = s->head.load(std::memory_order_acquire);
  for (; t != h; ++t) {
    const RawSample& r = s->ring[t % kRing];
    // Every frame, the handler's own included: finish() cuts them by name.
    const uint32_t first = static_cast<uint32_t>(s->addrs.size());
    s->addrs.insert(s->addrs.end(), r.pc, r.pc + r.n);
    s->taken.push_back({r.mono_ns - s->origin_ns, static_cast<uint64_t>(r.periods), false, 0xff,
                        first, static_cast<uint32_t>(r.n)});
  }
  s->tail.store(t, std::memory_order_release);
}

// backtrace() outside the handler, with SIGPROF blocked so that the handler never runs
// inside the unwinder.
int masked_backtrace(void** pc, int max) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGPROF);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  const int n = backtrace(pc, max);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return n;
}

bool is_sampler_frame(const std::string& f) {
  return f.starts_with("snailtrail::flow::profile::") || f.starts_with("__tsan") ||
         f.starts_with("__sanitizer") || f.starts_with("__asan") || f.starts_with("__ubsan") ||
         f.starts_with("__interceptor_") || f.starts_with("___interceptor_") || f == "backtrace" ||
         f == "__backtrace" || f.starts_with("backtrace@") || f == "__restore_rt" ||
         f.find("::on_sigprof") != std::string::npos;
}

}  // namespace

Profiler::Profiler(double hz) {
  if (!(hz >= 1 && hz <= 10000)) throw UsageError({field("profile_hz"), " must be in 1..10000"});
  period_ns_ = static_cast<int64_t>(1e9 / hz);
  install_handler();
}

Profiler::~Profiler() = default;

Profiler::Guard::~Guard() {
  if (p_) p_->detach(s_);
}

Profiler::Guard Profiler::attach(uint32_t worker, std::chrono::steady_clock::time_point origin) {
  auto st = std::make_unique<ThreadState>();
  st->worker = worker;
  // steady_clock is CLOCK_MONOTONIC (libstdc++), the clock the handler reads.
  st->origin_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(origin.time_since_epoch()).count();
  {
    void* warm[4];
    masked_backtrace(warm, 4);  // loads the unwinder (libgcc_s) outside the handler
  }
  sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev.sigev_notify_thread_id = static_cast<pid_t>(syscall(SYS_gettid));
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &st->timer) != 0)
    throw InputError({field("profile"), std::string(": timer_create: ") + std::strerror(errno)});
  ThreadState* s = st.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.push_back(std::move(st));
  }
  tls_state = s;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  itimerspec its;
  its.it_interval.tv_sec = period_ns_ / 1'000'000'000;
  its.it_interval.tv_nsec = period_ns_ % 1'000'000'000;
  its.it_value = its.it_interval;
  if (timer_settime(s->timer, 0, &its, nullptr) != 0) {
    const int e = errno;
    timer_delete(s->timer);
    tls_state = nullptr;
    throw InputError({field("profile"), std::string(": timer_settime: ") + std::strerror(e)});
  }
  return Guard(this, s);
}

void Profiler::detach(ThreadState* s) {
  timer_delete(s->timer);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tls_state = nullptr;  // a signal still pending finds no state and returns
  std::atomic_signal_fence(std::memory_order_seq_cst);
  drain(s);
}

void wait_begins(int64_t ts, uint8_t activity) {
  ThreadState* s = tls_state;
  if (!s) return;
  drain(s);
  s->wait_start = ts;
  s->wait_activity = activity;
  s->wait_n = masked_backtrace(s->wait_pc, kMaxFrames);
}

void wait_ends(int64_t ts) {
  ThreadState* s = tls_state;
  if (!s || s->wait_start < 0) return;
  if (ts - s->wait_start >= 1000) {  // as the trace: waits under 1 us are not recorded
    const uint32_t first = static_cast<uint32_t>(s->addrs.size());
    s->addrs.insert(s->addrs.end(), s->wait_pc, s->wait_pc + s->wait_n);
    s->taken.push_back({s->wait_start, static_cast<uint64_t>(ts - s->wait_start), true,
                        s->wait_activity, first, static_cast<uint32_t>(s->wait_n)});
  }
  s->wait_start = -1;
  drain(s);
}

namespace {

// Names of code addresses (elfutils' libdwfl over this process's modules): the function
// (demangled), else [module], else [unknown]; each name once in `frames`.
class Symbolizer {
 public:
  explicit Symbolizer(std::vector<std::string>& frames) : frames_(frames) {
    std::memset(&cb_, 0, sizeof cb_);
    cb_.find_elf = dwfl_linux_proc_find_elf;
    cb_.find_debuginfo = dwfl_standard_find_debuginfo;
    cb_.debuginfo_path = &debuginfo_path_;
    dwfl_ = dwfl_begin(&cb_);
    if (dwfl_) {
      if (dwfl_linux_proc_report(dwfl_, getpid()) != 0 ||
          dwfl_report_end(dwfl_, nullptr, nullptr) != 0) {
        dwfl_end(dwfl_);
        dwfl_ = nullptr;
      }
    }
  }
  ~Symbolizer() {
    if (dwfl_) dwfl_end(dwfl_);
  }
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frame of `addr`: a return address (the call is the byte before it) unless exact.
  uint32_t frame_of(uintptr_t addr, bool exact) {
    const uintptr_t key = addr * 2 + (exact ? 1 : 0);
    if (auto it = by_addr_.find(key); it != by_addr_.end()) return it->second;
    const std::string name = name_of(exact || addr == 0 ? addr : addr - 1);
    auto [it, fresh] = by_name_.try_emplace(name, static_cast<uint32_t>(frames_.size()));
    if (fresh) frames_.push_back(name);
    by_addr_.emplace(key, it->second);
    return it->second;
  }

 private:
  std::string name_of(Dwarf_Addr look) const {
    Dwfl_Module* m = dwfl_ ? dwfl_addrmodule(dwfl_, look) : nullptr;
    const char* sym = m ? dwfl_module_addrname(m, look) : nullptr;
    if (sym) {
      int status = 0;
      char* d = abi::__cxa_demangle(sym, nullptr, nullptr, &status);
      std::string name = status == 0 && d ? d : sym;
      std::free(d);
      return name;
    }
    if (!m) return "[unknown]";
    const char* mod =
        dwfl_module_info(m, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    std::string path = mod ? mod : "unknown";
    const size_t slash = path.rfind('/');
    return "[" + (slash == std::string::npos ? path : path.substr(slash + 1)) + "]";
  }

  static inline char* debuginfo_path_ = nullptr;
  Dwfl_Callbacks cb_;  // dwfl keeps a pointer to it
  Dwfl* dwfl_ = nullptr;
  std::vector<std::string>& frames_;
  std::unordered_map<uintptr_t, uint32_t> by_addr_;
  std::unordered_map<std::string, uint32_t> by_name_;
};

// One taken sample, its stack into out.stack (root first) without the sampler's own frames.
Profile::Sample symbolize(const ThreadState& t, const ThreadState::Taken& k, Symbolizer& sym,
                          Profile& out, std::vector<uint32_t>& leaf_first) {
  Profile::Sample s;
  s.worker = t.worker;
  s.off_cpu = k.off;
  s.activity = k.activity;
  s.ts = k.ts;
  s.count = k.count;
  auto addr = [&](uint32_t i) { return reinterpret_cast<uintptr_t>(t.addrs[k.first + i]); };
  // Leaf first; cut the sampler's own frames: everything up to the signal trampoline
  // (__restore_rt) among the first frames, then any frames of the sampler or of a
  // sanitizer runtime (which may call the handler itself, e.g. TSan's deferred signals).
  leaf_first.clear();
  for (uint32_t i = 0; i < k.n; ++i) leaf_first.push_back(sym.frame_of(addr(i), false));
  uint32_t cut = 0;
  // (The trampoline's address is its first byte, not a return address: looked up exactly.)
  for (uint32_t i = 0; i < std::min<uint32_t>(k.n, 16); ++i)
    if (out.frames[sym.frame_of(addr(i), true)] == "__restore_rt") cut = i + 1;
  while (cut < k.n && is_sampler_frame(out.frames[leaf_first[cut]])) ++cut;
  // The interrupted instruction is exact, not a return address.
  if (!k.off && cut < k.n) leaf_first[cut] = sym.frame_of(addr(cut), true);
  s.first = static_cast<uint32_t>(out.stack.size());
  s.depth = k.n - cut;
  for (uint32_t i = k.n; i-- > cut;) out.stack.push_back(leaf_first[i]);  // root first
  return s;
}

}  // namespace

Profile Profiler::finish() {
  Profile out;
  out.period_ns = period_ns_;
  Symbolizer sym(out.frames);
  std::vector<uint32_t> leaf_first;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& t : threads_) {
    out.dropped += t->dropped.load();
    for (const ThreadState::Taken& k : t->taken)
      out.samples.push_back(symbolize(*t, k, sym, out, leaf_first));
  }
  return out;
}

}  // namespace snailtrail::flow::profile
