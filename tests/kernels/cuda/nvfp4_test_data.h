// Activation rows for the NVFP4 quantizer tests whose codes depend on the exact f32 operation
// order of the reference formula: each block's amax sits within a few ulps of an E4M3 rounding
// midpoint of the scale, placed so that (g * amax) / 6 and g * (amax / 6) round to different
// scale codes, and its other elements sit at E2M1 midpoints of the codes where v * (g / sf) and
// (v * g) / sf round apart. Random data almost never lands there, so without these a quantizer
// that reassociated the formula (or a compiler that contracted it) could still pass.
#ifndef TESSERA_TESTS_KERNELS_CUDA_NVFP4_TEST_DATA_H_
#define TESSERA_TESTS_KERNELS_CUDA_NVFP4_TEST_DATA_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

namespace tessera::kernels::cuda::testing {

struct OrderSensitiveRows {
  int64_t rows = 0, k = 0;
  std::vector<float> x;              // [rows, k]
  std::vector<float> global_scales;  // [rows]: one g per row (pass with row stride 1)
  int64_t scale_order_blocks = 0;    // blocks where the scale's operation order matters
  int64_t code_order_elements = 0;   // elements where the code's operation order matters
};

// `rows` rows of k = 16 * blocks_per_row; every block of a row shares the row's g.
inline OrderSensitiveRows MakeOrderSensitiveRows(int64_t rows, int64_t blocks_per_row,
                                                 uint32_t seed) {
  OrderSensitiveRows out;
  out.rows = rows;
  out.k = 16 * blocks_per_row;
  out.x.assign(rows * out.k, 0.0f);
  out.global_scales.resize(rows);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> log_g(-6.0f, 10.0f);
  const float e2m1_midpoints[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  for (int64_t m = 0; m < rows; ++m) {
    const float g = std::exp2(log_g(rng));
    out.global_scales[m] = g;
    for (int64_t b = 0; b < blocks_per_row; ++b) {
      float* v = &out.x[m * out.k + b * 16];
      // The scale: amax near a midpoint between E4M3 codes c and c + 1.
      float amax = 0.0f;
      for (int attempt = 0; attempt < 64 && amax == 0.0f; ++attempt) {
        const uint8_t c = static_cast<uint8_t>(8 + rng() % 110);  // normal codes 8..117
        const float mid = (numeric::DecodeE4m3(c) + numeric::DecodeE4m3(c + 1)) / 2;
        float a = mid * 6.0f / g;
        a = std::nextafter(a, 0.0f);
        a = std::nextafter(a, 0.0f);
        a = std::nextafter(a, 0.0f);
        for (int step = 0; step < 7; ++step, a = std::nextafter(a, kInf)) {
          if (numeric::EncodeUe4m3(g * a / 6.0f) != numeric::EncodeUe4m3(g * (a / 6.0f))) {
            amax = a;
            ++out.scale_order_blocks;
            break;
          }
        }
      }
      if (amax == 0.0f) amax = 1.0f;  // no sensitive value found: an ordinary block
      v[0] = (rng() & 1) ? amax : -amax;
      // The codes: elements near E2M1 midpoints of x * (g / sf), below amax in magnitude.
      const float sf = numeric::DecodeUe4m3(numeric::EncodeUe4m3(g * amax / 6.0f));
      const float multiplier = g / sf;
      for (int j = 1; j < 16; ++j) {
        const float t = e2m1_midpoints[rng() % 7];
        float e = t / multiplier;
        e = std::nextafter(std::nextafter(std::nextafter(e, 0.0f), 0.0f), 0.0f);
        float pick = t / multiplier;
        for (int step = 0; step < 7; ++step, e = std::nextafter(e, kInf)) {
          if (numeric::EncodeE2m1(e * multiplier) != numeric::EncodeE2m1((e * g) / sf)) {
            pick = e;
            ++out.code_order_elements;
            break;
          }
        }
        if (!(std::fabs(pick) < amax)) pick = amax / 2;
        v[j] = (rng() & 1) ? pick : -pick;
      }
    }
  }
  return out;
}

}  // namespace tessera::kernels::cuda::testing

#endif  // TESSERA_TESTS_KERNELS_CUDA_NVFP4_TEST_DATA_H_
