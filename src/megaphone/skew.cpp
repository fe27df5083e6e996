// --skew-profile (skew.hpp): the skewed keycount/hashcount input and the per-bin counter.
#include "megaphone/skew.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <stdexcept>

#include "flow/jobs/jobs.hpp"
#include "trace/setting_error.hpp"

namespace snailtrail::megaphone {

std::vector<std::pair<int64_t, double>> parse_skew_profile(
    const std::string& text, const std::function<int64_t(const std::string&)>& parse_ns) {
  // --rate-profile's syntax (TIME:VALUE,...), token by token so that every error names
  // the bad token.
  std::vector<std::pair<int64_t, double>> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    auto bad = [&item](const std::string& why) {
      return UsageError({field("skew_profile"), fmt::format(": '{}': {}", item, why)});
    };
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw bad("not TIME:SHARE (e.g. 0s:0,30s:0.5)");
    int64_t ns = 0;
    try {
      ns = parse_ns(item.substr(0, colon));
    } catch (const std::invalid_argument& e) {
      throw bad(e.what());
    }
    const std::string v = item.substr(colon + 1);
    size_t used = 0;
    double share = NAN;
    try {
      share = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (v.empty() || used != v.size() || !std::isfinite(share))
      throw bad("'" + v + "' is not a number");
    if (!(share >= 0 && share <= 1)) throw bad("the hot share must be in [0, 1]");
    if (out.empty() && ns != 0) throw bad("the first time must be 0s");
    if (!out.empty() && ns <= out.back().first) throw bad("times must increase");
    out.emplace_back(ns, share);
    at = comma + 1;
  }
  return out;
}

Skew make_skew(const std::vector<std::pair<int64_t, double>>& rate_profile, uint32_t streams,
               const std::vector<std::pair<int64_t, double>>& skew_profile, uint32_t hot_bins) {
  if (skew_profile.empty()) return {};
  if (rate_profile.empty() || streams == 0)
    throw UsageError({field("skew_profile"), " needs an open-loop ", field("rate"), " or ",
                      field("rate_profile"), " (the share follows the records' intended times)"});
  const flow::RateSchedule sched(rate_profile, 1.0 / streams);
  Skew s;
  s.hot_bins = std::max<uint32_t>(hot_bins, 1);
  for (const auto& [ns, share] : skew_profile) {
    const auto from = static_cast<uint64_t>(std::ceil(sched.count(ns) - 1e-9));
    if (!s.from_record.empty() && s.from_record.back().first == from)
      s.from_record.back().second = share;
    else
      s.from_record.emplace_back(from, share);
  }
  return s;
}

uint32_t key_bin(bool dense, uint32_t log_bins, uint64_t key) {
  if (log_bins == 0) return 0;
  const uint64_t x = dense ? std::rotr(key, static_cast<int>(log_bins)) : flow::mix64(key);
  return static_cast<uint32_t>(x >> (64 - log_bins));
}

uint64_t skewed_key(const flow::RunConfig& cfg, bool dense, uint32_t log_bins, const Skew& skew,
                    uint32_t w, uint64_t i) {
  const uint64_t r = flow::jobs::record_random(cfg.seed, w, i);
  const uint64_t u = r % cfg.keys;  // keycount_key's uniform key
  if (skew.empty()) return u;
  const double share = skew.share(i);
  if (share <= 0) return u;
  const uint64_t r2 = flow::mix64(r ^ 0x5bd1e9955bd1e995ull);
  if (static_cast<double>(r2 >> 11) * 0x1p-53 >= share) return u;
  const uint32_t B = 1u << log_bins;
  const uint32_t H = std::min(skew.hot_bins, B);
  if (dense) {  // the same key with its bin folded into [0, H): still < keys
    const uint64_t low = u & (B - 1);
    return (u - low) + low % H;
  }
  // hashcount: the next key from u (cyclically) whose hash falls in a hot bin; B / H
  // tries on average, bounded (a tiny key domain may have no key in the hot bins).
  uint64_t k = u;
  for (uint64_t tries = 0; tries < 64ull * B / H + 64; ++tries) {
    if (key_bin(false, log_bins, k) < H) return k;
    k = k + 1 == cfg.keys ? 0 : k + 1;
  }
  return u;
}

}  // namespace snailtrail::megaphone
