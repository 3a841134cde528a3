// Highway implementation of fp4_weight_quant.h; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/fp4_weight_quant.h"

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/fp4_weight_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/fast/abs_max-inl.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
// Internal linkage: other fast kernels define same-named helpers in the same target namespaces.
namespace {

#if HWY_TARGET == HWY_SCALAR
// One lane cannot hold a code pair; the scalar target keeps the reference loop.
void EncodeDivide(const float* x, int64_t n, float denominator, uint8_t* packed) {
  for (int64_t i = 0; i < n; i += 2) {
    packed[i / 2] = numeric::PackE2m1Pair(numeric::EncodeE2m1(x[i] / denominator),
                                          numeric::EncodeE2m1(x[i + 1] / denominator));
  }
}
#else
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using DI = hn::RebindToSigned<DF>;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));

// E2M1 codes (0..15 in each i32 lane) of v. The magnitude code counts the rounding boundaries
// |v| has reached: 0.25, 1.25, 2.5 and 5 only when passed (their ties go down to the even codes
// 0, 2, 4, 6), 0.75, 1.75 and 3.5 when reached (their ties go up to the even codes 2, 4, 6), so
// everything from 5 on (inf too) saturates at code 7 (6.0). The sign is v's (negatives that
// round to zero give 8, −0); NaN reaches no boundary and takes code 7 without a sign, as the
// reference and the CUDA conversion do.
HWY_INLINE hn::Vec<DI> E2m1Codes(DF d, VF v) {
  const DI di;
  const VF a = hn::Abs(v);
  auto count = hn::Zero(di);
  const auto reached = [&](auto mask) {
    count = hn::Sub(count, hn::VecFromMask(di, hn::RebindMask(di, mask)));
  };
  reached(a > hn::Set(d, 0.25f));
  reached(a >= hn::Set(d, 0.75f));
  reached(a > hn::Set(d, 1.25f));
  reached(a >= hn::Set(d, 1.75f));
  reached(a > hn::Set(d, 2.5f));
  reached(a >= hn::Set(d, 3.5f));
  reached(a > hn::Set(d, 5.0f));
  const hn::RebindToUnsigned<DF> du;
  const auto sign =
      hn::BitCast(di, hn::And(hn::ShiftRight<28>(hn::BitCast(du, v)), hn::Set(du, 8u)));
  return hn::IfThenElse(hn::RebindMask(di, hn::IsNaN(v)), hn::Set(di, 7), hn::Or(count, sign));
}

// The kN codes as kN / 2 bytes at out, element 2j in the low nibble: the codes narrowed to bytes
// are read as 16-bit lanes (even code in the low byte), and lane | lane >> 4 puts the odd code
// above the even one.
HWY_INLINE void StorePairs(hn::Vec<DI> codes, uint8_t* out) {
  const hn::Rebind<uint8_t, DF> d8;
  const hn::Repartition<int16_t, decltype(d8)> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8_pairs;
  const auto lanes = hn::BitCast(d16, hn::DemoteTo(d8, codes));
  const auto pairs = hn::And(hn::Or(lanes, hn::ShiftRight<4>(lanes)), hn::Set(d16, 0xFF));
  hn::StoreU(hn::DemoteTo(d8_pairs, pairs), d8_pairs, out);
}

void EncodeDivide(const float* x, int64_t n, float denominator, uint8_t* packed) {
  const DF d;
  const VF den = hn::Set(d, denominator);
  int64_t i = 0;
  for (; i + kN <= n; i += kN)
    StorePairs(E2m1Codes(d, hn::Div(hn::LoadU(d, x + i), den)), packed + i / 2);
  if (i < n) {  // n and kN are even, so the tail is whole pairs
    HWY_ALIGN float t[kN] = {};
    uint8_t out[kN / 2];
    const size_t rem = static_cast<size_t>(n - i);
    std::memcpy(t, x + i, rem * sizeof(float));
    StorePairs(E2m1Codes(d, hn::Div(hn::Load(d, t), den)), out);
    std::memcpy(packed + i / 2, out, rem / 2);
  }
}
#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace

void FastEncodeE2m1DivideImpl(const float* x, int64_t n, float denominator, uint8_t* packed) {
  EncodeDivide(x, n, denominator, packed);
}

void FastQuantizeNvfp4WeightsImpl(const float* w, int64_t rows, int64_t k, float global_scale,
                                  uint8_t* packed, uint8_t* block_scales) {
  constexpr int64_t kBlock = 16;
  const int64_t blocks = k / kBlock;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* x = w + r * k + b * kBlock;
      uint8_t sf = numeric::EncodeUe4m3(AbsMaxSkippingNan(x, kBlock) / (6.0f * global_scale));
      if (numeric::DecodeE4m3(sf) == 0) sf = numeric::EncodeUe4m3(1.0f);  // all-zero block
      block_scales[r * blocks + b] = sf;
      EncodeDivide(x, kBlock, numeric::DecodeE4m3(sf) * global_scale,
                   packed + r * (k / 2) + b * (kBlock / 2));
    }
  }
}

void FastQuantizeMxfp4WeightsImpl(const float* w, int64_t rows, int64_t k, uint8_t* packed,
                                  uint8_t* block_scales) {
  constexpr int64_t kBlock = 32;
  const int64_t blocks = k / kBlock;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* x = w + r * k + b * kBlock;
      const uint8_t e =
          numeric::EncodeE8m0Floor(AbsMaxSkippingNan(x, kBlock), numeric::kE2m1EmaxPow2);
      block_scales[r * blocks + b] = e;
      EncodeDivide(x, kBlock, numeric::DecodeE8m0(e), packed + r * (k / 2) + b * (kBlock / 2));
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(FastEncodeE2m1DivideImpl);
HWY_EXPORT(FastQuantizeNvfp4WeightsImpl);
HWY_EXPORT(FastQuantizeMxfp4WeightsImpl);

void FastEncodeE2m1Divide(const float* x, int64_t n, float denominator, uint8_t* packed) {
  HWY_DYNAMIC_DISPATCH(FastEncodeE2m1DivideImpl)(x, n, denominator, packed);
}

void FastQuantizeNvfp4Weights(const float* w, int64_t rows, int64_t k, float global_scale,
                              uint8_t* packed, uint8_t* block_scales) {
  HWY_DYNAMIC_DISPATCH(FastQuantizeNvfp4WeightsImpl)
  (w, rows, k, global_scale, packed, block_scales);
}

void FastQuantizeMxfp4Weights(const float* w, int64_t rows, int64_t k, uint8_t* packed,
                              uint8_t* block_scales) {
  HWY_DYNAMIC_DISPATCH(FastQuantizeMxfp4WeightsImpl)(w, rows, k, packed, block_scales);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
