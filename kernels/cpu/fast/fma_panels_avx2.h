// The 16-column panel kernels on CPUs without AVX-512 (AVX2 + FMA + F16C: Zen 2 / Zen 3, Intel
// client cores): the same panels the AVX-512 kernels read, multiplied in f32 with 256-bit FMA, one
// panel as two ymm of 8 columns. Entered through the public kernels when AVX-512 is absent or
// turned off (TESSERA_CPU_ISA=avx2): F16PanelMatmul and F32PanelMatmul (float_panel_matmul.h),
// Bf16PairsFmaMatmul (bf16_dot_matmul.h) and Fp8PanelFmaMatmul (fp8_panel_matmul.h), the latter
// two defined in fma_panels_avx2.cc. The f16 / f32 ones are declared here so that tests compare
// them with their AVX-512 twins.
//
// Why: without them those layers ran row kernels: f16 / f32 FastMatmul read 21-29 GB/s at batch 1
// and reached 64-95 GFLOP/s at M = 16-128 of the ~225 the FMA units give; FP8 FastQuantMatmul
// read 12.6 GB/s at batch 1 (bench/README.md, twenty-first session).
//
// Numerics: as float_panel_matmul.h's: output (m, n) is one f32 lane, acc = fma(x[m, k], w[n, k],
// acc) for k ascending, then + bias, the same in every tile shape (6 rows × one panel here, 12
// accumulators of the 16 ymm), row count and column split. The same FMA sequence as the AVX-512
// kernels, so the two agree bit for bit.
#ifndef TESSERA_KERNELS_CPU_FAST_FMA_PANELS_AVX2_H_
#define TESSERA_KERNELS_CPU_FAST_FMA_PANELS_AVX2_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"

namespace tessera::kernels::cpu::fast::internal {

// CPUID: AVX2, FMA and F16C (what the kernels below need; not affected by TESSERA_CPU_ISA).
bool FmaPanelsAvx2Available();

// FmaPanelsAvx2Available() on a CPU without AVX-512 (or under TESSERA_CPU_ISA=avx2): where the
// public entries run these kernels (Bf16PairsFmaAvailable, Fp8PanelFmaAvailable, and the float
// panels' target).
bool FmaPanelsAvx2InUse();

// F16PanelMatmul / F32PanelMatmul's contract (float_panel_matmul.h). Require
// FmaPanelsAvx2Available().
void F16PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end);
void F32PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_FMA_PANELS_AVX2_H_
