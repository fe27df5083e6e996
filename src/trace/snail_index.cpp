#include "trace/snail_index.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "trace/little_endian.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

using namespace detail::snail;
using le::get;
using le::put;

// Index payload layout (docs/FORMATS.md, "Block index"); all little-endian.
constexpr size_t kFactsSize = 56;
constexpr size_t kBlockEntrySize = 32;
constexpr size_t kWorkerEntrySize = 32;
constexpr uint32_t kFactWorkerSorted = 1;
constexpr uint32_t kFactCorrelatorsIncreasing = 2;
// Set only when correlators do not increase (so files whose correlators do are written
// as before): they are still unique (TraceFacts::correlators_unique).
constexpr uint32_t kFactCorrelatorsReorderedUnique = 4;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

// The facts at the head of the index payload (docs/FORMATS.md, "Block index").
void decode_facts(const uint8_t* p, TraceFacts& f) {
  const uint32_t flags = get<uint32_t>(p + 12);
  f.worker_sorted = flags & kFactWorkerSorted;
  f.correlators_increasing = flags & kFactCorrelatorsIncreasing;
  f.first_ts = get<int64_t>(p + 16);
  f.last_ts = get<int64_t>(p + 24);
  f.events = get<uint64_t>(p + 32);
  f.max_delay = get<int64_t>(p + 40);
  f.correlators_unique = f.correlators_increasing || (flags & kFactCorrelatorsReorderedUnique);
  f.reordered_halves = get<uint64_t>(p + 48);  // 0 in files written before it was counted
}

// The index's worker entries (sorted by id) and operator ids, from byte `q` of the payload.
bool decode_workers_and_operators(const uint8_t* p, size_t q, TraceFacts& f, std::string& problem) {
  const uint32_t n_workers = get<uint32_t>(p + 4), n_ops = get<uint32_t>(p + 8);
  for (uint32_t i = 0; i < n_workers; ++i, q += kWorkerEntrySize) {
    TraceFacts::Worker w;
    w.id = get<uint32_t>(p + q);
    w.first_ts = get<int64_t>(p + q + 8);
    w.last_ts = get<int64_t>(p + q + 16);
    w.events = get<uint64_t>(p + q + 24);
    if (!f.workers.empty() && f.workers.back().id >= w.id) {
      problem = "index workers out of order";
      return false;
    }
    f.workers.push_back(w);
  }
  for (uint32_t i = 0; i < n_ops; ++i, q += 4) f.operators.push_back(get<uint32_t>(p + q));
  return true;
}

}  // namespace

const TraceFacts::Worker* TraceFacts::worker(uint32_t id) const {
  auto it = std::lower_bound(workers.begin(), workers.end(), id,
                             [](const Worker& w, uint32_t x) { return w.id < x; });
  return it != workers.end() && it->id == id ? &*it : nullptr;
}

void FactsBuilder::add(const Event& e) {
  ++f_.events;
  f_.first_ts = std::min(f_.first_ts, e.ts);
  f_.last_ts = std::max(f_.last_ts, e.ts);
  auto [wit, fresh] = workers_.try_emplace(e.worker);
  TraceFacts::Worker& w = wit->second;
  if (fresh) w.id = e.worker;
  if (!fresh && e.ts < w.last_ts) f_.worker_sorted = false;
  w.first_ts = std::min(w.first_ts, e.ts);
  w.last_ts = std::max(w.last_ts, e.ts);
  ++w.events;
  if (e.has(kHasOperator)) {
    auto pos = std::lower_bound(ops_.begin(), ops_.end(), e.op);
    if (pos == ops_.end() || *pos != e.op) ops_.insert(pos, e.op);
  }
  if (!e.is_message() || !e.has(kHasCorrelator) || !e.has(kHasRemote)) return;
  const bool send = e.kind == EventKind::send;
  const uint32_t sender = send ? e.worker : e.remote, receiver = send ? e.remote : e.worker;
  const uint64_t pair = uint64_t{sender} << 32 | receiver;
  auto& sides = history_[pair];
  bool reordered = false;
  if (maybe_repeated(send ? sides.first : sides.second, e.correlator, reordered))
    f_.correlators_unique = false;
  if (reordered) {
    f_.correlators_increasing = false;
    ++f_.reordered_halves;
  }
  // Match the halves (exact while correlators_unique holds).
  const PairKey key{pair, e.correlator};
  auto it = open_.find(key);
  const int side = send ? 1 : -1;
  if (it != open_.end() && it->second.second == -side) {
    const int64_t d = e.ts - it->second.first;
    const int64_t delay = d < 0 ? -d : d;
    f_.max_delay = std::max(f_.max_delay, delay);
    open_.erase(it);
  } else if (it == open_.end()) {
    open_.emplace(key, std::make_pair(e.ts, side));
  }
}

bool FactsBuilder::maybe_repeated(SideHistory& h, int64_t c, bool& reordered) {
  bool repeated = false;
  if (c <= h.max) {
    reordered = true;
    // Newer than every forgotten correlator: a repeat would be among the recent ones.
    repeated = c <= h.forgotten || std::find(h.recent.begin(), h.recent.end(), c) != h.recent.end();
  }
  h.max = std::max(h.max, c);
  if (h.recent.size() < TraceFacts::kReorderWindow) {
    h.recent.push_back(c);
  } else {
    h.forgotten = std::max(h.forgotten, h.recent[h.next]);
    h.recent[h.next] = c;
    h.next = (h.next + 1) % TraceFacts::kReorderWindow;
  }
  return repeated;
}

TraceFacts FactsBuilder::finish() {
  f_.workers.clear();
  for (const auto& [id, w] : workers_) f_.workers.push_back(w);
  std::sort(f_.workers.begin(), f_.workers.end(),
            [](const TraceFacts::Worker& a, const TraceFacts::Worker& b) { return a.id < b.id; });
  f_.operators = ops_;
  return f_;
}

std::string encode_snail_index(const SnailIndex& index) {
  const TraceFacts& f = index.facts;
  std::string out;
  put<uint32_t>(out, static_cast<uint32_t>(index.blocks.size()));
  put<uint32_t>(out, static_cast<uint32_t>(f.workers.size()));
  put<uint32_t>(out, static_cast<uint32_t>(f.operators.size()));
  put<uint32_t>(
      out, (f.worker_sorted ? kFactWorkerSorted : 0) |
               (f.correlators_increasing ? kFactCorrelatorsIncreasing : 0) |
               (!f.correlators_increasing && f.correlators_unique ? kFactCorrelatorsReorderedUnique
                                                                  : 0));
  put<int64_t>(out, f.first_ts);
  put<int64_t>(out, f.last_ts);
  put<uint64_t>(out, f.events);
  put<int64_t>(out, f.max_delay);
  put<uint64_t>(out, f.reordered_halves);
  for (const SnailBlock& b : index.blocks) {
    put<uint64_t>(out, b.offset);
    put<uint32_t>(out, b.kind);
    put<uint32_t>(out, b.count);
    put<int64_t>(out, b.min_ts);
    put<int64_t>(out, b.max_ts);
  }
  for (const TraceFacts::Worker& w : f.workers) {
    put<uint32_t>(out, w.id);
    put<uint32_t>(out, 0);
    put<int64_t>(out, w.first_ts);
    put<int64_t>(out, w.last_ts);
    put<uint64_t>(out, w.events);
  }
  for (uint32_t op : f.operators) put<uint32_t>(out, op);
  if (f.operators.size() % 2) put<uint32_t>(out, 0);
  put<uint64_t>(out, fnv1a(reinterpret_cast<const uint8_t*>(out.data()), out.size()));
  return out;
}

SnailFile::SnailFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw TraceError(path, "cannot open", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw TraceError(path, "cannot read", "not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  names_.source = path;
  names_.format = TraceFormat::snail;
  try {
    if (size_ == 0) throw TraceError(path, "byte 0", "empty file (no .snail header)");
    if (size_ < kHeaderSize)
      throw TraceError(path, "byte 0",
                       "truncated header (" + std::to_string(size_) + " of " +
                           std::to_string(kHeaderSize) + " bytes)");
    uint8_t h[kHeaderSize];
    pread_exact(h, kHeaderSize, 0);
    if (std::memcmp(h, kMagic, sizeof(kMagic)) != 0)
      throw TraceError(path, "byte 0", "bad magic (not a .snail file; expected \"SNAILTRC\")");
    version_ = get<uint32_t>(h + 8);
    if (version_ != kVersion && version_ != kVersionNoIndex)
      throw TraceError(path, "byte 8",
                       "unsupported version " + std::to_string(version_) + " (expected 1 or 2)");
    if (get<uint32_t>(h + 12) != 0)
      throw TraceError(path, "byte 12", "reserved header field must be 0");
    if (version_ >= kVersion) {
      from_file_ = load_index(index_problem_);
      if (!from_file_)
        fmt::print(stderr,
                   "snailtrail: warning: {}: block index unusable ({}); rebuilt by a scan\n", path,
                   index_problem_);
    }
    if (!from_file_) scan();
    // Names: every metadata block, in file order.
    for (size_t i = 0; i < index_.blocks.size(); ++i) {
      const SnailBlock& b = index_.blocks[i];
      if (b.kind != kBlockMetadata) continue;
      uint8_t bh[kBlockHeaderSize];
      pread_exact(bh, kBlockHeaderSize, b.offset);
      const uint32_t stored = get<uint32_t>(bh + 12);
      buf_.resize(kBlockHeaderSize + stored);
      pread_exact(buf_.data(), buf_.size(), b.offset);
      detail::decode_snail_blocks(buf_, b.offset, path_, version_ >= kVersion, names_);
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

SnailFile::~SnailFile() {
  if (fd_ >= 0) ::close(fd_);
}

void SnailFile::pread_exact(void* dst, size_t n, uint64_t offset) const {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw TraceError(path_, "byte " + std::to_string(offset), std::strerror(errno));
    if (got == 0)
      throw TraceError(path_, "byte " + std::to_string(offset), "unexpected end of file");
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

// The index block's payload, found through the file's last 8 bytes; its size must match
// its counts and its checksum its bytes. `at` is the offset of the index block's header.
bool SnailFile::read_index_payload(std::string& problem, uint64_t& at,
                                   std::vector<uint8_t>& p) const {
  if (size_ < kHeaderSize + kBlockHeaderSize + 8) {
    problem = "no index block at the end of the file";
    return false;
  }
  pread_exact(&at, 8, size_ - 8);
  if (at < kHeaderSize || at > size_ - kBlockHeaderSize - 8) {
    problem = "the trailing index offset points outside the file (cut?)";
    return false;
  }
  uint8_t bh[kBlockHeaderSize];
  pread_exact(bh, kBlockHeaderSize, at);
  const uint32_t kind = get<uint32_t>(bh), codec = get<uint32_t>(bh + 4),
                 stored = get<uint32_t>(bh + 12);
  if (kind != kBlockIndex || codec != kCodecRaw || at + kBlockHeaderSize + stored != size_) {
    problem = "no index block where the trailing offset points (cut or appended to?)";
    return false;
  }
  p.resize(stored);
  pread_exact(p.data(), stored, at + kBlockHeaderSize);
  if (stored < kFactsSize + 16) {
    problem = "index block too short";
    return false;
  }
  const uint32_t n_blocks = get<uint32_t>(p.data()), n_workers = get<uint32_t>(p.data() + 4),
                 n_ops = get<uint32_t>(p.data() + 8);
  const uint64_t need = kFactsSize + uint64_t{n_blocks} * kBlockEntrySize +
                        uint64_t{n_workers} * kWorkerEntrySize + (uint64_t{n_ops} + 1) / 2 * 8 + 16;
  if (need != stored) {
    problem = "index block size does not match its counts";
    return false;
  }
  if (fnv1a(p.data(), stored - 16) != get<uint64_t>(p.data() + stored - 16)) {
    problem = "index checksum mismatch (corrupt)";
    return false;
  }
  return true;
}

// The index's block entries (from byte `q` of the payload, which they advance): they must
// tile the file up to the index at `at`, each naming the header that stands there.
bool SnailFile::read_block_entries(const uint8_t* p, size_t& q, uint64_t at, SnailIndex& idx,
                                   std::string& problem) const {
  const uint32_t n_blocks = get<uint32_t>(p);
  uint64_t expect = kHeaderSize, events = 0;
  for (uint32_t i = 0; i < n_blocks; ++i, q += kBlockEntrySize) {
    SnailBlock b;
    b.offset = get<uint64_t>(p + q);
    b.kind = get<uint32_t>(p + q + 8);
    b.count = get<uint32_t>(p + q + 12);
    b.min_ts = get<int64_t>(p + q + 16);
    b.max_ts = get<int64_t>(p + q + 24);
    if (b.offset != expect || b.offset > at - kBlockHeaderSize) {
      problem = "index entry " + std::to_string(i) + " does not start where the last block ends";
      return false;
    }
    uint8_t h[kBlockHeaderSize];
    pread_exact(h, kBlockHeaderSize, b.offset);
    const uint32_t hstored = get<uint32_t>(h + 12);
    if (get<uint32_t>(h) != b.kind || get<uint32_t>(h + 8) != b.count ||
        (b.kind != kBlockEvents && b.kind != kBlockMetadata && b.kind != kBlockProfile) ||
        hstored > at - b.offset) {
      problem = "index entry " + std::to_string(i) + " does not match the block at byte " +
                std::to_string(b.offset);
      return false;
    }
    expect = b.offset + kBlockHeaderSize + hstored;
    if (b.kind == kBlockEvents) events += b.count;
    idx.blocks.push_back(b);
  }
  if (expect != at || events != idx.facts.events) {
    problem = "index does not cover every block";
    return false;
  }
  return true;
}

bool SnailFile::load_index(std::string& problem) {
  uint64_t at = 0;
  std::vector<uint8_t> payload;
  if (!read_index_payload(problem, at, payload)) return false;
  const uint8_t* p = payload.data();
  SnailIndex idx;
  decode_facts(p, idx.facts);
  size_t q = kFactsSize;
  if (!read_block_entries(p, q, at, idx, problem)) return false;
  if (!decode_workers_and_operators(p, q, idx.facts, problem)) return false;
  index_ = std::move(idx);
  return true;
}

void SnailFile::scan() {
  index_ = SnailIndex{};
  FactsBuilder facts;
  uint64_t off = kHeaderSize;
  const uint64_t end = size_;
  while (off < end) {
    if (end - off < kBlockHeaderSize)
      throw TraceError(path_, "byte " + std::to_string(off),
                       "truncated block header (" + std::to_string(end - off) + " of " +
                           std::to_string(kBlockHeaderSize) + " bytes)");
    uint8_t h[kBlockHeaderSize];
    pread_exact(h, kBlockHeaderSize, off);
    const uint32_t kind = get<uint32_t>(h), count = get<uint32_t>(h + 8),
                   stored = get<uint32_t>(h + 12);
    if (stored > kMaxBlockBytes || stored > end - off - kBlockHeaderSize) {
      // A cut index block at the end (a file cut while its index was written, or an
      // index damaged in place): what precedes it is whole, and the index is rebuilt.
      if (kind == kBlockIndex && version_ >= kVersion) break;
      // Let the block decoder name the problem.
      buf_.resize(std::min<uint64_t>(end - off, kBlockHeaderSize));
      pread_exact(buf_.data(), buf_.size(), off);
      scratch_.events.clear();
      detail::decode_snail_blocks(buf_, off, path_, version_ >= kVersion, scratch_);
    }
    SnailBlock b{off, kind, count, INT64_MAX, INT64_MIN};
    if (kind == kBlockEvents) {
      buf_.resize(kBlockHeaderSize + stored);
      pread_exact(buf_.data(), buf_.size(), off);
      scratch_.events.clear();
      detail::decode_snail_blocks(buf_, off, path_, version_ >= kVersion, scratch_);
      for (const Event& e : scratch_.events) {
        b.min_ts = std::min(b.min_ts, e.ts);
        b.max_ts = std::max(b.max_ts, e.ts);
      }
      facts.add(scratch_.events.data(), scratch_.events.size());
      index_.blocks.push_back(b);
    } else if (kind == kBlockMetadata || (kind == kBlockProfile && version_ >= kVersion)) {
      index_.blocks.push_back(b);
    } else if (kind == kBlockIndex && version_ >= kVersion) {
      // a stored index (unusable, or we would not scan): skipped
    } else {
      buf_.resize(kBlockHeaderSize + stored);
      pread_exact(buf_.data(), buf_.size(), off);
      detail::decode_snail_blocks(buf_, off, path_, version_ >= kVersion, scratch_);
    }
    off += kBlockHeaderSize + stored;
  }
  index_.facts = facts.finish();
}

void SnailFile::read_block(size_t i, BigVector<Event>& out) {
  const SnailBlock& b = index_.blocks.at(i);
  uint8_t h[kBlockHeaderSize];
  pread_exact(h, kBlockHeaderSize, b.offset);
  const uint32_t stored = get<uint32_t>(h + 12);
  if (stored > kMaxBlockBytes || stored > size_ - b.offset - kBlockHeaderSize)
    throw TraceError(path_, "byte " + std::to_string(b.offset), "block extends beyond the file");
  buf_.resize(kBlockHeaderSize + stored);
  pread_exact(buf_.data(), buf_.size(), b.offset);
  bytes_read_ += buf_.size();
  scratch_.events.swap(out);
  scratch_.events.clear();
  detail::decode_snail_blocks(buf_, b.offset, path_, version_ >= kVersion, scratch_);
  scratch_.events.swap(out);
  if (out.size() != b.count)
    throw TraceError(path_, "byte " + std::to_string(b.offset),
                     "block holds " + std::to_string(out.size()) + " events, the index says " +
                         std::to_string(b.count));
  for (const Event& e : out)
    if (e.ts < b.min_ts || e.ts > b.max_ts)
      throw TraceError(path_, "byte " + std::to_string(b.offset),
                       "an event at " + std::to_string(e.ts) +
                           " ns lies outside the block's time range in the index [" +
                           std::to_string(b.min_ts) + ", " + std::to_string(b.max_ts) +
                           "]: the index is wrong; `snailtrail convert` rewrites it");
}

std::vector<size_t> SnailFile::blocks_overlapping(int64_t from, int64_t to) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < index_.blocks.size(); ++i) {
    const SnailBlock& b = index_.blocks[i];
    if (b.kind == kBlockEvents && b.count > 0 && b.max_ts >= from && b.min_ts <= to)
      out.push_back(i);
  }
  return out;
}

}  // namespace snailtrail
