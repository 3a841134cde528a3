// f16 and f32 weights on AVX-512 or AVX2 (+ FMA, F16C), multiplied in f32 with FMA: the kernel
// DenseLinear runs for them, decode and prefill alike, on f32 activations (GGUF F16 / F32
// checkpoints, F32 safetensors, and any F16 tensor a precision plan keeps, such as the lm_head of
// an FP8 or NVFP4 plan over an F16 model). Without AVX-512 (or under TESSERA_CPU_ISA=avx2) the
// same panels run avx2_panels.h's 256-bit kernels, which give the same bits.
//
// Why: the row kernel (FastMatmul kF16 / kF32) reads four weight rows at a time, four streams that
// each end after one or two 4 KiB pages at K = 2048, and streamed ~17-27 GB/s (f16) at batch 1
// against a 33-37 GB/s triad, and its prefill tiles reach ~160 GFLOP/s (f32) of the ~230 the FMA
// units give; the bf16 panels beside it (bf16_dot_matmul.h) read 31-35. So f16 and f32 weights get
// the same layout and the same tile driver (panel_gemm.h).
//
// Layout (RepackF16Panels / RepackF32Panels, at load): 16-column panels, K-major: panel p holds,
// for each k, the 16 columns' w[n, k] as one vector (f16: 32 bytes, two k per cache line; f32: one
// 64-byte line); columns past N, and the k past an odd K that pads an f16 panel to whole lines,
// are zero. One `vcvtph2ps` widens a k's 16 f16 weights exactly to f32 (f32 weights load as they
// are), one FMA multiplies a broadcast activation into 16 outputs.
//
// Numerics and batch invariance: output (m, n) is one f32 lane, acc = fma(x[m, k], w[n, k], acc)
// for k ascending, then + bias: within (K + 1)·u·Σ|x·w| of the exact sum (u = 2^-24), and the same
// sequence for every row count, tile shape and column split (panel_gemm.h), so a row's result is
// bit-identical alone (GEMV) or in a prefill batch. The row kernel sums in another order, so the
// two agree to rounding, not bit for bit; DenseLinear uses one of them for a layer, never both.
#ifndef TESSERA_KERNELS_CPU_FAST_FLOAT_PANEL_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_FLOAT_PANEL_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"

namespace tessera::kernels::cpu::fast {

// Whether this CPU runs F16PanelMatmul and F32PanelMatmul (CPUID: AVX-512 F, BW and VL, or AVX2,
// FMA and F16C).
bool F16PanelAvailable();
inline bool F32PanelAvailable() { return F16PanelAvailable(); }

// "avx512" or "avx2": the kernels F16PanelMatmul, F32PanelMatmul and Bf16PairsFmaMatmul run here
// (for plan labels).
const char* FloatPanelTargetName();

// Bytes of the panel layout of an [n, k] f16 / f32 matrix (64-byte aligned panels).
int64_t F16PanelsBytes(int64_t n, int64_t k);
int64_t F32PanelsBytes(int64_t n, int64_t k);

// Repacks `src` (kF16 / kF32, row n at src.data + n · src.row_stride) into `dst`
// (F16PanelsBytes / F32PanelsBytes(n, k) bytes, 64-byte aligned); returns the kF16Panels /
// kF32Panels view of it.
FastWeights RepackF16Panels(const FastWeights& src, uint8_t* dst);
FastWeights RepackF32Panels(const FastWeights& src, uint8_t* dst);

// y[m, n] = Σ_k x[m, k] · W[n, k] (+ bias[n]) for n in [n_begin, n_end), K >= 1; `w` from
// RepackF16Panels / RepackF32Panels, x [rows, k], y [rows, w.n]. Requires F16PanelAvailable();
// callers split columns across threads.
void F16PanelMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                    int64_t n_begin, int64_t n_end);
void F32PanelMatmul(const FastWeights& w, const float* x, int64_t rows, const float* bias, float* y,
                    int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_FLOAT_PANEL_MATMUL_H_
