// The Open MPI transport: one communication thread per process moves frames (serialized
// record and progress batches, channel.hpp) between processes (docs/RUNTIME.md "Several
// processes"). MPI is initialized with MPI_THREAD_SERIALIZED: while the workers run only
// the communication thread calls MPI; before start() and after finish() only the main
// thread does. Each destination's frames go as messages of at most limits.chunk_bytes
// (frame_chunks.hpp), and a worker whose destination already has limits.out_bytes queued
// or in flight waits in send() until the comm thread's sends complete (back-pressure):
// the comm thread itself never waits for a worker, so the receiving side always drains.
#include "flow/mpi_transport.hpp"
#include "trace/environment.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

namespace snailtrail::flow {
namespace {

constexpr int kTagFrames = 17;

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(ChunkLimits limits) : limits_(limits) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw std::runtime_error("MPI: MPI_THREAD_SERIALIZED is not supported");
    }
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    int r = 0, n = 0;
    MPI_Comm_rank(comm_, &r);
    MPI_Comm_size(comm_, &n);
    rank_ = static_cast<uint32_t>(r);
    procs_ = static_cast<uint32_t>(n);
    out_.resize(procs_);
    backlog_.assign(procs_, 0);
    streams_.resize(procs_);
  }
  ~MpiTransport() override {
    if (thread_.joinable()) {
      done_ = true;
      thread_.join();
    }
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }
  uint32_t procs() const override { return procs_; }
  uint32_t rank() const override { return rank_; }

  void send(uint32_t proc, std::vector<char>&& frame) override {
    std::unique_lock<std::mutex> lock(mu_);
    auto& queued = backlog_[proc];  // bytes queued for `proc` or in flight to it
    if (queued > 0 && queued + frame.size() > limits_.out_bytes && running_.load()) {
      ++sender_waits_;
      space_.wait(lock, [&] {
        return queued == 0 || queued + frame.size() <= limits_.out_bytes || !running_.load();
      });
    }
    queued += frame.size();
    auto& buf = out_[proc];
    if (buf.empty())
      buf = std::move(frame);
    else
      buf.insert(buf.end(), frame.begin(), frame.end());
    queued_ = true;
    lock.unlock();
    wake();
  }
  Stats stats() const override { return {messages_.load(), largest_.load(), sender_waits_.load()}; }

  void start() override {
    if (thread_.joinable()) throw std::logic_error("MPI transport: start() before finish()");
    check(MPI_Barrier(comm_), "MPI_Barrier");
    // A run after another (run_dataflow's tests): the last one's comm thread has met every
    // process in finish(), so nothing of it is in flight, and its closing flag must not
    // reach this run. A frame it left unpulled would be a lost batch (or, read by this
    // run, a wrong one).
    if (done_.load()) {
      if (const size_t n = unpulled_frames())
        throw std::runtime_error("MPI transport: " + std::to_string(n) +
                                 " frames of the previous run were never pulled");
      done_ = false;
    }
    // One clock for all when every process is on the same host (steady_clock is then
    // system-wide): rank 0's, so that intervals and trace times agree exactly.
    long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    unsigned long long mine = std::hash<std::string>{}(host), lo = mine, hi = mine;
    check(MPI_Allreduce(&mine, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm_), "MPI_Allreduce");
    check(MPI_Allreduce(&mine, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm_), "MPI_Allreduce");
    check(MPI_Bcast(&now, 1, MPI_LONG_LONG, 0, comm_), "MPI_Bcast");
    origin_ = lo == hi ? static_cast<int64_t>(now) : -1;
    running_ = true;
    thread_ = std::thread([this] {
      loop();
      std::lock_guard<std::mutex> lock(mu_);
      running_ = false;
      space_.notify_all();  // no sender may wait for a thread that is gone
    });
  }
  int64_t origin_ns() const override { return origin_; }

  void finish() override {
    done_ = true;
    wake();
    thread_.join();
  }

  [[noreturn]] void abort(int code) override {
    if (!running_.load()) {  // no comm thread: this thread is the only one in MPI
      MPI_Abort(comm_, code);
      std::_Exit(code);
    }
    std::fprintf(stderr, "snailtrail: rank %u: ending the job (from the communication thread)\n",
                 rank_);
    abort_code_ = code == 0 ? 1 : code;
    wake();
    // The comm thread calls MPI_Abort at its next turn (microseconds). Should it be gone
    // already, exiting makes mpirun end the others (a process exited without MPI_Finalize).
    for (int i = 0; i < 1000 && running_.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::_Exit(code);
  }

  std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) override {
    if (mine.size() > static_cast<size_t>(INT_MAX))
      throw std::runtime_error("MPI transport: gather of more than INT_MAX values");
    int n = static_cast<int>(mine.size());
    std::vector<int> counts(procs_), displs(procs_);
    check(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_), "MPI_Gather");
    std::vector<uint64_t> all;
    if (rank_ == 0) {
      long long total = 0;
      for (uint32_t p = 0; p < procs_; ++p) {
        displs[p] = static_cast<int>(total);
        total += counts[p];
        if (total > INT_MAX)  // before MPI_Gatherv: its displacements are ints
          throw std::runtime_error("MPI transport: gather of more than INT_MAX values");
      }
      all.resize(static_cast<size_t>(total));
    }
    check(MPI_Gatherv(mine.data(), n, MPI_UINT64_T, all.data(), counts.data(), displs.data(),
                      MPI_UINT64_T, 0, comm_),
          "MPI_Gatherv");
    return all;
  }

 private:
  // One turn's frames for one destination, sent as chunks of one buffer.
  struct Pending {
    uint32_t proc = 0;
    std::vector<MPI_Request> reqs;
    std::vector<char> buf;
  };

  // Sends queued frames (per destination and turn, synchronous-mode messages of at most a
  // chunk, so a completed send has been matched), receives whatever arrived, and after
  // finish() meets the other processes in a non-blocking barrier once nothing of ours is
  // in flight.
  void loop() {
    try {
      std::vector<Pending> pending;
      std::vector<std::vector<char>> batch(procs_);
      std::vector<char> in;
      MPI_Request barrier = MPI_REQUEST_NULL;
      bool in_barrier = false;
      int idle = 0;
      const char* y = environment_value("SNAILTRAIL_FLOW_IDLE_YIELDS");
      const int idle_yields = y ? std::max(0, std::atoi(y)) : 0;
      for (;;) {
        if (const int code = abort_code_.load()) MPI_Abort(comm_, code);  // see abort()
        bool worked = false;
        // The flag is read before the queue: a finish() seen here follows every push.
        const bool closing = done_.load();
        if (queued_.load()) {
          std::lock_guard<std::mutex> lock(mu_);
          for (uint32_t p = 0; p < procs_; ++p) batch[p].swap(out_[p]);
          queued_ = false;
        }
        for (uint32_t p = 0; p < procs_; ++p) {
          if (batch[p].empty()) continue;
          pending.push_back({p, {}, std::move(batch[p])});
          batch[p].clear();
          auto& b = pending.back();
          const size_t total = b.buf.size(), pieces = chunk_count(total, limits_.chunk_bytes);
          b.reqs.assign(pieces, MPI_REQUEST_NULL);
          for (size_t i = 0; i < pieces; ++i) {
            const size_t len = chunk_size(total, limits_.chunk_bytes, i);  // <= INT_MAX
            check(MPI_Issend(b.buf.data() + i * limits_.chunk_bytes, static_cast<int>(len),
                             MPI_BYTE, static_cast<int>(p), kTagFrames, comm_, &b.reqs[i]),
                  "MPI_Issend");
            if (len > largest_.load()) largest_ = len;
          }
          messages_ += pieces;
          worked = true;
        }
        for (size_t i = 0; i < pending.size();) {
          int flag = 0;
          check(MPI_Testall(static_cast<int>(pending[i].reqs.size()), pending[i].reqs.data(), &flag,
                            MPI_STATUSES_IGNORE),
                "MPI_Testall");
          if (flag) {
            {
              std::lock_guard<std::mutex> lock(mu_);
              backlog_[pending[i].proc] -= pending[i].buf.size();
            }
            space_.notify_all();
            pending[i] = std::move(pending.back());
            pending.pop_back();
            worked = true;
          } else {
            ++i;
          }
        }
        for (;;) {
          int flag = 0;
          MPI_Status st;
          check(MPI_Iprobe(MPI_ANY_SOURCE, kTagFrames, comm_, &flag, &st), "MPI_Iprobe");
          if (!flag) break;
          int n = 0;
          check(MPI_Get_count(&st, MPI_BYTE, &n), "MPI_Get_count");
          if (n < 0) throw std::runtime_error("a message of no byte count");
          in.resize(static_cast<size_t>(n));
          check(
              MPI_Recv(in.data(), n, MPI_BYTE, st.MPI_SOURCE, kTagFrames, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
          streams_.at(static_cast<size_t>(st.MPI_SOURCE))
              .feed(in.data(), in.size(),
                    [this](const char* f, size_t len) { deliver_frame(f, len); });
          worked = true;
        }
        if (closing && !queued_.load() && pending.empty()) {
          if (!in_barrier) {
            check(MPI_Ibarrier(comm_, &barrier), "MPI_Ibarrier");
            in_barrier = true;
          }
          int flag = 0;
          check(MPI_Test(&barrier, &flag, MPI_STATUS_IGNORE), "MPI_Test");
          if (flag) {  // every process's sends have been matched: nothing in flight
            for (uint32_t p = 0; p < procs_; ++p)
              if (const size_t n = streams_[p].partial())
                throw std::runtime_error("the stream from rank " + std::to_string(p) +
                                         " ended inside a frame (" + std::to_string(n) +
                                         " bytes of it)");
            return;
          }
        }
        if (worked) {
          idle = 0;
        } else if (idle < idle_yields) {  // as the workers (runtime.cpp): sleep at once
          ++idle;
          std::this_thread::yield();
        } else {
          idle_sleep(idle++ - idle_yields);
        }
      }
    } catch (const std::exception& e) {
      // The local workers may wait for frames that will never come: end the whole job.
      std::fprintf(stderr, "snailtrail: rank %u: communication thread: %s\n", rank_, e.what());
      MPI_Abort(comm_, 1);
    }
  }

  // An idle turn's sleep (issue 35): kIdleShortSleeps turns of 20 us (a busy run's
  // latency, as before), then doubling up to kIdleMaxSleepUs. A local worker's send()
  // (and finish(), abort()) wakes it at once; only a frame from another process waits
  // for the sleep's end (MPI has no wake-up for an arrival short of a blocking call).
  void idle_sleep(int n) {
    int64_t us = 20;
    if (n >= kIdleShortSleeps)
      us = std::min<int64_t>(us << std::min(n - kIdleShortSleeps + 1, 16), kIdleMaxSleepUs);
    const std::chrono::microseconds d(us);
    std::unique_lock<std::mutex> lock(wake_mu_);
    sleeping_ = true;  // seq_cst, before the flags: a send() either sees it or is seen
    if (!queued_.load() && !done_.load() && !abort_code_.load()) wake_cv_.wait_for(lock, d);
    sleeping_ = false;
  }
  void wake() {
    if (!sleeping_.load()) return;
    std::lock_guard<std::mutex> lock(wake_mu_);  // not between the sleeper's check and wait
    wake_cv_.notify_one();
  }
  static constexpr int kIdleShortSleeps = 50;  // 1 ms of idle turns at 20 us
  static constexpr int64_t kIdleMaxSleepUs = 1000;

  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  std::atomic<bool> sleeping_{false};
  MPI_Comm comm_ = MPI_COMM_NULL;
  uint32_t rank_ = 0, procs_ = 1;
  int64_t origin_ = -1;
  const ChunkLimits limits_;
  std::mutex mu_;
  std::condition_variable space_;          // signalled as sends complete (back-pressure)
  std::vector<std::vector<char>> out_;     // per destination process, frames back to back
  std::vector<size_t> backlog_;            // per destination: bytes in out_ and in flight
  std::vector<FrameReassembler> streams_;  // per source process (comm thread only)
  std::atomic<uint64_t> messages_{0}, largest_{0}, sender_waits_{0};
  std::atomic<bool> queued_{false}, done_{false}, running_{false};
  std::atomic<int> abort_code_{0};
  std::thread thread_;
};

}  // namespace

namespace {
size_t limit_from_environment(const char* name, size_t fallback, size_t most) {
  const char* v = environment_value(name);
  if (!v) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || *v == '-' || n == 0 || n > most)
    throw std::invalid_argument(std::string(name) + "=" + v + ": expected bytes from 1 to " +
                                std::to_string(most));
  return static_cast<size_t>(n);
}
}  // namespace

std::unique_ptr<Transport> mpi_transport_if_launched(ChunkLimits limits, ChunkLimits flags) {
  const char* size = environment_value("OMPI_COMM_WORLD_SIZE");
  if (!size || std::atoi(size) <= 1) return nullptr;
  if (limits.chunk_bytes == 0 || limits.chunk_bytes > static_cast<size_t>(INT_MAX) ||
      limits.out_bytes == 0 || flags.chunk_bytes > static_cast<size_t>(INT_MAX))
    throw std::invalid_argument(
        "MPI transport: chunk size must be 1 to INT_MAX bytes, "
        "the outgoing bound at least 1");
  limits.chunk_bytes = flags.chunk_bytes ? flags.chunk_bytes
                                         : limit_from_environment("SNAILTRAIL_MPI_CHUNK_BYTES",
                                                                  limits.chunk_bytes, INT_MAX);
  limits.out_bytes = flags.out_bytes ? flags.out_bytes
                                     : limit_from_environment("SNAILTRAIL_MPI_OUT_BYTES",
                                                              limits.out_bytes, SIZE_MAX);
  const char* rank = environment_value("OMPI_COMM_WORLD_RANK");
  if ((flags.chunk_bytes || flags.out_bytes || environment_value("SNAILTRAIL_MPI_CHUNK_BYTES") ||
       environment_value("SNAILTRAIL_MPI_OUT_BYTES")) &&
      rank && std::string(rank) == "0")
    std::fprintf(stderr,
                 "snailtrail: MPI messages of at most %zu bytes, at most %zu bytes queued or in "
                 "flight per destination\n",
                 limits.chunk_bytes, limits.out_bytes);
  freeze_environment();  // Open MPI's threads may write the environment while workers read
  return std::make_unique<MpiTransport>(limits);
}

}  // namespace snailtrail::flow
