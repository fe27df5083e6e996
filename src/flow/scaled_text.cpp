// Numbers and profiles given to the runtime as text (`run --rate 200k`, `--rate-profile
// 0s:100k,30s:400k`, runtime.hpp): one reading of the k/M/G suffixes for all of them.
#include <cctype>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "flow/harness.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::flow {

std::optional<double> parse_scaled(const std::string& text) {
  std::string v = text;
  double mult = 1;
  if (!v.empty() && (v.back() == 'k' || v.back() == 'K'))
    mult = 1e3, v.pop_back();
  else if (!v.empty() && v.back() == 'M')
    mult = 1e6, v.pop_back();
  else if (!v.empty() && v.back() == 'G')
    mult = 1e9, v.pop_back();
  if (v.empty() || std::isspace(static_cast<unsigned char>(v.front()))) return std::nullopt;
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != v.size() || !std::isfinite(x * mult)) return std::nullopt;
  return x * mult;
}

std::vector<std::pair<int64_t, double>> parse_profile(
    const std::string& text, const std::string& name,
    const std::function<int64_t(const std::string&)>& parse_ns, bool rates_positive) {
  auto bad = [&name](const std::string& why) { return UsageError({field(name), ": " + why}); };
  std::vector<std::pair<int64_t, double>> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw bad("'" + item + "' is not TIME:VALUE (e.g. 0s:100k)");
    int64_t ns = 0;
    try {
      ns = parse_ns(item.substr(0, colon));
    } catch (const std::invalid_argument& e) {
      throw bad(e.what());
    }
    const std::optional<double> value = parse_scaled(item.substr(colon + 1));
    if (!value) throw bad("'" + item.substr(colon + 1) + "' is not a number");
    const double x = *value;
    if (rates_positive && (x < 1 || x > 1e10))
      throw bad(item + ": the rate must be in [1, 1e10] records/s");
    if (out.empty() && ns != 0) throw bad("the first time must be 0s");
    if (!out.empty() && ns <= out.back().first) throw bad("times must increase");
    out.emplace_back(ns, x);
    at = comma + 1;
  }
  return out;
}

}  // namespace snailtrail::flow
