// LinearSpec: how one linear layer runs — weight format and scale layout, zero points and
// act-order, activation format with its scale granularity and origin, global-scale convention,
// the kernel chosen, and a human reason. The precision plan is a list of these (design.md §4b);
// it is what `tessera inspect`, the load log and GetModelInfo print, one row per layer.
#ifndef TESSERA_ENGINE_QUANT_LINEAR_SPEC_H_
#define TESSERA_ENGINE_QUANT_LINEAR_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tessera::quant {

enum class WeightFormat {
  kF32, kBF16, kF16, kFp8E4m3, kInt8, kInt4, kInt3, kInt2, kInt4Awq, kNvfp4, kMxfp4,
  // bitsandbytes 4-bit: a 4-bit index into the checkpoint's 16-value codebook (NF4 or bnb's FP4)
  // times an f32 absmax per block (kernels/cpu/quant/codebook4_matmul.h).
  kBnb4bit,
  kGgufQ8_0, kGgufQ4_0, kGgufQ4_1, kGgufQ5_0, kGgufQ5_1, kGgufQ4_K, kGgufQ5_K, kGgufQ6_K,
  kGgufQ2_K, kGgufQ3_K, kGgufIq4Nl, kGgufIq4Xs, kGgufIq2Xxs, kGgufIq2Xs, kGgufIq2S, kGgufIq3Xxs,
  kGgufIq3S, kGgufIq1S, kGgufIq1M, kGgufTq1_0, kGgufTq2_0,
  // GGUF formats stay last: >= kGgufQ8_0 means "a GGUF block format"
};
enum class ScaleGranularity { kNone, kTensor, kRowwise, kColwise, kBlock, kGroup };
enum class ScaleOrigin { kStatic, kDynamic };
// kInt8Block32: activations quantized per row to int8 blocks of 32 with an f32 scale each
// (llama.cpp's Q8_0 activations for GGUF Q4_0/Q8_0 weights; chosen by the CPU backend only when
// EngineOptions::cpu_int8_activations asks for it, since it changes results).
// kBf16: activations rounded to bf16 per call for bf16 weights (the CPU backend, only when
// EngineOptions::cpu_bf16_activations asks for it).
// kInt16Group: activations quantized per row to int16 with one f32 scale per activation_group k
// (the weight group), within 2^-16 of each group's largest |x| (the CPU backend's weight-only
// layers, only when EngineOptions::cpu_int16_activations asks for it).
enum class ActivationFormat { kFloat, kFp8, kInt8, kNvfp4, kInt8Block32, kBf16, kInt16Group };
enum class ZeroPointKind { kNone, kInt, kFloat };
// NVFP4 global scales: ModelOpt stores a multiplier (amax / 2688), compressed-tensors a divisor.
enum class GlobalScaleConvention { kNone, kMultiplier, kDivisor };

absl::string_view WeightFormatName(WeightFormat f);
absl::string_view ScaleGranularityName(ScaleGranularity g);
absl::string_view ActivationFormatName(ActivationFormat a);
bool IsHighPrecision(WeightFormat f);  // f32, bf16, f16: may be quantized online
int WeightBits(WeightFormat f);

struct LinearSpec {
  std::string module;  // HF module name, e.g. "model.layers.3.mlp.down_proj"
  int64_t n = 0;       // out_features
  int64_t k = 0;       // in_features (the reduction dimension)

  WeightFormat weight_format = WeightFormat::kF32;
  ScaleGranularity weight_scale = ScaleGranularity::kNone;
  std::string weight_scale_dtype;  // as stored ("F32", "BF16", "F8_E4M3", "E8M0"), if any
  int64_t group_size = 0;          // kGroup: elements along K per scale (-1 = all of K)
  int64_t block_n = 0, block_k = 0;  // kBlock
  ZeroPointKind zero_point = ZeroPointKind::kNone;
  bool act_order = false;          // g_idx permutes the groups (GPTQ desc_act)
  // NVFP4: a block-scale byte has the sign bit set or is NaN. The CPU kernels and CUDA's W4A16
  // decode it as E4M3; cuBLASLt's block-scaled GEMM reads unsigned UE4M3, so W4A4 falls back.
  bool nvfp4_scales_signed_or_nan = false;

  ActivationFormat activation = ActivationFormat::kFloat;
  ScaleGranularity activation_scale = ScaleGranularity::kNone;  // kTensor, kColwise (per token), kGroup
  ScaleOrigin activation_origin = ScaleOrigin::kDynamic;
  int64_t activation_group = 0;
  std::optional<float> activation_scale_ub;  // fbgemm_fp8 activation_scale_ub
  bool activation_asymmetric = false;
  GlobalScaleConvention global_scale = GlobalScaleConvention::kNone;

  bool has_bias = false;
  std::string source;  // checkpoint layout, e.g. "compressed-tensors pack-quantized", "gptq v1"
  std::string kernel;  // the kernel that runs it, e.g. "cpu/int-weight-only"
  std::string reason;  // why this format: "checkpoint: ...", "override rule 2: ...", "fallback: ..."

  // A Quark-like short scheme name ("bf16", "fp8", "ptpc_fp8", "int8", "int4_wo_128", "nvfp4",
  // "mxfp4", "gguf_q4_0", ...).
  std::string SchemeName() const;
  // Human description of weights and activations, e.g. "fp8 e4m3 w/ rowwise f32 scale; a: fp8
  // dynamic per-token".
  std::string Describe() const;
};

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_LINEAR_SPEC_H_
