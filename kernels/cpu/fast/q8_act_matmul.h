// Int8-activation products for GGUF Q4_0 / Q8_0 weights (llama.cpp's CPU method, opt-in because
// it changes numerics): each activation row is quantized to Q8_0-style blocks of 32,
//   d = amax / 127,  id = d ? 1 / d : 0,  q = sat_i8(rne(x · id)),
// and y[m, n] = Σ_b (d_w[b] · d_x[b]) · isum_b with isum_b = Σ_{j<32} w_q · x_q exact in int32
// (w_q = nibble − 8 for Q4_0, the int8 code for Q8_0). llama.cpp rounds half away from zero and
// stores d_x as f16; here rounding is half-to-even (what the SIMD convert does) and d_x stays f32,
// which only makes the activation error smaller. Against float activations the result moves by
// at most Σ_b |d_w|·Σ_j|w_q|·d_x/2 per output (each code is off by ≤ 0.5 step), i.e. a relative
// activation error ≤ 1/254 of each block's amax.
//
// The float part has one canonical order, shared by the VNNI kernel and the scalar reference so
// that both give bit-identical results: blocks are taken 16 at a time (group g = blocks 16g ..
// 16g+15, missing blocks count as 0); lane l of 16 f32 accumulators receives block
// 16g + LanePerm(l) as acc[l] = fma(float(isum), d_w · d_x, acc[l]), g ascending; the output is
// ((acc[0] + acc[1]) + acc[2]) + … + acc[15], then + bias. The order depends only on k, so a row's
// result never depends on the other rows of its call or on the column split (batch invariance),
// and the GEMV (≤ 4 rows per weight pass) and GEMM paths agree bit for bit.
#ifndef TESSERA_KERNELS_CPU_FAST_Q8_ACT_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_Q8_ACT_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu::fast {

// The block of group-relative position l in the canonical order (a 4x4 transpose: what the VNNI
// kernel's lane reduction produces without extra shuffles).
inline constexpr int Q8ActLanePerm(int l) { return 4 * (l % 4) + l / 4; }

// Blocks of a row rounded up to whole groups of 16.
inline int64_t Q8ActPaddedBlocks(int64_t k) { return (k / 32 + 15) / 16 * 16; }

// Quantizes one row of k (a multiple of 32) values into natural-order codes q[k] and scales d[k/32].
void QuantizeRowQ8Block32(const float* x, int64_t k, int8_t* q, float* d);

// The activations of one call in the layout the kernels read. Buffers are owned by the caller
// (see Q8ActBuffers below) and sized by Q8ActPaddedBlocks.
struct Q8Acts {
  int64_t rows = 0;
  int64_t k = 0;
  int64_t padded_blocks = 0;
  const int8_t* q = nullptr;      // [rows][padded_blocks * 32] kernel order (see .cc), zero pad
  const float* d = nullptr;       // [rows][padded_blocks] lane order, zero pad
  const int32_t* sums = nullptr;  // [rows][padded_blocks] lane order: Σ codes of the block
  const int8_t* q_nat = nullptr;  // [rows][k] natural order (portable path)
  const float* d_nat = nullptr;   // [rows][k / 32]
};

// Bytes of scratch QuantizeActsQ8Block32 needs for `rows` x `k`.
int64_t Q8ActScratchBytes(int64_t rows, int64_t k);

// Quantizes x [rows, k] for weights of `format` (kQ4_0 or kQ8_0, repacked) into `scratch`
// (Q8ActScratchBytes bytes, 64-byte aligned) and returns the view of it.
Q8Acts QuantizeActsQ8Block32(FastFormat format, const float* x, int64_t rows, int64_t k,
                             uint8_t* scratch);

// y[m, n] for n in [n_begin, n_end) with repacked Q4_0/Q8_0 weights (ggml_repack.h), in the
// canonical order above. Uses AVX-512 VNNI when the CPU has it, else a scalar loop.
void Q8ActMatmul(const FastWeights& w, const Q8Acts& a, const float* bias, float* y,
                 int64_t n_begin, int64_t n_end);

// The scalar reference of the same math on the original ggml rows (n rows of k values) and
// natural-order activation codes q [rows, k] with scales d [rows, k / 32]; y is [rows, n].
void Q8ActMatmulReference(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n, int64_t k,
                          const int8_t* q, const float* d, int64_t rows, const float* bias,
                          float* y);

// Whether Q8ActMatmul runs the VNNI kernel on this CPU ("avx512-vnni" or "scalar").
const char* Q8ActKernelName();

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_Q8_ACT_MATMUL_H_
