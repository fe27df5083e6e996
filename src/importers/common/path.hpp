// File names as the importers sniff them.
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

}  // namespace snailtrail
