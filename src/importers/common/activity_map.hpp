// Activity types for slices and spans: the importers' built-in defaults and the user's
// overrides from `--map FILE` (docs/IMPORTERS.md, "Activity map").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "importers/importer.hpp"
#include "trace/event.hpp"

namespace snailtrail::importers {

// One `[[rule]]` of a map file. Empty fields match anything; all given fields must match.
struct ActivityRule {
  std::string name;      // glob on the slice or span name
  std::string category;  // glob on the Chrome event's `cat`
  std::string service;   // glob on the span's service name
  std::string kind;      // glob on the span kind: server, client, producer, consumer, internal
  ActivityType activity = ActivityType::processing;
};

struct ActivityMap {
  std::vector<ActivityRule> rules;  // first match wins
  std::optional<ActivityType> match(std::string_view name, std::string_view category,
                                    std::string_view service, std::string_view kind) const;
};

// `*` matches any run of characters, `?` one character; everything else literally.
bool glob_match(std::string_view pattern, std::string_view text);

// Parses a TOML map file. Throws TraceError naming the file and line.
ActivityMap parse_activity_map(std::string_view text, const std::string& source);
// Empty path: no rules.
ActivityMap load_activity_map(const std::string& path);

// --map FILE, read by the importers of slices and spans (chrome, otlp, jaeger).
inline constexpr ImportOption kMapOption{
    "--map", "TOML rules mapping names to activity types (docs/IMPORTERS.md)",
    &ImportOptions::map_file, nullptr};

}  // namespace snailtrail::importers
