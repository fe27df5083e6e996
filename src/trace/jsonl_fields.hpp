// The fields of a JSONL trace line (docs/FORMATS.md) as the reader sees them: the known
// keys and the kind of value each takes, name lookups of activity types and event kinds,
// and the wording of field errors. Private to trace/jsonl*.cpp.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trace/event.hpp"
#include "trace/json_text.hpp"

namespace snailtrail::jsonl_fields {

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
inline std::optional<ActivityType> lookup_activity(std::string_view s) {
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

inline std::optional<EventKind> lookup_event_kind(std::string_view s) {
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
inline std::string quote_for_error(std::string_view s) {
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

inline std::string range_message(Key k) {
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
inline bool is_json_number(std::string_view tok) {
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

}  // namespace snailtrail::jsonl_fields
