#include "serve/ingest.hpp"

#include <chrono>
#include <memory>

#include "serve/pump.hpp"

namespace snailtrail::serve {

void BatchQueue::push(Batch batch) {
  std::unique_lock lock(mu_);
  not_full_.wait(lock, [&] { return events_ < capacity_ || batches_.empty(); });
  events_ += batch.events.size();
  batches_.push_back(std::move(batch));
  not_empty_.notify_one();
}

std::optional<Batch> BatchQueue::pop(int timeout_ms) {
  std::unique_lock lock(mu_);
  if (!not_empty_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [&] { return !batches_.empty(); }))
    return std::nullopt;
  Batch b = std::move(batches_.front());
  batches_.pop_front();
  events_ -= b.events.size();
  not_full_.notify_all();
  return b;
}

size_t BatchQueue::queued_events() const {
  std::lock_guard lock(mu_);
  return events_;
}

bool MemoryBudget::try_reserve(size_t n) {
  size_t used = used_.load();
  do {
    if (n > limit_ || used > limit_ - n) return false;
  } while (!used_.compare_exchange_weak(used, used + n));
  size_t peak = peak_.load();
  while (used + n > peak && !peak_.compare_exchange_weak(peak, used + n)) {
  }
  return true;
}

void MemoryBudget::release(size_t n) {
  used_ -= n;
}

namespace {

void add_buffered(IngestCounters& c, int64_t delta) {
  if (delta == 0) return;
  const int64_t now = (c.buffered_bytes += delta);
  int64_t peak = c.buffered_peak.load();
  while (now > peak && !c.buffered_peak.compare_exchange_weak(peak, now)) {
  }
}

}  // namespace

ConnectionInput::ConnectionInput(const std::string& name, BatchQueue& queue,
                                 IngestCounters& counters, MemoryBudget& budget)
    : pump_(std::make_unique<Pump>(name, queue, counters)), counters_(counters), budget_(budget) {}

ConnectionInput::~ConnectionInput() {
  add_buffered(counters_, -static_cast<int64_t>(accounted_));
  budget_.release(reserved_);
}

bool ConnectionInput::admit() {
  const size_t need = pump_->need();
  if (need <= std::max(kFreeBytes, reserved_)) return true;
  const size_t want = pump_->jsonl() ? kMaxLine + kFreeBytes : need;
  if (want > reserved_ && budget_.try_reserve(want - reserved_)) {
    reserved_ = want;
    return true;
  }
  return false;
}

size_t ConnectionInput::room() const {
  const size_t allowance = std::max(kFreeBytes, reserved_);
  const size_t have = pump_->buffered();
  return allowance > have ? allowance - have : 0;
}

bool ConnectionInput::feed(const uint8_t* data, size_t n) {
  const bool ok = pump_->feed(data, n);
  account();
  return ok;
}

void ConnectionInput::finish() {
  pump_->finish();
  account();
}

void ConnectionInput::account() {
  const size_t now = pump_->buffered();
  add_buffered(counters_, static_cast<int64_t>(now) - static_cast<int64_t>(accounted_));
  accounted_ = now;
  // Done with the large unit: back to the free allowance.
  if (reserved_ && now <= kFreeBytes && pump_->need() <= kFreeBytes) {
    budget_.release(reserved_);
    reserved_ = 0;
  }
}

uint64_t ConnectionInput::bytes() const {
  return pump_->bytes();
}

size_t ConnectionInput::buffered() const {
  return pump_->buffered();
}
bool ConnectionInput::broken() const {
  return pump_->broken();
}
const std::string& ConnectionInput::broken_reason() const {
  return pump_->broken_reason();
}
void ConnectionInput::log_end(bool log) const {
  pump_->log_end(log);
}

}  // namespace snailtrail::serve
