// Deterministic random numbers for the simulator: our own generator (xoshiro256**,
// seeded with splitmix64) and our own distribution sampling, so that a seed gives the
// same trace with every compiler and standard library (std:: distributions do not).
#pragma once

#include <cmath>
#include <cstdint>

#include "trace/random.hpp"

namespace snailtrail::sim {

using snailtrail::splitmix64;  // trace/random.hpp

// xoshiro256** (Blackman & Vigna). Independent streams come from (seed, stream) pairs:
//   Rng rng(seed, worker);  double u = rng.uniform();
class Rng {
 public:
  explicit Rng(uint64_t seed = 0, uint64_t stream = 0) {
    uint64_t sm = seed ^ (0x6a09e667f3bcc909ULL * (stream + 1));
    for (uint64_t& x : s_) x = splitmix64(sm);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift with rejection).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Standard normal by the Box-Muller transform (the second value is kept for the next call).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform();
    const double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586476925 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

  // Exponential with the given mean.
  double exponential(double mean) { return -std::log1p(-uniform()) * mean; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

enum class DistKind : uint8_t { fixed, uniform, exponential, normal, lognormal };

// A non-negative random quantity (a per-record cost in ns, or a selectivity).
//   fixed: p1 = value; uniform: [p1, p2]; exponential: mean p1;
//   normal: mean p1, stddev p2 (negative draws clamp to 0);
//   lognormal: mean p1, stddev p2 of the value itself (not of its logarithm).
struct Distribution {
  DistKind kind = DistKind::fixed;
  double p1 = 0;
  double p2 = 0;

  static Distribution constant(double v) { return {DistKind::fixed, v, 0}; }

  double mean() const {
    switch (kind) {
      case DistKind::fixed:
      case DistKind::exponential:
      case DistKind::normal:
      case DistKind::lognormal:
        return p1;
      case DistKind::uniform:
        return 0.5 * (p1 + p2);
    }
    return p1;
  }

  double stddev() const {
    switch (kind) {
      case DistKind::fixed:
        return 0;
      case DistKind::uniform:
        return (p2 - p1) / std::sqrt(12.0);
      case DistKind::exponential:
        return p1;
      case DistKind::normal:
      case DistKind::lognormal:
        return p2;
    }
    return 0;
  }

  bool is_zero() const { return kind == DistKind::fixed && p1 == 0; }

  // One draw.
  double sample(Rng& rng) const {
    switch (kind) {
      case DistKind::fixed:
        return p1;
      case DistKind::uniform:
        return p1 + (p2 - p1) * rng.uniform();
      case DistKind::exponential:
        return rng.exponential(p1);
      case DistKind::normal: {
        const double v = p1 + p2 * rng.normal();
        return v > 0 ? v : 0;
      }
      case DistKind::lognormal: {
        if (p1 <= 0) return 0;
        const double cv = p2 / p1;
        const double s2 = std::log1p(cv * cv);
        const double mu = std::log(p1) - 0.5 * s2;
        return std::exp(mu + std::sqrt(s2) * rng.normal());
      }
    }
    return p1;
  }

  // The sum of n independent draws: exact for up to 16 draws, else its normal
  // approximation (mean n*m, stddev sqrt(n)*s), clamped at 0. Simulating a batch of
  // n records costs O(1) this way.
  double sum(uint64_t n, Rng& rng) const {
    if (n == 0) return 0;
    if (kind == DistKind::fixed) return p1 * static_cast<double>(n);
    if (n <= 16) {
      double s = 0;
      for (uint64_t i = 0; i < n; ++i) s += sample(rng);
      return s;
    }
    const double dn = static_cast<double>(n);
    const double v = dn * mean() + std::sqrt(dn) * stddev() * rng.normal();
    return v > 0 ? v : 0;
  }
};

// Rounds x >= 0 to an integer, up with probability frac(x): the expectation is x.
inline uint64_t stochastic_round(double x, Rng& rng) {
  if (!(x > 0)) return 0;
  const double f = std::floor(x);
  return static_cast<uint64_t>(f) + (rng.uniform() < x - f ? 1 : 0);
}

}  // namespace snailtrail::sim
