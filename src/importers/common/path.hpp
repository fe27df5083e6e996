// File names and the heads of files as the importers sniff them.
#pragma once

#include <cctype>
#include <string_view>

namespace snailtrail {

// True if `path` ends with `ext` (given in lower case, with its dot), whatever the case
// of the path: "TRACE.JSON" has the extension ".json".
inline bool has_extension(std::string_view path, std::string_view ext) {
  if (path.size() < ext.size()) return false;
  const std::string_view tail = path.substr(path.size() - ext.size());
  for (size_t i = 0; i < ext.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(tail[i])) != ext[i]) return false;
  return true;
}

// `s` without its leading white space and UTF-8 byte-order mark (its bytes EF BB BF):
// where a file's first value begins.
inline std::string_view skip_space(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n' ||
          s.front() == '\xEF' || s.front() == '\xBB' || s.front() == '\xBF'))
    s.remove_prefix(1);
  return s;
}

}  // namespace snailtrail
