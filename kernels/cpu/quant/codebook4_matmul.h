// Reference (scalar) linear layer with 4-bit codebook weights: each weight is a 4-bit index into
// a 16-entry f32 table times its group's f32 scale, W[n, i] = codebook[q[n, i]] · scale[n, i / G].
// This is bitsandbytes' 4-bit format (NF4 or its FP4 table, the table stored in the checkpoint's
// quant_map, the scale its block absmax) once the loader has laid its flat blocks out per row
// (engine/quant/bnb_4bit.cc): codes packed pairwise with element 2j in the low nibble of byte j
// (fp4_matmul.h's order; bnb stores the high nibble first and the loader swaps), rows of K / 2
// bytes, scales [N, K / G]. The product is computed in f32, as bitsandbytes' dequantize_4bit does
// before it casts to its compute dtype (so the weight is exactly the producer's f32 value); each
// weight row is decoded once per call, every (row, column) by the same fixed-order dot product
// (batch-invariant), and [n_begin, n_end) lets callers split the columns across threads.
#ifndef TESSERA_KERNELS_CPU_QUANT_CODEBOOK4_MATMUL_H_
#define TESSERA_KERNELS_CPU_QUANT_CODEBOOK4_MATMUL_H_

#include <cstdint>

namespace tessera::kernels::cpu {

struct Codebook4Weights {
  const uint8_t* packed = nullptr;    // [N, K/2] index pairs, element 2j in the low nibble
  const float* scales = nullptr;      // [N, K/group]
  const float* codebook = nullptr;    // [16]
  int64_t group = 0;                  // a multiple of 2 dividing K
};

// out[i] = codebook[q[n, i]] * scales[n, i / group] for i in [0, k).
void DequantizeCodebook4WeightRow(const Codebook4Weights& w, int64_t k, int64_t n, float* out);

// y[m, n] = DotF32(x[m, :], DequantizeCodebook4WeightRow(n)) (+ bias[n]). Returns false (writing
// nothing) unless the pointers are set, group is even and divides k, and the column range is
// valid.
bool MatmulCodebook4(const Codebook4Weights& w, int64_t n_total, int64_t k, const float* x,
                     int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_QUANT_CODEBOOK4_MATMUL_H_
