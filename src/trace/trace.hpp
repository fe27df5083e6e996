// An in-memory trace: events in input order plus worker/operator names from metadata.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/big_vector.hpp"
#include "trace/census.hpp"
#include "trace/event.hpp"

namespace snailtrail {

// A problem in an input that stops reading: names the source and where in it.
class TraceError : public std::runtime_error {
 public:
  TraceError(const std::string& source, const std::string& where, const std::string& what)
      : std::runtime_error(source + ": " + where + ": " + what) {}
};

enum class TraceFormat { jsonl, snail };

struct Trace {
  BigVector<Event> events;  // in input order (resize() does not zero: fill what you add)
  std::unordered_map<uint32_t, std::string> worker_names;
  std::unordered_map<uint32_t, std::string> operator_names;

  // Where each event came from, for error messages that point into the input.
  std::string source = "<memory>";
  TraceFormat format = TraceFormat::jsonl;
  std::vector<uint32_t> lines;  // JSONL: 1-based line of events[i]; empty otherwise

  // Set by readers that count the workers and operators while reading (census.hpp);
  // describes `events` only while census->events == events.size(). Whoever changes the
  // events afterwards must reset it.
  std::optional<TraceCensus> census;

  // Recoverable problems an importer repaired or skipped, by kind ("spark.task_without_
  // start" -> 3); shown in the diagnostics of every window's output.
  std::vector<std::pair<std::string, uint64_t>> import_diagnostics;

  // Profile blocks of a .snail file (kind 3, docs/FORMATS.md), kept as bytes: decoded
  // by src/flame/profile_io.hpp. `offset`: the block header's byte offset (0 if built).
  struct ProfileBlock {
    uint64_t offset = 0;
    uint32_t count = 0;
    std::string bytes;
  };
  std::vector<ProfileBlock> profile_blocks;
  // The application the trace is a part of, when the input records its start and end (a
  // Spark log's SparkListenerApplicationStart and ApplicationEnd), in the events' clock:
  // the outputs say which part of it was analyzed (docs/OUTPUT.md "Coverage").
  struct Application {
    int64_t start = 0;
    std::optional<int64_t> end;  // none when the log has no end (yet)
  };
  std::optional<Application> application;

  // "file:LINE" for JSONL, "file: record N" for binary input.
  std::string location(size_t event_index) const {
    if (format == TraceFormat::jsonl && event_index < lines.size())
      return source + ":" + std::to_string(lines[event_index]);
    return source + ": record " + std::to_string(event_index);
  }

  // Display name of a worker or operator: metadata name if any, else the decimal id.
  std::string worker_name(uint32_t id) const {
    auto it = worker_names.find(id);
    return it != worker_names.end() ? it->second : std::to_string(id);
  }
  std::string operator_name(uint32_t id) const {
    auto it = operator_names.find(id);
    return it != operator_names.end() ? it->second : std::to_string(id);
  }
};

}  // namespace snailtrail
