#include "flame/profile_io.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "trace/event.hpp"
#include "trace/little_endian.hpp"

namespace snailtrail::flame {
namespace {

using le::get;
using le::put;

// Entries (little-endian), packed back to back:
//   frame  (kind 0): u8 0, u8[3] 0, u32 id, u32 len, name[len]          12 + len bytes
//   sample (kind 1): u8 1, u8 sample kind (0 on-CPU, 1 off-CPU), u8 activity (0xff none),
//                    u8 0, u32 worker, i64 ts, u64 count, u32 depth, u32 frame[depth]
//                                                                       28 + 4 depth bytes
//   period (kind 2): u8 2, u8[3] 0, u32 0, i64 period_ns               16 bytes
constexpr size_t kFrameHeader = 12, kSampleHeader = 28, kPeriodSize = 16;
constexpr uint32_t kMaxDepth = 4096;

}  // namespace

void samples_to_trace(const SampleSet& set, Trace& trace, size_t max_block_bytes) {
  trace.profile_blocks.clear();
  Trace::ProfileBlock block;
  auto emit = [&](const std::string& entry) {
    if (entry.size() > max_block_bytes)
      throw std::invalid_argument("profile entry larger than a block");
    if (block.bytes.size() + entry.size() > max_block_bytes) {
      trace.profile_blocks.push_back(std::move(block));
      block = {};
    }
    block.bytes += entry;
    ++block.count;
  };
  std::string e;
  if (set.period_ns > 0) {
    e.clear();
    put<uint8_t>(e, 2);
    e.append(7, '\0');
    put<int64_t>(e, set.period_ns);
    emit(e);
  }
  for (uint32_t f = 0; f < set.frame_count(); ++f) {
    const std::string& name = set.frame(f);
    e.clear();
    put<uint8_t>(e, 0);
    e.append(3, '\0');
    put<uint32_t>(e, f);
    put<uint32_t>(e, static_cast<uint32_t>(name.size()));
    e += name;
    emit(e);
  }
  for (const StackSample& s : set.samples) {
    auto [b, end] = set.stack(s.stack);
    uint32_t depth = static_cast<uint32_t>(std::min<ptrdiff_t>(end - b, kMaxDepth));
    e.clear();
    put<uint8_t>(e, 1);
    put<uint8_t>(e, static_cast<uint8_t>(s.kind));
    put<uint8_t>(e, s.activity);
    put<uint8_t>(e, 0);
    put<uint32_t>(e, s.worker);
    put<int64_t>(e, s.ts);
    put<uint64_t>(e, s.count);
    put<uint32_t>(e, depth);
    for (uint32_t k = 0; k < depth; ++k) put<uint32_t>(e, b[k]);
    emit(e);
  }
  if (block.count > 0) trace.profile_blocks.push_back(std::move(block));
}

void samples_from_trace(const Trace& trace, SampleSet& set) {
  if (trace.profile_blocks.empty())
    throw std::invalid_argument(trace.source +
                                ": the trace holds no profile (record one with `run --profile`)");
  std::vector<uint32_t> frame_of;  // file id -> interned id
  std::vector<uint32_t> frames;
  for (const Trace::ProfileBlock& blk : trace.profile_blocks) {
    const char* p = blk.bytes.data();
    const size_t n = blk.bytes.size();
    size_t pos = 0;
    const uint64_t base = blk.offset + 16;  // payload offset in the file
    auto fail = [&](const std::string& what) {
      throw TraceError(trace.source, "byte " + std::to_string(base + pos), "profile: " + what);
    };
    for (uint32_t i = 0; i < blk.count; ++i) {
      if (pos >= n) fail("block ends before its entry " + std::to_string(i));
      const uint8_t kind = static_cast<uint8_t>(p[pos]);
      const size_t need = kind == 0 ? kFrameHeader : kind == 1 ? kSampleHeader : kPeriodSize;
      if (n - pos < need) fail("entry " + std::to_string(i) + " is truncated");
      if (kind == 0) {
        if (p[pos + 1] || p[pos + 2] || p[pos + 3]) fail("frame entry padding must be 0");
        const uint32_t id = get<uint32_t>(p + pos + 4), len = get<uint32_t>(p + pos + 8);
        if (id != frame_of.size())
          fail("frame id " + std::to_string(id) + " out of order (expected " +
               std::to_string(frame_of.size()) + ")");
        if (len > n - pos - kFrameHeader) fail("frame name runs past the end of the block");
        frame_of.push_back(set.intern_frame(std::string_view(p + pos + kFrameHeader, len)));
        pos += kFrameHeader + len;
      } else if (kind == 1) {
        const uint8_t sk = static_cast<uint8_t>(p[pos + 1]), act = static_cast<uint8_t>(p[pos + 2]);
        if (sk > 1) fail("sample kind " + std::to_string(sk) + " (expected 0 on-CPU or 1 off-CPU)");
        if (act != 0xff && act >= kActivityTypeCount)
          fail("sample activity " + std::to_string(act));
        if (p[pos + 3]) fail("sample entry padding must be 0");
        const uint32_t depth = get<uint32_t>(p + pos + 24);
        if (depth > kMaxDepth) fail("stack depth " + std::to_string(depth) + " over 4096");
        if (size_t{depth} * 4 > n - pos - kSampleHeader)
          fail("stack runs past the end of the block");
        StackSample s;
        s.kind = static_cast<SampleKind>(sk);
        s.activity = act;
        s.worker = get<uint32_t>(p + pos + 4);
        s.thread = s.worker;
        s.ts = get<int64_t>(p + pos + 8);
        s.count = get<uint64_t>(p + pos + 16);
        frames.clear();
        for (uint32_t k = 0; k < depth; ++k) {
          const uint32_t f = get<uint32_t>(p + pos + kSampleHeader + 4 * size_t{k});
          if (f >= frame_of.size()) fail("sample names undefined frame " + std::to_string(f));
          frames.push_back(frame_of[f]);
        }
        s.stack = set.intern_stack(frames);
        set.samples.push_back(s);
        pos += kSampleHeader + 4 * size_t{depth};
      } else if (kind == 2) {
        for (size_t k = 1; k < 8; ++k)
          if (p[pos + k]) fail("period entry padding must be 0");
        const int64_t period = get<int64_t>(p + pos + 8);
        if (period <= 0) fail("period must be positive");
        set.period_ns = period;
        pos += kPeriodSize;
      } else {
        fail("unknown entry kind " + std::to_string(kind) +
             " (expected 0 frame, 1 sample, 2 period)");
      }
    }
    if (pos != n) fail(std::to_string(n - pos) + " unused bytes at the end of the profile block");
  }
  for (auto& [id, name] : trace.worker_names) set.thread_names.try_emplace(id, name);
  for (auto& [id, name] : trace.operator_names) set.operator_names.try_emplace(id, name);
}

}  // namespace snailtrail::flame
