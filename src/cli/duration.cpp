#include "cli/duration.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace snailtrail {
namespace {

std::optional<int64_t> unit_ns(std::string_view unit) {
  if (unit == "ns") return 1;
  if (unit == "us") return 1'000;
  if (unit == "ms") return 1'000'000;
  if (unit == "s") return 1'000'000'000;
  if (unit == "m" || unit == "min") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  return std::nullopt;
}

int64_t parse_with_unit(const std::string& text, bool unit_required) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  std::string number = text.substr(0, i);
  std::string unit = text.substr(i);
  if (number.empty() || number == ".")
    throw std::invalid_argument("\"" + text +
                                "\" is not a duration (expected e.g. 1s, 250ms, 100us)");
  if (unit.empty() && unit_required)
    throw std::invalid_argument("\"" + text + "\" needs a unit: ns, us, ms, s, m or h");
  auto scale = unit.empty() ? std::optional<int64_t>(1) : unit_ns(unit);
  if (!scale)
    throw std::invalid_argument("unknown unit \"" + unit + "\" in \"" + text +
                                "\" (expected ns, us, ms, s, m or h)");
  if (number.find('.') == std::string::npos) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || p != number.data() + number.size() || v > INT64_MAX / *scale)
      throw std::invalid_argument("\"" + text + "\" is out of range");
    return v * *scale;
  }
  double v = std::stod(number) * static_cast<double>(*scale);
  if (!(v < 9.2e18)) throw std::invalid_argument("\"" + text + "\" is out of range");
  return static_cast<int64_t>(std::llround(v));
}

}  // namespace

std::optional<double> parse_number(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

int64_t parse_duration(const std::string& text) {
  return parse_with_unit(text, true);
}

Instant parse_instant(const std::string& text) {
  if (!text.empty() && text[0] == '+') return {parse_with_unit(text.substr(1), false), true};
  return {parse_with_unit(text, false), false};
}

}  // namespace snailtrail
