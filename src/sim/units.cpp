#include "sim/units.hpp"

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace snailtrail::sim {
namespace {

// Splits "12.5ms" into 12.5 and "ms"; throws if there is no number.
std::pair<double, std::string_view> split_number(std::string_view text, const char* what,
                                                 const char* example) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == 'e' || text[i] == 'E' ||
                             ((text[i] == '+' || text[i] == '-') && i > 0 &&
                              (text[i - 1] == 'e' || text[i - 1] == 'E')))) {
    // Stop before a unit starting with 'e'/'E' that is not an exponent.
    if ((text[i] == 'e' || text[i] == 'E') &&
        (i + 1 >= text.size() || !(std::isdigit(static_cast<unsigned char>(text[i + 1])) ||
                                   text[i + 1] == '+' || text[i + 1] == '-')))
      break;
    ++i;
  }
  std::string number(text.substr(0, i));
  if (number.empty())
    throw std::invalid_argument("\"" + std::string(text) + "\" is not a " + what +
                                " (expected e.g. " + example + ")");
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(v) || v < 0)
    throw std::invalid_argument("\"" + std::string(text) + "\" is not a " + what +
                                " (expected e.g. " + example + ")");
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return {v, unit};
}

}  // namespace

int64_t parse_duration_text(std::string_view text) {
  auto [v, unit] = split_number(text, "duration", "250us, 10ms, 1.5s");
  double scale;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m" || unit == "min")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else if (unit.empty())
    throw std::invalid_argument("\"" + std::string(text) +
                                "\" needs a unit: ns, us, ms, s, m or h");
  else
    throw std::invalid_argument("unknown unit \"" + std::string(unit) + "\" in \"" +
                                std::string(text) + "\" (expected ns, us, ms, s, m or h)");
  const double ns = v * scale;
  if (!(ns < 9.2e18)) throw std::invalid_argument("\"" + std::string(text) + "\" is out of range");
  return static_cast<int64_t>(std::llround(ns));
}

double parse_rate_text(std::string_view text) {
  auto [v, unit] = split_number(text, "rate", "20000/s, 1000000/min");
  if (unit.empty() || unit == "/s") return v;
  if (unit == "/min" || unit == "/m") return v / 60.0;
  if (unit == "/h") return v / 3600.0;
  throw std::invalid_argument("unknown unit \"" + std::string(unit) + "\" in rate \"" +
                              std::string(text) + "\" (expected /s, /min or /h)");
}

double parse_bandwidth_text(std::string_view text) {
  auto [v, unit] = split_number(text, "bandwidth", "10Gbit/s, 1.25GB/s");
  struct U {
    const char* name;
    double bytes;
  };
  static constexpr U units[] = {
      {"B/s", 1},      {"KB/s", 1e3},   {"MB/s", 1e6},     {"GB/s", 1e9},     {"bit/s", 0.125},
      {"Kbit/s", 125}, {"kbit/s", 125}, {"Mbit/s", 125e3}, {"Gbit/s", 125e6}, {"bps", 0.125},
      {"kbps", 125},   {"Kbps", 125},   {"Mbps", 125e3},   {"Gbps", 125e6},
  };
  for (const U& u : units)
    if (unit == u.name) return v * u.bytes;
  if (unit.empty()) return v;
  throw std::invalid_argument("unknown unit \"" + std::string(unit) + "\" in bandwidth \"" +
                              std::string(text) +
                              "\" (expected B/s, KB/s, MB/s, GB/s, Mbit/s, Gbit/s)");
}

}  // namespace snailtrail::sim
