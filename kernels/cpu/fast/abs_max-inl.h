// max |x| over a range, NaN skipped, for the Highway quantizers (FP8 activations, FP4 weights):
// the scalar references fold std::max(amax, fabs(x)), which keeps amax when x is NaN, and max is
// exact, so any lane order gives their result. Highway's per-target header pattern: include it
// after hwy/highway.h from a file compiled by foreach_target.h; each target gets its own copy.
#if defined(TESSERA_KERNELS_CPU_FAST_ABS_MAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TESSERA_KERNELS_CPU_FAST_ABS_MAX_INL_H_
#undef TESSERA_KERNELS_CPU_FAST_ABS_MAX_INL_H_
#else
#define TESSERA_KERNELS_CPU_FAST_ABS_MAX_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {

HWY_INLINE float AbsMaxSkippingNan(const float* x, int64_t n) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  auto m = hn::Zero(d);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    m = hn::Max(m, hn::IfThenZeroElse(hn::IsNaN(v), hn::Abs(v)));
  }
  float amax = hn::GetLane(hn::MaxOfLanes(d, m));
  for (; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  return amax;
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#endif  // TESSERA_KERNELS_CPU_FAST_ABS_MAX_INL_H_
