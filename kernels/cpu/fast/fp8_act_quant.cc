// Highway implementation of fp8_act_quant.h; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/fp8_act_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/fp8_act_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/fast/abs_max-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
// Internal linkage: other fast kernels define same-named helpers in the same target namespaces.
namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using DI = hn::RebindToSigned<DF>;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));

// E4M3 codes (in the low byte of each i32 lane) of v = x / scale:
//  * a = min(|v|, 448): the reference clamps before rounding (464 <= |v| < 480 must not reach
//    the NaN code);
//  * r = (a + C) − C with C = 2^23 · quantum, quantum = 2^(e − 3) for a in [2^e, 2^(e+1)) and at
//    least 2^-9 (the subnormal step): the add rounds a to a multiple of the quantum, to nearest
//    even, exactly as the reference's mantissa rounding; a carry to the next binade is exact too;
//  * r · 2^-120 moves r's exponent into E4M3's bias (subnormal codes land in f32 subnormals, exact
//    unless MXCSR.DAZ / FTZ are set, which tessera never does), so its bits >> 20 are the code's
//    magnitude; the sign comes from v (so −0 and negatives rounding to zero give 0x80) and NaN
//    gives 0x7F | sign.
// *decoded = DecodeE4m3(code): r with v's sign, or the quiet NaN with v's sign for the NaN code.
HWY_INLINE hn::Vec<DI> EncodeLanes(DF d, VF v, VF* decoded) {
  const DI di;
  const auto bits = hn::BitCast(di, v);
  const VF a = hn::Min(hn::Abs(v), hn::Set(d, 448.0f));
  const auto exp_bits = hn::And(hn::BitCast(di, a), hn::Set(di, 0x7F800000));
  const auto c_bits =
      hn::Max(hn::Add(exp_bits, hn::Set(di, 20 << 23)), hn::Set(di, (127 + 14) << 23));
  const VF c = hn::BitCast(d, c_bits);
  const VF r = hn::Sub(hn::Add(a, c), c);
  const VF rebiased = hn::Mul(r, hn::Set(d, 7.52316384526264e-37f));  // 2^-120
  auto mag = hn::ShiftRight<20>(hn::BitCast(di, rebiased));
  const auto nan = hn::RebindMask(di, hn::IsNaN(v));
  mag = hn::IfThenElse(nan, hn::Set(di, 0x7F), mag);
  const auto sign_bit = hn::And(bits, hn::Set(di, static_cast<int32_t>(0x80000000u)));
  *decoded = hn::BitCast(
      d, hn::Or(hn::IfThenElse(nan, hn::Set(di, 0x7FC00000), hn::BitCast(di, r)), sign_bit));
  const hn::RebindToUnsigned<DF> du;
  return hn::Or(mag, hn::BitCast(di, hn::ShiftRight<24>(hn::BitCast(du, sign_bit))));
}

// q[i] = code of x[i] / scale and, when `decoded` is not null, decoded[i] = its value.
HWY_INLINE void EncodeDivide(const float* x, int64_t n, float scale, uint8_t* q, float* decoded) {
  const DF d;
  const hn::Rebind<uint8_t, DF> d8;
  const VF s = hn::Set(d, scale);
  VF value;
  int64_t i = 0;
  for (; i + kN <= n; i += kN) {
    // Codes are 0..255: the saturating i32 -> u8 demotion keeps them.
    hn::StoreU(hn::DemoteTo(d8, EncodeLanes(d, hn::Div(hn::LoadU(d, x + i), s), &value)), d8,
               q + i);
    if (decoded != nullptr) hn::StoreU(value, d, decoded + i);
  }
  if (i < n) {
    HWY_ALIGN float t[kN] = {};
    HWY_ALIGN uint8_t out[kN];
    const size_t rem = static_cast<size_t>(n - i);
    std::memcpy(t, x + i, rem * sizeof(float));
    hn::StoreU(hn::DemoteTo(d8, EncodeLanes(d, hn::Div(hn::Load(d, t), s), &value)), d8, out);
    std::memcpy(q + i, out, rem);
    if (decoded != nullptr) {
      hn::Store(value, d, t);
      std::memcpy(decoded + i, t, rem * sizeof(float));
    }
  }
}

}  // namespace

void FastEncodeE4m3DivideImpl(const float* x, int64_t n, float scale, uint8_t* q, float* decoded) {
  EncodeDivide(x, n, scale, q, decoded);
}

void FastQuantizeFp8PerTokenImpl(const float* x, int64_t rows, int64_t k, const float* scale_ub,
                                 float min_scale, uint8_t* q, float* scales, float* decoded) {
  for (int64_t m = 0; m < rows; ++m) {
    float a = AbsMaxSkippingNan(x + m * k, k);
    if (scale_ub != nullptr) a = std::min(a, *scale_ub);
    float s = std::max(a / 448.0f, min_scale);
    if (s == 0.0f) s = 1.0f;
    scales[m] = s;
    EncodeDivide(x + m * k, k, s, q + m * k, decoded == nullptr ? nullptr : decoded + m * k);
  }
}

void FastQuantizeFp8PerTokenGroupImpl(const float* x, int64_t rows, int64_t k, int64_t group_size,
                                      float eps, uint8_t* q, float* scales, float* decoded) {
  const int64_t groups = (k + group_size - 1) / group_size;
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * group_size, len = std::min(group_size, k - begin);
      const float* xg = x + m * k + begin;
      float s = std::max(AbsMaxSkippingNan(xg, len), eps) / 448.0f;
      if (s == 0.0f) s = 1.0f;
      scales[m * groups + g] = s;
      EncodeDivide(xg, len, s, q + m * k + begin,
                   decoded == nullptr ? nullptr : decoded + m * k + begin);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(FastEncodeE4m3DivideImpl);
HWY_EXPORT(FastQuantizeFp8PerTokenImpl);
HWY_EXPORT(FastQuantizeFp8PerTokenGroupImpl);

void FastEncodeE4m3Divide(const float* x, int64_t n, float scale, uint8_t* q, float* decoded) {
  HWY_DYNAMIC_DISPATCH(FastEncodeE4m3DivideImpl)(x, n, scale, q, decoded);
}

void FastQuantizeFp8PerToken(const float* x, int64_t rows, int64_t k, const float* scale_ub,
                             float min_scale, uint8_t* q, float* scales, float* decoded) {
  HWY_DYNAMIC_DISPATCH(FastQuantizeFp8PerTokenImpl)
  (x, rows, k, scale_ub, min_scale, q, scales, decoded);
}

void FastQuantizeFp8PerTokenGroup(const float* x, int64_t rows, int64_t k, int64_t group_size,
                                  float eps, uint8_t* q, float* scales, float* decoded) {
  HWY_DYNAMIC_DISPATCH(FastQuantizeFp8PerTokenGroupImpl)
  (x, rows, k, group_size, eps, q, scales, decoded);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
