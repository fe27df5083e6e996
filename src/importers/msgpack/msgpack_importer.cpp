// Original SnailTrail MessagePack logs (docs/IMPORTERS.md "SnailTrail MessagePack").
//
// A small decoder of our own instead of msgpack-cxx's unpacker: a record is 7 integers, each
// a marker byte and 0-8 big-endian bytes, so the decoder is a switch over nine integer
// markers. The unpacker would allocate a zone per object and accept every other MessagePack
// type only for us to reject it; this reads straight into Events, names the byte offset of
// every problem, and tells a record cut off by the end of the file from a malformed one.
// (The tests and the fuzzer check it against msgpack-cxx's packer and unpacker.)
#include "importers/msgpack/msgpack_importer.hpp"
#include "importers/common/path.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <memory>
#include <optional>

namespace snailtrail::importers::msgpack_log {
namespace {

// Original codes (logformat ActivityType, 1-based) -> ours.
constexpr std::array<ActivityType, 14> kActivityOf = {
    ActivityType::unknown,  // 0: not a code
    ActivityType::input,
    ActivityType::buffer,
    ActivityType::scheduling,
    ActivityType::processing,
    ActivityType::barrier_processing,
    ActivityType::serialization,
    ActivityType::deserialization,
    ActivityType::fault_tolerance,
    ActivityType::control_message,
    ActivityType::data_message,
    ActivityType::unknown,
    ActivityType::waiting,
    ActivityType::busy_waiting,
};
constexpr int kBogusEvent = 5;  // logformat EventType::Bogus: never a real event

enum class Status { ok, truncated, error };

struct Decoder {
  const uint8_t* begin;
  const uint8_t* p;
  const uint8_t* end;
  std::string error;  // when Status::error
  size_t error_at = 0;

  // One integer. Values are kept as __int128 so that all of int64 and uint64 fit.
  Status integer(__int128& v) {
    if (p == end) return Status::truncated;
    const uint8_t m = *p;
    int bytes = 0;
    bool is_signed = false;
    if (m <= 0x7f) {
      v = m;
      ++p;
      return Status::ok;
    }
    if (m >= 0xe0) {
      v = static_cast<int8_t>(m);
      ++p;
      return Status::ok;
    }
    switch (m) {
      case 0xcc:
        bytes = 1;
        break;
      case 0xcd:
        bytes = 2;
        break;
      case 0xce:
        bytes = 4;
        break;
      case 0xcf:
        bytes = 8;
        break;
      case 0xd0:
        bytes = 1, is_signed = true;
        break;
      case 0xd1:
        bytes = 2, is_signed = true;
        break;
      case 0xd2:
        bytes = 4, is_signed = true;
        break;
      case 0xd3:
        bytes = 8, is_signed = true;
        break;
      default:
        error_at = static_cast<size_t>(p - begin);
        error = "expected a MessagePack integer, found marker byte 0x" + hex(m);
        return Status::error;
    }
    if (end - p < 1 + bytes) return Status::truncated;
    uint64_t u = 0;
    for (int i = 1; i <= bytes; ++i) u = (u << 8) | p[i];
    if (is_signed) {
      const int shift = 64 - 8 * bytes;  // sign-extend from `bytes` bytes
      v = static_cast<int64_t>(u << shift) >> shift;
    } else {
      v = u;
    }
    p += 1 + bytes;
    return Status::ok;
  }

  static std::string hex(uint8_t b) {
    const char* d = "0123456789abcdef";
    return {d[b >> 4], d[b & 15]};
  }
};

struct Counts {
  uint64_t bogus = 0, mismatched = 0, truncated = 0;
};

// The kinds of the counts: a log still being written ends inside a record.
constexpr DiagnosticKind kTruncatedRecord = cut_input("msgpack.truncated_record");
constexpr DiagnosticKind kBogusEvents = repaired("msgpack.bogus_events");
constexpr DiagnosticKind kMismatchedEventTypes = repaired("msgpack.mismatched_event_types");
constexpr std::array kMsgpackDiagnostics = {kTruncatedRecord, kBogusEvents, kMismatchedEventTypes};

// Decodes records until the end or the first problem. With `sniffing`, stops quietly.
// Returns the number of complete records; fills `events` if not null.
Status decode(std::span<const uint8_t> bytes, BigVector<Event>* events, Counts& counts, Decoder& d,
              uint64_t& records) {
  d = Decoder{bytes.data(), bytes.data(), bytes.data() + bytes.size(), {}, 0};
  records = 0;
  while (d.p < d.end) {
    const uint8_t* record = d.p;
    auto fail = [&](size_t at, std::string what) {
      d.error_at = at;
      d.error = std::move(what);
      return Status::error;
    };
    if (*d.p == 0x97) {
      ++d.p;  // a 7-element array around the record
    } else if ((*d.p & 0xf0) == 0x90 || *d.p == 0xdc || *d.p == 0xdd) {
      return fail(static_cast<size_t>(d.p - d.begin), "a record array must have 7 elements");
    }
    std::array<__int128, 7> f{};
    std::array<size_t, 7> at{};
    for (int i = 0; i < 7; ++i) {
      at[i] = static_cast<size_t>(d.p - d.begin);
      const Status s = d.integer(f[i]);
      if (s == Status::truncated) {
        d.p = record;
        return Status::truncated;
      }
      if (s == Status::error) return s;
    }
    const auto where = [&](int i) { return at[i]; };
    if (f[0] < std::numeric_limits<int64_t>::min() || f[0] > std::numeric_limits<int64_t>::max())
      return fail(where(0), "timestamp out of the int64 range");
    if (f[1] < 0 || f[1] > UINT32_MAX) return fail(where(1), "local worker out of range");
    if (f[2] < 1 || f[2] > 13)
      return fail(where(2), "activity type " + std::to_string(static_cast<int64_t>(f[2])) +
                                " is not one of the original codes 1-13");
    if (f[3] < 1 || f[3] > kBogusEvent)
      return fail(where(3), "event type " + std::to_string(static_cast<int64_t>(f[3])) +
                                " is not one of the original codes 1-4");
    if (f[4] < std::numeric_limits<int64_t>::min() || f[4] > std::numeric_limits<uint64_t>::max())
      return fail(where(4), "correlator out of range");
    for (int i : {5, 6})
      if (f[i] < -1 || f[i] > UINT32_MAX)
        return fail(where(i), std::string(i == 5 ? "remote worker" : "operator") +
                                  " must be -1 (none) or in 0..2^32-1");
    ++records;
    if (!events) continue;
    if (f[3] == kBogusEvent) {
      ++counts.bogus;
      continue;
    }
    Event e;
    e.ts = static_cast<int64_t>(f[0]);
    e.worker = static_cast<uint32_t>(f[1]);
    e.activity = kActivityOf[static_cast<size_t>(f[2])];
    e.kind = static_cast<EventKind>(static_cast<int>(f[3]) - 1);  // 1 start .. 4 received
    if (e.is_message() != is_communication(e.activity)) {
      ++counts.mismatched;
      continue;
    }
    // The original writers store a u64 correlator as i64 (same bits); -1 is "none".
    const int64_t correlator = static_cast<int64_t>(static_cast<uint64_t>(f[4]));
    if (correlator != -1) {
      e.correlator = correlator;
      e.flags |= kHasCorrelator;
    }
    if (f[5] != -1) {
      e.remote = static_cast<uint32_t>(f[5]);
      e.flags |= kHasRemote;
    }
    if (f[6] != -1) {
      e.op = static_cast<uint32_t>(f[6]);
      e.flags |= kHasOperator;
    }
    events->push_back(e);
  }
  return Status::ok;
}

}  // namespace

namespace {

// Records as their bytes arrive: complete records are decoded at once, a record cut by
// the end of a piece waits (copied) for the next.
class MsgpackStream final : public StreamImporter {
 public:
  explicit MsgpackStream(const std::string& source) : source_(source) {}

  void feed(std::string_view bytes, Trace& out) override {
    if (!carry_.empty()) {
      // Complete the cut record (at most kMaxRecord bytes) from the new piece, then
      // decode the rest of the piece in place.
      const size_t held = carry_.size();
      carry_.append(bytes.substr(0, kMaxRecord));
      const std::string piece = std::move(carry_);
      carry_.clear();
      const size_t used = decode_piece(piece, out);
      if (used < held) return;  // still inside the record: all of it is carried again
      bytes.remove_prefix(used - held);
      carry_.clear();
    }
    decode_piece(bytes, out);
  }

  void finish(Trace&) override {
    // A log still being written ends inside a record: keep the complete ones.
    if (!carry_.empty()) counts_.truncated = 1;
    carry_.clear();
  }

  std::vector<std::pair<std::string, uint64_t>> diagnostics() const override {
    std::vector<std::pair<std::string, uint64_t>> d;
    if (counts_.truncated) d.emplace_back(kTruncatedRecord.name, 1);
    if (counts_.bogus) d.emplace_back(kBogusEvents.name, counts_.bogus);
    if (counts_.mismatched) d.emplace_back(kMismatchedEventTypes.name, counts_.mismatched);
    return d;
  }

 private:
  // Decodes the complete records of `piece`, carries the cut one; returns the bytes used.
  size_t decode_piece(std::string_view piece, Trace& out) {
    Decoder d{};
    uint64_t records = 0;
    const Status s = decode(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(piece.data()), piece.size()),
        &out.events, counts_, d, records);
    if (s == Status::error)
      throw TraceError(source_, "byte " + std::to_string(offset_ + d.error_at), d.error);
    const size_t used = static_cast<size_t>(d.p - d.begin);
    offset_ += used;
    if (s == Status::truncated) carry_.assign(piece.substr(used));
    return used;
  }

  static constexpr size_t kMaxRecord = 1 + 7 * 9;  // array marker, 7 integers of 9 bytes
  std::string source_;
  std::string carry_;    // the start of a record cut by the end of the last piece
  uint64_t offset_ = 0;  // of carry_ (or the next piece) in the whole stream
  Counts counts_;
};

}  // namespace

std::unique_ptr<StreamImporter> make_stream(const std::string& source) {
  return std::make_unique<MsgpackStream>(source);
}

Trace parse_log(std::span<const uint8_t> bytes, const std::string& source) {
  Trace trace;
  trace.source = source;
  trace.format = TraceFormat::snail;  // binary: locations are "record N"
  MsgpackStream stream(source);
  stream.feed(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), trace);
  stream.finish(trace);
  // Original logs are ordered by whoever wrote them (often by time across workers, but
  // converters wrote task by task); the PAG needs each worker's events in time order.
  auto& ev = trace.events;
  const bool in_time_order = std::is_sorted(
      ev.begin(), ev.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
  if (!in_time_order)
    std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
      return a.worker != b.worker ? a.worker < b.worker : a.ts < b.ts;
    });
  trace.import_diagnostics = stream.diagnostics();
  return trace;
}

const Importer& descriptor() {
  static const Importer d{
      .name = "snailtrail-msgpack",
      .description = "original SnailTrail MessagePack log",
      .sniff = sniff,
      .read = import,
      .stream = [](const std::string& source, const ImportOptions&)
          -> std::unique_ptr<StreamImporter> { return make_stream(source); },
      .window_reason = "snailtrail's own traces (dataflow runs, the simulator) are streams",
      .diagnostics = kMsgpackDiagnostics,
  };
  return d;
}

Trace import(const std::string& path, const ImportOptions&) {
  const std::string bytes = read_file_bytes(path);
  return parse_log(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
      path == "-" ? "<stdin>" : path);
}

int sniff(std::string_view path, std::string_view head) {
  const bool named = has_extension(path, ".msgpack") || has_extension(path, ".mpk");
  Counts counts;
  Decoder d{};
  uint64_t records = 0;
  const Status s =
      decode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(head.data()), head.size()),
             nullptr, counts, d, records);
  // The head may end inside a record; everything before must be valid.
  const bool valid = s != Status::error && records > 0;
  if (valid) return named ? 95 : 70;
  return named ? 30 : 0;
}

}  // namespace snailtrail::importers::msgpack_log
