// Run-time activation quantizers for the W8A8 and W4A4 linear layers (quant-formats.md §5, §6,
// §8.3): FP8 E4M3 static / per-token / per-token-group, INT8 per-token symmetric / asymmetric /
// static, and NVFP4 (E2M1 values with an E4M3 scale per 16 and a global scale). Each one
// reproduces the reference implementation's formula operation by operation, in f32, so that the
// codes and scales match vLLM (and the checkpoints' calibration) bit for bit; the comment on each
// function names the kernel it follows and every place where references disagree.
//
// Activations are f32 [rows, k] row-major. Every quantizer except the explicitly per-tensor ones
// treats each row on its own, so a row's codes never depend on which other rows share the batch
// (batch invariance). Outputs are raw codes: E4M3 bytes, int8, or packed E2M1 (element 2j in the
// low nibble of byte j, §8.1) with row-major scales. All number-format math is kernels/numeric.
#ifndef TESSERA_KERNELS_CPU_QUANT_ACTIVATION_QUANT_H_
#define TESSERA_KERNELS_CPU_QUANT_ACTIVATION_QUANT_H_

#include <cstdint>

namespace tessera::kernels::cpu {

// ---------------------------------------------------------------------------------------------
// FP8 E4M3

inline constexpr float kFp8E4m3Max = 448.0f;
// vLLM min_scaling_factor<float8_e4m3fn> = 1 / (448 * 512) (csrc/quantization/fp8/common.cuh),
// the floor fbgemm's quantize_fp8_per_row also uses. vLLM applies it on every dynamic per-token
// path, with or without an upper bound, so it is the value to pass for fbgemm_fp8, CT
// FP8_DYNAMIC, ModelOpt FP8_PER_CHANNEL_PER_TOKEN and Quark per-token inputs.
inline constexpr float kFp8PerTokenMinScale = 1.0f / (448.0f * 512.0f);
// The eps that seeds vLLM's per-token-group amax reduction (per_token_group_quant.cu).
inline constexpr float kFp8PerTokenGroupEps = 1e-10f;

// How a static scale is applied. The spec (§5.1, §5.3) and compressed-tensors forward.py divide;
// vLLM's CUDA static kernel (scaled_fp8_quant_kernel) multiplies by 1.0f / scale "to avoid
// expensive division". The two differ in the last bit of x/s, which changes a code only when x/s
// lands within an ulp of an E4M3 rounding boundary.
enum class Fp8ScaleOp { kDivide, kMultiplyByReciprocal };

// Static per-tensor: q[i] = sat_e4m3(x[i] / scale) (or x[i] * (1/scale)) for `count` elements.
// `scale` is the checkpoint's input_scale (a dequant multiplier) and must be positive.
void QuantizeFp8Static(const float* x, int64_t count, float scale, Fp8ScaleOp op, uint8_t* q);

// Dynamic per-token (vLLM dynamic_per_token_scaled_fp8_quant_kernel, = fbgemm
// quantize_fp8_per_row): per row, a = amax (or min(amax, *scale_ub) when scale_ub is non-null),
// s = max(a / 448, min_scale), q = sat_e4m3(x / s) (a true division, as vLLM does "to match
// FBGemm"). scales[m] = s. Pass min_scale = kFp8PerTokenMinScale to match vLLM/fbgemm; with
// min_scale = 0 this is the plain s = amax / 448 of §5.3, where an all-zero row (amax = 0) gets
// s = 1 instead of a division by zero (its codes are 0 for any s; the scale is what is stored).
void QuantizeFp8PerToken(const float* x, int64_t rows, int64_t k, const float* scale_ub,
                         float min_scale, uint8_t* q, float* scales);

// Dynamic per-token-group (vLLM per_token_group_quant_8bit, §5.1): the K axis of each row is cut
// into groups of `group_size` consecutive elements (the last group may be shorter when k is not a
// multiple); per group s = max(amax, eps) / 448 and q = sat_e4m3(x / s). scales is
// [rows, ceil(k / group_size)] row-major. Pass eps = kFp8PerTokenGroupEps (vLLM); eps = 0 gives the
// transformers DeepSeek formula amax / 448, and then an all-zero group gets s = 1.
void QuantizeFp8PerTokenGroup(const float* x, int64_t rows, int64_t k, int64_t group_size,
                              float eps, uint8_t* q, float* scales);

// Number of per-token groups of a row of k elements.
inline int64_t NumGroups(int64_t k, int64_t group_size) {
  return (k + group_size - 1) / group_size;
}

// ---------------------------------------------------------------------------------------------
// INT8 (vLLM csrc/quantization/compressed_tensors/int8_quant_kernels.cu, §6.1). Rounding is
// round-half-even then saturation (cvt.rni.sat.s8.f32 on CUDA, nearbyint + clamp on ROCm); a NaN
// converts to 0 as cvt does.

// Dynamic per-token symmetric: s = amax / 127, q = sat_i8(rne(x * (127 / amax))). vLLM multiplies
// by the f32 value 127/amax rather than dividing by s; this follows it, because x * (127/amax) and
// x / (amax/127) round differently. amax = 0 gives s = 0 and q = 0, exactly what the CUDA kernel
// produces (127/0 = inf, 0 * inf = NaN, and cvt turns NaN into 0). scales[m] = s.
void QuantizeInt8PerTokenSymmetric(const float* x, int64_t rows, int64_t k, int8_t* q,
                                   float* scales);

// Dynamic per-token asymmetric (dynamic_scaled_int8_azp_quant_kernel): max and min over the row,
// s = (max - min) / 255, azp = rne(-128 - min / s), q = sat_i8(sat_i32(rne(x / s)) + azp).
// Follows vLLM exactly, including its reduction seeds: max starts at FLT_MIN (the smallest
// positive normal, not -FLT_MAX), so an all-negative row behaves as if it also held a tiny
// positive value, and an all-zero row gets s = FLT_MIN / 255, azp = -128, q = -128 (which
// dequantizes to 0). vLLM divides by zero when every element equals the same positive value
// (max == min); there we widen the range to [0, max] (s = max / 255, azp = -128, q = 127), which
// reconstructs the value. scales[m] = s, azps[m] = azp.
void QuantizeInt8PerTokenAsymmetric(const float* x, int64_t rows, int64_t k, int8_t* q,
                                    float* scales, int32_t* azps);

// Static (static_scaled_int8_quant_kernel / ..._azp_quant_kernel):
// q = sat_i8(sat_i32(rne(x / scale)) + azp); azp = 0 for symmetric inputs.
void QuantizeInt8Static(const float* x, int64_t count, float scale, int32_t azp, int8_t* q);

// ---------------------------------------------------------------------------------------------
// NVFP4 (§8.3; vllm csrc/quantization/fp4/nvfp4_utils.cuh cvt_warp_fp16_to_fp4).

inline constexpr int64_t kNvfp4BlockSize = 16;
inline constexpr float kNvfp4GlobalScaleNumerator = 448.0f * 6.0f;  // 2688

// Quantizes rows with global scale g (a divisor: g = 1 / input_scale for ModelOpt, = CT
// input_global_scale). Row m uses g = global_scale[m * global_scale_row_stride]: stride 0 for one
// static per-tensor g, 1 for per-row dynamic g. For each block of 16 consecutive K elements:
//   sf = e4m3_rn_satfinite(g * amax_b / 6)          (evaluated left to right in f32)
//   qx = e2m1_rn_satfinite(x * (g / fp32(sf))),   qx = 0 if sf == 0.
// q_packed is [rows, k / 2] (pairwise nibbles), block_scales is [rows, k / 16] UE4M3 bytes.
// vLLM evaluates the same formula with rcp.approx.ftz reciprocals (sf = g * (amax * rcp(6)),
// multiplier rcp(sf * rcp(g))); those may differ from the exact quotients used here in the last
// bit, which matters only at E4M3/E2M1 rounding boundaries. This is the formula of the spec and
// of compressed-tensors/ModelOpt. Returns false (writing nothing) unless k % 16 == 0.
bool QuantizeNvfp4(const float* x, int64_t rows, int64_t k, const float* global_scale,
                   int64_t global_scale_row_stride, uint8_t* q_packed, uint8_t* block_scales);

// Dynamic global scale g = 2688 / amax over `count` elements (torchao NVFP4 dynamic per-tensor
// scale and CT generate_gparam, both as divisors). amax = 0 gives g = 1 (every code is 0 for any
// g). Over a whole activation matrix this is the torchao per-tensor scale, which makes every
// row's result depend on the other rows in the batch; the engine uses the per-row form below,
// and only when dynamic global scales are asked for (checkpoints normally carry a static one).
float Nvfp4DynamicGlobalScale(const float* x, int64_t count);

// Per-row dynamic global scales: g[m] = Nvfp4DynamicGlobalScale(row m). Batch-invariant.
void Nvfp4DynamicGlobalScalePerRow(const float* x, int64_t rows, int64_t k, float* global_scales);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_QUANT_ACTIVATION_QUANT_H_
