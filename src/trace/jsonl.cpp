// JSONL reading (simdjson On-Demand, one document per line) and writing (docs/FORMATS.md).
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/json_text.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

namespace od = simdjson::ondemand;

static_assert(detail::kJsonPadding == simdjson::SIMDJSON_PADDING);

// Known keys of event and metadata lines. Values index LineFields arrays.
enum Key : uint8_t {
  kTs,
  kWorker,
  kActivity,
  kEvent,
  kOperator,
  kCorrelator,
  kRemote,
  kRecords,
  kMeta,
  kId,
  kName,
  kKeyCount,
  kOther = kKeyCount,
};

constexpr std::array<std::string_view, kKeyCount> kKeyNames = {
    "ts",     "worker",  "activity", "event", "operator", "correlator",
    "remote", "records", "meta",     "id",    "name"};

enum class ValueKind : uint8_t { signed_int, unsigned_int, string };
constexpr std::array<ValueKind, kKeyCount> kKeyKinds = {
    ValueKind::signed_int,   ValueKind::unsigned_int, ValueKind::string,
    ValueKind::string,       ValueKind::unsigned_int, ValueKind::signed_int,
    ValueKind::unsigned_int, ValueKind::unsigned_int, ValueKind::string,
    ValueKind::unsigned_int, ValueKind::string};

inline Key classify(std::string_view k) {
  switch (k.size()) {
    case 2:
      if (k == "ts") return kTs;
      if (k == "id") return kId;
      break;
    case 4:
      if (k == "meta") return kMeta;
      if (k == "name") return kName;
      break;
    case 5:
      if (k == "event") return kEvent;
      break;
    case 6:
      if (k == "worker") return kWorker;
      if (k == "remote") return kRemote;
      break;
    case 7:
      if (k == "records") return kRecords;
      break;
    case 8:
      if (k == "activity") return kActivity;
      if (k == "operator") return kOperator;
      break;
    case 10:
      if (k == "correlator") return kCorrelator;
      break;
    default:
      break;
  }
  return kOther;
}

// parse_activity / parse_event_kind without the linear search: (length, first letter) is
// unique among the names, leaving one comparison.
std::optional<ActivityType> lookup_activity(std::string_view s) {
  using A = ActivityType;
  if (s.empty()) return std::nullopt;
  A guess;
  switch (s.size() * 256 + static_cast<unsigned char>(s[0])) {
    case 10 * 256 + 'p':
      guess = A::processing;
      break;
    case 10 * 256 + 's':
      guess = A::scheduling;
      break;
    case 18 * 256 + 'b':
      guess = A::barrier_processing;
      break;
    case 6 * 256 + 'b':
      guess = A::buffer;
      break;
    case 13 * 256 + 's':
      guess = A::serialization;
      break;
    case 15 * 256 + 'd':
      guess = A::deserialization;
      break;
    case 5 * 256 + 'i':
      guess = A::input;
      break;
    case 2 * 256 + 'i':
      guess = A::io;
      break;
    case 15 * 256 + 'f':
      guess = A::fault_tolerance;
      break;
    case 7 * 256 + 'w':
      guess = A::waiting;
      break;
    case 12 * 256 + 'b':
      guess = A::busy_waiting;
      break;
    case 7 * 256 + 'u':
      guess = A::unknown;
      break;
    case 12 * 256 + 'd':
      guess = A::data_message;
      break;
    case 15 * 256 + 'c':
      guess = A::control_message;
      break;
    default:
      return std::nullopt;
  }
  if (name_of(guess) != s) return std::nullopt;
  return guess;
}

std::optional<EventKind> lookup_event_kind(std::string_view s) {
  if (s.empty()) return std::nullopt;
  EventKind guess;
  switch (s.size() * 256 + static_cast<unsigned char>(s[0])) {
    case 5 * 256 + 's':
      guess = EventKind::start;
      break;
    case 3 * 256 + 'e':
      guess = EventKind::end;
      break;
    case 4 * 256 + 's':
      guess = EventKind::send;
      break;
    case 4 * 256 + 'r':
      guess = EventKind::recv;
      break;
    default:
      return std::nullopt;
  }
  if (name_of(guess) != s) return std::nullopt;
  return guess;
}

enum class Slot : uint8_t { absent, ok, null, bad };

struct LineFields {
  std::array<Slot, kKeyCount> slot;
  std::array<uint64_t, kKeyCount> num;  // int64 bits for signed fields
  std::array<std::string_view, kKeyCount> str;
};

// A value from the input, quoted and shortened for an error message.
std::string quote_for_error(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out;
  if (s.size() > kMax) {
    append_json_string(out, s.substr(0, kMax), kJsonTrace);
    out.insert(out.size() - 1, "...");
  } else {
    append_json_string(out, s, kJsonTrace);
  }
  return out;
}

std::string range_message(Key k) {
  std::string msg = "field \"" + std::string(kKeyNames[k]) + "\" must ";
  switch (kKeyKinds[k]) {
    case ValueKind::signed_int:
      return msg + "be an integer in -9223372036854775808..9223372036854775807";
    case ValueKind::unsigned_int:
      return msg + "be an integer in 0..4294967295";
    case ValueKind::string:
      break;
  }
  return msg + "be a string";
}

// Errors of simdjson that mean "this value has another type or is out of range", as opposed
// to "this is not JSON at all".
inline bool is_type_error(simdjson::error_code e) {
  return e == simdjson::INCORRECT_TYPE || e == simdjson::NUMBER_OUT_OF_RANGE;
}

constexpr int kMaxIgnoredDepth = 128;

// True if `tok` (a raw token, possibly followed by whitespace) is a JSON number. simdjson
// reports integers beyond 64 bits as number errors although they are valid JSON.
bool is_json_number(std::string_view tok) {
  while (!tok.empty() &&
         (tok.back() == ' ' || tok.back() == '\t' || tok.back() == '\r' || tok.back() == '\n'))
    tok.remove_suffix(1);
  size_t i = 0;
  const size_t n = tok.size();
  auto digit = [&](size_t j) { return j < n && tok[j] >= '0' && tok[j] <= '9'; };
  if (i < n && tok[i] == '-') ++i;
  if (!digit(i)) return false;
  if (tok[i] == '0') {
    ++i;
  } else {
    while (digit(i)) ++i;
  }
  if (i < n && tok[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < n && (tok[i] == 'e' || tok[i] == 'E')) {
    ++i;
    if (i < n && (tok[i] == '+' || tok[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == n;
}

class JsonlReader {
 public:
  JsonlReader(const char* data, size_t len, const std::string& source,
              LenientStats* lenient = nullptr, uint64_t first_line = 1)
      : data_(data), len_(len), source_(source), line_(first_line - 1), lenient_(lenient) {}

  Trace run() {
    Trace trace;
    trace.source = source_;
    trace.format = TraceFormat::jsonl;
    const size_t guess = estimate_lines();
    detail::reserve_prefaulted(trace.events, guess);
    detail::reserve_prefaulted(trace.lines, guess);
    if (auto err = parser_.allocate(64 * 1024)) fail_json(err);

    size_t pos = 0;
    while (pos < len_) {
      ++line_;
      const char* begin = data_ + pos;
      const void* nl = std::memchr(begin, '\n', len_ - pos);
      const size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data_) : len_;
      const size_t line_len = end - pos;
      if (!is_blank(begin, line_len)) {
        if (!lenient_) {
          parse_line(begin, line_len, trace);
        } else {
          // A bad line is skipped and counted; a line adds its event only when it is
          // complete and valid, so nothing of it remains.
          try {
            parse_line(begin, line_len, trace);
          } catch (const TraceError& e) {
            if (lenient_->bad_lines++ == 0) lenient_->first_error = e.what();
          }
        }
      }
      pos = end + 1;
    }
    return trace;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(source_, "line " + std::to_string(line_), what);
  }
  [[noreturn]] void fail_json(simdjson::error_code e) const {
    fail(std::string("invalid JSON (") + simdjson::error_message(e) + ")");
  }

  // Events to reserve room for: the line count extrapolated from the first 64 KiB (plus 10%),
  // but never more than the input could hold (the shortest event line has 48 bytes), so
  // memory stays proportional to the input whatever its first lines look like.
  size_t estimate_lines() const {
    constexpr size_t kShortestEventLine = 48;
    const size_t most = len_ / kShortestEventLine + 16;
    const size_t sample = std::min<size_t>(len_, 64 * 1024);
    const size_t newlines = static_cast<size_t>(std::count(data_, data_ + sample, '\n')) + 1;
    if (sample == len_) return std::min(newlines, most);
    const double per_byte = static_cast<double>(newlines) / static_cast<double>(sample);
    const double guess = per_byte * 1.1 * static_cast<double>(len_) + 16;
    return guess < static_cast<double>(most) ? static_cast<size_t>(guess) : most;
  }

  static bool is_blank(const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const char c = p[i];
      if (c != ' ' && c != '\t' && c != '\r') return false;
    }
    return true;
  }

  // Fully walks a value we otherwise ignore, so malformed JSON is reported even there.
  // `depth`: the arrays and objects around `v` (0 for a key's value); a value may nest
  // kMaxIgnoredDepth of them (docs/FORMATS.md), empty or not.
  void validate_value(od::value v, int depth) {
    od::json_type type;
    if (auto err = v.type().get(type)) fail_json(err);
    if ((type == od::json_type::object || type == od::json_type::array) &&
        depth >= kMaxIgnoredDepth)
      fail("invalid JSON (values nested too deeply)");
    switch (type) {
      case od::json_type::object: {
        od::object obj;
        if (auto err = v.get_object().get(obj)) fail_json(err);
        for (auto field : obj) {
          od::field f;
          if (auto err = std::move(field).get(f)) fail_json(err);
          std::string_view key;
          if (auto err = f.unescaped_key().get(key)) fail_json(err);
          validate_value(f.value(), depth + 1);
        }
        break;
      }
      case od::json_type::array: {
        od::array arr;
        if (auto err = v.get_array().get(arr)) fail_json(err);
        for (auto elem : arr) {
          od::value e;
          if (auto err = std::move(elem).get(e)) fail_json(err);
          validate_value(e, depth + 1);
        }
        break;
      }
      case od::json_type::number: {
        od::number n;
        if (auto err = v.get_number().get(n)) {
          if (err != simdjson::NUMBER_ERROR || !is_json_number(v.raw_json_token())) fail_json(err);
        }
        break;
      }
      case od::json_type::string: {
        std::string_view s;
        if (auto err = v.get_string().get(s)) fail_json(err);
        break;
      }
      case od::json_type::boolean: {
        bool b;
        if (auto err = v.get_bool().get(b)) fail_json(err);
        break;
      }
      case od::json_type::null: {
        bool is_null = false;
        if (auto err = v.is_null().get(is_null)) fail_json(err);
        if (!is_null) fail_json(simdjson::N_ATOM_ERROR);
        break;
      }
    }
  }

  // Reads one known field into f. Type mismatches are recorded, not raised: the field may
  // belong to the other line kind (event vs metadata) and then it is simply ignored.
  void read_field(Key k, od::value& v, LineFields& f) {
    if (f.slot[k] != Slot::absent) fail("duplicate field \"" + std::string(kKeyNames[k]) + "\"");
    simdjson::error_code err = simdjson::SUCCESS;
    switch (kKeyKinds[k]) {
      case ValueKind::signed_int: {
        int64_t x;
        err = v.get_int64().get(x);
        if (!err) {
          f.slot[k] = Slot::ok;
          f.num[k] = static_cast<uint64_t>(x);
          return;
        }
        break;
      }
      case ValueKind::unsigned_int: {
        uint64_t x;
        err = v.get_uint64().get(x);
        if (!err) {
          f.slot[k] = x <= std::numeric_limits<uint32_t>::max() ? Slot::ok : Slot::bad;
          f.num[k] = x;
          return;
        }
        break;
      }
      case ValueKind::string: {
        std::string_view s;
        err = get_string_fast(v, s);
        if (!err) {
          f.slot[k] = Slot::ok;
          f.str[k] = s;
          return;
        }
        break;
      }
    }
    if (err == simdjson::NUMBER_ERROR && is_json_number(v.raw_json_token())) {
      f.slot[k] = Slot::bad;  // a valid number, just too large
      return;
    }
    if (!is_type_error(err)) fail_json(err);
    bool is_null = false;
    if (auto e2 = v.is_null().get(is_null)) fail_json(e2);
    if (is_null) {
      f.slot[k] = Slot::null;
      return;
    }
    // Some other type: still make sure it is well-formed JSON.
    validate_value(v, 0);
    f.slot[k] = Slot::bad;
  }

  // get_string() without the copy for the usual strings that contain no escapes. The value is
  // left unconsumed in that case; the object iteration skips it.
  static simdjson::error_code get_string_fast(od::value& v, std::string_view& out) {
    const std::string_view tok = v.raw_json_token();
    if (!tok.empty() && tok[0] == '"') {
      for (size_t i = 1; i < tok.size(); ++i) {
        if (tok[i] == '"') {
          out = tok.substr(1, i - 1);
          return simdjson::SUCCESS;
        }
        if (tok[i] == '\\') break;
      }
    }
    return v.get_string().get(out);
  }

  // The key of a field, classified. Fast path: compare the raw key (which stage 1 guarantees
  // is a closed string; the padded buffer makes reading a few bytes past it safe) with each
  // known key plus its closing quote. Keys with escapes take the slow path.
  Key key_of(od::field& field, const char* line_end) {
    const char* raw = field.key().raw();
    auto is = [raw](std::string_view quoted) {
      return std::memcmp(raw, quoted.data(), quoted.size()) == 0;
    };
    switch (raw[0]) {
      case 't':
        if (is("ts\"")) return kTs;
        break;
      case 'w':
        if (is("worker\"")) return kWorker;
        break;
      case 'a':
        if (is("activity\"")) return kActivity;
        break;
      case 'e':
        if (is("event\"")) return kEvent;
        break;
      case 'o':
        if (is("operator\"")) return kOperator;
        break;
      case 'c':
        if (is("correlator\"")) return kCorrelator;
        break;
      case 'r':
        if (is("remote\"")) return kRemote;
        if (is("records\"")) return kRecords;
        break;
      case 'm':
        if (is("meta\"")) return kMeta;
        break;
      case 'i':
        if (is("id\"")) return kId;
        break;
      case 'n':
        if (is("name\"")) return kName;
        break;
      default:
        break;
    }
    const char* p = raw;
    while (p < line_end && *p != '"' && *p != '\\') ++p;
    if (p < line_end && *p == '"') return kOther;  // no escapes: really an unknown key
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) fail_json(err);
    return classify(key);
  }

  void parse_line(const char* begin, size_t n, Trace& trace) {
    const size_t allocated = static_cast<size_t>(data_ + len_ - begin) + detail::kJsonPadding;
    od::document doc;
    if (auto err = parser_.iterate(begin, n, allocated).get(doc)) fail_json(err);
    od::object obj;
    if (auto err = doc.get_object().get(obj)) {
      if (err == simdjson::INCORRECT_TYPE) fail("expected a JSON object");
      fail_json(err);
    }
    LineFields f;
    f.slot.fill(Slot::absent);
    const char* line_end = begin + n;
    for (auto field_result : obj) {
      od::field field;
      if (auto err = std::move(field_result).get(field)) fail_json(err);
      const Key k = key_of(field, line_end);
      if (k == kOther) {
        validate_value(field.value(), 0);
      } else {
        read_field(k, field.value(), f);
      }
    }
    // simdjson 3.0 has no document::at_end(); current_location() fails with OUT_OF_BOUNDS
    // exactly when every token of the line has been consumed.
    const char* rest = nullptr;
    if (doc.current_location().get(rest) != simdjson::OUT_OF_BOUNDS)
      fail("invalid JSON (unexpected content after the object)");

    if (f.slot[kMeta] != Slot::absent) {
      parse_meta(f, trace);
    } else {
      parse_event(f, trace);
    }
  }

  void require(const LineFields& f, Key k) const {
    if (f.slot[k] == Slot::absent) fail("missing field \"" + std::string(kKeyNames[k]) + "\"");
    if (f.slot[k] != Slot::ok) fail(range_message(k));
  }

  void parse_meta(const LineFields& f, Trace& trace) const {
    if (f.slot[kMeta] != Slot::ok)
      fail("unknown meta kind (field \"meta\" must be \"worker\" or \"operator\")");
    const std::string_view kind = f.str[kMeta];
    std::unordered_map<uint32_t, std::string>* names = nullptr;
    if (kind == "worker") {
      names = &trace.worker_names;
    } else if (kind == "operator") {
      names = &trace.operator_names;
    } else {
      fail("unknown meta kind " + quote_for_error(kind) + " (expected worker or operator)");
    }
    require(f, kId);
    require(f, kName);
    (*names)[static_cast<uint32_t>(f.num[kId])] = std::string(f.str[kName]);
  }

  void parse_event(const LineFields& f, Trace& trace) const {
    Event e;
    require(f, kTs);
    e.ts = static_cast<int64_t>(f.num[kTs]);
    require(f, kWorker);
    e.worker = static_cast<uint32_t>(f.num[kWorker]);
    require(f, kActivity);
    const auto activity = lookup_activity(f.str[kActivity]);
    if (!activity) fail("unknown activity " + quote_for_error(f.str[kActivity]));
    e.activity = *activity;
    require(f, kEvent);
    const auto kind = lookup_event_kind(f.str[kEvent]);
    if (!kind) {
      fail("unknown event " + quote_for_error(f.str[kEvent]) +
           " (expected start, end, send or recv)");
    }
    e.kind = *kind;

    auto optional = [&](Key k, EventFlags flag) -> bool {
      switch (f.slot[k]) {
        case Slot::absent:
        case Slot::null:
          return false;
        case Slot::bad:
          fail(range_message(k));
        case Slot::ok:
          break;
      }
      e.flags |= flag;
      return true;
    };
    if (optional(kOperator, kHasOperator)) e.op = static_cast<uint32_t>(f.num[kOperator]);
    if (optional(kCorrelator, kHasCorrelator))
      e.correlator = static_cast<int64_t>(f.num[kCorrelator]);
    if (optional(kRemote, kHasRemote)) e.remote = static_cast<uint32_t>(f.num[kRemote]);
    if (optional(kRecords, kHasRecords)) e.records = static_cast<uint32_t>(f.num[kRecords]);

    if (e.is_message() != is_communication(e.activity)) {
      if (e.is_message()) {
        fail("event \"" + std::string(name_of(e.kind)) + "\" needs activity data_message or " +
             "control_message, not \"" + std::string(name_of(e.activity)) + "\"");
      }
      fail("activity \"" + std::string(name_of(e.activity)) + "\" is a message type; \"" +
           std::string(name_of(e.kind)) + "\" events need a worker-local activity");
    }
    trace.events.push_back(e);
    trace.lines.push_back(line_ > std::numeric_limits<uint32_t>::max()
                              ? std::numeric_limits<uint32_t>::max()
                              : static_cast<uint32_t>(line_));
  }

  const char* data_;
  size_t len_;
  const std::string& source_;
  uint64_t line_ = 0;
  LenientStats* lenient_ = nullptr;
  od::parser parser_;
};

template <typename T>
void append_int(std::string& out, T value) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, res.ptr);
}

template <typename Map>
void append_meta(std::string& out, const Map& names, std::string_view kind) {
  std::vector<std::pair<uint32_t, const std::string*>> sorted;
  sorted.reserve(names.size());
  for (const auto& [id, name] : names) sorted.emplace_back(id, &name);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, name] : sorted) {
    out.append("{\"meta\":\"");
    out.append(kind);
    out.append("\",\"id\":");
    append_int(out, id);
    out.append(",\"name\":");
    append_json_string(out, *name, kJsonTrace);
    out.append("}\n");
  }
}

}  // namespace

namespace detail {

Trace parse_jsonl_padded(const char* data, size_t len, const std::string& source) {
  return JsonlReader(data, len, source).run();
}

}  // namespace detail

Trace parse_jsonl_lenient(std::string_view text, const std::string& source, LenientStats& stats,
                          uint64_t first_line) {
  std::unique_ptr<char[]> buf(new char[text.size() + detail::kJsonPadding]);
  if (!text.empty()) std::memcpy(buf.get(), text.data(), text.size());
  std::memset(buf.get() + text.size(), 0, detail::kJsonPadding);
  return JsonlReader(buf.get(), text.size(), source, &stats, first_line).run();
}

Trace parse_jsonl(std::string_view text, const std::string& source) {
  // simdjson needs readable padding after the input; copy once into a padded buffer.
  std::unique_ptr<char[]> buf(new char[text.size() + detail::kJsonPadding]);
  if (!text.empty()) std::memcpy(buf.get(), text.data(), text.size());
  std::memset(buf.get() + text.size(), 0, detail::kJsonPadding);
  return detail::parse_jsonl_padded(buf.get(), text.size(), source);
}

void detail::append_jsonl_metadata(std::string& out, const Trace& meta) {
  append_meta(out, meta.worker_names, "worker");
  append_meta(out, meta.operator_names, "operator");
}

void detail::append_jsonl_events(std::string& out, const Event* events, size_t n,
                                 uint64_t first_record, const std::string& source) {
  for (size_t i = 0; i < n; ++i) {
    const Event& e = events[i];
    if (const char* problem = detail::check_event(e, false))
      throw TraceError(source, "record " + std::to_string(first_record + i), problem);
    out.append("{\"ts\":");
    append_int(out, e.ts);
    out.append(",\"worker\":");
    append_int(out, e.worker);
    out.append(",\"activity\":\"");
    out.append(name_of(e.activity));
    out.append("\",\"event\":\"");
    out.append(name_of(e.kind));
    out.push_back('"');
    if (e.has(kHasOperator)) {
      out.append(",\"operator\":");
      append_int(out, e.op);
    }
    if (e.has(kHasCorrelator)) {
      out.append(",\"correlator\":");
      append_int(out, e.correlator);
    }
    if (e.has(kHasRemote)) {
      out.append(",\"remote\":");
      append_int(out, e.remote);
    }
    if (e.has(kHasRecords)) {
      out.append(",\"records\":");
      append_int(out, e.records);
    }
    out.append("}\n");
  }
}

Trace detail::parse_jsonl_chunk(const char* data, size_t len, const std::string& source,
                                uint64_t first_line) {
  return JsonlReader(data, len, source, nullptr, first_line).run();
}

std::string to_jsonl(const Trace& trace) {
  std::string out;
  out.reserve(trace.events.size() * 112 +
              (trace.worker_names.size() + trace.operator_names.size()) * 48);
  detail::append_jsonl_metadata(out, trace);
  detail::append_jsonl_events(out, trace.events.data(), trace.events.size(), 0, trace.source);
  return out;
}

}  // namespace snailtrail
