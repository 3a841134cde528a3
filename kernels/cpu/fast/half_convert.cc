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

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(ConvertF16ToF32Impl);
HWY_EXPORT(ConvertBf16ToF32Impl);

void ConvertF16ToF32(const uint8_t* src, int64_t n, float* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertF16ToF32Impl)(src, n, dst);
}

void ConvertBf16ToF32(const uint8_t* src, int64_t n, float* dst) {
  HWY_DYNAMIC_DISPATCH(ConvertBf16ToF32Impl)(src, n, dst);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
