// INT8 W8A8 linear layers (compressed-tensors int-quantized, Quark int8; the reference is
// kernels/cpu/quant/int8_matmul.h) on AVX-512 VNNI: `vpdpbusd` multiplies 64 u8 × s8 pairs into
// 16 int32 lanes per instruction. The kernel QuantizedLinear runs for int8 weights with int8
// activations, decode and prefill alike.
//
// Layout (RepackInt8Quads, at load): 16-column panels, each K-quad-major: panel p holds, for each
// quad t of K, the 16 columns' w[n, 4t..4t+3] as one 64-byte vector, so one `vpdpbusd` multiplies a
// broadcast quad of activation bytes into 16 outputs (oneDNN's VNNI layout). Columns past N, and K
// from K up to its next multiple of 64, are zero (whole 1 KiB K tiles: AMX's B tiles, amx.h), and
// activation rows are padded to the same K with code 0.
//
// Numerics: `vpdpbusd` takes unsigned activations, so the int8 codes qa are shifted to
// qa + 128 (Int8ActsToU8) and the shift comes back out exactly: Σ (qa + 128)·qw − 128·Σ qw. All of
// it is integer arithmetic in int32, exact for K < 2^16 (|Σ| < 255·128·K), so the int32 sum equals
// the reference's int64 one; the azp correction and the epilogue are the reference's own f32
// operations in its order, y = sa·(sw·float(acc − azp·azp_adj)) (+ bias). Results are therefore
// bit-identical to MatmulInt8W8A8, and batch-invariant whatever the tiling or column split. Where
// AmxInt8Usable(), Int8DotMatmul runs the panels as AMX tiles (amx_panel_gemm.h: `tdpbusd`, the
// same exact int32 sums and epilogue), with the same results.
#ifndef TESSERA_KERNELS_CPU_FAST_INT8_DOT_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_INT8_DOT_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/quant/int8_matmul.h"

namespace tessera::kernels::cpu::fast {

// Whether this CPU runs Int8DotMatmul's AVX-512 kernel (CPUID: AVX-512 F, BW, VL and VNNI).
bool Int8DotAvailable();

// Whether this CPU runs Int8DotMatmul at all: Int8DotAvailable(), else AVX2 (avx2_panels.h: the
// same panels and activations with `vpmaddwd`, the same exact integer sums and epilogue, so the
// same bits). Without it QuantizedLinear runs the reference (bench/README.md, twenty-first
// session: TinyLlama INT8 W8A8 on AVX2 prefilled 8 tok/s that way).
bool Int8DotUsable();

// "amx", "avx512-vnni" or "avx2": the kernel Int8DotMatmul runs here (plan labels); "none" where
// !Int8DotUsable().
const char* Int8DotKernelName();

// Whether the kernel takes a K (the int32 sum must not overflow): 0 < k < 2^16.
inline bool Int8DotSupportsK(int64_t k) { return k > 0 && k < (int64_t{1} << 16); }

// Row stride (bytes) of Int8ActsToU8's output: K rounded up to a multiple of 64 (whole AMX K
// tiles), plus 64 when that is a multiple of 4096 (rows 4 KiB apart would share L1 sets).
inline int64_t Int8DotActStride(int64_t k) {
  const int64_t padded = (k + 63) / 64 * 64;
  return padded % 4096 == 0 ? padded + 64 : padded;
}

// K tiles of 64 (16 quads, 1 KiB of a panel) per panel.
inline int64_t Int8PanelKTiles(int64_t k) { return (k + 63) / 64; }

// Whether Int8DotMatmul runs on AMX: AmxAvailable() and, once per process, the AMX kernel gave
// the AVX-512 kernel's bits on a small random problem.
bool AmxInt8Usable();

// Rows [r0, r1) of the int8 codes q [rows, k] as q + 128 into u8 [rows, Int8DotActStride(k)],
// padded with 128 (code 0).
void Int8ActsToU8(const int8_t* q, int64_t k, int64_t r0, int64_t r1, uint8_t* u8);

// Rows [r0, r1) of x [rows, k] quantized as QuantizeInt8PerTokenSymmetric does (scales[m] =
// amax / 127, codes round-half-even(x · 127 / amax), NaN -> 0) and written as Int8ActsToU8 writes
// them, bit for bit; vectorized on AVX-512 (Int8DotAvailable), else the two reference steps.
void QuantizeInt8PerTokenSymmetricU8(const float* x, int64_t k, int64_t r0, int64_t r1,
                                     float* scales, uint8_t* u8);

// The panels of an [n, k] int8 matrix.
struct Int8DotWeights {
  const uint8_t* panels = nullptr;  // Int8QuadsBytes(n, k), 64-byte aligned
  const int32_t* col_sums = nullptr;  // [n] Σ_k q[n, k] (also the reference's azp_adj)
  const float* scales = nullptr;  // n floats when per_row, else one
  bool per_row = true;
  int64_t n = 0, k = 0;
};

int64_t Int8QuadsBytes(int64_t n, int64_t k);

// Repacks q [n, k] into `panels` (Int8QuadsBytes(n, k) bytes, 64-byte aligned) and fills
// col_sums [n].
void RepackInt8Quads(const int8_t* q, int64_t n, int64_t k, uint8_t* panels, int32_t* col_sums);

// Whether a zero point keeps the int32 arithmetic exact: azp in [-128, 127], so that
// |qa − azp| <= 255. (Per-token asymmetric quantization of a row far from zero gives larger ones;
// such calls must take MatmulInt8W8A8, which sums in int64.)
inline bool Int8DotSupportsAzp(int32_t azp) { return azp >= -128 && azp <= 127; }

// MatmulInt8W8A8's contract for columns [n_begin, n_end), with the activations as u8 rows from
// Int8ActsToU8 (a.q is not read; a.scales, a.azp and a.per_token are). Requires
// Int8DotUsable(), Int8DotSupportsK(w.k) and Int8DotSupportsAzp for every zero point.
void Int8DotMatmul(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& a,
                   int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

namespace internal {

// What the INT8 panel policies (int8_dot_matmul.cc's, int8_dot_avx2.cc's) carry for a row tile
// besides their vectors: its activations (in 32-bit units: u8 quads, or int16 pairs) and the
// epilogue's scales, zero points and column sums.
struct Int8TileArgs {
  const int32_t* acts;      // the tile's first row
  int64_t act_stride;       // 32-bit units between rows
  const int32_t* col_sums;  // Σ qw per column (from column 0)
  const float* w_scales;    // per column when w_per_row (from column 0), else one
  bool w_per_row;
  const float* a_scales;  // per row when a_per_token (from the tile's first row), else one
  const int32_t* azp;     // null (symmetric), or per row when a_per_token, else one
  bool a_per_token;
  // The same for the row tile starting m0 rows further down.
  Int8TileArgs At(int64_t m0) const {
    Int8TileArgs r = *this;
    r.acts = acts + m0 * act_stride;
    if (a_per_token) {
      r.a_scales = a_scales + m0;
      if (azp != nullptr) r.azp = azp + m0;
    }
    return r;
  }
};

}  // namespace internal
}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_INT8_DOT_MATMUL_H_
