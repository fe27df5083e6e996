// Moving batches of records between workers (docs/RUNTIME.md "Communication").
//
// A Message<T> is one batch: records of one logical time. Workers exchange messages
// through Pusher<T>/Puller<T> endpoints; in one process every (sender, receiver) pair of
// a channel has its own single-producer single-consumer ring (lock-free, bounded; a
// full ring keeps the overflow at the sender, so a push never blocks). The endpoints are
// virtual so that a transport between processes (MPI, a communication thread per
// process that serializes batches) can hand out other endpoints for remote workers.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flow/park.hpp"

namespace snailtrail::flow {

using Time = uint64_t;
inline constexpr Time kTimeMax = ~uint64_t{0};  // "no time": an empty frontier

// One immutable batch that several receivers read (issue 35: each round's progress batch
// goes to every worker): a buffer with a reference count. Its sender fills it while it
// holds the only reference (unique()), each receiver's message holds one, and the last
// to let go frees it, or, if that is the sender's pool, the sender refills it. The count
// is intrusive (not std::shared_ptr) so that unique() is an acquire load: the receivers'
// reads happen before the sender's next fill.
template <class T>
class SharedBatch {
 public:
  SharedBatch() = default;
  static SharedBatch make() {
    SharedBatch b;
    b.p_ = new Block;
    return b;
  }
  SharedBatch(const SharedBatch& o) : p_(o.p_) {
    if (p_) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedBatch(SharedBatch&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  SharedBatch& operator=(const SharedBatch& o) {
    SharedBatch copy(o);
    return *this = std::move(copy);
  }
  SharedBatch& operator=(SharedBatch&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  ~SharedBatch() { reset(); }
  void reset() {
    if (p_ && p_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  explicit operator bool() const { return p_ != nullptr; }
  // No one else holds it: its holder may change it.
  bool unique() const { return p_ && p_->refs.load(std::memory_order_acquire) == 1; }
  const std::vector<T>& data() const { return p_->data; }
  // Only while unique().
  std::vector<T>& mutable_data() { return p_->data; }

 private:
  struct Block {
    std::atomic<uint32_t> refs{1};
    std::vector<T> data;
  };
  Block* p_ = nullptr;
};

template <class T>
struct Message {
  Time time = 0;
  uint32_t from = 0;
  int64_t correlator = 0;   // trace correlator of the data message (0: not traced)
  int64_t arrived_ns = -1;  // traced: when it entered the receiver's ring (or was delivered)
  std::vector<T> data;
  // Set instead of data by a sender whose receivers all read one batch (records()).
  SharedBatch<T> shared;
  std::span<const T> records() const {
    return shared ? std::span<const T>(shared.data()) : std::span<const T>(data);
  }
};

// Slots of every ring between two workers of one process (Fabric's default).
inline constexpr size_t kRingCapacity = 1024;
// Emptied messages a receiver keeps for its sender at most (ChannelRings::returns): enough
// for the steady state; a burst beyond it is freed, not kept for the run's rest.
inline constexpr size_t kReturnCapacity = 64;

// Bounded single-producer single-consumer ring of pointers: at most `capacity` (>= 1)
// entries; the slots are rounded up to a power of two, so an index is a mask.
template <class T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity = kRingCapacity)
      : slots_(std::bit_ceil(std::max<size_t>(capacity, 1))),
        mask_(slots_.size() - 1),
        capacity_(std::max<size_t>(capacity, 1)) {}
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;
  ~SpscRing() {
    while (T* p = pop()) delete p;
  }
  // Producer side: a push now would fail.
  bool full() const {
    return tail_.load(std::memory_order_relaxed) - head_.load(std::memory_order_acquire) ==
           capacity_;
  }
  // Takes ownership on success; returns false (ownership stays) when full.
  bool push(T* p) {
    const size_t t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == capacity_) return false;
    slots_[t & mask_] = p;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  // Consumer side: the oldest entry, left in place (nullptr: empty).
  T* peek() const {
    const size_t h = head_.load(std::memory_order_relaxed);
    if (h == tail_.load(std::memory_order_acquire)) return nullptr;
    return slots_[h & mask_];
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
  size_t mask_, capacity_;
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
  // An emptied message its receiver gave back (Puller::recycle), or nullptr.
  virtual std::unique_ptr<Message<T>> reuse() { return nullptr; }
  // Called on the sender's thread as a message enters the receiver's ring (or the
  // transport's queue), never while it waits at the sender: the runtime's tracing takes
  // the correlator, records the send and stamps the arrival there.
  std::function<void(Message<T>&)> on_enter;
};

// What a worker's trace flush asks of each of its inputs (runtime.cpp's drive()): the
// earliest arrival among the messages that arrived and were not taken yet (INT64_MAX:
// none, or not traced). Called on the receiver's thread only.
class Inbound {
 public:
  virtual ~Inbound() = default;
  virtual int64_t earliest_arrival() { return INT64_MAX; }
};

template <class T>
class Puller : public Inbound {
 public:
  virtual std::unique_ptr<Message<T>> pull() = 0;
  // Gives a pulled message, emptied, back to its sender for reuse (or frees it).
  virtual void recycle(std::unique_ptr<Message<T>> m) { m.reset(); }
};

// All rings of one channel: ring[from * workers + to], and the rings that take emptied
// messages back from `to` to `from` (returns[from * workers + to]), so that a sender
// reuses its messages and their buffers instead of allocating new ones.
template <class T>
struct ChannelRings {
  ChannelRings(uint32_t workers, size_t capacity) : workers(workers) {
    rings.reserve(size_t{workers} * workers);
    returns.reserve(size_t{workers} * workers);
    for (size_t i = 0; i < size_t{workers} * workers; ++i) {
      rings.push_back(std::make_unique<SpscRing<Message<T>>>(capacity));
      returns.push_back(
          std::make_unique<SpscRing<Message<T>>>(std::min(capacity, kReturnCapacity)));
    }
  }
  uint32_t workers;
  std::vector<std::unique_ptr<SpscRing<Message<T>>>> rings, returns;
};

template <class T>
class RingPusher final : public Pusher<T> {
 public:
  // `entering`: the sending worker's stamp (Fabric::entering), cleared once a traced
  // message is in the ring. `wake`: the receiver's park slot (nullptr: the sender itself),
  // woken after each message enters the ring.
  RingPusher(SpscRing<Message<T>>* ring, SpscRing<Message<T>>* returns,
             std::atomic<int64_t>* entering, ParkSlot* wake = nullptr)
      : ring_(ring), returns_(returns), entering_(entering), wake_(wake) {}
  void push(std::unique_ptr<Message<T>> m) override {
    if (overflow_.empty() && enter(m)) return;
    overflow_.push_back(std::move(m));
  }
  bool flush() override {
    while (!overflow_.empty() && enter(overflow_.front())) overflow_.pop_front();
    return overflow_.empty();
  }
  std::unique_ptr<Message<T>> reuse() override {
    return std::unique_ptr<Message<T>>(returns_->pop());
  }

 private:
  // Only this thread pushes, so a ring that is not full takes the message.
  bool enter(std::unique_ptr<Message<T>>& m) {
    if (ring_->full()) return false;
    if (!this->on_enter) {
      ring_->push(m.release());
    } else {
      this->on_enter(*m);  // stamps the arrival and publishes it as entering (trace_send)
      ring_->push(m.release());
      entering_->store(INT64_MAX);  // seq_cst: see Fabric::entering
    }
    if (wake_) wake_->wake();
    return true;
  }
  SpscRing<Message<T>>* ring_;
  SpscRing<Message<T>>* returns_;  // this thread pops, the receiver pushes
  std::atomic<int64_t>* entering_;
  ParkSlot* wake_;
  std::deque<std::unique_ptr<Message<T>>> overflow_;
};

// Pulls from every sender's ring in turn; emptied messages go back to their sender's
// return ring (a full one frees them).
template <class T>
class RingPuller final : public Puller<T> {
 public:
  // rings[i], returns[i]: from local worker i (global index base + i).
  RingPuller(std::vector<SpscRing<Message<T>>*> rings, std::vector<SpscRing<Message<T>>*> returns,
             uint32_t base)
      : rings_(std::move(rings)), returns_(std::move(returns)), base_(base) {}
  void recycle(std::unique_ptr<Message<T>> m) override {
    const uint32_t i = m->from - base_;
    if (i < returns_.size() && returns_[i]->push(m.get())) m.release();
  }
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
  // Each sender's arrivals increase and its ring is FIFO: its head is its earliest.
  int64_t earliest_arrival() override {
    int64_t t = INT64_MAX;
    for (auto* r : rings_)
      if (const Message<T>* m = r->peek(); m && m->arrived_ns >= 0) t = std::min(t, m->arrived_ns);
    return t;
  }

 private:
  std::vector<SpscRing<Message<T>>*> rings_, returns_;
  uint32_t base_;
  size_t next_ = 0;
};

// Between processes (docs/RUNTIME.md "Several processes"): a Transport moves byte
// frames to other processes; src/flow/mpi_transport.cpp implements it with Open MPI and
// one communication thread per process, so nothing here depends on MPI. A frame is a
// FrameHeader followed by `bytes` bytes of records (trivially copyable types only).
struct FrameHeader {
  uint64_t channel = 0;
  uint32_t from = 0, to = 0;  // global worker indices
  Time time = 0;
  int64_t correlator = 0;
  int64_t arrived_ns = -1;  // stamped by the receiving process's delivery (traced runs)
  uint64_t bytes = 0;
};

// Workers number their channels from 1 (0 carries progress) and never reach 2^40 (the
// runtime's interval statistics, runtime.cpp's kStatsChannel): channels from here on
// carry later stages' own messages between processes (src/loop's rank reports).
inline constexpr uint64_t kStageChannelBase = (uint64_t{1} << 40) + 1024;

// Frames received for one (channel, local worker); filled by the communication thread.
struct Inbox {
  std::mutex mu;
  std::deque<std::vector<char>> frames;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual uint32_t procs() const = 0;
  virtual uint32_t rank() const = 0;
  // Thread-safe: queues a frame for process `proc` (sent in order by the comm thread).
  virtual void send(uint32_t proc, std::vector<char>&& frame) = 0;
  // Before the workers start: all processes meet, then the comm thread starts. After
  // finish(), start() begins the next run (the next dataflow of run_dataflow).
  virtual void start() = 0;
  // After start(): the run's clock origin (steady_clock ns since its epoch) if every
  // process shares one (all on one host: rank 0's clock when they left the barrier),
  // else -1 (each process takes its own origin after the barrier).
  virtual int64_t origin_ns() const { return -1; }
  // After this process's workers are done: sends what is queued, then returns once
  // every process has got there (the termination agreement); the comm thread stops.
  virtual void finish() = 0;
  // After finish(): the concatenation of every process's `mine` in rank order on rank 0
  // (empty elsewhere).
  virtual std::vector<uint64_t> gather(const std::vector<uint64_t>& mine) = 0;
  // Ends every process of the job after an error on this one; never returns. Any thread
  // may call it: while the comm thread runs, the comm thread itself makes the call that
  // ends the job (MPI under MPI_THREAD_SERIALIZED: one thread in MPI at a time).
  [[noreturn]] virtual void abort(int code) = 0;
  // Called while tracing: how long (de)serialization took, per worker (set by the runtime).
  std::function<void(uint32_t worker, int64_t t0, int64_t t1, bool ser, uint64_t records)> on_codec;
  std::function<int64_t()> now;
  // Set while tracing: the run's time of a delivery stamped on the steady clock. Deliveries
  // are stamped from start() on, before the run's origin is known; they are converted
  // on the receiving worker's thread, once it is.
  std::function<int64_t(int64_t steady_ns)> since_origin;
  static int64_t steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  // The inbox of (channel, global worker `to`), created on first use by either side.
  std::shared_ptr<Inbox> inbox(uint64_t channel, uint32_t to) {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    auto& slot = inboxes_[(channel << 20) ^ to];
    if (!slot) slot = std::make_shared<Inbox>();
    return slot;
  }
  // Frames delivered and not pulled (yet). Before a run after another (start()) it must
  // be 0: the previous dataflow's workers pulled everything sent to them before they
  // were done, and the next dataflow numbers its channels again from 1.
  size_t unpulled_frames() {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    size_t n = 0;
    for (auto& [key, box] : inboxes_) {
      std::lock_guard<std::mutex> box_lock(box->mu);
      n += box->frames.size();
    }
    return n;
  }
  // Set by the Fabric for its run (nullptr: none): the park slots of local workers
  // [base, base + n) (global indices), so that a delivered frame wakes its worker.
  void wake_on_delivery(ParkSlot* slots, uint32_t base, uint32_t n) {
    park_base_ = base;
    park_n_ = n;
    park_.store(slots, std::memory_order_release);
  }
  // Splits a received buffer of whole frames into the inboxes.
  void deliver(const char* p, size_t n) {
    while (n >= sizeof(FrameHeader)) {
      FrameHeader h;
      std::memcpy(&h, p, sizeof h);
      const size_t len = sizeof h + h.bytes;
      if (h.bytes > n || len > n) throw std::runtime_error("transport: truncated frame");
      deliver_frame(p, len);
      p += len;
      n -= len;
    }
  }
  // One whole frame (header and bytes) into its inbox.
  void deliver_frame(const char* p, size_t len) {
    FrameHeader h;
    std::memcpy(&h, p, sizeof h);
    auto box = inbox(h.channel, h.to);
    std::vector<char> frame(p, p + len);
    {
      // The receipt's time: delivery, not the receiver's dequeue. Stamped under the
      // inbox's lock, so that a receiver's flush that found the inbox without this frame
      // read its clock before this stamp (MixedPuller::earliest_arrival).
      std::lock_guard<std::mutex> lock(box->mu);
      if (since_origin) {
        h.arrived_ns = steady_now_ns();
        std::memcpy(frame.data(), &h, sizeof h);
      }
      box->frames.push_back(std::move(frame));
    }
    // After the push, as a ring's pusher does (park.hpp): a parked receiver wakes now
    // instead of at its timeout, so idle workers may park long with a transport too.
    ParkSlot* park = park_.load(std::memory_order_acquire);
    if (park && h.to - park_base_ < park_n_) park[h.to - park_base_].wake();
  }
  // What the transport did (tests check that limits took effect).
  struct Stats {
    uint64_t messages = 0;         // messages sent
    uint64_t largest_message = 0;  // bytes
    uint64_t sender_waits = 0;     // sends that waited for the outgoing bound
  };
  virtual Stats stats() const { return {}; }

 private:
  std::mutex inbox_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Inbox>> inboxes_;
  std::atomic<ParkSlot*> park_{nullptr};
  uint32_t park_base_ = 0, park_n_ = 0;  // written before park_ (release)
};

// A push to a worker of another process: serializes the batch into a frame.
template <class T>
class RemotePusher final : public Pusher<T> {
 public:
  RemotePusher(Transport* t, uint64_t channel, uint32_t to, uint32_t proc)
      : t_(t), channel_(channel), to_(to), proc_(proc) {}
  void push(std::unique_ptr<Message<T>> m) override {
    if constexpr (std::is_trivially_copyable_v<T>) {
      if (this->on_enter) this->on_enter(*m);
      const bool traced = static_cast<bool>(t_->on_codec);
      const int64_t t0 = traced ? t_->now() : 0;
      FrameHeader h;
      h.channel = channel_;
      h.from = m->from;
      h.to = to_;
      h.time = m->time;
      h.correlator = m->correlator;
      const std::span<const T> records = m->records();
      h.bytes = records.size() * sizeof(T);
      std::vector<char> frame(sizeof h + h.bytes);
      std::memcpy(frame.data(), &h, sizeof h);
      if (h.bytes) std::memcpy(frame.data() + sizeof h, records.data(), h.bytes);
      t_->send(proc_, std::move(frame));
      if (traced) t_->on_codec(m->from, t0, t_->now(), true, records.size());
    } else {
      throw std::logic_error("records of this type cannot cross processes");
    }
  }
  bool flush() override { return true; }

 private:
  Transport* t_;
  uint64_t channel_;
  uint32_t to_, proc_;
};

// Pulls from the local rings, then deserializes frames from other processes.
template <class T>
class MixedPuller final : public Puller<T> {
 public:
  MixedPuller(std::unique_ptr<Puller<T>> local, Transport* t, std::shared_ptr<Inbox> box,
              uint32_t base, uint32_t local_workers)
      : local_(std::move(local)),
        t_(t),
        box_(std::move(box)),
        base_(base),
        locals_(local_workers) {}
  // A local sender's message goes back to it; another process's is kept for remote().
  void recycle(std::unique_ptr<Message<T>> m) override {
    if (m->from - base_ < locals_) return local_->recycle(std::move(m));
    if (free_.size() < 64) free_.push_back(std::move(m));
  }
  std::unique_ptr<Message<T>> pull() override {
    if (!turn_) {
      turn_ = true;
      if (auto m = local_->pull()) return m;
    }
    turn_ = false;
    if (auto m = remote()) return m;
    return local_->pull();
  }
  int64_t earliest_arrival() override {
    int64_t t = local_->earliest_arrival();
    if (!t_->since_origin) return t;
    std::lock_guard<std::mutex> lock(box_->mu);
    if (box_->frames.empty()) return t;
    FrameHeader h;  // frames are delivered in order: the front is the earliest
    std::memcpy(&h, box_->frames.front().data(), sizeof h);
    const int64_t a = t_->since_origin(h.arrived_ns);
    return a >= 0 ? std::min(t, a) : t;
  }

 private:
  std::unique_ptr<Message<T>> remote() {
    std::vector<char> frame;
    {
      std::lock_guard<std::mutex> lock(box_->mu);
      if (box_->frames.empty()) return nullptr;
      frame = std::move(box_->frames.front());
      box_->frames.pop_front();
    }
    if constexpr (std::is_trivially_copyable_v<T>) {
      const bool traced = static_cast<bool>(t_->on_codec);
      const int64_t t0 = traced ? t_->now() : 0;
      FrameHeader h;
      std::memcpy(&h, frame.data(), sizeof h);
      std::unique_ptr<Message<T>> m;
      if (!free_.empty()) {
        m = std::move(free_.back());
        free_.pop_back();
      } else {
        m = std::make_unique<Message<T>>();
      }
      m->time = h.time;
      m->from = h.from;
      m->correlator = h.correlator;
      m->arrived_ns = t_->since_origin ? t_->since_origin(h.arrived_ns) : h.arrived_ns;
      m->data.resize(h.bytes / sizeof(T));
      if (h.bytes) std::memcpy(m->data.data(), frame.data() + sizeof h, h.bytes);
      if (traced) t_->on_codec(h.to, t0, t_->now(), false, m->data.size());
      return m;
    } else {
      throw std::logic_error("records of this type cannot cross processes");
    }
  }
  std::unique_ptr<Puller<T>> local_;
  Transport* t_;
  std::shared_ptr<Inbox> box_;
  uint32_t base_, locals_;
  std::vector<std::unique_ptr<Message<T>>> free_;
  bool turn_ = false;
};

// The fabric: hands every worker its endpoints of a channel. Channels are identified by
// the order in which each worker's (identical) dataflow creates them. With a transport
// of P processes, this process runs workers [rank*W, rank*W + W) of P*W (global indices).
// Every ring between two local workers holds `ring_capacity` messages (tests make it
// small, so that pushes overflow at the sender).
class Fabric {
 public:
  explicit Fabric(uint32_t workers, Transport* transport = nullptr,
                  size_t ring_capacity = kRingCapacity)
      : local_(workers),
        procs_(transport ? transport->procs() : 1),
        base_(transport ? transport->rank() * workers : 0),
        transport_(transport),
        ring_capacity_(ring_capacity),
        entering_(workers),
        park_(std::make_unique<ParkSlot[]>(workers)) {
    if (ring_capacity == 0) throw std::invalid_argument("fabric: a ring needs a slot");
    for (auto& e : entering_) e.store(INT64_MAX);
    if (transport_) transport_->wake_on_delivery(park_.get(), base_, local_);
  }
  ~Fabric() {
    if (transport_) transport_->wake_on_delivery(nullptr, 0, 0);
  }
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;
  // All workers, over every process.
  uint32_t workers() const { return local_ * procs_; }
  uint32_t local_workers() const { return local_; }
  uint32_t base() const { return base_; }
  bool local(uint32_t worker) const { return worker >= base_ && worker < base_ + local_; }
  // Local worker `worker`'s traced message on its way into a ring: a time no later than
  // its arrival stamp, stored (seq_cst) before the stamp is taken and cleared (INT64_MAX)
  // after the push. A receiver's flush reads its clock, then these, then its rings' heads:
  // a message it did not see was either entering (this bounds its arrival), or had its
  // stamp taken after the receiver's clock read (docs/RUNTIME.md "Tracing").
  std::atomic<int64_t>& entering(uint32_t worker) { return entering_[worker - base_]; }
  // Local worker `worker`'s park slot (park.hpp): every ring push to it from another local
  // worker wakes it, and so does every frame the transport's thread delivers to it.
  ParkSlot& park(uint32_t worker) { return park_[worker - base_]; }
  bool has_transport() const { return transport_ != nullptr; }

  template <class T>
  std::vector<std::unique_ptr<Pusher<T>>> pushers(uint64_t channel, uint32_t from) {
    auto rings = get<T>(channel);
    std::vector<std::unique_ptr<Pusher<T>>> out;
    for (uint32_t to = 0; to < workers(); ++to) {
      if (!local(to)) {
        out.push_back(std::make_unique<RemotePusher<T>>(transport_, channel, to, to / local_));
        continue;
      }
      const size_t i = size_t{from - base_} * local_ + (to - base_);
      out.push_back(std::make_unique<RingPusher<T>>(rings->rings[i].get(), rings->returns[i].get(),
                                                    &entering(from),
                                                    to == from ? nullptr : &park(to)));
    }
    return out;
  }
  template <class T>
  std::unique_ptr<Puller<T>> puller(uint64_t channel, uint32_t to) {
    auto rings = get<T>(channel);
    std::vector<SpscRing<Message<T>>*> in, back;
    for (uint32_t from = 0; from < local_; ++from) {
      in.push_back(rings->rings[size_t{from} * local_ + (to - base_)].get());
      back.push_back(rings->returns[size_t{from} * local_ + (to - base_)].get());
    }
    auto local = std::make_unique<RingPuller<T>>(std::move(in), std::move(back), base_);
    if (procs_ == 1) return local;
    return std::make_unique<MixedPuller<T>>(std::move(local), transport_,
                                            transport_->inbox(channel, to), base_, local_);
  }

 private:
  template <class T>
  std::shared_ptr<ChannelRings<T>> get(uint64_t channel) {
    std::lock_guard<std::mutex> lock(mu_);  // only while dataflows are built
    auto& slot = channels_[channel];
    if (!slot) slot = std::make_shared<ChannelRings<T>>(local_, ring_capacity_);
    return std::static_pointer_cast<ChannelRings<T>>(slot);
  }
  uint32_t local_, procs_, base_;
  Transport* transport_;
  size_t ring_capacity_;
  std::vector<std::atomic<int64_t>> entering_;
  std::unique_ptr<ParkSlot[]> park_;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<void>> channels_;
};

}  // namespace snailtrail::flow
