// 4-bit weights (and GGUF Q8_0 and K-quants) repacked in tiles of 16 output columns for the
// int8-activation path: GGUF Q4_0 (FastFormat::kQ4_0x16), integer 4-bit codes with an f32 scale
// and zero point per group (FastFormat::kU4x16: GPTQ / AWQ / compressed-tensors INT4 without
// act-order), NVFP4 (FastFormat::kNvfp4x16, W4A16 with int8 activations or W4A4 with NVFP4
// activations), GGUF Q8_0 (FastFormat::kQ8_0x16: a byte per code, nothing to unpack), integer
// codes of up to 8 bits with per-group scales and zero points (FastFormat::kU8x16: GPTQ /
// compressed-tensors INT8, INT3, INT2 weight-only, a byte per code), and GGUF Q4_K, Q5_K and Q6_K
// (FastFormat::kQ4_Kx16 / kQ5_Kx16 / kQ6_Kx16: nibbles, plus planes of fifth bits or high bit
// pairs, under the file's own super-block and sub-block scales; Q6_K is the output and many
// ffn_down / attn_v tensors of every K-quant model; FastFormat::kQ3_Kx16 is GGUF Q3_K in its own
// 2-bit codes and third-bit plane under Q6_K's records, zero point 4, 3.625 bits per weight
// against the file's 3.4375; FastFormat::kQ2_Kx16 is GGUF Q2_K in its own 2-bit
// codes and packed scale bytes, 2.625 bits per weight as in the file), GGUF IQ4_NL and IQ4_XS
// (FastFormat::kIq4Nlx16 / kIq4Xsx16: nibbles read through kvalues_iq4nl + 128 under zero point
// 128, an f16 scale per block of 32, or IQ4_XS's f16 d times an int8 scale per block), GGUF's
// grid types (FastFormat::kIqGrid16x16 / kIqGrid32x16: a 4-bit code per value into the type's
// table + 128 under zero point 128, an f32 d times an int8 multiplier per 16 or 32 values;
// ggml_iq_dequant.h IqGridCodes), and MXFP4
// (FastFormat::kMxfp4x16: E2M1 nibbles under an E8M0 scale per block of 32, W4A16 with int8
// activations). llama.cpp's
// "Q4_0 x 8/16 interleaved" idea: one AVX-512 VNNI vpdpbusd multiplies 4 consecutive K values of
// 16 columns at once (one column per int32 lane) with 4 activation bytes broadcast to every lane,
// so a block's integer total lands in its column's lane without the horizontal reductions a
// row-major layout needs. The same layout serves one row (decode) and many rows (batched decode,
// prefill): weights are unpacked once per block and reused for every activation row in registers.
//
// Layout of column group j (columns 16j .. 16j+15, zero columns past n): records of a scale area
// followed by the codes of the blocks it scales (int4_x16_layout.h: two blocks per record for
// kQ4_0x16 / kQ8_0x16 / kNvfp4x16, one quantization group for kU4x16 / kU8x16), so a tile is one
// sequential stream. A block's codes are [4 chunks][16 columns][4 bytes], where byte i of chunk
// q, column c holds the codes of K = 8q + i (low nibble) and 8q + 4 + i (high nibble) of the
// block. Scales: kQ4_0x16 the f16 block scales [16] per block; kU4x16 the group's f32 scales
// [16] then zero points [16]; kNvfp4x16 the UE4M3 scale bytes [2 halves][16] per block (codes
// are E2M1 nibbles). kQ8_0x16 has Q4_0's scales and codes [8 chunks][16 columns][4 bytes] per
// block, byte i of chunk q, column c being u = w + 128 for K = 4q + i of the block; kU8x16 has
// kU4x16's scales and Q8_0's code layout (u the unsigned code itself); kQ4_Kx16 has Q4_0's code
// layout and per super-block record the f16 d, dmin [16] and the bytes sc, m [8][16]; kQ6_Kx16
// has per super-block record the f16 d [16] and int8 sc [16 halves][16], and per block the low
// nibbles of the 6-bit codes in Q4_0's layout followed by their high bit pairs [2 chunk pairs][16
// columns][4 bytes] (byte i: chunk 2p's pairs of K = 8q + i and 8q + 4 + i in bits 0-1 and 2-3,
// chunk 2p + 1's in bits 4-7); kMxfp4x16 has Q4_0's code layout (E2M1 nibbles) and per record of
// four blocks the E8M0 scale bytes [4 blocks][16].
// Everything is on 64 bytes.
//
// Numerics (the canonical order, shared with Int4x16MatmulPortable bit for bit): with the
// activation blocks of q8_act_matmul.h (codes x, scale d, code sum s per block of 32), per output
//   acc = 0;  for b ascending: t = fma(−z, s_b, float(Σ_j u_j·x_j)); acc = fma(t, w_s · d_b, acc)
// then + bias, where u are the unsigned codes, z = 8 (Q4_0) or 128 (Q8_0) and w_s the block's f16
// scale for Q4_0 and Q8_0, and z, w_s the zero point and scale of the block's group for kU4x16
// and kU8x16 (|Σ u·x| < 2^21 for 8-bit codes).
// For Q4_0, Q8_0 (|Σ u·x| < 2^21) and integer zero points t is the exact block integer
// Σ (u − z)·x. kNvfp4x16 works per half block of 16 (its
// scale block): u = 2·e2m1 + 12, z = 12, w_s = sf · alpha / 2, and the activation scale and code
// sum are per half (d2 / s2 for the second halves); each block adds its first half, then its
// second half. With NVFP4 activations (x = 2·e2m1, d = sf_x / 2, alpha = 1) every term is exact
// and only the f32 accumulation rounds, like the reference MatmulNvfp4W4A4; the per-row α
// (row_scale) multiplies the sum. The final step is fma(acc, α, bias) with a row scale, else
// acc + bias. The order depends only on k, so results are batch-invariant and identical on the
// one-row and many-row paths. kQ6_Kx16 also works per half block: z = 32 (kQ3_Kx16: z = 4 on
// codes q + 4, q the file's signed 3-bit code, so every t is the integer of the Q3_K block's Q6_K
// rewrite, ggml_kquants_as_q6k.h), w_s the half's d·sc
// (exact in f32),
// the block's activation scale d for both halves and the per-half code sums s / s2; every t is
// the exact half-block integer Σ (u − 32)·x. kQ2_Kx16 works per half block in GGUF's affine form:
// s = d·(sc & 15), o = dmin·(sc >> 4) (both exact in f32), p = s · float(Σ u·x) over the half,
// t = fma(−o, s_h, p) with the half's code sum s_h (s / s2), acc = fma(t, d_b, acc), the first
// half before the second. kIq4Nlx16 / kIq4Xsx16 follow Q8_0's order with u = kv + 128, z = 128
// and w_s the f16 scale, or d·(ls − 32) (exact in f32), so t is the exact block integer Σ kv·x.
// kIqGrid32x16 follows the same order with u = v + 128 (v the grid type's table value) and w_s
// = d·mult (f32 d, exact); kIqGrid16x16 kQ6_Kx16's per-half order with z = 128 and w_s the half's
// d·mult.
// kQ4_Kx16 keeps GGUF's affine form w = s·u − o with
// s = d·sc and o = dmin·m (both exact in f32): per block p = s · float(Σ u·x), t = fma(−o, s_b, p),
// acc = fma(t, d_b, acc); kQ5_Kx16 the same with u the 5-bit code. kMxfp4x16: u = 2·e2m1 + 12,
// z = 12 and w_s = 2^(e − 128) (the E8M0 scale 2^(e − 127) over the codes' factor 2), so t is the
// exact block integer Σ 2·e2m1·x and w_s·d_b a power-of-two rescaling of d_b (exact unless it
// falls below f32's normal range, i.e. only for E8M0 scales near 2^-127).
#ifndef TESSERA_KERNELS_CPU_FAST_INT4_X16_H_
#define TESSERA_KERNELS_CPU_FAST_INT4_X16_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_matmul.h"

namespace tessera::kernels::cpu::fast {

// Bytes of the repacked matrix (n columns of k values, k % 32 == 0; group_size % 32 == 0 and
// k % group_size == 0 for kU4x16 and kU8x16; k % 256 == 0 for the K-quants and IQ4_XS).
int64_t Q4_0x16Bytes(int64_t n, int64_t k);
int64_t U4x16Bytes(int64_t n, int64_t k, int64_t group_size);
int64_t Nvfp4x16Bytes(int64_t n, int64_t k);
int64_t Q8_0x16Bytes(int64_t n, int64_t k);
int64_t U8x16Bytes(int64_t n, int64_t k, int64_t group_size);
int64_t Q6_Kx16Bytes(int64_t n, int64_t k);

// Rewrites n ggml Q4_0 rows of k values into `dst` (Q4_0x16Bytes, 64-byte aligned) and returns
// the FastWeights (format kQ4_0x16, row_stride = bytes per column group) describing it.
FastWeights RepackQ4_0x16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst);

// The same for ggml Q8_0 rows (kQ8_0x16).
FastWeights RepackQ8_0x16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst);

// The same for kU4Groups weights (nibble pairs + per-group scales and zero points).
FastWeights RepackU4x16(const FastWeights& u4_groups, uint8_t* dst);

// The same for kU8Groups weights (codes one per byte, row_stride ≥ k).
FastWeights RepackU8x16(const FastWeights& u8_groups, uint8_t* dst);

// GGUF Q4_K rows (k % 256 == 0) as kQ4_Kx16 (Q4_Kx16Bytes): the file's own numbers (f16 d and
// dmin per super-block, 6-bit sc and m per block of 32, 4-bit codes), 4.625 bits per weight.
int64_t Q4_Kx16Bytes(int64_t n, int64_t k);
FastWeights RepackQ4_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst);

// GGUF Q5_K rows (k % 256 == 0) as kQ5_Kx16 (Q5_Kx16Bytes): kQ4_Kx16 with each code's fifth bit
// in a plane after the block's nibbles, 5.625 bits per weight.
int64_t Q5_Kx16Bytes(int64_t n, int64_t k);
FastWeights RepackQ5_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst);

// GGUF Q4_1 (kU4x16), Q5_0 and Q5_1 (kU8x16) rows, group size 32 (U4x16Bytes / U8x16Bytes(n, k,
// 32)): each block's w = d·u + m (Q5_0: d·(u − 16)) becomes scale d and zero point −m / d (16);
// a block with d = 0 is the constant m, stored as codes 0, zero point −1 and scale m. The zero
// point's rounding moves a block total by at most 2^-24·|m·Σx|.
FastWeights RepackLegacyGgmlToUx16(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n,
                                   int64_t k, uint8_t* dst);

// The GGUF block types with tiles (every one but MXFP4; IQ4_NL and IQ4_XS included), the bytes
// of an [n, k] matrix of one of them in its tiles, and its repack (Q4_0 and Q8_0 as above, the
// K-quants as their kQ*_Kx16, Q4_1 / Q5_0 / Q5_1 through RepackLegacyGgmlToUx16).
bool HasGgmlX16(GgmlBlockType type);
int64_t GgmlX16Bytes(GgmlBlockType type, int64_t n, int64_t k);
FastWeights RepackGgmlX16(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n, int64_t k,
                          uint8_t* dst);

// Whether Int4x16Matmul needs the per-half code sums s2 for these tiles (NVFP4, Q6_K, Q3_K, Q2_K,
// the grid types).
inline bool X16NeedsHalfSums(FastFormat format) {
  return format == FastFormat::kNvfp4x16 || format == FastFormat::kQ6_Kx16 ||
         format == FastFormat::kQ3_Kx16 || format == FastFormat::kQ2_Kx16 ||
         format == FastFormat::kIqGrid16x16;
}

// GGUF Q6_K rows (k % 256 == 0) as kQ6_Kx16 (ggml_dequant.h Q6KCodes for the codes).
FastWeights RepackQ6_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst);

// GGUF Q3_K rows (k % 256 == 0) as kQ3_Kx16 (Q3_Kx16Bytes): codes q + 4 (q the signed 3-bit code,
// ggml_dequant.h Q3KCodes) as 2-bit chunks plus a plane of third bits under zero point 4, the f16
// d and the int8 scales sc − 32 per 16 in Q6_K's records, 3.625 bits per weight.
int64_t Q3_Kx16Bytes(int64_t n, int64_t k);
FastWeights RepackQ3_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst);

// GGUF grid-type rows (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M; k % 256 == 0) as
// kIqGrid16x16 or kIqGrid32x16 (IqGridx16Bytes): per super-block and column the f32 d and the
// multipliers of ggml_iq_dequant.h's IqGridCodes, and its 4-bit codes, which the kernels read
// through the type's table + 128 under zero point 128 (plain AVX2: the signed table with the sign
// trick), per half block as kQ6_Kx16 where the multipliers are per 16 (IQ2_XS, IQ2_S, IQ1_M), per
// block as kIq4Xsx16 where they are per 32 (IQ2_XXS, IQ3_XXS, IQ3_S, IQ1_S: one epilogue per block
// instead of two, 1.5x the one-row rate of the half-block walk). 4.625 / 4.375 bits per weight
// against the files' 1.5625 (IQ1_S) to 3.4375 (IQ3_S):
// every value is one table code, where the files index 4 or 8 values at once into codebooks of
// up to 2048 entries; the codes stream at Q4_K's rate instead of gathering grid entries per
// weight group.
int64_t IqGridx16Bytes(GgmlBlockType type, int64_t n, int64_t k);
FastWeights RepackIqGridx16(GgmlBlockType type, const uint8_t* ggml_rows, int64_t n, int64_t k,
                            uint8_t* dst);

// GGUF Q2_K rows (k % 256 == 0) as kQ2_Kx16 (Q2_Kx16Bytes): the file's f16 d and dmin, its scale
// bytes and 2-bit codes, 2.625 bits per weight (the Q6_K rewrite's tiles plus its f32 offsets
// stream 6.625).
int64_t Q2_Kx16Bytes(int64_t n, int64_t k);
FastWeights RepackQ2_Kx16(const uint8_t* ggml_rows, int64_t n, int64_t k, uint8_t* dst);

// The same for kNvfp4Pairs weights (E2M1 pairs + UE4M3 block scales, alpha kept).
FastWeights RepackNvfp4x16(const FastWeights& nvfp4_pairs, uint8_t* dst);

// MXFP4 weights (E2M1 pairs [n, k / 2], element 2l in the low nibble of byte l, and E8M0 scales
// [n, k / 32]; k % 32 == 0) as kMxfp4x16 (Mxfp4x16Bytes). The caller keeps NaN scales (0xFF) off
// the tiles (they would read as 2^127).
int64_t Mxfp4x16Bytes(int64_t n, int64_t k);
FastWeights RepackMxfp4x16(const uint8_t* packed, const uint8_t* scales, int64_t n, int64_t k,
                           uint8_t* dst);

// Activations in natural order: codes q [rows][k], per block scale d and code sum s [rows][k/32].
struct Int4x16Acts {
  int64_t rows = 0;
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const float* s = nullptr;
  // kNvfp4x16: d / s above are the first halves' (elements 0..15 of each block), these the second.
  // kQ6_Kx16 / kQ3_Kx16 / kQ2_Kx16 / kIqGrid16x16: s the first halves' code sums, s2 the
  // second's (d2 unused:
  // one d per block).
  const float* d2 = nullptr;
  const float* s2 = nullptr;
  const float* row_scale = nullptr;  // kNvfp4x16 W4A4: α(m) = row_scale[m * row_scale_stride]
  int64_t row_scale_stride = 0;
};

// Quantizes rows [r0, r1) of x [rows, k] into q / d / s (QuantizeRowQ8Block32 of q8_act_matmul.h
// plus the block code sums; with s2, s gets the first halves' sums and s2 the second halves').
// Rows are independent, so callers may split them across threads.
void QuantizeActsInt4x16(const float* x, int64_t k, int64_t r0, int64_t r1, int8_t* q, float* d,
                         float* s, float* s2 = nullptr);

// NVFP4 activations (QuantizeNvfp4's packed [rows, k / 2] E2M1 pairs and sf [rows, k / 16]) of
// rows [r0, r1) as codes 2·e2m1, half-block scales sf / 2 (d, d2) and half-block sums (s, s2).
void PackNvfp4ActsInt4x16(const uint8_t* packed, const uint8_t* sf, int64_t k, int64_t r0,
                          int64_t r1, int8_t* q, float* d, float* d2, float* s, float* s2);

// The two steps above in one pass from floats: QuantizeNvfp4 of `len` elements (one row range,
// len % 32 == 0) with global scale g, then PackNvfp4ActsInt4x16, bit for bit; AVX-512 when the
// CPU has it (one 16-element block per register), else the two reference steps.
void QuantizeNvfp4ActsInt4x16(const float* x, int64_t len, float g, int8_t* q, float* d,
                              float* d2, float* s, float* s2);

// Nvfp4DynamicGlobalScale (2688 / amax, 1 for an all-zero or all-NaN input), vectorized.
float Nvfp4DynamicGlobalScaleFast(const float* x, int64_t n);

// y[m, n] for n in [n_begin, n_end), the canonical order above, on Int4x16KernelInUse().
// The formats of X16NeedsHalfSums need the per-half sums s2 (QuantizeActsInt4x16 with s2).
void Int4x16Matmul(const FastWeights& w, const Int4x16Acts& a, const float* bias, float* y,
                   int64_t n_begin, int64_t n_end);

// The kernels that run the tiles, all giving the portable loop's bits: AVX-512 VNNI (512-bit
// vpdpbusd), AVX-VNNI (256-bit vpdpbusd: Intel cores from Alder Lake, which lack AVX-512; on
// AVX-512 VNNI CPUs its EVEX twin, so it is tested and measured there too), AVX2 (vpmaddubsw +
// vpmaddwd, llama.cpp's method without VNNI: int4_x16_avx2.cc) and the portable loop.
// Int4x16Matmul and QuantizeActsInt4x16 run the best one this CPU supports, or the lower one
// named by the environment variable TESSERA_INT8_TILES=avx-vnni|avx2|portable (to test and
// measure other machines' paths on an AVX-512 one); chosen once per process.
enum class Int4x16Kernel { kAvx512Vnni, kAvxVnni, kAvx2, kPortable };
bool Int4x16KernelSupported(Int4x16Kernel kernel);
Int4x16Kernel Int4x16KernelInUse();
// Whether the kernel in use is a vector one (anything but the portable loop): where the engine
// takes the int8 tiles for speed.
inline bool Int4x16TilesVectorized() { return Int4x16KernelInUse() != Int4x16Kernel::kPortable; }
// "avx512-vnni", "avx-vnni", "avx2" or "portable".
const char* Int4x16KernelName(Int4x16Kernel kernel = Int4x16KernelInUse());
// Int4x16Matmul and QuantizeActsInt4x16 on a given kernel (tests and benchmarks); one this CPU
// does not support runs the portable loop instead.
void Int4x16MatmulOn(Int4x16Kernel kernel, const FastWeights& w, const Int4x16Acts& a,
                     const float* bias, float* y, int64_t n_begin, int64_t n_end);
void QuantizeActsInt4x16On(Int4x16Kernel kernel, const float* x, int64_t k, int64_t r0,
                           int64_t r1, int8_t* q, float* d, float* s, float* s2 = nullptr);

// The scalar loop of the same order (the tests' oracle; the fallback on CPUs without AVX2).
void Int4x16MatmulPortable(const FastWeights& w, const Int4x16Acts& a, const float* bias,
                           float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_INT4_X16_H_
