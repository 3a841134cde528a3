// CUDA versions of the decoder's row-wise ops that are not matrix products: embedding lookup,
// RMSNorm (optionally also writing the bf16 copy the GEMMs read), rotary position embedding in
// both pairings, SwiGLU, residual add and f32 -> bf16 conversion. They mirror kernels/cpu/
// elementwise.h and rope.h operation by operation (the RMSNorm sum of squares in double, RoPE
// angles in f32 then accurate cosf/sinf), so results agree with the CPU to a few ulps; the device
// tests bound the difference. Pointers are device pointers; bf16 values are raw uint16_t bits.
#ifndef TESSERA_KERNELS_CUDA_ELEMENTWISE_H_
#define TESSERA_KERNELS_CUDA_ELEMENTWISE_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace tessera::kernels::cuda {

enum class TableDtype { kF32, kBf16 };

// out[r, :] = table[tokens[r], :] as f32 for r in [0, rows); table is [vocab, hidden] of `dtype`.
// A token outside [0, vocab) yields a row of NaN, so a bad id is loud; callers validate first.
absl::Status Embedding(const void* table, TableDtype dtype, int64_t vocab, int64_t hidden,
                       const int32_t* tokens, int64_t rows, float* out, cudaStream_t stream);

// out = x / sqrt(mean(x^2) + eps) * weight per row of n; out_bf16 (nullable) gets the same
// values rounded to bf16. x may alias out.
absl::Status RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps,
                     float* out, uint16_t* out_bf16, cudaStream_t stream);

// h += delta (the residual add), then RmsNorm(h) into out / out_bf16, in one launch for rows of
// up to 8192 (two launches above). out must not alias h or delta.
absl::Status AddRmsNorm(float* h, const float* delta, const float* weight, int64_t rows,
                        int64_t n, float eps, float* out, uint16_t* out_bf16,
                        cudaStream_t stream);

enum class RopePairing { kRotateHalf, kInterleaved };

// Rotates the first rope_dim dims of every head of x [tokens, heads, head_dim] in place; token t
// uses positions[t]; inv_freq has rope_dim / 2 entries.
absl::Status Rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rope_dim,
                  const int32_t* positions, const float* inv_freq, RopePairing pairing,
                  cudaStream_t stream);

// Rope on q [tokens, q_heads, head_dim] and k [tokens, k_heads, head_dim] in one launch.
absl::Status RopeQk(float* q, int64_t q_heads, float* k, int64_t k_heads, int64_t tokens,
                    int64_t head_dim, int64_t rope_dim, const int32_t* positions,
                    const float* inv_freq, RopePairing pairing, cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i]; out_bf16 (nullable) also gets it in bf16.
absl::Status SwiGlu(const float* gate, const float* up, int64_t n, float* out, uint16_t* out_bf16,
                    cudaStream_t stream);

// y[i] += x[i]
absl::Status AddInPlace(float* y, const float* x, int64_t n, cudaStream_t stream);

// out[i] = bf16_rne(x[i])
absl::Status F32ToBf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_ELEMENTWISE_H_
