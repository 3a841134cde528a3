// Highway implementation of half_convert.h; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/half_convert.h"

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/half_convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/numeric/half.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace {

// dst[i] = scalar(code i) for n codes at src, `lanes` of them at a time through vector(u32 lanes
// holding the codes) -> f32 bits.
template <class VectorOp, class ScalarOp>
HWY_INLINE void Convert(const uint8_t* src, int64_t n, float* dst, VectorOp vector,
                        ScalarOp scalar) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<uint16_t, decltype(d)> d16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto h =
        hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(src + 2 * i)));
    hn::StoreU(hn::BitCast(d, vector(h)), d, dst + i);
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = scalar(h);
  }
}

}  // namespace

void ConvertF16ToF32Impl(const uint8_t* src, int64_t n, float* dst) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  Convert(
      src, n, dst,
      [&](auto h) {
        const auto mag = hn::And(h, hn::Set(du, 0x7FFFu));
        // Finite codes: the magnitude bits moved into f32's fields read as a number 2^-112 times
        // the value (f16 subnormals land on f32 subnormals), so one multiply by 2^112 is exact.
        const auto finite = hn::BitCast(
            du, hn::Mul(hn::BitCast(d, hn::ShiftLeft<13>(mag)), hn::Set(d, 5.192296858534828e33f)));
        // inf and NaN: the all-ones exponent and the payload, as it is.
        const auto special = hn::Or(hn::ShiftLeft<13>(mag), hn::Set(du, 0x7F800000u));
        // Magnitudes fit a signed lane, which x86 compares natively.
        const auto is_special = hn::RebindMask(du, hn::BitCast(di, mag) > hn::Set(di, 0x7BFF));
        const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
        return hn::Or(hn::IfThenElse(is_special, special, finite), sign);
      },
      numeric::HalfToFloat);
}

void ConvertBf16ToF32Impl(const uint8_t* src, int64_t n, float* dst) {
  Convert(
      src, n, dst, [](auto h) { return hn::ShiftLeft<16>(h); }, numeric::Bf16ToFloat);
}

namespace {

// dst[i] = scalar(src[i]) for n floats, `lanes` at a time through vector(u32 lanes holding the
// f32 bits) -> u32 lanes holding the 16-bit codes.
template <class VectorOp, class ScalarOp>
HWY_INLINE void Narrow(const float* src, int64_t n, uint16_t* dst, VectorOp vector,
                       ScalarOp scalar) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint16_t, decltype(d)> d16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto codes = vector(hn::BitCast(du, hn::LoadU(d, src + i)));
    // Every code is below 2^16, so the signed lanes' saturating narrowing keeps it.
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, codes)), d16, dst + i);
  }
  for (; i < n; ++i) dst[i] = scalar(src[i]);
}

}  // namespace

void ConvertF32ToF16Impl(const float* src, int64_t n, uint16_t* dst) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  Narrow(
      src, n, dst,
      [&](auto bits) {
        const auto mag = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
        const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u));
        // Magnitudes fit a signed lane, which x86 compares natively.
        auto below = [&](uint32_t limit) {
          return hn::RebindMask(du,
                                hn::BitCast(di, mag) < hn::Set(di, static_cast<int32_t>(limit)));
        };
        // Normal results: rebias the exponent and round the 13 dropped bits to nearest even
        // (0xFFF plus the kept lsb; a carry out of the mantissa bumps the exponent, up to inf).
        const auto lsb = hn::And(hn::ShiftRight<13>(mag), hn::Set(du, 1u));
        const auto normal = hn::ShiftRight<13>(
            hn::Add(hn::Add(mag, hn::Set(du, 0xC8000FFFu)), lsb));  // (15 − 127) << 23, + 0xFFF
        // Below 2^-14 (f16 subnormals and zero): adding 0.5 leaves the rounded subnormal code in
        // the low mantissa bits (the FPU rounds to nearest even; 0.5's bits taken off after).
        const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(d, mag), hn::Set(d, 0.5f))),
                                 hn::Set(du, 0x3F000000u));
        // 2^16 and beyond: inf; NaN: quiet, with the payload's top ten bits.
        const auto nan =
            hn::Or(hn::Set(du, 0x7E00u), hn::And(hn::ShiftRight<13>(mag), hn::Set(du, 0x3FFu)));
        auto code = hn::IfThenElse(below(0x38800000u), sub, normal);
        code = hn::IfThenElse(below(0x47800000u), code, hn::Set(du, 0x7C00u));
        code = hn::IfThenElse(below(0x7F800001u), code, nan);
        return hn::Or(code, sign);
      },
      numeric::FloatToHalf);
}

void ConvertF32ToBf16Impl(const float* src, int64_t n, uint16_t* dst) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::RebindToSigned<decltype(d)> di;
  Narrow(
      src, n, dst,
      [&](auto bits) {
        const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
        const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), lsb));
        const auto quiet = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x0040u));
        const auto mag = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
        const auto is_nan = hn::RebindMask(du, mag > hn::Set(di, 0x7F800000));
        return hn::IfThenElse(is_nan, quiet, rounded);
      },
      numeric::FloatToBf16);
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(ConvertF16ToF32Impl);
HWY_EXPORT(ConvertBf16ToF32Impl);
HWY_EXPORT(ConvertF32ToF16Impl);
HWY_EXPORT(ConvertF32ToBf16Impl);

void ConvertF16ToF32(const uint8_t* src, int64_t n, float* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertF16ToF32Impl)(src, n, dst);
}

void ConvertBf16ToF32(const uint8_t* src, int64_t n, float* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertBf16ToF32Impl)(src, n, dst);
}

void ConvertF32ToF16(const float* src, int64_t n, uint16_t* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToF16Impl)(src, n, dst);
}

void ConvertF32ToBf16(const float* src, int64_t n, uint16_t* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertF32ToBf16Impl)(src, n, dst);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
