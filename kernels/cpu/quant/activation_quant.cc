#include "kernels/cpu/quant/activation_quant.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/hd.h"

namespace tessera::kernels::cpu {
namespace {

// max |x| over n elements. NaN elements are skipped (std::max keeps the running value when the
// comparison is false), which is what fmaxf does in the CUDA reductions.
float AbsMax(const float* x, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  return amax;
}

// cvt.rni.sat.s32.f32: round half to even, saturate to int32, NaN -> 0. std::nearbyint rounds in
// the current rounding mode, which is round-to-nearest-even unless a caller changed it; ROCm's
// vLLM path relies on the same thing.
int32_t RoundToInt32Sat(float v) {
  if (numeric::IsNanBits(numeric::FloatToBits(v))) return 0;
  const float r = std::nearbyint(v);
  if (r >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  if (r <= -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(r);
}

// cvt.sat.s8.s32 applied to (q + azp), computed in 64 bits so that the sum cannot overflow.
int8_t SaturateToInt8(int64_t v) { return static_cast<int8_t>(std::clamp<int64_t>(v, -128, 127)); }

// cvt.rni.sat.s8.f32: round half to even, then saturate to [-128, 127]; NaN -> 0.
int8_t RoundToInt8Sat(float v) { return SaturateToInt8(RoundToInt32Sat(v)); }

}  // namespace

void QuantizeFp8Static(const float* x, int64_t count, float scale, Fp8ScaleOp op, uint8_t* q) {
  if (op == Fp8ScaleOp::kMultiplyByReciprocal) {
    const float inverted_scale = 1.0f / scale;
    for (int64_t i = 0; i < count; ++i) q[i] = numeric::EncodeE4m3(x[i] * inverted_scale);
  } else {
    for (int64_t i = 0; i < count; ++i) q[i] = numeric::EncodeE4m3(x[i] / scale);
  }
}

void QuantizeFp8PerToken(const float* x, int64_t rows, int64_t k, const float* scale_ub,
                         float min_scale, uint8_t* q, float* scales) {
  for (int64_t m = 0; m < rows; ++m) {
    const float* xr = x + m * k;
    float a = AbsMax(xr, k);
    if (scale_ub != nullptr) a = std::min(a, *scale_ub);
    float s = std::max(a / kFp8E4m3Max, min_scale);
    if (s == 0.0f) s = 1.0f;  // Only reachable with min_scale = 0 and an all-zero row.
    scales[m] = s;
    uint8_t* qr = q + m * k;
    for (int64_t i = 0; i < k; ++i) qr[i] = numeric::EncodeE4m3(xr[i] / s);
  }
}

void QuantizeFp8PerTokenGroup(const float* x, int64_t rows, int64_t k, int64_t group_size,
                              float eps, uint8_t* q, float* scales) {
  const int64_t groups = NumGroups(k, group_size);
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * group_size;
      const int64_t len = std::min(group_size, k - begin);
      const float* xg = x + m * k + begin;
      // vLLM seeds the reduction with eps, i.e. max(amax, eps).
      float s = std::max(AbsMax(xg, len), eps) / kFp8E4m3Max;
      if (s == 0.0f) s = 1.0f;  // Only reachable with eps = 0 and an all-zero group.
      scales[m * groups + g] = s;
      uint8_t* qg = q + m * k + begin;
      for (int64_t i = 0; i < len; ++i) qg[i] = numeric::EncodeE4m3(xg[i] / s);
    }
  }
}

void QuantizeInt8PerTokenSymmetric(const float* x, int64_t rows, int64_t k, int8_t* q,
                                   float* scales) {
  for (int64_t m = 0; m < rows; ++m) {
    const float* xr = x + m * k;
    int8_t* qr = q + m * k;
    const float amax = AbsMax(xr, k);
    scales[m] = amax / 127.0f;
    if (amax == 0.0f) {
      std::fill(qr, qr + k, int8_t{0});
      continue;
    }
    const float multiplier = 127.0f / amax;
    for (int64_t i = 0; i < k; ++i) qr[i] = RoundToInt8Sat(xr[i] * multiplier);
  }
}

void QuantizeInt8PerTokenAsymmetric(const float* x, int64_t rows, int64_t k, int8_t* q,
                                    float* scales, int32_t* azps) {
  for (int64_t m = 0; m < rows; ++m) {
    const float* xr = x + m * k;
    // The vLLM seeds: numeric_limits<float>::min() is FLT_MIN, the smallest positive normal.
    float max_val = std::numeric_limits<float>::min();
    float min_val = std::numeric_limits<float>::max();
    for (int64_t i = 0; i < k; ++i) {
      max_val = std::max(max_val, xr[i]);
      min_val = std::min(min_val, xr[i]);
    }
    float scale = (max_val - min_val) / 255.0f;
    if (!(scale > 0.0f)) {
      // All elements equal one positive value: vLLM would divide by zero. Use [0, max].
      min_val = 0.0f;
      scale = max_val / 255.0f;
    }
    // rne, saturating instead of overflowing when min is far from zero relative to the range.
    const int32_t azp = RoundToInt32Sat(-128.0f - min_val / scale);
    scales[m] = scale;
    azps[m] = azp;
    int8_t* qr = q + m * k;
    for (int64_t i = 0; i < k; ++i) {
      qr[i] = SaturateToInt8(static_cast<int64_t>(RoundToInt32Sat(xr[i] / scale)) + azp);
    }
  }
}

void QuantizeInt8Static(const float* x, int64_t count, float scale, int32_t azp, int8_t* q) {
  for (int64_t i = 0; i < count; ++i) {
    q[i] = SaturateToInt8(static_cast<int64_t>(RoundToInt32Sat(x[i] / scale)) + azp);
  }
}

bool QuantizeNvfp4(const float* x, int64_t rows, int64_t k, const float* global_scale,
                   int64_t global_scale_row_stride, uint8_t* q_packed, uint8_t* block_scales) {
  if (k % kNvfp4BlockSize != 0) return false;
  const int64_t blocks = k / kNvfp4BlockSize;
  for (int64_t m = 0; m < rows; ++m) {
    const float g = global_scale[m * global_scale_row_stride];
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = x + m * k + b * kNvfp4BlockSize;
      const float amax = AbsMax(xb, kNvfp4BlockSize);
      const uint8_t sf_code = numeric::EncodeUe4m3(g * amax / numeric::kE2m1Max);
      block_scales[m * blocks + b] = sf_code;
      const float sf = numeric::DecodeUe4m3(sf_code);
      uint8_t* qb = q_packed + m * (k / 2) + b * (kNvfp4BlockSize / 2);
      if (sf == 0.0f) {
        std::fill(qb, qb + kNvfp4BlockSize / 2, uint8_t{0});
        continue;
      }
      const float multiplier = g / sf;
      for (int64_t j = 0; j < kNvfp4BlockSize; j += 2) {
        qb[j / 2] = numeric::PackE2m1Pair(numeric::EncodeE2m1(xb[j] * multiplier),
                                          numeric::EncodeE2m1(xb[j + 1] * multiplier));
      }
    }
  }
  return true;
}

float Nvfp4DynamicGlobalScale(const float* x, int64_t count) {
  const float amax = AbsMax(x, count);
  if (amax == 0.0f) return 1.0f;
  return kNvfp4GlobalScaleNumerator / amax;
}

void Nvfp4DynamicGlobalScalePerRow(const float* x, int64_t rows, int64_t k, float* global_scales) {
  for (int64_t m = 0; m < rows; ++m) global_scales[m] = Nvfp4DynamicGlobalScale(x + m * k, k);
}

}  // namespace tessera::kernels::cpu
