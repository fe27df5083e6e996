// Moving batches of records between workers (docs/RUNTIME.md "Communication").
//
// A Message<T> is one batch: records of one logical time. Workers exchange messages
// through Pusher<T>/Puller<T> endpoints; in one process every (sender, receiver) pair of
// a channel has its own single-producer single-consumer ring (lock-free, bounded; a
// full ring keeps the overflow at the sender, so a push never blocks). The endpoints are
// virtual so that a transport between processes (MPI, a communication thread per
// process that serializes batches) can hand out other endpoints for remote workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace snailtrail::flow {

using Time = uint64_t;
inline constexpr Time kTimeMax = ~uint64_t{0};  // "no time": an empty frontier

template <class T>
struct Message {
  Time time = 0;
  uint32_t from = 0;
  int64_t correlator = 0;  // trace correlator of the data message (0: not traced)
  std::vector<T> data;
};

// Bounded single-producer single-consumer ring of pointers (capacity a power of two).
template <class T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity = 1024) : slots_(capacity), mask_(capacity - 1) {}
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;
  ~SpscRing() {
    while (T* p = pop()) delete p;
  }
  // Takes ownership on success; returns false (ownership stays) when full.
  bool push(T* p) {
    const size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == slots_.size()) return false;
    slots_[t & mask_] = p;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  T* pop() {
    const size_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_.load(std::memory_order_acquire)) return nullptr;
    T* p = slots_[h & mask_];
    head_.store(h + 1, std::memory_order_release);
    return p;
  }

 private:
  std::vector<T*> slots_;
  size_t mask_;
  alignas(64) std::atomic<size_t> head_{0};
  alignas(64) std::atomic<size_t> tail_{0};
};

template <class T>
class Pusher {
 public:
  virtual ~Pusher() = default;
  virtual void push(std::unique_ptr<Message<T>> m) = 0;
  // Retries what could not be delivered; true when nothing is left at the sender.
  virtual bool flush() = 0;
};

template <class T>
class Puller {
 public:
  virtual ~Puller() = default;
  virtual std::unique_ptr<Message<T>> pull() = 0;
};

// All rings of one channel: ring[from * workers + to].
template <class T>
struct ChannelRings {
  explicit ChannelRings(uint32_t workers) : workers(workers) {
    rings.reserve(size_t{workers} * workers);
    for (size_t i = 0; i < size_t{workers} * workers; ++i)
      rings.push_back(std::make_unique<SpscRing<Message<T>>>());
  }
  uint32_t workers;
  std::vector<std::unique_ptr<SpscRing<Message<T>>>> rings;
};

template <class T>
class RingPusher final : public Pusher<T> {
 public:
  explicit RingPusher(SpscRing<Message<T>>* ring) : ring_(ring) {}
  void push(std::unique_ptr<Message<T>> m) override {
    if (overflow_.empty() && ring_->push(m.get())) {
      m.release();
      return;
    }
    overflow_.push_back(std::move(m));
  }
  bool flush() override {
    while (!overflow_.empty() && ring_->push(overflow_.front().get())) {
      overflow_.front().release();
      overflow_.pop_front();
    }
    return overflow_.empty();
  }

 private:
  SpscRing<Message<T>>* ring_;
  std::deque<std::unique_ptr<Message<T>>> overflow_;
};

// Pulls from every sender's ring in turn.
template <class T>
class RingPuller final : public Puller<T> {
 public:
  explicit RingPuller(std::vector<SpscRing<Message<T>>*> rings) : rings_(std::move(rings)) {}
  std::unique_ptr<Message<T>> pull() override {
    for (size_t k = 0; k < rings_.size(); ++k) {
      const size_t i = (next_ + k) % rings_.size();
      if (Message<T>* m = rings_[i]->pop()) {
        next_ = i + 1;
        return std::unique_ptr<Message<T>>(m);
      }
    }
    return nullptr;
  }

 private:
  std::vector<SpscRing<Message<T>>*> rings_;
  size_t next_ = 0;
};

// The in-process fabric: hands every worker its endpoints of a channel. Channels are
// identified by the order in which each worker's (identical) dataflow creates them.
class Fabric {
 public:
  explicit Fabric(uint32_t workers) : workers_(workers) {}
  uint32_t workers() const { return workers_; }

  template <class T>
  std::vector<std::unique_ptr<Pusher<T>>> pushers(uint64_t channel, uint32_t from) {
    auto rings = get<T>(channel);
    std::vector<std::unique_ptr<Pusher<T>>> out;
    for (uint32_t to = 0; to < workers_; ++to)
      out.push_back(
          std::make_unique<RingPusher<T>>(rings->rings[size_t{from} * workers_ + to].get()));
    return out;
  }
  template <class T>
  std::unique_ptr<Puller<T>> puller(uint64_t channel, uint32_t to) {
    auto rings = get<T>(channel);
    std::vector<SpscRing<Message<T>>*> in;
    for (uint32_t from = 0; from < workers_; ++from)
      in.push_back(rings->rings[size_t{from} * workers_ + to].get());
    return std::make_unique<RingPuller<T>>(std::move(in));
  }

 private:
  template <class T>
  std::shared_ptr<ChannelRings<T>> get(uint64_t channel) {
    std::lock_guard<std::mutex> lock(mu_);  // only while dataflows are built
    auto& slot = channels_[channel];
    if (!slot) slot = std::make_shared<ChannelRings<T>>(workers_);
    return std::static_pointer_cast<ChannelRings<T>>(slot);
  }
  uint32_t workers_;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<void>> channels_;
};

}  // namespace snailtrail::flow
