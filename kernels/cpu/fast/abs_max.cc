// Highway dispatch of abs_max.h; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/abs_max.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/abs_max.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/cpu/fast/abs_max-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {

float AbsMaxSkippingNanF32Impl(const float* x, int64_t n) { return AbsMaxSkippingNan(x, n); }

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(AbsMaxSkippingNanF32Impl);

float AbsMaxSkippingNanF32(const float* x, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(AbsMaxSkippingNanF32Impl)(x, n);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
