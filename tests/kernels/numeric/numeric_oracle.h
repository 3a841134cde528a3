// Spec-derived oracles for the number-format tests. They are written from quant-formats.md §2.1
// and IEEE 754 alone, deliberately unlike kernels/numeric/: decoding evaluates the
// sign/exponent/mantissa formula with std::ldexp in double, and encoding picks the nearest value
// of the decoded table (ties to the even code) instead of doing any bit arithmetic. Saturating
// formats simply have no entry past their max; IEEE formats get one pseudo-entry 2^(emax+1) that
// stands for inf, which is exactly how IEEE defines overflow under round-to-nearest-even.
#ifndef TESSERA_TESTS_KERNELS_NUMERIC_NUMERIC_ORACLE_H_
#define TESSERA_TESTS_KERNELS_NUMERIC_NUMERIC_ORACLE_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tessera::numeric::oracle {

// Layout of a binary floating-point format, sign in the top bit.
struct FormatSpec {
  int exp_bits;
  int man_bits;
  int bias;
  // Exponent all ones means inf (mantissa 0) or NaN (IEEE, E5M2, FP16, BF16).
  bool ieee_specials;
  // Only the all-ones code (per sign) is NaN, no inf (E4M3FN).
  bool fn_nan;
};

inline constexpr FormatSpec kE4m3Spec{4, 3, 7, false, true};
inline constexpr FormatSpec kE5m2Spec{5, 2, 15, true, false};
inline constexpr FormatSpec kE2m1Spec{2, 1, 1, false, false};
inline constexpr FormatSpec kHalfSpec{5, 10, 15, true, false};
inline constexpr FormatSpec kBf16Spec{8, 7, 127, true, false};

inline int CodeBits(const FormatSpec& f) { return 1 + f.exp_bits + f.man_bits; }

// Reference decode: (-1)^s * 2^(e - bias) * (1 + m / 2^M), or 2^(1 - bias) * (m / 2^M) for e = 0.
inline double RefDecode(const FormatSpec& f, uint32_t code) {
  const uint32_t sign = (code >> (f.exp_bits + f.man_bits)) & 1u;
  const uint32_t exp_max = (1u << f.exp_bits) - 1u;
  const uint32_t man_max = (1u << f.man_bits) - 1u;
  const uint32_t e = (code >> f.man_bits) & exp_max;
  const uint32_t m = code & man_max;
  double value;
  if (f.ieee_specials && e == exp_max) {
    value =
        m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (f.fn_nan && e == exp_max && m == man_max) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    value = std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits);
  } else {
    value = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.man_bits),
                       static_cast<int>(e) - f.bias);
  }
  return sign ? -value : value;
}

// Non-negative representable values in ascending order with their codes.
struct Table {
  std::vector<double> values;
  std::vector<uint32_t> codes;
};

// All finite non-negative codes (+0 included, -0 excluded). With `with_inf_entry`, appends the
// pseudo-value 2^(emax + 1) carrying the +inf code, so that rounding past the max goes to inf.
inline Table BuildTable(const FormatSpec& f, bool with_inf_entry) {
  std::vector<std::pair<double, uint32_t>> entries;
  const uint32_t sign_bit = 1u << (f.exp_bits + f.man_bits);
  for (uint32_t code = 0; code < sign_bit; ++code) {
    const double v = RefDecode(f, code);
    if (std::isfinite(v)) entries.emplace_back(v, code);
  }
  std::sort(entries.begin(), entries.end());
  if (with_inf_entry) {
    const int emax = (1 << f.exp_bits) - 2 - f.bias;
    entries.emplace_back(std::ldexp(1.0, emax + 1), ((1u << f.exp_bits) - 1u) << f.man_bits);
  }
  Table t;
  for (const auto& [v, c] : entries) {
    t.values.push_back(v);
    t.codes.push_back(c);
  }
  return t;
}

// Nearest entry to the non-negative, non-NaN `a`; ties go to the even code (mantissa LSB 0).
inline uint32_t NearestMagnitudeCode(const Table& t, long double a) {
  const auto it = std::lower_bound(t.values.begin(), t.values.end(), static_cast<double>(a));
  if (it == t.values.begin()) return t.codes.front();
  if (it == t.values.end()) return t.codes.back();
  const size_t hi = static_cast<size_t>(it - t.values.begin());
  const size_t lo = hi - 1;
  const long double d_lo = a - static_cast<long double>(t.values[lo]);
  const long double d_hi = static_cast<long double>(t.values[hi]) - a;
  if (d_lo < d_hi) return t.codes[lo];
  if (d_hi < d_lo) return t.codes[hi];
  return (t.codes[lo] & 1u) == 0 ? t.codes[lo] : t.codes[hi];
}

// Reference encode of a non-NaN float: sign bit | nearest magnitude code.
inline uint32_t RefEncode(const FormatSpec& f, const Table& t, float x) {
  const uint32_t sign = std::signbit(x) ? (1u << (f.exp_bits + f.man_bits)) : 0u;
  return sign | NearestMagnitudeCode(t, std::fabs(static_cast<long double>(x)));
}

// Random floats for sweeps: half arbitrary binary32 bit patterns (every exponent, NaN excluded),
// half with exponents in [lo_exp, hi_exp] and random sign and mantissa, to concentrate on the
// format's range, its subnormals and its overflow region.
class FloatSampler {
 public:
  FloatSampler(uint64_t seed, int lo_exp, int hi_exp)
      : rng_(seed), lo_exp_(lo_exp), hi_exp_(hi_exp) {}

  float Next() {
    for (;;) {
      const uint32_t r = static_cast<uint32_t>(rng_());
      uint32_t bits;
      if ((count_++ & 1u) == 0) {
        bits = r;
      } else {
        std::uniform_int_distribution<int> exp_dist(lo_exp_, hi_exp_);
        const uint32_t biased = static_cast<uint32_t>(exp_dist(rng_) + 127);
        bits = (r & 0x807FFFFFu) | (biased << 23);
      }
      const float f = std::bit_cast<float>(bits);
      if (!std::isnan(f)) return f;
    }
  }

 private:
  std::mt19937_64 rng_;
  int lo_exp_;
  int hi_exp_;
  uint32_t count_ = 0;
};

inline uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

// Float strictly adjacent to `f` towards +inf / towards zero-and-below.
inline float Up(float f) { return std::nextafter(f, std::numeric_limits<float>::infinity()); }
inline float Down(float f) { return std::nextafter(f, -std::numeric_limits<float>::infinity()); }

// Checks every midpoint between adjacent non-negative table entries, both signs: the midpoint
// itself must give the even code, and the floats just above and just below it must give the
// upper and the lower code. Stops reporting after a few failures per call.
template <typename EncodeFn>
void CheckAllMidpoints(const FormatSpec& f, const Table& t, EncodeFn encode) {
  const uint32_t sign = 1u << (f.exp_bits + f.man_bits);
  int failures = 0;
  for (size_t i = 0; i + 1 < t.values.size() && failures < 10; ++i) {
    const double mid = (t.values[i] + t.values[i + 1]) / 2;
    const float midf = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(midf), mid) << "midpoint not exact in binary32";
    const uint32_t lo = t.codes[i];
    const uint32_t hi = t.codes[i + 1];
    const uint32_t even = (lo & 1u) == 0 ? lo : hi;
    const struct {
      float x;
      uint32_t want;
    } cases[] = {{midf, even},         {Up(midf), hi},         {Down(midf), lo},
                 {-midf, sign | even}, {-Up(midf), sign | hi}, {-Down(midf), sign | lo}};
    for (const auto& c : cases) {
      const uint32_t got = encode(c.x);
      if (got != c.want) {
        ++failures;
        ADD_FAILURE() << "encode(" << c.x << ") = 0x" << std::hex << got << ", want 0x" << c.want
                      << " (between codes 0x" << lo << " and 0x" << hi << ")";
      }
    }
  }
}

// Every code whose decoded value is finite (or inf, with `include_inf`) must encode back to
// itself; -0 included.
template <typename DecodeFn, typename EncodeFn>
void CheckRoundTrip(const FormatSpec& f, DecodeFn decode, EncodeFn encode, bool include_inf) {
  int failures = 0;
  for (uint32_t code = 0; code < (1u << CodeBits(f)) && failures < 10; ++code) {
    const double ref = RefDecode(f, code);
    if (std::isnan(ref) || (std::isinf(ref) && !include_inf)) continue;
    const uint32_t got = encode(decode(code));
    if (got != code) {
      ++failures;
      ADD_FAILURE() << "round trip of code 0x" << std::hex << code << " gave 0x" << got;
    }
  }
}

// Every code decodes to exactly the reference value (bit-exact, so -0 is told from +0); NaN codes
// decode to a NaN with the code's sign.
template <typename DecodeFn>
void CheckDecodeAll(const FormatSpec& f, DecodeFn decode) {
  int failures = 0;
  for (uint32_t code = 0; code < (1u << CodeBits(f)) && failures < 10; ++code) {
    const double ref = RefDecode(f, code);
    const float got = decode(code);
    const bool ok = std::isnan(ref) ? (std::isnan(got) && std::signbit(got) == std::signbit(ref))
                                    : Bits(got) == Bits(static_cast<float>(ref));
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "decode(0x" << std::hex << code << ") = " << got << ", want " << ref;
    }
  }
}

// Sweeps `n` sampled floats comparing `encode` with the nearest-value oracle.
template <typename EncodeFn>
void CheckRandomSweep(const FormatSpec& f, const Table& t, EncodeFn encode, FloatSampler sampler,
                      int n) {
  int failures = 0;
  for (int i = 0; i < n && failures < 10; ++i) {
    const float x = sampler.Next();
    const uint32_t want = RefEncode(f, t, x);
    const uint32_t got = encode(x);
    if (got != want) {
      ++failures;
      ADD_FAILURE() << "encode(" << x << " = bits 0x" << std::hex << Bits(x) << ") = 0x" << got
                    << ", oracle 0x" << want;
    }
  }
}

}  // namespace tessera::numeric::oracle

#endif  // TESSERA_TESTS_KERNELS_NUMERIC_NUMERIC_ORACLE_H_
