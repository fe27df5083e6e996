// The --map rule file and the built-in activity defaults.
#include "importers/common/activity_map.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>

#include "importers/importer.hpp"
#include "trace/trace.hpp"

namespace snailtrail::importers {

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point (the last `*`): linear in practice, and
  // never recursive, so hostile patterns cannot blow the stack.
  size_t p = 0, t = 0, star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_t = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::optional<ActivityType> ActivityMap::match(std::string_view name, std::string_view category,
                                               std::string_view service,
                                               std::string_view kind) const {
  for (const ActivityRule& r : rules) {
    if (!r.name.empty() && !glob_match(r.name, name)) continue;
    if (!r.category.empty() && !glob_match(r.category, category)) continue;
    if (!r.service.empty() && !glob_match(r.service, service)) continue;
    if (!r.kind.empty() && !glob_match(r.kind, kind)) continue;
    return r.activity;
  }
  return std::nullopt;
}

ActivityMap parse_activity_map(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw TraceError(source, "line " + std::to_string(e.source().begin.line),
                     std::string(e.description()));
  }
  auto where = [&](const toml::node& n) { return "line " + std::to_string(n.source().begin.line); };
  ActivityMap map;
  for (auto&& [key, value] : root) {
    if (key.str() != "rule")
      throw TraceError(source, where(value),
                       "unknown key '" + std::string(key.str()) + "' (expected [[rule]] tables)");
    const toml::array* rules = value.as_array();
    if (!rules)
      throw TraceError(source, where(value), "'rule' must be an array of tables ([[rule]])");
    for (const toml::node& node : *rules) {
      const toml::table* t = node.as_table();
      if (!t) throw TraceError(source, where(node), "every rule must be a table ([[rule]])");
      ActivityRule rule;
      bool has_activity = false, has_pattern = false;
      for (auto&& [k, v] : *t) {
        const std::optional<std::string> s = v.value<std::string>();
        if (!s)
          throw TraceError(source, where(v), "'" + std::string(k.str()) + "' must be a string");
        if (k.str() == "activity") {
          const std::optional<ActivityType> a = parse_activity(*s);
          if (!a || is_communication(*a))
            throw TraceError(source, where(v),
                             "unknown or non-local activity '" + *s +
                                 "' (processing, scheduling, barrier_processing, buffer, "
                                 "serialization, deserialization, input, io, fault_tolerance, "
                                 "waiting, busy_waiting, unknown)");
          rule.activity = *a;
          has_activity = true;
        } else if (k.str() == "name" || k.str() == "category" || k.str() == "service" ||
                   k.str() == "kind") {
          (k.str() == "name"       ? rule.name
           : k.str() == "category" ? rule.category
           : k.str() == "service"  ? rule.service
                                   : rule.kind) = *s;
          has_pattern = true;
        } else {
          throw TraceError(source, where(v),
                           "unknown key '" + std::string(k.str()) +
                               "' in a rule (name, category, service, kind, activity)");
        }
      }
      if (!has_activity) throw TraceError(source, where(node), "a rule needs an 'activity'");
      if (!has_pattern)
        throw TraceError(source, where(node),
                         "a rule needs at least one of name, category, service, kind");
      map.rules.push_back(std::move(rule));
    }
  }
  return map;
}

ActivityMap load_activity_map(const std::string& path) {
  if (path.empty()) return {};
  return parse_activity_map(read_file_bytes(path), path);
}

}  // namespace snailtrail::importers
