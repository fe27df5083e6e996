// "1 trace", "2 traces": a count with its noun in the right number, for messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace snailtrail {

inline std::string counted(uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace snailtrail
