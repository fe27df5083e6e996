// The canonical trace event and the activity vocabulary (docs/FORMATS.md, "Event lines").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace snailtrail {

// Worker-local activity types first, then the two communication types.
// The numeric values are part of the .snail binary format: append only.
enum class ActivityType : uint8_t {
  processing = 0,
  scheduling,
  barrier_processing,
  buffer,
  serialization,
  deserialization,
  input,
  io,
  fault_tolerance,
  waiting,
  busy_waiting,
  unknown,
  data_message,
  control_message,
};
inline constexpr int kActivityTypeCount = 14;

// The numeric values are part of the .snail binary format.
enum class EventKind : uint8_t { start = 0, end, send, recv };
inline constexpr int kEventKindCount = 4;

// Presence bits for the optional fields of an Event.
enum EventFlags : uint16_t {
  kHasOperator = 1u << 0,
  kHasCorrelator = 1u << 1,
  kHasRemote = 1u << 2,
  kHasRecords = 1u << 3,
};
inline constexpr uint16_t kAllEventFlags = kHasOperator | kHasCorrelator | kHasRemote | kHasRecords;

// One raw trace record. Exactly the 40-byte little-endian record of the .snail format,
// so binary files are read with a memcpy.
struct Event {
  int64_t ts = 0;          // nanoseconds
  int64_t correlator = 0;  // valid if flags & kHasCorrelator
  uint32_t worker = 0;
  uint32_t remote = 0;   // valid if flags & kHasRemote
  uint32_t op = 0;       // operator id, valid if flags & kHasOperator
  uint32_t records = 0;  // valid if flags & kHasRecords
  ActivityType activity = ActivityType::unknown;
  EventKind kind = EventKind::start;
  uint16_t flags = 0;
  uint32_t reserved = 0;  // must be 0

  bool has(EventFlags f) const { return (flags & f) != 0; }
  bool is_message() const { return kind == EventKind::send || kind == EventKind::recv; }
};
static_assert(sizeof(Event) == 40, "Event must match the 40-byte .snail record");

inline constexpr std::array<std::string_view, kActivityTypeCount> kActivityNames = {
    "processing",
    "scheduling",
    "barrier_processing",
    "buffer",
    "serialization",
    "deserialization",
    "input",
    "io",
    "fault_tolerance",
    "waiting",
    "busy_waiting",
    "unknown",
    "data_message",
    "control_message"};

inline constexpr std::array<std::string_view, kEventKindCount> kEventKindNames = {"start", "end",
                                                                                  "send", "recv"};

inline std::string_view name_of(ActivityType t) {
  return kActivityNames[static_cast<int>(t)];
}
inline std::string_view name_of(EventKind k) {
  return kEventKindNames[static_cast<int>(k)];
}

inline bool is_communication(ActivityType t) {
  return t == ActivityType::data_message || t == ActivityType::control_message;
}

inline std::optional<ActivityType> parse_activity(std::string_view s) {
  for (int i = 0; i < kActivityTypeCount; ++i)
    if (kActivityNames[i] == s) return static_cast<ActivityType>(i);
  return std::nullopt;
}

inline std::optional<EventKind> parse_event_kind(std::string_view s) {
  for (int i = 0; i < kEventKindCount; ++i)
    if (kEventKindNames[i] == s) return static_cast<EventKind>(i);
  return std::nullopt;
}

}  // namespace snailtrail
