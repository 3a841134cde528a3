// Reference (scalar) linear layer for integer weight-only formats (W2/W3/W4/W8 A16): GPTQ v1/v2,
// compressed-tensors pack-quantized, AutoAWQ GEMM and Quark int4 (quant-formats.md §7). The loader
// normalises all of them into one canonical layout: unsigned codes q[n, k] in [0, 2^bits), a
// scale and a zero point per (row, group) in f32, with the zero point in the units of q (GPTQ v1
// stored+1, v2 stored, CT offset-binary zp + 2^(bits-1), AWQ as stored; symmetric formats pass
// 2^(bits-1)), and the group of input channel k given by g_idx[k] (act-order) or k / group_size.
// The dequantized weight is
//   W[n, k] = (float(q[n, k]) − zero[n, g(k)]) · scale[n, g(k)]
// in exactly this f32 order (compressed-tensors lifecycle/forward.py `_dequantize` and AutoAWQ
// `dequantize_gemm` subtract the zero first and then scale), and y = DotF32(x, W_row) (+ bias):
// dequantize then dot, like the references' dequantize-then-matmul fallbacks.
// Codes live either one per byte or, for 4-bit, two per byte (element 2j in the low nibble of
// byte j, the NVFP4 nibble order) so that a 4-bit weight costs 4 bits in memory. Each weight row
// is dequantized once per call and reused for all activation rows; results are batch-invariant
// and [n_begin, n_end) lets callers split columns across threads.
#ifndef TESSERA_KERNELS_CPU_QUANT_INT_WEIGHT_ONLY_MATMUL_H_
#define TESSERA_KERNELS_CPU_QUANT_INT_WEIGHT_ONLY_MATMUL_H_

#include <cstdint>

namespace tessera::kernels::cpu {

enum class IntWeightPacking {
  kU8,       // q is [N, K], one code per byte
  kU4Pairs,  // q is [N, ceil(K / 2)], code 2j in bits 0-3 of byte j, code 2j+1 in bits 4-7
};

struct IntWeights {
  IntWeightPacking packing = IntWeightPacking::kU8;
  const uint8_t* q = nullptr;
  const float* scales = nullptr;  // [N, num_groups]
  const float* zeros = nullptr;   // [N, num_groups], same units as q
  int64_t num_groups = 1;
  int64_t group_size = 0;  // g(k) = k / group_size when g_idx == nullptr (K for per-channel)
  const int32_t* g_idx = nullptr;  // [K] group of each input channel, values in [0, num_groups)
};

// Bytes of one packed weight row of k elements.
int64_t IntWeightRowBytes(IntWeightPacking packing, int64_t k);

// Packs k codes (each < 16) into ceil(k / 2) bytes in the kU4Pairs order (odd k: the last high
// nibble is 0). For the loader and the tests.
void PackU4Pairs(const uint8_t* codes, int64_t k, uint8_t* packed);

// out[i] = (float(q[n, i]) - zero[n, g(i)]) * scale[n, g(i)] for i in [0, k).
void DequantizeIntWeightRow(const IntWeights& w, int64_t k, int64_t n, float* out);

// y[m, n] = DotF32(x[m, :], DequantizeIntWeightRow(n)) (+ bias[n]) for n in [n_begin, n_end);
// x is [rows, k], y is [rows, n_total]. Returns false (writing nothing) on missing pointers, a bad
// column range, group_size <= 0 without g_idx, or a group index outside [0, num_groups).
bool MatmulIntWeightOnly(const IntWeights& w, int64_t n_total, int64_t k, const float* x,
                         int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_QUANT_INT_WEIGHT_ONLY_MATMUL_H_
