// Reading the binary .snail format (docs/FORMATS.md). Writing is in snail_write.cpp.
#include <simdjson.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "trace/little_endian.hpp"
#include "trace/parallel.hpp"
#include "trace/snail_blocks.hpp"
#include "trace/snail_index.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

using namespace detail::snail;
using namespace snail_blocks;
using le::load_u32;
constexpr size_t kScratchRecords = 4096;  // streaming zstd output buffer: 160 KiB
// Decompressed/compressed ratio up to which a zstd frame's declared size is trusted enough to
// allocate it up front; beyond that we stream (memory then grows only with real output).
constexpr size_t kMaxTrustedRatio = 64;
// Larger blocks are streamed too, so the scratch buffer never doubles the memory of a trace.
constexpr size_t kMaxOneShotBytes = size_t{16} << 20;
// The largest zstd window accepted when streaming: 16 MiB, above any block's decoded size.
constexpr int kMaxWindowLog = 24;
static_assert(size_t{kMaxBlockEvents} * kRecordSize <= (size_t{1} << kMaxWindowLog));

struct DctxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// True if the record breaks any rule; a branch-light check for the hot validation loop.
// detail::check_event gives the description once a bad record is found.
inline bool record_is_bad(const Event& e) {
  const auto activity = static_cast<unsigned>(e.activity);
  const auto kind = static_cast<unsigned>(e.kind);
  const unsigned flags = e.flags;
  const bool message = kind >= 2;
  const bool communication = activity == 12 || activity == 13;
  bool bad = activity >= kActivityTypeCount;
  bad |= kind >= kEventKindCount;
  bad |= (flags & ~unsigned{kAllEventFlags}) != 0;
  bad |= message != communication;
  bad |= !(flags & kHasOperator) && e.op != 0;
  bad |= !(flags & kHasCorrelator) && e.correlator != 0;
  bad |= !(flags & kHasRemote) && e.remote != 0;
  bad |= !(flags & kHasRecords) && e.records != 0;
  bad |= e.reserved != 0;
  return bad;
}
static_assert(static_cast<int>(ActivityType::data_message) == 12 &&
              static_cast<int>(ActivityType::control_message) == 13);
static_assert(static_cast<int>(EventKind::send) == 2 && static_cast<int>(EventKind::recv) == 3);

std::string describe_record(const Event& e) {
  return std::string(detail::check_event(e, true)) +
         " (activity=" + std::to_string(static_cast<unsigned>(e.activity)) +
         ", kind=" + std::to_string(static_cast<unsigned>(e.kind)) +
         ", flags=" + std::to_string(e.flags) + ")";
}

class SnailReader {
 public:
  // `base`: file offset of bytes[0] (error messages name offsets in the file).
  SnailReader(std::span<const uint8_t> bytes, const std::string& source, size_t base = 0)
      : p_(bytes.data()), n_(bytes.size()), source_(source), base_(base) {}

  // The bytes are a private read-only mapping of a file: the pages of each event block are
  // given back once decoded, so the file and its events are not resident at once (the
  // read's peak memory: docs/PERFORMANCE.md, issue 39 fifth round). Touched again (an error
  // message), they are read back from the file.
  void give_back_file_pages() { give_back_ = true; }

  // Decodes the blocks in the bytes (no file header: they start at a block header) into
  // `trace`: events appended, names merged. Index blocks are skipped.
  void run_blocks(Trace& trace, bool index_allowed) { read_blocks(0, trace, index_allowed); }

  Trace run() {
    Trace trace;
    trace.source = source_;
    trace.format = TraceFormat::snail;
    if (n_ == 0) fail(0, "empty file (no .snail header)");
    if (n_ < kHeaderSize) {
      fail(0, "truncated header (" + std::to_string(n_) + " of " + std::to_string(kHeaderSize) +
                  " bytes)");
    }
    if (std::memcmp(p_, kMagic, sizeof(kMagic)) != 0)
      fail(0, "bad magic (not a .snail file; expected \"SNAILTRC\")");
    version_ = load_u32(p_ + 8);
    if (version_ != kVersion && version_ != kVersionNoIndex)
      fail(8, "unsupported version " + std::to_string(version_) + " (expected 1 or 2)");
    if (const uint32_t reserved = load_u32(p_ + 12); reserved != 0)
      fail(12, "reserved header field must be 0, got " + std::to_string(reserved));

    if (read_raw_in_parallel(trace)) return trace;
    detail::reserve_prefaulted(trace.events, prescan_event_count());
    read_blocks(kHeaderSize, trace, version_ >= kVersion);
    return trace;
  }

 private:
  void read_blocks(size_t off, Trace& trace, bool index_allowed) {
    while (off < n_) {
      if (n_ - off < kBlockHeaderSize) {
        fail(off, "truncated block header (" + std::to_string(n_ - off) + " of " +
                      std::to_string(kBlockHeaderSize) + " bytes)");
      }
      const BlockHeader h = load_block_header(p_ + off);
      const size_t payload = off + kBlockHeaderSize;
      if (h.stored_size > kMaxBlockBytes) {
        fail(off, "block payload of " + std::to_string(h.stored_size) +
                      " bytes exceeds the limit of " + std::to_string(kMaxBlockBytes) +
                      " bytes per block");
      }
      if (h.stored_size > n_ - payload) {
        fail(off, "block payload of " + std::to_string(h.stored_size) +
                      " bytes extends beyond the end of the file (" + std::to_string(n_ - payload) +
                      " bytes left)");
      }
      switch (h.kind) {
        case kBlockEvents:
          read_events(off, h, trace);
          consumed(payload, h.stored_size);
          break;
        case kBlockMetadata:
          read_metadata(off, h, trace);
          break;
        case kBlockIndex:
          // The index only speeds up seeking (snail_index.hpp); whole reads ignore it.
          if (index_allowed && h.codec == kCodecRaw) break;
          fail(off, index_allowed ? "index block must use codec 0 (raw)"
                                  : "index block (kind 3) in a version 1 file");
        case kBlockProfile:
          read_profile(off, h, trace, index_allowed);
          break;
        default:
          fail(off, "unknown block kind " + std::to_string(h.kind) +
                        " (expected 1 = events, 2 = metadata, 3 = index or 4 = profile)");
      }
      off = payload + h.stored_size;
    }
  }

 private:
  // Profile blocks are kept as bytes (src/flame/profile_io.hpp decodes them).
  void read_profile(size_t off, const BlockHeader& h, Trace& trace, bool version2) {
    if (!version2) fail(off, "profile block (kind 4) in a version 1 file");
    if (h.codec != kCodecRaw)
      fail(off, "profile block must use codec 0 (raw), got " + std::to_string(h.codec));
    const char* b = reinterpret_cast<const char*>(p_ + off + kBlockHeaderSize);
    trace.profile_blocks.push_back({off, h.count, std::string(b, h.stored_size)});
  }

  // Bytes [off, off + len) are decoded: with give_back_, the whole pages inside them leave
  // the resident set (MADV_DONTNEED keeps a file mapping's contents: it only drops the
  // process's page table entries; the page cache stays).
  void consumed(size_t off, size_t len) const {
    if (!give_back_) return;
    static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto at = reinterpret_cast<uintptr_t>(p_ + off);
    const uintptr_t begin = (at + page - 1) & ~(page - 1), end = (at + len) & ~(page - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }

  [[noreturn]] void fail(size_t offset, const std::string& what) const {
    throw TraceError(source_, "byte " + std::to_string(base_ + offset), what);
  }

  // The common case of a large well-formed file whose event blocks are all raw: size the
  // vector once and copy + validate blocks on several threads. Returns false (having
  // changed nothing) when the file does not qualify; the sequential pass then reads it
  // and reports any problem. Results and errors are the same either way.
  bool read_raw_in_parallel(Trace& trace) {
    struct RawBlock {
      size_t payload;  // byte offset of the first record
      uint32_t count;
      size_t first;  // index of its first event in the trace
    };
    std::vector<RawBlock> blocks;
    std::vector<std::pair<size_t, BlockHeader>> metadata;
    size_t total = 0;
    size_t off = kHeaderSize;
    while (off < n_) {
      if (n_ - off < kBlockHeaderSize) return false;
      const BlockHeader h = load_block_header(p_ + off);
      const size_t payload = off + kBlockHeaderSize;
      if (h.stored_size > n_ - payload || h.stored_size > kMaxBlockBytes) return false;
      if (h.kind == kBlockEvents) {
        if (h.codec != kCodecRaw || h.count > kMaxBlockEvents ||
            uint64_t{h.count} * kRecordSize != h.stored_size)
          return false;
        blocks.push_back({payload, h.count, total});
        total += h.count;
      } else if (h.kind == kBlockMetadata || h.kind == kBlockProfile) {
        metadata.emplace_back(off, h);
      } else if (h.kind == kBlockIndex && h.codec == kCodecRaw && load_u32(p_ + 8) >= kVersion) {
        // skipped
      } else {
        return false;
      }
      off = payload + h.stored_size;
    }
    constexpr size_t kParallelMin = size_t{1} << 20;
    const unsigned threads = std::min(4u, std::max(1u, std::thread::hardware_concurrency()));
    if (total < kParallelMin || threads < 2) return false;

    trace.events.resize(total);
    Event* out = trace.events.data();
    // Each thread takes every threads-th block and remembers its first bad record.
    std::vector<std::pair<size_t, size_t>> first_bad(threads, {SIZE_MAX, 0});  // (block, i)
    // The census for the PAG builder, counted while each record is in cache anyway.
    std::vector<CensusBuilder> census(threads);
    auto work = [&](unsigned t) {
      for (size_t b = t; b < blocks.size(); b += threads) {
        const RawBlock& rb = blocks[b];
        // Mapping the block's pages in one call is cheaper than a fault per page.
        detail::prefault(out + rb.first, size_t{rb.count} * kRecordSize);
        std::memcpy(out + rb.first, p_ + rb.payload, size_t{rb.count} * kRecordSize);
        consumed(rb.payload, size_t{rb.count} * kRecordSize);
        for (size_t i = 0; i < rb.count; ++i) {
          if (record_is_bad(out[rb.first + i])) [[unlikely]] {
            if (b < first_bad[t].first) first_bad[t] = {b, i};
            break;
          }
          census[t].add(out[rb.first + i]);
        }
      }
    };
    run_parallel(threads, work);
    std::pair<size_t, size_t> bad = {SIZE_MAX, 0};
    for (const auto& fb : first_bad) bad = std::min(bad, fb);
    if (bad.first != SIZE_MAX) {
      const RawBlock& rb = blocks[bad.first];
      const Event& e = out[rb.first + bad.second];
      trace.events.clear();
      fail(rb.payload + bad.second * kRecordSize,
           "event record " + std::to_string(rb.first + bad.second) + ": " + describe_record(e));
    }
    for (const auto& [moff, h] : metadata) {
      if (h.kind == kBlockProfile)
        read_profile(moff, h, trace, version_ >= kVersion);
      else
        read_metadata(moff, h, trace);
    }
    for (unsigned t = 1; t < threads; ++t) census[0].merge(census[t]);
    trace.census = census[0].finish();
    return true;
  }

  // Total events in well-formed event blocks, to size the vector once. Stops quietly at the
  // first structural problem; the main pass reports it.
  size_t prescan_event_count() const {
    size_t total = 0;
    size_t off = kHeaderSize;
    while (n_ - off >= kBlockHeaderSize) {
      const BlockHeader h = load_block_header(p_ + off);
      const size_t payload = off + kBlockHeaderSize;
      if (h.stored_size > n_ - payload) break;
      // Only raw blocks: their size is backed by actual bytes in the file.
      if (h.kind == kBlockEvents && h.codec == kCodecRaw &&
          uint64_t{h.count} * kRecordSize == h.stored_size)
        total += h.count;
      off = payload + h.stored_size;
    }
    return total;
  }

  void read_events(size_t off, const BlockHeader& h, Trace& trace) {
    const size_t payload = off + kBlockHeaderSize;
    if (h.codec != kCodecRaw && h.codec != kCodecZstd) {
      fail(off, "unknown codec " + std::to_string(h.codec) + " (expected 0 = raw or 1 = zstd)");
    }
    if (h.count > kMaxBlockEvents) {
      fail(off, "event block claims " + std::to_string(h.count) + " records (at most " +
                    std::to_string(kMaxBlockEvents) + " per block)");
    }
    const size_t expected = size_t{h.count} * kRecordSize;
    if (h.codec == kCodecRaw) {
      if (h.stored_size != expected) {
        fail(off, "raw event block of " + std::to_string(h.count) + " records must hold " +
                      std::to_string(expected) + " bytes, not " + std::to_string(h.stored_size));
      }
      append_records(p_ + payload, h.count, trace.events, [&](size_t i, const std::string& what) {
        fail(payload + i * kRecordSize, what);
      });
    } else {
      read_zstd_events(off, h, trace.events);
    }
  }

  // Copies `count` records from `src` (any alignment) to the end of `events`, validating each
  // one on the way: a single pass over memory. `bad(i, message)` reports record i.
  template <typename OnBad>
  static void append_records(const uint8_t* src, size_t count, BigVector<Event>& events,
                             OnBad&& bad) {
    if (events.capacity() - events.size() < count) {
      detail::reserve_prefaulted(events, std::max(events.size() + count, events.capacity() * 2));
    }
    for (size_t i = 0; i < count; ++i) {
      Event e;
      std::memcpy(&e, src + i * kRecordSize, kRecordSize);
      if (record_is_bad(e)) [[unlikely]] {
        bad(i, "event record " + std::to_string(events.size()) + ": " + describe_record(e));
      }
      events.push_back(e);
    }
  }

  // Decodes one zstd block: one shot when the frame's declared size is plausible, else
  // streamed through a small buffer, so memory grows only with data that really
  // decompresses (a forged header cannot make us allocate 2^25 records up front).
  void read_zstd_events(size_t off, const BlockHeader& h, BigVector<Event>& events) {
    const size_t expected = size_t{h.count} * kRecordSize;
    const void* src = p_ + off + kBlockHeaderSize;
    const unsigned long long declared = ZSTD_getFrameContentSize(src, h.stored_size);
    if (declared == ZSTD_CONTENTSIZE_ERROR) fail(off, "invalid zstd frame header");
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != expected) {
      fail(off, "zstd frame decompresses to " + std::to_string(declared) + " bytes, expected " +
                    std::to_string(expected) + " (" + std::to_string(h.count) + " records)");
    }
    prepare_zstd_context(off);
    if (declared == expected && expected <= size_t{h.stored_size} * kMaxTrustedRatio &&
        expected <= kMaxOneShotBytes)
      read_zstd_one_shot(off, h, src, events);
    else
      read_zstd_streamed(off, h, src, events);
  }

  // The decompression context, made once per reader and reset for each frame.
  void prepare_zstd_context(size_t off) {
    if (!dctx_) {
      dctx_.reset(ZSTD_createDCtx());
      if (!dctx_) fail(off, "cannot allocate a zstd decompression context");
      // A frame may ask for a window of up to 2 GiB; no block needs more than its decoded
      // size (at most 10 MiB), so larger windows are refused instead of allocated.
      ZSTD_DCtx_setParameter(dctx_.get(), ZSTD_d_windowLogMax, kMaxWindowLog);
    } else {
      ZSTD_DCtx_reset(dctx_.get(), ZSTD_reset_session_only);
    }
  }

  // Fast path: one-shot decompression into a scratch buffer reused across blocks (the
  // usual block of 2^16 records is 2.5 MiB), then one copy+validate pass.
  void read_zstd_one_shot(size_t off, const BlockHeader& h, const void* src,
                          BigVector<Event>& events) {
    const size_t expected = size_t{h.count} * kRecordSize;
    const size_t frame = ZSTD_findFrameCompressedSize(src, h.stored_size);
    if (ZSTD_isError(frame)) {
      fail(off, std::string("corrupt zstd data (") + ZSTD_getErrorName(frame) + ")");
    }
    if (frame != h.stored_size) {
      fail(off,
           std::to_string(h.stored_size - frame) + " bytes of trailing data after the zstd frame");
    }
    if (scratch_.size() < expected) scratch_.resize(expected);
    const size_t got =
        ZSTD_decompressDCtx(dctx_.get(), scratch_.data(), expected, src, h.stored_size);
    if (ZSTD_isError(got)) {
      fail(off, std::string("corrupt zstd data (") + ZSTD_getErrorName(got) + ")");
    }
    if (got != expected) {
      fail(off, "zstd frame decompresses to " + std::to_string(got) + " bytes, expected " +
                    std::to_string(expected));
    }
    append_records(scratch_.data(), h.count, events, [&](size_t i, const std::string& what) {
      fail(off, what + " (index " + std::to_string(i) + " in zstd block)");
    });
  }

  // Streaming: records are appended as whole ones come out of the frame; the block's count
  // bounds them, and the frame must end exactly at the block's end.
  void read_zstd_streamed(size_t off, const BlockHeader& h, const void* src,
                          BigVector<Event>& events) {
    const size_t expected = size_t{h.count} * kRecordSize;
    const size_t first = events.size();
    if (scratch_.size() < kScratchRecords * kRecordSize)
      scratch_.resize(kScratchRecords * kRecordSize);
    if (h.count > 0 && events.capacity() - first < h.count) {
      // Trust the declared count only as far as the compressed size can plausibly back it.
      const size_t plausible = std::min<size_t>(h.count, size_t{h.stored_size} * 16 + 1024);
      detail::reserve_prefaulted(events, std::max(first + plausible, events.capacity() * 2));
    }
    ZSTD_inBuffer in{src, h.stored_size, 0};
    size_t have = 0;  // decompressed bytes in scratch_ not yet turned into records
    for (;;) {
      ZSTD_outBuffer out{scratch_.data(), kScratchRecords * kRecordSize, have};
      const size_t in_before = in.pos;
      const size_t ret = ZSTD_decompressStream(dctx_.get(), &out, &in);
      if (ZSTD_isError(ret)) {
        fail(off, std::string("corrupt zstd data (") + ZSTD_getErrorName(ret) + ")");
      }
      const bool progress = in.pos != in_before || out.pos != have;
      const size_t whole = out.pos / kRecordSize;
      const size_t done = events.size() - first;
      if (whole > h.count - done) {
        fail(off, "zstd frame holds more than the block's " + std::to_string(h.count) + " records");
      }
      append_records(scratch_.data(), whole, events, [&](size_t i, const std::string& what) {
        fail(off, what + " (index " + std::to_string(done + i) + " in zstd block)");
      });
      have = out.pos - whole * kRecordSize;
      if (have) std::memmove(scratch_.data(), scratch_.data() + whole * kRecordSize, have);
      if (ret == 0) break;  // frame complete
      if (!progress) fail(off, "truncated zstd frame");
    }
    if (in.pos != in.size) {
      fail(off, std::to_string(in.size - in.pos) + " bytes of trailing data after the zstd frame");
    }
    const size_t got = (events.size() - first) * kRecordSize + have;
    if (got != expected) {
      fail(off, "zstd frame decompresses to " + std::to_string(got) + " bytes, expected " +
                    std::to_string(expected) + " (" + std::to_string(h.count) + " records)");
    }
  }

  void read_metadata(size_t off, const BlockHeader& h, Trace& trace) {
    if (h.codec != kCodecRaw) {
      fail(off, "metadata block must use codec 0 (raw), got " + std::to_string(h.codec));
    }
    size_t pos = off + kBlockHeaderSize;
    const size_t end = pos + h.stored_size;
    for (uint32_t i = 0; i < h.count; ++i) {
      if (end - pos < kMetaEntryHeader) {
        fail(pos, "metadata entry " + std::to_string(i) + " is truncated (block has " +
                      std::to_string(h.count) + " entries)");
      }
      const uint8_t kind = p_[pos];
      if (kind > 1) {
        fail(pos, "unknown metadata entry kind " + std::to_string(kind) +
                      " (expected 0 = worker or 1 = operator)");
      }
      if (p_[pos + 1] != 0 || p_[pos + 2] != 0 || p_[pos + 3] != 0)
        fail(pos + 1, "metadata entry padding bytes must be 0");
      const uint32_t id = load_u32(p_ + pos + 4);
      const uint32_t len = load_u32(p_ + pos + 8);
      if (len > end - pos - kMetaEntryHeader) {
        fail(pos, "metadata name of " + std::to_string(len) +
                      " bytes extends beyond the end of the block");
      }
      const char* name = reinterpret_cast<const char*>(p_ + pos + kMetaEntryHeader);
      if (!simdjson::validate_utf8(name, len)) fail(pos, "metadata name is not valid UTF-8");
      auto& names = kind == 0 ? trace.worker_names : trace.operator_names;
      names[id] = std::string(name, len);
      pos += kMetaEntryHeader + len;
    }
    if (pos != end) {
      fail(pos, std::to_string(end - pos) + " unused bytes at the end of the metadata block");
    }
  }

  const uint8_t* p_;
  size_t n_;
  const std::string& source_;
  size_t base_ = 0;
  uint32_t version_ = 0;
  bool give_back_ = false;
  std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx_;
  std::vector<uint8_t> scratch_;
};

}  // namespace

void detail::decode_snail_blocks(std::span<const uint8_t> bytes, size_t base,
                                 const std::string& source, bool index_allowed, Trace& into) {
  SnailReader(bytes, source, base).run_blocks(into, index_allowed);
}

Trace parse_snail(std::span<const uint8_t> bytes, const std::string& source) {
  return SnailReader(bytes, source).run();
}

Trace detail::parse_snail_file_mapping(std::span<const uint8_t> bytes, const std::string& source) {
  SnailReader reader(bytes, source);
  reader.give_back_file_pages();
  return reader.run();
}

}  // namespace snailtrail
