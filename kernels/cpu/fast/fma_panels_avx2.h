// The 16-column panel kernels on CPUs without AVX-512 (AVX2 + FMA + F16C: Zen 2 / Zen 3, Intel
// client cores): the same panels the AVX-512 kernels read, multiplied in f32 with 256-bit FMA, one
// panel as two ymm of 8 columns. Entered through the public kernels (F16PanelMatmul and
// F32PanelMatmul of float_panel_matmul.h) when AVX-512 is absent or turned off
// (TESSERA_CPU_ISA=avx2); declared here so that tests compare them with their AVX-512 twins.
//
// Why: without them DenseLinear ran f16 / f32 weights through FastMatmul's row kernel, which read
// 22-27 GB/s at batch 1 against a 35-42 GB/s triad and reached 76-104 GFLOP/s at M = 16-128 of
// the ~225 the FMA units give (bench/README.md, twenty-first session).
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

// F16PanelMatmul / F32PanelMatmul's contract (float_panel_matmul.h). Require
// FmaPanelsAvx2Available().
void F16PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end);
void F32PanelMatmulAvx2(const FastWeights& w, const float* x, int64_t rows, const float* bias,
                        float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu::fast::internal

#endif  // TESSERA_KERNELS_CPU_FAST_FMA_PANELS_AVX2_H_
