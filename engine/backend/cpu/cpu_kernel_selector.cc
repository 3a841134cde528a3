#include "engine/backend/cpu/cpu_kernel_selector.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"

namespace tessera::backend::cpu {

// Kernel names: "-fast" the Highway / AVX-512 kernels of kernels/cpu/fast (bf16 weights: the
// vdpbf16ps kernel on the hi + lo split of f32 activations), "-bf16-act" bf16 activations
// (--cpu_bf16_activations), "-i16-act" int16 activations (--cpu_int16_activations), "-vnni" /
// "-avxvnni" / "-avx2" the int8 activation tiles on their AVX-512 VNNI, AVX-VNNI or AVX2 kernel
// (GGUF block formats by default, the others under
// --cpu_int8_activations), "-int" NVFP4 W4A4's exact integer tiles, "-dequant" GGUF blocks
// dequantized to an f32 tile per call
// (the K-quants and Q4_1 / Q5_0 / Q5_1 under --cpu_int8_activations=false or without AVX2),
// "-ref" the scalar reference kernels. A layer whose layout a fast kernel cannot take (FP8
// block-scaled W8A8 with blocks not a multiple of 16 wide, INT4 group 16, K
// not a multiple of 32 for the 4-bit formats, INT8 / INT3 / INT2 groups that are not whole
// vectors, FP8 NaN codes, a CPU without AVX2 for the f32-activation 4-bit kernels) falls back
// to the reference kernel of the same scheme.
namespace {

// --cpu_int8_activations on an integer weight-only layer whose K and groups are whole int8
// activation blocks: the 16-column int8 tiles (QuantizedLinear::InitFast's conditions).
bool TakeInt8Activations(quant::LinearSpec* spec, const char* kernel) {
  const int64_t group = spec->group_size > 0 ? spec->group_size : spec->k;
  if (spec->activation != quant::ActivationFormat::kFloat || spec->k % 32 != 0 || group % 32 != 0) {
    return false;
  }
  spec->activation = quant::ActivationFormat::kInt8Block32;
  spec->activation_scale = quant::ScaleGranularity::kGroup;
  spec->activation_group = 32;
  spec->kernel = absl::StrCat(kernel, Int8TileSuffix());
  return true;
}

// Whether the int8-activation tiles run a vector kernel here (else their scalar loop, and the
// NVFP4 and MXFP4 tiles are not taken: QuantizedLinear::InitFast's check).
bool Int8TilesFast() { return kernels::cpu::fast::Int4x16TilesVectorized(); }

// The f32-activation 4-bit kernels (INT4, NVFP4, MXFP4) run here: FastQuantMatmul and the panels
// on AVX-512, the panels' AVX2 kernel on AVX2 (QuantPanelAvailable); else the reference.
bool FourBitF32Fast() {
  return kernels::cpu::fast::FastQuant4BitAvailable() || kernels::cpu::fast::QuantPanelAvailable();
}

// The plan's note on a 4-bit layer that takes int8 activations by default (without AVX-512).
void NoteFourBitFallback(bool int8_for_all, quant::LinearSpec* spec) {
  if (int8_for_all) return;
  absl::StrAppend(&spec->reason, spec->reason.empty() ? "" : "; ",
                  "int8 activations: without AVX-512 the int8 tiles decode 4-bit layers about "
                  "twice as fast as the exact f32 panels (--cpu_int8_activations=false keeps "
                  "f32 activations)");
}

// INT8 / INT3 / INT2 weight-only codes (a byte each) with f32 activations: FastQuantMatmul's
// byte-code decoder takes groups of whole vectors (16 lanes covers every target) or one group
// per row (QuantizedLinear::InitFast's conditions).
bool IntBytesFast(const quant::LinearSpec& spec) {
  const int64_t group = spec.group_size > 0 ? spec.group_size : spec.k;
  return spec.activation == quant::ActivationFormat::kFloat &&
         (group >= spec.k || (group % 16 == 0 && spec.k % group == 0));
}

// The GGUF part of a kernel label: the type ("q4_k"), and for Q3_K and Q2_K with exact activations
// the form they run in (their int8 tiles are their own: kQ3_Kx16, kQ2_Kx16).
std::string GgufKernelName(quant::WeightFormat f, bool int8_activations) {
  std::string name(quant::WeightFormatName(f).substr(5));
  if ((f == quant::WeightFormat::kGgufQ3_K || f == quant::WeightFormat::kGgufQ2_K) &&
      !int8_activations) {
    name += "-as-q6_k";
  }
  return name;
}

}  // namespace

std::string Int8TileSuffix() {
  switch (kernels::cpu::fast::Int4x16KernelInUse()) {
    case kernels::cpu::fast::Int4x16Kernel::kAvx512Vnni:
      return "vnni";
    case kernels::cpu::fast::Int4x16Kernel::kAvxVnni:
      return "avxvnni";
    case kernels::cpu::fast::Int4x16Kernel::kAvx2:
      return "avx2";
    case kernels::cpu::fast::Int4x16Kernel::kPortable:
      break;
  }
  return "portable";
}

bool CpuKernelSelector::TakeBf16Activations(quant::LinearSpec* spec, const char* kernel) const {
  // 4-bit weight-only layers (f32 activations) under --cpu_bf16_activations: bf16 activations,
  // as vLLM's Marlin kernels run W4A16 checkpoints; one vdpbf16ps per weight pair on the
  // bf16-pair panels (quant_panel_matmul.h), or the f32 panels on the rounded values without
  // AVX-512 BF16.
  if (!bf16_activations_ || spec->activation != quant::ActivationFormat::kFloat) return false;
  spec->activation = quant::ActivationFormat::kBf16;
  spec->kernel = kernel;
  return true;
}

bool CpuKernelSelector::TakeInt16Activations(quant::LinearSpec* spec, const char* kernel,
                                             bool fast_kernel) const {
  // The pair panels' int16 route (quant_panel_matmul.h): int32 sums exact over a group of up to
  // 128 k, one activation scale per weight group. Act-order layers take it too: QuantizedLinear
  // sorts their channels by group at load and gathers x alike, so each group is contiguous (groups
  // of unequal size fall back to exact activations and the reference kernel there).
  if (!int16_activations_ || spec->activation != quant::ActivationFormat::kFloat) return false;
  const int64_t group = spec->group_size > 0 ? spec->group_size : spec->k;
  if (!fast_kernel || !kernels::cpu::fast::QuantPanelInt16Available() || group % 16 != 0 ||
      group > 128) {
    absl::StrAppend(&spec->reason, spec->reason.empty() ? "" : "; ",
                    "exact f32 activations: int16 activations need AVX-512 VNNI, the fast "
                    "kernel (INT4: groups of whole 32) and groups of 16-128 k");
    return false;
  }
  spec->activation = quant::ActivationFormat::kInt16Group;
  spec->activation_scale = quant::ScaleGranularity::kGroup;
  spec->activation_group = group;
  spec->kernel = absl::StrCat(kernel, "-i16-act");
  return true;
}

bool CpuKernelSelector::Int8ForFourBit() const {
  // Without AVX-512 the exact f32 panels (AVX2) decode at about half the int8 tiles' rate at
  // batch 1 (bench/README.md, twenty-second session): the tiles stay the default there.
  return Int8ForAll() || (int8_activations_ == Int8Activations::kGgufBlocks &&
                          !kernels::cpu::fast::FastQuant4BitAvailable() && Int8TilesFast());
}

absl::Status CpuKernelSelector::Select(quant::LinearSpec* spec) const {
  using quant::ActivationFormat;
  using quant::WeightFormat;
  switch (spec->weight_format) {
    case WeightFormat::kBF16:
      // Only a bf16 checkpoint layer: layers the plan dequantizes to bf16 keep exact activations.
      if (bf16_activations_ && spec->activation == ActivationFormat::kFloat &&
          spec->source.rfind("dequantized from", 0) != 0) {
        spec->activation = ActivationFormat::kBf16;
        spec->kernel = "cpu/dense-bf16-act";
        break;
      }
      spec->kernel = "cpu/dense-fast";
      break;
    case WeightFormat::kF32:
    case WeightFormat::kF16:
      spec->kernel = "cpu/dense-fast";
      break;
    case WeightFormat::kFp8E4m3:
      if (spec->activation == ActivationFormat::kFp8) {
        // The conditions under which QuantizedLinear::InitFast takes the layer.
        const bool group_acts = spec->activation_origin != quant::ScaleOrigin::kStatic &&
                                spec->activation_scale == quant::ScaleGranularity::kGroup;
        bool fast = !group_acts;
        if (group_acts && spec->weight_scale == quant::ScaleGranularity::kBlock &&
            spec->activation_group != spec->block_k) {
          // The reference sums per K segment with one activation and one weight scale each.
          return absl::InvalidArgumentError(
              absl::StrCat(spec->module, ": FP8 activation groups of ", spec->activation_group,
                           " do not match the weight blocks' width ", spec->block_k));
        }
        if (spec->weight_scale == quant::ScaleGranularity::kBlock) {
          // The BF16 kernel takes whole 32-wide blocks, the Highway kernel (scaled activations)
          // blocks of whole vectors, which 16 covers on every target (QuantizedLinear::InitFast,
          // FastQuantSupported).
          fast = spec->block_n > 0 && spec->block_k > 0 &&
                 (spec->block_k % 16 == 0 || spec->block_k >= spec->k) &&
                 (!group_acts || spec->activation_group == spec->block_k);
        }
        spec->kernel = fast ? "cpu/fp8-w8a8-fast" : "cpu/fp8-w8a8-ref";
        break;
      }
      // W8A16 under --cpu_bf16_activations: activations rounded to bf16 (vLLM's FP8 Marlin runs
      // bf16 activations), one vdpbf16ps per weight pair instead of the exact split's two.
      if (bf16_activations_ && spec->activation == ActivationFormat::kFloat) {
        spec->activation = ActivationFormat::kBf16;
        spec->kernel = "cpu/fp8-w8a16-bf16-act";
        break;
      }
      spec->kernel = "cpu/fp8-w8a16-fast";
      break;
    case WeightFormat::kInt8:
      if (spec->activation == ActivationFormat::kInt8) {
        // QuantizedLinear::InitInt8Dot takes the layer under the same two conditions. Asking
        // AmxInt8Usable here runs its one-time self-check at load, not in a request.
        if (!kernels::cpu::fast::Int8DotUsable() ||
            !kernels::cpu::fast::Int8DotSupportsK(spec->k)) {
          spec->kernel = "cpu/int8-w8a8-ref";
        } else {
          const std::string name = kernels::cpu::fast::Int8DotKernelName();
          spec->kernel = absl::StrCat("cpu/int8-w8a8-", name == "avx512-vnni" ? "vnni" : name);
        }
        break;
      }
      // Weight-only INT8: the byte tiles with int8 activations, else the f32 byte-code kernel.
      if (Int8ForAll() && TakeInt8Activations(spec, "cpu/int8-wo-")) break;
      if (TakeInt16Activations(spec, "cpu/int-wo", IntBytesFast(*spec))) break;
      spec->kernel = IntBytesFast(*spec) ? "cpu/int-wo-fast" : "cpu/int-wo-ref";
      break;
    case WeightFormat::kInt4:
    case WeightFormat::kInt4Awq: {
      if (Int8ForFourBit() && TakeInt8Activations(spec, "cpu/int4-wo-")) {
        NoteFourBitFallback(Int8ForAll(), spec);
        break;
      }
      // Act-order layers run the same kernels once their channels are sorted by group.
      const int64_t group = spec->group_size > 0 ? spec->group_size : spec->k;
      const bool fast = spec->k % 32 == 0 && group % 32 == 0 && FourBitF32Fast();
      if (fast && TakeBf16Activations(spec, "cpu/int-wo-bf16-act")) break;
      if (TakeInt16Activations(spec, "cpu/int-wo", fast)) break;
      spec->kernel = fast ? "cpu/int-wo-fast" : "cpu/int-wo-ref";
      break;
    }
    case WeightFormat::kInt3:
    case WeightFormat::kInt2:
      if (Int8ForAll() && TakeInt8Activations(spec, "cpu/int-wo-")) break;
      if (TakeInt16Activations(spec, "cpu/int-wo", IntBytesFast(*spec))) break;
      spec->kernel = IntBytesFast(*spec) ? "cpu/int-wo-fast" : "cpu/int-wo-ref";
      break;
    case WeightFormat::kNvfp4:
      // The FP4 tiles need a vector kernel (VNNI or AVX2: QuantizedLinear::InitFast).
      if (Int8ForFourBit() && spec->activation == ActivationFormat::kFloat && spec->k % 32 == 0 &&
          Int8TilesFast()) {
        spec->activation = ActivationFormat::kInt8Block32;
        spec->activation_scale = quant::ScaleGranularity::kGroup;
        spec->activation_group = 32;
        spec->kernel = absl::StrCat("cpu/nvfp4-w4a16-", Int8TileSuffix());
        NoteFourBitFallback(Int8ForAll(), spec);
        break;
      }
      if (FourBitF32Fast() && TakeBf16Activations(spec, "cpu/nvfp4-w4a16-bf16-act")) break;
      if (TakeInt16Activations(spec, "cpu/nvfp4-w4a16", FourBitF32Fast())) break;
      spec->kernel = spec->activation == ActivationFormat::kNvfp4 ? "cpu/nvfp4-w4a4-int"
                     : FourBitF32Fast() && spec->k % 32 == 0      ? "cpu/nvfp4-w4a16-fast"
                                                                  : "cpu/nvfp4-w4a16-ref";
      break;
    case WeightFormat::kMxfp4:
      // GGUF MXFP4 (gpt-oss GGUFs): llama.cpp's method, Q8_0 activations, as for the other GGUF
      // block types.
      if (const bool gguf =
              spec->source == "gguf mxfp4" && int8_activations_ == Int8Activations::kGgufBlocks;
          (Int8ForFourBit() || gguf) && Int8TilesFast() &&
          TakeInt8Activations(spec, "cpu/mxfp4-w4a16-")) {
        NoteFourBitFallback(Int8ForAll() || gguf, spec);
        break;
      }
      if (FourBitF32Fast() && TakeBf16Activations(spec, "cpu/mxfp4-w4a16-bf16-act")) break;
      if (TakeInt16Activations(spec, "cpu/mxfp4-w4a16", FourBitF32Fast())) break;
      spec->kernel = FourBitF32Fast() && spec->k % 32 == 0 ? "cpu/mxfp4-w4a16-fast"
                                                           : "cpu/mxfp4-w4a16-ref";
      break;
    case WeightFormat::kBnb4bit: {
      // bitsandbytes NF4 / FP4: f32 code values, so exact activations on the quant panels' f32
      // form (QuantizedLinear::InitFast); under --cpu_bf16_activations bf16 activations and the
      // codebook rounded to bf16 (bitsandbytes' own compute casts each weight to its bf16 compute
      // dtype), on the pair panels with AVX-512 BF16, the f32 form elsewhere. No int8 / int16
      // route: the values are not integers.
      const bool fast = kernels::cpu::fast::QuantPanelAvailable() && spec->group_size % 8 == 0;
      if (fast && TakeBf16Activations(spec, "cpu/bnb4-bf16-act")) break;
      spec->kernel = fast ? "cpu/bnb4-fast" : "cpu/bnb4-ref";
      break;
    }
    case WeightFormat::kGgufQ4_0:
    case WeightFormat::kGgufQ4_1:
    case WeightFormat::kGgufQ5_0:
    case WeightFormat::kGgufQ5_1:
    case WeightFormat::kGgufQ8_0:
    case WeightFormat::kGgufQ4_K:
    case WeightFormat::kGgufQ5_K:
    case WeightFormat::kGgufQ6_K:
    case WeightFormat::kGgufQ3_K:  // int8: its own tiles; exact: as Q6_K (ggml_kquants_as_q6k.h)
    case WeightFormat::kGgufQ2_K:  // the same, exact plus an offset product
    case WeightFormat::kGgufIq4Nl:  // nibbles through kvalues_iq4nl (int4_x16.h)
    case WeightFormat::kGgufIq4Xs:
    case WeightFormat::kGgufIq2Xxs:  // the grid types: one table code per value (int4_x16.h)
    case WeightFormat::kGgufIq2Xs:
    case WeightFormat::kGgufIq2S:
    case WeightFormat::kGgufIq3Xxs:
    case WeightFormat::kGgufIq3S:
    case WeightFormat::kGgufIq1S:
    case WeightFormat::kGgufIq1M:
    case WeightFormat::kGgufTq1_0:  // ternary: the grid types' tiles, a multiplier of 1
    case WeightFormat::kGgufTq2_0:
      if (Int8ForAll() || (int8_activations_ == Int8Activations::kGgufBlocks && Int8TilesFast())) {
        spec->activation = ActivationFormat::kInt8Block32;
        spec->activation_scale = quant::ScaleGranularity::kGroup;
        spec->activation_group = 32;
        spec->kernel = absl::StrCat("cpu/gguf-", GgufKernelName(spec->weight_format, true), "-",
                                    Int8TileSuffix());
        break;
      }
      [[fallthrough]];
    default: {
      // f32 activations: Q4_0 and Q8_0 decode in registers (the Highway row kernels); the others
      // dequantize block by block to an f32 tile first.
      const bool vector_decoder = spec->weight_format == WeightFormat::kGgufQ4_0 ||
                                  spec->weight_format == WeightFormat::kGgufQ8_0;
      spec->kernel = absl::StrCat("cpu/gguf-", GgufKernelName(spec->weight_format, false),
                                  vector_decoder ? "-fast" : "-dequant");
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::backend::cpu
