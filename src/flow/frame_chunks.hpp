// Frames of any size over messages of a bounded size (issue 35; docs/RUNTIME.md "Several
// processes"). The communication thread sends each destination's byte stream of frames
// (channel.hpp's FrameHeader + bytes, back to back) as messages of at most a chunk's size,
// cut anywhere, even inside a header: MPI counts are ints, and one turn may hold more than
// 2 GiB. Messages between two processes arrive in order (MPI's non-overtaking rule), so
// the receiver appends each one to that sender's stream and takes out the frames it
// completes. MPI-free, so that tests check it alone.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "flow/channel.hpp"

namespace snailtrail::flow {

// Message sizes and the bound of what a process may hold for one destination. Tests make
// them tiny, so that every turn is split and senders wait.
struct ChunkLimits {
  size_t chunk_bytes = size_t{64} << 20;  // largest message (1 ... INT_MAX)
  // Bytes queued for a destination or in flight to it before a sending worker waits. A
  // frame alone larger than this is still sent, once nothing else is queued.
  size_t out_bytes = size_t{256} << 20;
};

// The size of piece `i` of a buffer of `total` bytes cut into chunks of `chunk` bytes.
inline size_t chunk_size(size_t total, size_t chunk, size_t i) {
  return std::min(chunk, total - i * chunk);
}
inline size_t chunk_count(size_t total, size_t chunk) {
  return (total + chunk - 1) / chunk;
}

inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 40;

// One sender's stream: feed() the messages in order, get every frame they complete.
class FrameReassembler {
 public:
  // Calls on_frame(data, length) for each frame completed by p[0, n), in order.
  template <class F>
  void feed(const char* p, size_t n, F&& on_frame) {
    while (n > 0) {
      if (pending_.empty() && n >= sizeof(FrameHeader)) {
        const size_t len = frame_length(p);
        if (len <= n) {  // whole in this message: no copy here
          on_frame(p, len);
          p += len;
          n -= len;
          continue;
        }
      }
      // A frame cut by the message's end: gather its header, then its bytes.
      const size_t want = pending_.size() < sizeof(FrameHeader)
                              ? sizeof(FrameHeader) - pending_.size()
                              : frame_length(pending_.data()) - pending_.size();
      const size_t take = std::min(want, n);
      pending_.insert(pending_.end(), p, p + take);
      p += take;
      n -= take;
      if (pending_.size() >= sizeof(FrameHeader) &&
          pending_.size() == frame_length(pending_.data())) {
        on_frame(pending_.data(), pending_.size());
        pending_.clear();
      }
    }
  }
  // Bytes of a frame begun and not completed (0 between frames).
  size_t partial() const { return pending_.size(); }

 private:
  static size_t frame_length(const char* header) {
    FrameHeader h;
    std::memcpy(&h, header, sizeof h);
    // No batch comes near 1 TiB: a larger count is a stream out of step (a lost or
    // reordered message), an error now rather than a wait for bytes that never come.
    if (h.bytes > kMaxFrameBytes)
      throw std::runtime_error("transport: corrupt frame header (" + std::to_string(h.bytes) +
                               " bytes of records)");
    return sizeof h + static_cast<size_t>(h.bytes);
  }
  std::vector<char> pending_;
};

}  // namespace snailtrail::flow
