// The block index of a .snail file (docs/FORMATS.md, "Block index") and a reader that
// decodes a file block by block, so that a trace of any length is read in bounded memory
// and a time range reads only the blocks it needs.
//
// Version 2 files end with an index block: per block its byte offset, kind, record count
// and time range, plus facts about the whole trace that a windowed reader needs before
// it has seen the events (worker ids and their time ranges, operator ids, whether each
// worker's events are in time order, whether correlators repeat, the largest message
// delay). Version 1 files, and files whose index is cut or corrupt, get the same index
// rebuilt by one scan that decodes one block at a time (a warning says why).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/trace.hpp"

namespace snailtrail {

// What a streaming reader must know about the whole trace before reading it.
struct TraceFacts {
  int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
  uint64_t events = 0;
  struct Worker {
    uint32_t id = 0;
    int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
    uint64_t events = 0;
  };
  std::vector<Worker> workers;      // ascending id
  std::vector<uint32_t> operators;  // ascending
  // Every worker's events come in time order in the file.
  bool worker_sorted = true;
  // No (sender, receiver, correlator) is used by two sends, nor by two receives: per
  // directed pair, send correlators strictly increase in file order, and so do receive
  // correlators (a sufficient check, in O(pairs) memory).
  bool correlators_increasing = true;
  // No (sender, receiver, correlator) is used by two sends nor by two receives, proven in
  // bounded memory where correlators are reordered: each pair and side remembers its last
  // kReorderWindow correlators, and a correlator below the largest one seen must be newer
  // than every one it forgot (else the proof fails: false). Implied by
  // correlators_increasing. Streaming needs this one.
  bool correlators_unique = true;
  static constexpr uint32_t kReorderWindow = 256;
  // Message halves whose correlator came below the largest one of their pair and side
  // (0 when correlators increase).
  uint64_t reordered_halves = 0;
  // Largest |receive time - send time| of a matched message (0 if none).
  int64_t max_delay = 0;

  const Worker* worker(uint32_t id) const;
};

// Computes TraceFacts from events in file order. Memory: O(workers + pairs + messages in
// flight + unmatched halves).
class FactsBuilder {
 public:
  void add(const Event& e);
  void add(const Event* e, size_t n) {
    for (size_t i = 0; i < n; ++i) add(e[i]);
  }
  TraceFacts finish();

 private:
  struct PairKey {
    uint64_t pair;  // sender << 32 | receiver
    int64_t correlator;
    bool operator==(const PairKey&) const = default;
  };
  struct PairHash {
    size_t operator()(const PairKey& k) const {
      return static_cast<size_t>((k.pair * 0x9e3779b97f4a7c15ULL) ^
                                 (static_cast<uint64_t>(k.correlator) * 0xc2b2ae3d27d4eb4fULL));
    }
  };
  TraceFacts f_;
  std::unordered_map<uint32_t, TraceFacts::Worker> workers_;
  std::unordered_map<uint32_t, int64_t> last_ts_;  // per worker, for the order check
  std::vector<uint32_t> ops_;
  // One side (sends or receives) of one directed pair: the largest correlator seen, the
  // largest one forgotten, and the last kReorderWindow ones (a ring, filled lazily).
  struct SideHistory {
    int64_t max = INT64_MIN, forgotten = INT64_MIN;
    std::vector<int64_t> recent;
    uint32_t next = 0;
  };
  // Whether `c` may be a correlator used before on this side; records it.
  static bool maybe_repeated(SideHistory& h, int64_t c, bool& reordered);
  std::unordered_map<uint64_t, std::pair<SideHistory, SideHistory>> history_;  // send, recv
  std::unordered_map<PairKey, std::pair<int64_t, int>, PairHash> open_;  // ts, +1 send / -1 recv
};

struct SnailBlock {
  uint64_t offset = 0;             // of the block header
  uint32_t kind = 0;               // 1 events, 2 metadata
  uint32_t count = 0;              // records (events) or entries (metadata)
  int64_t min_ts = 0, max_ts = 0;  // events only (an empty event block: INT64_MAX, INT64_MIN)
};

struct SnailIndex {
  std::vector<SnailBlock> blocks;  // every event and metadata block, in file order
  TraceFacts facts;
};

// The index block's payload for `index` (without the block header and the trailing offset).
std::string encode_snail_index(const SnailIndex& index);

// A .snail file opened for block-wise reading (pread; no mapping of the whole file).
class SnailFile {
 public:
  // Opens the file and loads or rebuilds its index. A stored index that fails a check is
  // reported on stderr (a warning naming why) and rebuilt by a scan, as is the missing
  // index of a version 1 file (silently); problems with the file itself throw TraceError.
  explicit SnailFile(const std::string& path);
  ~SnailFile();
  SnailFile(const SnailFile&) = delete;
  SnailFile& operator=(const SnailFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  const SnailIndex& index() const { return index_; }
  // True if the index was read from the file (false: rebuilt by a scan).
  bool index_from_file() const { return from_file_; }
  // Why the stored index was not used (empty if it was, or for a version 1 file).
  const std::string& index_problem() const { return index_problem_; }
  // Names from the metadata blocks.
  const Trace& names() const { return names_; }
  uint64_t file_size() const { return size_; }
  // Bytes of event blocks read so far by read_block (a measure of what a seek saved).
  uint64_t bytes_read() const { return bytes_read_; }

  // Decodes event block `i` of index().blocks into `out` (replacing its events), with the
  // full validation of parse_snail. Throws TraceError if the block's events do not match
  // the time range the index claims for it.
  void read_block(size_t i, BigVector<Event>& out);

  // Indexes of event blocks that may hold events in [from, to] (inclusive), in file order.
  std::vector<size_t> blocks_overlapping(int64_t from, int64_t to) const;

 private:
  void pread_exact(void* dst, size_t n, uint64_t offset) const;
  bool load_index(std::string& problem);
  bool read_index_payload(std::string& problem, uint64_t& at, std::vector<uint8_t>& p) const;
  bool read_block_entries(const uint8_t* p, size_t& q, uint64_t at, SnailIndex& idx,
                          std::string& problem) const;
  void scan();

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  SnailIndex index_;
  Trace names_;
  bool from_file_ = false;
  std::string index_problem_;
  uint64_t bytes_read_ = 0;
  std::vector<uint8_t> buf_;
  Trace scratch_;
};

}  // namespace snailtrail
