// JSONL reading (simdjson On-Demand, one document per line; docs/FORMATS.md). Writing is in
// jsonl_write.cpp.
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
#include "trace/jsonl_fields.hpp"
#include "trace/trace_io.hpp"
#include "trace/trace_io_detail.hpp"

namespace snailtrail {
namespace {

namespace od = simdjson::ondemand;

static_assert(detail::kJsonPadding == simdjson::SIMDJSON_PADDING);

using namespace jsonl_fields;

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

}  // namespace

namespace detail {

Trace parse_jsonl_padded(const char* data, size_t len, const std::string& source) {
  return JsonlReader(data, len, source).run();
}

}  // namespace detail

namespace {
// simdjson needs readable padding after the input; copied once into a padded buffer.
std::unique_ptr<char[]> padded_copy(std::string_view text) {
  std::unique_ptr<char[]> buf(new char[text.size() + detail::kJsonPadding]);
  if (!text.empty()) std::memcpy(buf.get(), text.data(), text.size());
  std::memset(buf.get() + text.size(), 0, detail::kJsonPadding);
  return buf;
}
}  // namespace

Trace parse_jsonl_lenient(std::string_view text, const std::string& source, LenientStats& stats,
                          uint64_t first_line) {
  const std::unique_ptr<char[]> buf = padded_copy(text);
  return JsonlReader(buf.get(), text.size(), source, &stats, first_line).run();
}

Trace parse_jsonl(std::string_view text, const std::string& source) {
  const std::unique_ptr<char[]> buf = padded_copy(text);
  return detail::parse_jsonl_padded(buf.get(), text.size(), source);
}

Trace detail::parse_jsonl_chunk(const char* data, size_t len, const std::string& source,
                                uint64_t first_line) {
  return JsonlReader(data, len, source, nullptr, first_line).run();
}

}  // namespace snailtrail
