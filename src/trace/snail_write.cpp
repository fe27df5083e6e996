// Writing the binary .snail format (docs/FORMATS.md): metadata, event blocks (raw or
// zstd), profile blocks and the block index. Reading is in snail.cpp.
#include <zstd.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "trace/little_endian.hpp"
#include "trace/snail_blocks.hpp"
#include "trace/snail_index.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

using namespace detail::snail;
using namespace snail_blocks;
using le::store_u32;

struct CctxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

// Appends the metadata block(s): entries sorted by id, workers first, split into blocks of
// at most kMaxBlockBytes.
void append_metadata(std::string& out, const Trace& trace) {
  std::vector<std::tuple<uint8_t, uint32_t, const std::string*>> sorted;
  sorted.reserve(trace.worker_names.size() + trace.operator_names.size());
  for (const auto& [id, name] : trace.worker_names) sorted.emplace_back(0, id, &name);
  for (const auto& [id, name] : trace.operator_names) sorted.emplace_back(1, id, &name);
  std::sort(sorted.begin(), sorted.end());
  std::string payload;
  uint32_t entries = 0;
  auto flush = [&] {
    if (entries == 0) return;
    append_block_header(out, kBlockMetadata, kCodecRaw, entries,
                        static_cast<uint32_t>(payload.size()));
    out.append(payload);
    payload.clear();
    entries = 0;
  };
  for (const auto& [kind, id, name] : sorted) {
    const size_t size = kMetaEntryHeader + name->size();
    if (size > kMaxBlockBytes)
      throw TraceError(trace.source, "metadata",
                       "a name of " + std::to_string(name->size()) +
                           " bytes is too long for .snail (a block holds at most " +
                           std::to_string(kMaxBlockBytes) + " bytes)");
    if (payload.size() + size > kMaxBlockBytes) flush();
    payload.push_back(static_cast<char>(kind));
    payload.append(3, '\0');
    store_u32(payload, id);
    store_u32(payload, static_cast<uint32_t>(name->size()));
    payload.append(*name);
    ++entries;
  }
  flush();
}

}  // namespace

struct detail::SnailEncoder::State {
  SnailWriteOptions options;
  std::string source;
  bool with_index = true, names_last = false;
  size_t per_block = 1;
  uint64_t written = 0;      // bytes appended so far (the file offset of the next byte)
  std::vector<Event> block;  // events of the block being filled, as given
  std::vector<Event> scratch;
  std::string compressed;
  std::unique_ptr<ZSTD_CCtx, CctxDeleter> cctx;
  SnailIndex index;
  FactsBuilder facts;
};

detail::SnailEncoder::SnailEncoder(const SnailWriteOptions& options, std::string source)
    : s_(std::make_unique<State>()) {
  s_->options = options;
  s_->source = std::move(source);
  s_->with_index = options.version >= kVersion;
  s_->per_block = std::clamp<uint32_t>(options.events_per_block, 1, kMaxBlockEvents);
  if (options.compress) {
    s_->cctx.reset(ZSTD_createCCtx());
    if (!s_->cctx) throw TraceError(s_->source, "zstd", "cannot allocate a compression context");
  }
}

detail::SnailEncoder::~SnailEncoder() = default;

void detail::SnailEncoder::append(std::string& out, std::string_view bytes) {
  out.append(bytes);
  s_->written += bytes.size();
}

// Index entries for the blocks appended to `out` from position `from` (file offset
// written - (out.size() - from)).
void detail::SnailEncoder::note_blocks(const std::string& out, size_t from) {
  uint64_t off = s_->written - (out.size() - from);
  for (size_t p = from; p < out.size();) {
    const BlockHeader h = load_block_header(reinterpret_cast<const uint8_t*>(out.data()) + p);
    s_->index.blocks.push_back(SnailBlock{off, h.kind, h.count, INT64_MAX, INT64_MIN});
    p += kBlockHeaderSize + h.stored_size;
    off += kBlockHeaderSize + h.stored_size;
  }
}

void detail::SnailEncoder::begin(std::string& out, const Trace& meta, bool names_last) {
  s_->names_last = names_last;
  std::string head(kMagic, sizeof(kMagic));
  store_u32(head, s_->with_index ? kVersion : kVersionNoIndex);
  if (!s_->with_index && !meta.profile_blocks.empty())
    throw TraceError(meta.source, "profile", "profile blocks need a version 2 file");
  store_u32(head, 0);
  append(out, head);
  if (!names_last) {
    const size_t from = out.size();
    append_metadata(out, meta);
    s_->written += out.size() - from;
    note_blocks(out, from);
  }
  for (const Trace::ProfileBlock& b : meta.profile_blocks) {
    if (b.bytes.size() > kMaxBlockBytes)
      throw TraceError(meta.source, "profile", "profile block over 16 MiB");
    const size_t from = out.size();
    append_block_header(out, kBlockProfile, kCodecRaw, b.count,
                        static_cast<uint32_t>(b.bytes.size()));
    out += b.bytes;
    s_->written += out.size() - from;
    note_blocks(out, from);
  }
}

void detail::SnailEncoder::add(std::string& out, const Event* events, size_t n) {
  while (n > 0) {
    const size_t take = std::min(n, s_->per_block - s_->block.size());
    s_->block.insert(s_->block.end(), events, events + take);
    events += take;
    n -= take;
    if (s_->block.size() == s_->per_block) flush_block(out);
  }
}

void detail::SnailEncoder::flush_block(std::string& out) {
  State& s = *s_;
  const size_t count = s.block.size();
  if (count == 0) return;
  const uint64_t first = events_;
  SnailBlock entry{s.written, kBlockEvents, static_cast<uint32_t>(count), INT64_MAX, INT64_MIN};
  for (const Event& e : s.block) {
    entry.min_ts = std::min(entry.min_ts, e.ts);
    entry.max_ts = std::max(entry.max_ts, e.ts);
    s.facts.add(e);
  }
  s.scratch = s.block;
  for (size_t i = 0; i < count; ++i) {
    Event& e = s.scratch[i];
    if (const char* problem = detail::check_event(e, false))
      throw TraceError(s.source, "record " + std::to_string(first + i), problem);
    // Values of absent optional fields are meaningless; the format requires zeros.
    if (!e.has(kHasOperator)) e.op = 0;
    if (!e.has(kHasCorrelator)) e.correlator = 0;
    if (!e.has(kHasRemote)) e.remote = 0;
    if (!e.has(kHasRecords)) e.records = 0;
    e.reserved = 0;
  }
  const size_t raw_size = count * kRecordSize;
  const size_t before = out.size();
  if (!s.options.compress) {
    append_block_header(out, kBlockEvents, kCodecRaw, static_cast<uint32_t>(count),
                        static_cast<uint32_t>(raw_size));
    out.append(reinterpret_cast<const char*>(s.scratch.data()), raw_size);
  } else {
    s.compressed.resize(ZSTD_compressBound(raw_size));
    const size_t size = ZSTD_compressCCtx(s.cctx.get(), s.compressed.data(), s.compressed.size(),
                                          s.scratch.data(), raw_size, s.options.compression_level);
    if (ZSTD_isError(size))
      throw TraceError(s.source, "zstd",
                       std::string("compression failed: ") + ZSTD_getErrorName(size));
    if (size > std::numeric_limits<uint32_t>::max())
      throw TraceError(s.source, "zstd", "compressed block too large");
    append_block_header(out, kBlockEvents, kCodecZstd, static_cast<uint32_t>(count),
                        static_cast<uint32_t>(size));
    out.append(s.compressed.data(), size);
  }
  s.written += out.size() - before;
  s.index.blocks.push_back(entry);
  events_ += count;
  s.block.clear();
}

void detail::SnailEncoder::finish(std::string& out, const Trace* meta) {
  flush_block(out);
  State& s = *s_;
  if (s.names_last && meta) {
    const size_t from = out.size();
    append_metadata(out, *meta);
    s.written += out.size() - from;
    note_blocks(out, from);
  }
  if (!s.with_index) return;
  s.index.facts = s.facts.finish();
  const std::string payload = encode_snail_index(s.index);
  if (payload.size() + 8 > kMaxBlockBytes) return;  // readers rebuild it by a scan
  const uint64_t at = s.written;
  const size_t before = out.size();
  append_block_header(out, kBlockIndex, kCodecRaw, static_cast<uint32_t>(s.index.blocks.size()),
                      static_cast<uint32_t>(payload.size() + 8));
  out.append(payload);
  le::put<uint64_t>(out, at);
  s.written += out.size() - before;
}

std::string to_snail(const Trace& trace, const SnailWriteOptions& options) {
  std::string out;
  detail::SnailEncoder enc(options, trace.source);
  enc.begin(out, trace, false);
  const size_t total = trace.events.size();
  if (!options.compress) {
    const size_t per_block = std::clamp<uint32_t>(options.events_per_block, 1, kMaxBlockEvents);
    out.reserve(out.size() + total * kRecordSize + (total / per_block + 1) * kBlockHeaderSize);
  }
  enc.add(out, trace.events.data(), total);
  enc.finish(out, nullptr);
  return out;
}

}  // namespace snailtrail
