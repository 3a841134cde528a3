// Shared pieces of the quantized-kernel tests: spec-derived oracles written independently of
// kernels/numeric (formats decoded from their sign/exponent/mantissa definition in double,
// encoding by exhaustive nearest-value search over the decoded table, integer rounding by floor
// and comparison), random data, a double-precision reference matmul, and the batch-invariance
// check every GEMM test runs.
//
// Tolerance of the GEMM comparisons. The reference sums exactly-representable products in double
// (53 bits), so its own error is negligible next to f32's. The kernel's f32 result for one output
// is a sum of K products, each exact or rounded once (relative error <= u = 2^-24), summed by
// DotF32 (8 interleaved sequential lanes of <= ceil(K/8) terms plus a 3-level tree) or by
// per-block partial sums followed by a sequential sum over blocks, then multiplied by at most
// two scales and offset by the bias. Every term therefore passes through at most K + 6 roundings,
// and the standard bound for floating-point summation (Higham, Accuracy and Stability of
// Numerical Algorithms, §4.2: |error| <= γ_(n-1) Σ|t_i| with γ_n = n·u/(1 − n·u)) gives
//   |y_kernel − y_ref| <= (K + 8) · u · (Σ_k |x_k · W_k| + |bias|) · (1 + 1e-6),
// which is what ExpectCloseToReference checks. It is a worst-case bound, never a fitted value:
// typical errors are orders of magnitude below it, but it cannot flake.
#ifndef TESSERA_TESTS_KERNELS_CPU_QUANT_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CPU_QUANT_TEST_UTIL_H_

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace tessera::kernels::cpu::testing {

// ---------------------------------------------------------------------------------------------
// Format oracles (quant-formats.md §2.1).

// E4M3FN: sign bit 7, exponent bits 3-6 (bias 7), mantissa bits 0-2; exponent 0 is subnormal
// m·2^-9; S.1111.111 is NaN.
inline double OracleDecodeE4m3(uint8_t code) {
  const int e = (code >> 3) & 0xF;
  const int m = code & 0x7;
  if (e == 0xF && m == 0x7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return (code & 0x80) ? -mag : mag;
}

// The E2M1 table of §2.1, literally.
inline constexpr std::array<double, 8> kE2m1Magnitudes = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

inline double OracleDecodeE2m1(uint8_t code) {
  const double mag = kE2m1Magnitudes[code & 0x7];
  return (code & 0x8) ? -mag : mag;
}

inline double OracleDecodeE8m0(uint8_t e) {
  if (e == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(e) - 127);
}

// Nearest-value search over `count` non-negative magnitudes indexed by code; ties go to the even
// code. The magnitude is clamped to the largest entry first (saturation).
template <typename Decode>
uint8_t NearestCode(double magnitude, int count, Decode decode) {
  int best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (int c = 0; c < count; ++c) {
    const double err = std::fabs(decode(c) - magnitude);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best);
}

// sat_e4m3(v): clamp to ±448, round to nearest, ties to even; sign kept (-0 -> 0x80).
inline uint8_t OracleEncodeE4m3(float v) {
  const bool negative = std::signbit(v);
  const double mag = std::fmin(std::fabs(static_cast<double>(v)), 448.0);
  // Codes 0x00..0x7E are the finite non-negative values in ascending order.
  const uint8_t code =
      NearestCode(mag, 0x7F, [](int c) { return OracleDecodeE4m3(static_cast<uint8_t>(c)); });
  return static_cast<uint8_t>(code | (negative ? 0x80 : 0x00));
}

// e2m1_rn_satfinite(v) with the sign kept (-0.1 -> code 8).
inline uint8_t OracleEncodeE2m1(float v) {
  const bool negative = std::signbit(v);
  const double mag = std::fmin(std::fabs(static_cast<double>(v)), 6.0);
  const uint8_t code = NearestCode(mag, 8, [](int c) { return kE2m1Magnitudes[c]; });
  return static_cast<uint8_t>(code | (negative ? 0x8 : 0x0));
}

// Round half to even, by floor and comparison.
inline double OracleRoundHalfEven(double v) {
  const double f = std::floor(v);
  const double frac = v - f;
  if (frac > 0.5) return f + 1.0;
  if (frac < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

inline int8_t OracleSatI8(double v) {
  if (std::isnan(v)) return 0;
  return static_cast<int8_t>(std::fmin(127.0, std::fmax(-128.0, v)));
}

// ---------------------------------------------------------------------------------------------
// Random data.

inline std::vector<float> RandomFloats(std::mt19937& rng, int64_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& f : v) f = dist(rng);
  return v;
}

// Activations with a spread of magnitudes (x · 2^e, e in [-6, 6]) and some exact zeros, so that
// scales, subnormal codes and saturation all get exercised.
inline std::vector<float> RandomActivations(std::mt19937& rng, int64_t count) {
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-6, 6);
  std::uniform_int_distribution<int> zero(0, 15);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& f : v) f = zero(rng) == 0 ? 0.0f : std::ldexp(mant(rng), expo(rng));
  return v;
}

inline std::vector<uint8_t> RandomBytes(std::mt19937& rng, int64_t count, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<uint8_t> v(static_cast<size_t>(count));
  for (uint8_t& b : v) b = static_cast<uint8_t>(dist(rng));
  return v;
}

// Random E4M3 codes, NaN codes excluded.
inline std::vector<uint8_t> RandomE4m3Codes(std::mt19937& rng, int64_t count) {
  std::vector<uint8_t> v = RandomBytes(rng, count, 0, 255);
  for (uint8_t& b : v) {
    if ((b & 0x7F) == 0x7F) b = static_cast<uint8_t>(b ^ 0x01);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Reference matmul and comparison.

// y_ref[m, n] = Σ_k x[m, k] · w[n, k] (+ bias[n]) in double, and the matching Σ|x·w| + |bias|.
struct Reference {
  std::vector<double> y;
  std::vector<double> abs_sum;
};

inline Reference ReferenceMatmul(const std::vector<double>& x, const std::vector<double>& w,
                                 const float* bias, int64_t rows, int64_t n_total, int64_t k) {
  Reference r;
  r.y.assign(static_cast<size_t>(rows * n_total), 0.0);
  r.abs_sum.assign(static_cast<size_t>(rows * n_total), 0.0);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t n = 0; n < n_total; ++n) {
      double acc = 0.0;
      double abs = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double t = x[m * k + i] * w[n * k + i];
        acc += t;
        abs += std::fabs(t);
      }
      if (bias != nullptr) {
        acc += bias[n];
        abs += std::fabs(bias[n]);
      }
      r.y[m * n_total + n] = acc;
      r.abs_sum[m * n_total + n] = abs;
    }
  }
  return r;
}

inline void ExpectCloseToReference(const std::vector<float>& y, const Reference& ref, int64_t k) {
  ASSERT_EQ(y.size(), ref.y.size());
  const double u = std::ldexp(1.0, -24);
  for (size_t i = 0; i < y.size(); ++i) {
    const double tol = static_cast<double>(k + 8) * u * ref.abs_sum[i] * (1.0 + 1e-6);
    ASSERT_LE(std::fabs(static_cast<double>(y[i]) - ref.y[i]), tol)
        << "output " << i << " kernel " << y[i] << " reference " << ref.y[i];
  }
}

// ---------------------------------------------------------------------------------------------
// Batch invariance. `run(row_begin, rows, n_begin, n_end, y)` computes rows
// [row_begin, row_begin + rows) for columns [n_begin, n_end) into y ([rows, n_total]) and
// returns the kernel's success flag. Checks that every row computed alone, with the columns split
// in two ranges, equals bit for bit the same row computed inside the whole batch.
using RunFn = std::function<bool(int64_t, int64_t, int64_t, int64_t, float*)>;

inline void ExpectBatchInvariant(const RunFn& run, int64_t batch, int64_t n_total) {
  std::vector<float> full(static_cast<size_t>(batch * n_total), -1.0f);
  ASSERT_TRUE(run(0, batch, 0, n_total, full.data()));
  const int64_t split = n_total / 3;
  for (int64_t r = 0; r < batch; ++r) {
    std::vector<float> one(static_cast<size_t>(n_total), -2.0f);
    ASSERT_TRUE(run(r, 1, split, n_total, one.data()));
    ASSERT_TRUE(run(r, 1, 0, split, one.data()));
    for (int64_t n = 0; n < n_total; ++n) {
      ASSERT_EQ(std::bit_cast<uint32_t>(one[n]), std::bit_cast<uint32_t>(full[r * n_total + n]))
          << "row " << r << " column " << n;
    }
  }
}

}  // namespace tessera::kernels::cpu::testing

#endif  // TESSERA_TESTS_KERNELS_CPU_QUANT_TEST_UTIL_H_
