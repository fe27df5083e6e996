// Path counts with a 64-bit binary exponent: value = mant * 2^exp.
//
// Transient path counts grow exponentially with the number of message crossings
// (2^100000 for a ladder of 100k crossings), far beyond double's 1e308. A double
// mantissa keeps ~16 significant digits; the separate exponent never overflows
// for counts up to 2^(2^62). Each addition/multiplication rounds once (relative
// error <= 2^-52), so a chain of k operations stays within ~k * 1e-16.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace snailtrail {

class WideCount {
 public:
  constexpr WideCount() = default;
  static WideCount one() { return WideCount(1.0, 0); }
  static WideCount from_double(double v) {
    if (v == 0) return {};
    int e = 0;
    double m = std::frexp(v, &e);  // m in [0.5, 1)
    return WideCount(m * 2, e - 1);
  }

  bool is_zero() const { return mant_ == 0; }
  double mantissa() const { return mant_; }  // in [1, 2) unless zero
  int64_t exponent() const { return exp_; }

  // Exact conversion when representable, +inf when it overflows a double.
  double to_double() const {
    if (mant_ == 0) return 0;
    if (exp_ > 1023) return HUGE_VAL;
    if (exp_ < -1074) return 0;
    return std::ldexp(mant_, static_cast<int>(exp_));
  }

  double log10() const {
    if (mant_ == 0) return -HUGE_VAL;
    return std::log10(mant_) + static_cast<double>(exp_) * 0.30102999566398119521;
  }

  WideCount& operator+=(const WideCount& o) {
    if (o.mant_ == 0) return *this;
    if (mant_ == 0) return *this = o;
    if (exp_ >= o.exp_) {
      add_aligned(o.mant_, exp_ - o.exp_);
    } else {
      double m = mant_;
      int64_t d = o.exp_ - exp_;
      mant_ = o.mant_;
      exp_ = o.exp_;
      add_aligned(m, d);
    }
    return *this;
  }

  friend WideCount operator+(WideCount a, const WideCount& b) { return a += b; }

  friend WideCount operator*(const WideCount& a, const WideCount& b) {
    if (a.mant_ == 0 || b.mant_ == 0) return {};
    double m = a.mant_ * b.mant_;  // in [1, 4)
    int64_t e = a.exp_ + b.exp_;
    if (m >= 2) {
      m *= 0.5;
      ++e;
    }
    return WideCount(m, e);
  }

  // a / b as a double (0 if a is zero; b must be non-zero). Used for probabilities
  // and CP values, which are at most 1.
  friend double ratio(const WideCount& a, const WideCount& b) {
    if (a.mant_ == 0) return 0;
    int64_t e = a.exp_ - b.exp_;
    if (e < -1100) return 0;
    if (e > 1100) return HUGE_VAL;
    const double q = a.mant_ / b.mant_;  // in (0.5, 2)
    if (e >= -1022 && e <= 1023)         // 2^e from its bit pattern: exact, no libm call
      return q * std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52);
    return std::ldexp(q, static_cast<int>(e));
  }

  friend bool operator==(const WideCount& a, const WideCount& b) {
    return a.mant_ == b.mant_ && (a.mant_ == 0 || a.exp_ == b.exp_);
  }

 private:
  constexpr WideCount(double m, int64_t e) : mant_(m), exp_(e) {}

  // this += m * 2^-shift, with shift >= 0 and both mantissas normalized.
  void add_aligned(double m, int64_t shift) {
    if (shift < 64) {
      // 2^-shift built from its bit pattern: exact and branch-free.
      double scale = std::bit_cast<double>(static_cast<uint64_t>(1023 - shift) << 52);
      mant_ += m * scale;
      if (mant_ >= 2) {
        mant_ *= 0.5;
        ++exp_;
      }
    }
    // shift >= 64: the smaller term is below the mantissa's precision.
  }

  double mant_ = 0;  // 0, or in [1, 2)
  int64_t exp_ = 0;
};

}  // namespace snailtrail
