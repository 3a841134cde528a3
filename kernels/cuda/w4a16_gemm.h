// W4A16 linear layers on tensor cores for the 4-bit weight formats: NVFP4 (E2M1 with a UE4M3
// scale per 16 and a global multiplier), MXFP4 (E2M1 with an E8M0 scale per 32) and GPTQ/AWQ
// INT4 (unsigned codes with an f32 scale and zero point per group). One templated kernel
// (w4a16_kernel.cuh) streams the packed weights, dequantizes them in registers through a
// per-format functor into bf16 and multiplies with bf16 activations by mma.sync m16n8k16 with
// f32 accumulation (sm_80+). The NVFP4 and MXFP4 dequantization e2m1 · scale is exact in bf16
// (at most 6 significant bits), and the NVFP4 global scale is applied in f32 in the epilogue, so
// only the activations' bf16 rounding and the f32 summation separate the result from the CPU
// reference; INT4 (q − z) · s is rounded to bf16 as Marlin-style kernels do.
//
// Weights use the canonical layouts of engine/quant/packed_weights.h: codes pairwise-packed along
// K (element 2j in the low nibble of byte j), [N, K/2] bytes. Device pointers throughout.
#ifndef TESSERA_KERNELS_CUDA_W4A16_GEMM_H_
#define TESSERA_KERNELS_CUDA_W4A16_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace tessera::kernels::cuda {

enum class W4Format { kNvfp4, kMxfp4, kInt4 };

// What the capability query needs to know (no pointers, so it runs without a device).
struct W4A16Problem {
  W4Format format = W4Format::kNvfp4;
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 0;  // INT4 only: elements along K per scale/zero
  bool act_order = false;  // INT4 with a g_idx permutation
};

struct W4A16Weights {
  W4Format format = W4Format::kNvfp4;
  const uint8_t* packed = nullptr;        // [N, K/2]
  const uint8_t* block_scales = nullptr;  // NVFP4 [N, K/16] UE4M3; MXFP4 [N, K/32] E8M0
  float global_scale = 1.0f;              // NVFP4 α_w (multiplier), applied to the f32 result
  const float* scales = nullptr;          // INT4 [N, K/group_size]
  const float* zeros = nullptr;           // INT4 [N, K/group_size], in code units
  int64_t group_size = 0;                 // INT4
};

// K is consumed in chunks of this many elements (each lane owns 16 consecutive ones).
inline constexpr int64_t kW4A16KChunk = 64;

// OK when the kernel can run `problem` on a device of compute capability `sm` in this build;
// otherwise the reason (sm below 80, not compiled for the arch, K not a multiple of 64, INT4
// group size not a multiple of 16, act-order).
absl::Status SupportsW4A16(const W4A16Problem& problem, int sm);

// y[m, n] = Σ_k x[m, k] · W[n, k] (+ bias[n]) for x bf16 [m, k] (raw bits, 16-byte aligned
// rows), y f32 [m, n].
absl::Status W4A16Gemm(const W4A16Weights& w, int64_t n, int64_t k, const uint16_t* x, int64_t m,
                       const float* bias, float* y, cudaStream_t stream);

// One layer of a W4A16GemmGroup: its weights, N, bias (or null) and output y f32 [m, n].
struct W4A16GroupMember {
  const W4A16Weights* weights = nullptr;
  int64_t n = 0;
  const float* bias = nullptr;
  float* y = nullptr;
};

// The most layers one W4A16GemmGroup runs (q, k and v).
inline constexpr int kW4A16MaxGroup = 3;

// W4A16Gemm for 1 .. kW4A16MaxGroup layers that share x (and so K and m) and one format (INT4:
// one group size): every y gets the bits W4A16Gemm would give it. One launch where the layers'
// 16-column blocks are resident on the GPU at once (a decode step's q / k / v: small-N GEMVs
// whose separate launches each left most of the SMs idle); past that the widest layer launches
// alone and the rest by the same rule.
absl::Status W4A16GemmGroup(absl::Span<const W4A16GroupMember> members, int64_t k,
                            const uint16_t* x, int64_t m, cudaStream_t stream);

// The launches W4A16GemmGroup makes for layers of these N and `m` rows on the current device
// (1 .. ns.size(); exposed so that tests can check the grouped launch ran).
int W4A16GroupLaunches(W4Format format, absl::Span<const int64_t> ns, int64_t m);

// The block width, 16 or 32 columns, that W4A16Gemm uses for an [m, n] result on the current
// device: 16 when that grid is resident at once, else 32 (the same bits either way; exposed so
// that tests can check both widths ran).
int W4A16BlockColumns(W4Format format, int64_t n, int64_t m);

// The weights as bf16 [n, k] (raw bits), each element exactly what W4A16Gemm feeds its MMA
// (NVFP4's global scale excluded: W4A16Gemm applies it to the result, and so must the caller).
// For many rows (prefill) dequantizing once and running cuBLASLt's bf16 GEMM beats the fused
// kernel, which re-decodes the weights for every 16-row tile: on an H100, 8192 x 8192 at M = 4096
// ran at 65 TFLOP/s fused against 900 for cuBLASLt bf16.
absl::Status DequantizeW4ToBf16(const W4A16Weights& w, int64_t n, int64_t k, uint16_t* out,
                                cudaStream_t stream);

// Rows from which the decoder dequantizes and calls cuBLASLt instead of W4A16Gemm. The two paths
// multiply the same bf16 weights but sum in different orders, so a row's result depends (in the
// last bits) on whether its pass had fewer or more rows than this: W4A16 layers on the GPU are
// batch-invariant only within each side of the switch. The CPU backend is batch-invariant.
inline constexpr int64_t kW4A16DequantMinRows = 128;

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_W4A16_GEMM_H_
