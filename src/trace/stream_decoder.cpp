#include "trace/stream_decoder.hpp"

#include <algorithm>
#include <cstring>

#include "trace/little_endian.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

using namespace detail::snail;
using le::load_u32;
// A buffer that held a large block is given back once it is mostly empty.
constexpr size_t kKeepCapacity = size_t{1} << 20;
// A JSONL "line" longer than this without a newline is not a trace line: it is
// skipped (up to the next newline) rather than buffered without bound.
constexpr size_t kMaxLine = size_t{1} << 20;

}  // namespace

void StreamDecoder::note(const std::string& what) {
  if (stats_.first_error.empty()) stats_.first_error = what;
}

void StreamDecoder::merge(Trace& from, Trace& out) {
  stats_.events += from.events.size();
  if (out.events.empty())
    out.events.swap(from.events);  // a block decoded into an empty batch: not copied
  else
    out.events.insert(out.events.end(), from.events.begin(), from.events.end());
  for (auto& [id, name] : from.worker_names)
    out.worker_names[id] = std::move(name), ++stats_.metadata;
  for (auto& [id, name] : from.operator_names)
    out.operator_names[id] = std::move(name), ++stats_.metadata;
}

size_t StreamDecoder::unit_bytes() const {
  if (format_ == Format::jsonl) return 0;
  if (format_ == Format::unknown || !header_seen_) return kHeaderSize;
  if (pending_.size() < kBlockHeaderSize) return kBlockHeaderSize;
  return kBlockHeaderSize + load_u32(pending_.data() + 12);
}

bool StreamDecoder::feed(std::span<const uint8_t> bytes, Trace& out) {
  more_ = false;
  if (broken()) return false;
  stats_.bytes += bytes.size();
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
  if (format_ == Format::unknown) {
    const size_t n = std::min(pending_.size(), sizeof(kMagic));
    if (std::memcmp(pending_.data(), kMagic, n) != 0)
      format_ = Format::jsonl;
    else if (n == sizeof(kMagic))
      format_ = Format::snail;
    else
      return true;  // a prefix of the magic: wait for more
  }
  if (format_ == Format::jsonl)
    decode_jsonl(out, false);
  else
    decode_snail(out);
  return !broken();
}

void StreamDecoder::finish(Trace& out) {
  if (broken()) return;
  if (format_ == Format::jsonl || (format_ == Format::unknown && !pending_.empty())) {
    format_ = Format::jsonl;
    decode_jsonl(out, true);
  } else if (format_ == Format::snail && !pending_.empty()) {
    ++stats_.truncated;
    note(source_ + ": byte " + std::to_string(consumed_) + ": stream ends inside a block (" +
         std::to_string(pending_.size()) + " bytes)");
    consumed_ += pending_.size();
    pending_.clear();
  }
}

void StreamDecoder::decode_jsonl(Trace& out, bool at_end) {
  // Only whole lines are decoded; the rest waits for more bytes.
  auto nl = std::find(pending_.rbegin(), pending_.rend(), uint8_t{'\n'});
  size_t complete = nl == pending_.rend() ? 0 : static_cast<size_t>(pending_.rend() - nl);
  if (complete == 0 && !at_end) {
    if (pending_.size() > kMaxLine) {
      ++stats_.bad_lines;
      note(source_ + ": line " + std::to_string(line_) + ": longer than " +
           std::to_string(kMaxLine) + " bytes; skipped");
      consumed_ += pending_.size();
      pending_.clear();
      pending_.shrink_to_fit();
    }
    return;
  }
  if (at_end) complete = pending_.size();
  if (complete == 0) return;
  const std::string_view text(reinterpret_cast<const char*>(pending_.data()), complete);
  LenientStats lenient;
  Trace part = parse_jsonl_lenient(text, source_, lenient, line_);
  // At the end of the stream, a last line without newline that does not parse was cut off.
  const bool cut = at_end && !text.empty() && text.back() != '\n' && lenient.bad_lines > 0 &&
                   text.find('\n') == std::string_view::npos;
  if (cut) {
    ++stats_.truncated;
    note(source_ + ": line " + std::to_string(line_) + ": stream ends inside this line");
  } else {
    stats_.bad_lines += lenient.bad_lines;
    if (lenient.bad_lines) note(lenient.first_error);
  }
  merge(part, out);
  line_ += static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
  consumed_ += complete;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(complete));
  if (pending_.capacity() > kKeepCapacity && pending_.size() < kKeepCapacity / 4)
    pending_.shrink_to_fit();
}

void StreamDecoder::decode_snail(Trace& out) {
  size_t pos = 0;
  auto fail = [&](const std::string& what) {
    broken_reason_ = source_ + ": byte " + std::to_string(consumed_ + pos) + ": " + what;
    note(broken_reason_);
  };
  if (!header_seen_) {
    if (pending_.size() < kHeaderSize) return;
    const uint32_t version = load_u32(pending_.data() + 8);
    if (version != kVersion && version != kVersionNoIndex)
      return fail("unsupported .snail version");
    if (load_u32(pending_.data() + 12) != 0) return fail("reserved header field is not 0");
    header_seen_ = true;
    pos = kHeaderSize;
  }
  std::vector<uint8_t> image;
  const uint64_t events_before = stats_.events;
  while (pending_.size() - pos >= kBlockHeaderSize) {
    if (stats_.events - events_before >= output_limit_) {
      more_ = true;  // the rest waits for the next call
      break;
    }
    const uint8_t* h = pending_.data() + pos;
    const uint32_t kind = load_u32(h), codec = load_u32(h + 4), count = load_u32(h + 8),
                   stored = load_u32(h + 12);
    // Without a sane block header the framing is lost: stop.
    if (kind != kBlockEvents && kind != kBlockMetadata && kind != kBlockIndex &&
        kind != kBlockProfile)
      return fail("unknown block kind " + std::to_string(kind));
    if (codec != kCodecRaw && codec != kCodecZstd)
      return fail("unknown codec " + std::to_string(codec));
    // Oversized blocks are refused before their payload is buffered (a bomb, or not ours).
    if (count > kMaxBlockEvents || stored > kMaxBlockBytes)
      return fail("block of " + std::to_string(count) + " records, " + std::to_string(stored) +
                  " bytes exceeds the limits (" + std::to_string(kMaxBlockEvents) + " records, " +
                  std::to_string(kMaxBlockBytes) + " bytes per block; docs/FORMATS.md)");
    if (kind == kBlockEvents && codec == kCodecRaw && uint64_t{count} * kRecordSize != stored)
      return fail("raw block of " + std::to_string(count) + " records holds " +
                  std::to_string(stored) + " bytes");
    if (pending_.size() - pos < kBlockHeaderSize + stored) break;  // wait for the payload
    if (kind == kBlockProfile) {  // stack samples are not analyzed live: skipped
      pos += kBlockHeaderSize + stored;
      continue;
    }
    // Decode the block as a one-block .snail image with the full validation of the reader.
    image.assign(kMagic, kMagic + sizeof(kMagic));
    image.resize(kHeaderSize, 0);
    image[8] = static_cast<uint8_t>(kVersion);
    image.insert(image.end(), h, h + kBlockHeaderSize + stored);
    try {
      Trace part = parse_snail(image, source_);
      merge(part, out);
    } catch (const TraceError& e) {
      ++stats_.bad_blocks;
      note(source_ + ": byte " + std::to_string(consumed_ + pos) + ": block skipped: " + e.what());
    }
    pos += kBlockHeaderSize + stored;
  }
  consumed_ += pos;
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pos));
  if (pending_.capacity() > kKeepCapacity && pending_.size() < kKeepCapacity / 4)
    pending_.shrink_to_fit();
}

}  // namespace snailtrail
