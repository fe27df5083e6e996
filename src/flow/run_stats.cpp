#include "flow/run_stats.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace snailtrail::flow {
namespace {

// The statistics frames of rank r > 0 to rank 0 (FrameHeader::channel; the fabric's
// channels are small numbers). Payload: u64 words end_ns, records, rss (double bits),
// n, then n (bucket, count) pairs; FrameHeader::time = the interval's number.
constexpr uint64_t kStatsChannel = uint64_t{1} << 40;

}  // namespace

IntervalStatsCollector::IntervalStatsCollector(const RunConfig& cfg, RunResult& result,
                                               Transport* tr, uint32_t base, const Histogram& hist,
                                               const std::vector<std::atomic<uint64_t>>& generated)
    : cfg_(cfg),
      result_(result),
      tr_(tr),
      base_(base),
      procs_(tr ? tr->procs() : 1),
      rank_(tr ? tr->rank() : 0),
      hist_(hist),
      generated_(generated),
      total_hist_(Histogram::kBuckets, 0),
      prev_hist_(Histogram::kBuckets, 0) {}

void IntervalStatsCollector::publish(const Merged& m) {
  IntervalStats st;
  st.t_s = static_cast<double>(m.at) * 1e-9;
  st.records = m.records;
  st.p50_ms = static_cast<double>(percentile(m.hist, 0.5)) * 1e-6;
  st.p99_ms = static_cast<double>(percentile(m.hist, 0.99)) * 1e-6;
  st.p999_ms = static_cast<double>(percentile(m.hist, 0.999)) * 1e-6;
  st.max_ms = static_cast<double>(percentile(m.hist, 1.0)) * 1e-6;
  st.rss_mb = m.rss;
  for (uint64_t n : m.hist) st.samples += n;
  for (size_t b = 0; b < m.hist.size(); ++b) total_hist_[b] += m.hist[b];
  result_.intervals.push_back(st);
  if (cfg_.on_interval) cfg_.on_interval(st);
  if (cfg_.on_stats_line)
    cfg_.on_stats_line(fmt::format(
        "t={:.2f}s records={} p50={:.3f}ms p99={:.3f}ms p99.9={:.3f}ms max={:.3f}ms rss={:.0f}MB",
        st.t_s, st.records, st.p50_ms, st.p99_ms, st.p999_ms, st.max_ms, st.rss_mb));
}

void IntervalStatsCollector::merge(uint64_t k, int64_t at, uint64_t records, double rss,
                                   const uint64_t* pairs, size_t npairs) {
  Merged& m = merged_[k];
  if (m.hist.empty()) m.hist.assign(Histogram::kBuckets, 0);
  ++m.ranks;
  m.at = std::max(m.at, at);
  m.records += records;
  m.rss += rss;
  for (size_t j = 0; j < npairs; ++j)
    if (pairs[2 * j] < m.hist.size()) m.hist[pairs[2 * j]] += pairs[2 * j + 1];
}

void IntervalStatsCollector::collect(bool all) {
  if (rank_ != 0) return;
  auto box = tr_ ? tr_->inbox(kStatsChannel, 0) : nullptr;
  while (box) {
    std::vector<char> frame;
    {
      std::lock_guard<std::mutex> lock(box->mu);
      if (box->frames.empty()) break;
      frame = std::move(box->frames.front());
      box->frames.pop_front();
    }
    FrameHeader h;
    std::memcpy(&h, frame.data(), sizeof h);
    std::vector<uint64_t> w(h.bytes / 8);
    std::memcpy(w.data(), frame.data() + sizeof h, w.size() * 8);
    if (w.size() < 4 || w.size() % 2 != 0 || (w.size() - 4) / 2 != w[3])
      throw std::runtime_error("transport: malformed statistics frame");
    double rss = 0;
    std::memcpy(&rss, &w[2], sizeof rss);
    merge(h.time, static_cast<int64_t>(w[0]), w[1], rss, w.data() + 4, w[3]);
  }
  while (!merged_.empty() && (all || merged_.begin()->second.ranks == procs_)) {
    auto it = merged_.begin();
    publish(it->second);
    merged_.erase(it);
  }
}

void IntervalStatsCollector::interval(int64_t at) {
  std::vector<uint64_t> h = hist_.snapshot();
  std::vector<uint64_t> pairs;  // (bucket, count) of the interval's samples
  for (size_t b = 0; b < h.size(); ++b)
    if (h[b] != prev_hist_[b]) {
      pairs.push_back(b);
      pairs.push_back(h[b] - prev_hist_[b]);
    }
  prev_hist_ = h;
  uint64_t records = 0;
  for (auto& g : generated_) records += g.load(std::memory_order_relaxed);
  const uint64_t d = records - prev_records_;
  prev_records_ = records;
  const double rss = rss_mb();
  ++k_;
  if (rank_ == 0) {
    merge(k_, at, d, rss, pairs.data(), pairs.size() / 2);
    collect(false);
    return;
  }
  send(at, d, rss, pairs);
}

// Interval k_ of this rank (> 0) to rank 0.
void IntervalStatsCollector::send(int64_t at, uint64_t records, double rss,
                                  const std::vector<uint64_t>& pairs) {
  std::vector<uint64_t> w = {static_cast<uint64_t>(at), records, 0, pairs.size() / 2};
  std::memcpy(&w[2], &rss, sizeof rss);
  w.insert(w.end(), pairs.begin(), pairs.end());
  FrameHeader fh;
  fh.channel = kStatsChannel;
  fh.from = base_;
  fh.to = 0;
  fh.time = k_;
  fh.bytes = w.size() * 8;
  std::vector<char> frame(sizeof fh + fh.bytes);
  std::memcpy(frame.data(), &fh, sizeof fh);
  std::memcpy(frame.data() + sizeof fh, w.data(), fh.bytes);
  tr_->send(0, std::move(frame));
}

RssSampler::RssSampler(int64_t every_ns)
    : every_(every_ns), page_mb_(static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0)) {
  if (every_ > 0) fd_ = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
}

RssSampler::~RssSampler() {
  if (fd_ >= 0) ::close(fd_);
}

double RssSampler::read() const {
  char buf[128];
  const ssize_t n = fd_ >= 0 ? ::pread(fd_, buf, sizeof buf - 1, 0) : -1;
  if (n <= 0) return rss_mb();
  buf[n] = 0;
  char* end = nullptr;
  (void)std::strtoll(buf, &end, 10);  // size; the resident pages follow
  return static_cast<double>(std::strtoll(end, nullptr, 10)) * page_mb_;
}

void RssSampler::sample(int64_t now, std::vector<std::pair<double, double>>& timeline) {
  if (every_ <= 0 || now < next_) return;
  if (timeline.size() >= 65536) {  // keep every other sample, sample half as often
    size_t kept = 0;
    for (size_t i = 0; i < timeline.size(); i += 2) timeline[kept++] = timeline[i];
    timeline.resize(kept);
    every_ *= 2;
  }
  timeline.emplace_back(static_cast<double>(now) * 1e-9, read());
  next_ = (now / every_ + 1) * every_;  // the next slot of the grid
}

}  // namespace snailtrail::flow
