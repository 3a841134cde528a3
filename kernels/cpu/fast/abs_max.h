// max |x| over f32 values, NaN skipped, vectorized with Highway's runtime dispatch: the amax every
// online weight quantizer (engine/quant QuantizeOnline: per tensor, row, group or block) folds as
// std::max(amax, fabs(x)) from 0, which keeps amax when x is NaN; max is exact, so any lane order
// gives the same result. The per-target body is abs_max-inl.h, shared with the FP8 activation
// quantizers.
#ifndef TESSERA_KERNELS_CPU_FAST_ABS_MAX_H_
#define TESSERA_KERNELS_CPU_FAST_ABS_MAX_H_

#include <cstdint>

namespace tessera::kernels::cpu::fast {

// max |x[i]|, i < n, skipping NaN; 0 for n = 0.
float AbsMaxSkippingNanF32(const float* x, int64_t n);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_ABS_MAX_H_
