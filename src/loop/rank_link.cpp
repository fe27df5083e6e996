#include "loop/rank_link.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace snailtrail::loop {
namespace {

constexpr char kMagic[4] = {'S', 'L', 'R', '1'};
constexpr uint64_t kLoopChannel = flow::kStageChannelBase;

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  template <class T>
  T get(const char* what) {
    if (s_.size() - off_ < sizeof(T))
      throw std::runtime_error(fmt::format(
          "autoscale: truncated rank report ({} bytes): {} at offset {}", s_.size(), what, off_));
    T v;
    std::memcpy(&v, s_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return v;
  }
  // A count of `items` that take at least `item_bytes` each: one beyond what the bytes
  // left can hold is corrupt.
  uint32_t count(const char* what, const char* items, size_t item_bytes) {
    const auto n = get<uint32_t>(what);
    if (n > left() / item_bytes)
      throw std::runtime_error(
          fmt::format("autoscale: rank report claims {} {} in {} bytes (offset {})", n, items,
                      left(), off_ + 4));  // + the magic before the reader's bytes
    return n;
  }
  size_t offset() const { return off_; }
  size_t left() const { return s_.size() - off_; }

 private:
  std::string_view s_;
  size_t off_ = 0;
};

}  // namespace

std::string encode_report(const RankReport& r) {
  std::string out;
  size_t n = kReportHeaderBytes;
  for (const auto& m : r.intervals)
    n += kReportIntervalBytes + m.instances.size() * kReportInstanceBytes;
  out.reserve(n);
  out.append(kMagic, 4);
  put<uint32_t>(out, r.rank);
  put<int64_t>(out, r.watermark_ns);
  put<uint32_t>(out, static_cast<uint32_t>(r.intervals.size()));
  for (const auto& m : r.intervals) {
    put<int64_t>(out, m.start_ns);
    put<int64_t>(out, m.end_ns);
    put<uint32_t>(out, static_cast<uint32_t>(m.instances.size()));
    for (const auto& x : m.instances) {
      put<uint32_t>(out, x.op);
      put<uint32_t>(out, static_cast<uint32_t>(std::strtoul(x.worker.c_str(), nullptr, 10)));
      put<double>(out, x.window_s);
      put<double>(out, x.useful_s);
      put<double>(out, x.records_in);
      put<double>(out, x.records_out);
    }
  }
  return out;
}

RankReport decode_report(std::string_view bytes) {
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0)
    throw std::runtime_error(fmt::format(
        "autoscale: not a rank report ({} bytes, bad magic at offset 0)", bytes.size()));
  Reader in(bytes.substr(4));
  RankReport r;
  r.rank = in.get<uint32_t>("rank");
  r.watermark_ns = in.get<int64_t>("watermark");
  r.intervals.resize(in.count("interval count", "intervals", kReportIntervalBytes));
  for (auto& m : r.intervals) {
    m.start_ns = in.get<int64_t>("interval start");
    m.end_ns = in.get<int64_t>("interval end");
    m.instances.resize(in.count("instance count", "instances", kReportInstanceBytes));
    for (auto& x : m.instances) {
      x.op = in.get<uint32_t>("op");
      const uint32_t w = in.get<uint32_t>("worker");
      x.worker = std::to_string(w);
      x.instance = w;
      x.window_s = in.get<double>("window");
      x.useful_s = in.get<double>("useful time");
      x.records_in = in.get<double>("records in");
      x.records_out = in.get<double>("records out");
    }
  }
  if (in.left() != 0)
    throw std::runtime_error(fmt::format("autoscale: {} bytes after the rank report (offset {})",
                                         in.left(), in.offset() + 4));
  return r;
}

RankLink transport_link(flow::Transport& t, uint32_t workers_per_rank) {
  RankLink l;
  l.rank = t.rank();
  l.procs = t.procs();
  l.first_worker = t.rank() * workers_per_rank;
  l.workers = workers_per_rank;
  if (l.rank > 0) {
    l.send = [tr = &t, from = l.first_worker](std::string&& m) {
      flow::FrameHeader h;
      h.channel = kLoopChannel;
      h.from = from;
      h.to = 0;
      h.bytes = m.size();
      std::vector<char> frame(sizeof h + m.size());
      std::memcpy(frame.data(), &h, sizeof h);
      std::memcpy(frame.data() + sizeof h, m.data(), m.size());
      tr->send(0, std::move(frame));
    };
  } else {
    l.receive = [box = t.inbox(kLoopChannel, 0)] {
      std::deque<std::vector<char>> frames;
      {
        std::lock_guard<std::mutex> lock(box->mu);
        frames.swap(box->frames);
      }
      std::vector<std::string> out;
      out.reserve(frames.size());
      for (const auto& f : frames)
        out.emplace_back(f.begin() + static_cast<std::ptrdiff_t>(sizeof(flow::FrameHeader)),
                         f.end());
      return out;
    };
  }
  return l;
}

}  // namespace snailtrail::loop
