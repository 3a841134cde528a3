#include "engine/backend/cuda/device_linear.h"

#include <array>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "kernels/cpu/quant/activation_quant.h"  // kFp8PerTokenMinScale, kFp8PerTokenGroupEps
#include "kernels/cuda/activation_quant.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/fp8_gemm.h"
#include "kernels/cuda/nvfp4_gemm.h"
#include "kernels/cuda/nvfp4_scale_layout.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace tessera::backend::cuda {
namespace {

namespace kc = ::tessera::kernels::cuda;

constexpr int64_t kGroup = 128;

// ceil(K / 128) per row <= K / 128 + 1 per row.
int64_t ScaleSlots(int64_t rows, int64_t x_elems) { return x_elems / kGroup + rows; }

// INTERNAL naming the layer when `rows` (run as `gemm_rows`) of it do not fit the scratch.
absl::Status CheckScratch(const DeviceLinear& l, int64_t rows, int64_t gemm_rows,
                          const LinearScratch& s) {
  const bool fp8 = l.kind == DeviceLinearKind::kFp8W8A8;
  const bool fp4 = l.kind == DeviceLinearKind::kNvfp4W4A4;
  if (gemm_rows > s.rows || gemm_rows * l.k > s.x_elems ||
      ((fp8 || fp4) && gemm_rows * l.n > s.y_elems) ||
      (fp4 && kc::SwizzledScaleBytes(rows, l.k / 16) > s.fp4_scale_bytes)) {
    return absl::InternalError(absl::StrCat(l.module, ": ", rows, " rows of [", l.n, " x ", l.k,
                                            "] exceed the linear scratch (", s.rows, " rows, ",
                                            s.x_elems, " / ", s.y_elems, " elements, ",
                                            s.fp4_scale_bytes, " NVFP4 scale bytes)"));
  }
  return absl::OkStatus();
}

// An FP8 W8A8 layer's activation quantization into scratch.x_fp8 (and scratch.x_scales): static
// per-tensor, per-token-group (group-major [K/128, gemm_rows], padded with zero rows to the
// GEMM's row count, the order cuBLASLt's VEC128_32F mode reads) or dynamic per-token. Returns
// the activation scales the GEMM reads.
absl::StatusOr<const float*> QuantizeFp8Activations(const DeviceLinear& l, const float* x,
                                                    int64_t rows, int64_t gemm_rows,
                                                    const LinearScratch& s, cudaStream_t stream) {
  if (l.static_input_scale != nullptr) {
    TESSERA_RETURN_IF_ERROR(
        kc::QuantizeFp8StaticDivide(x, rows * l.k, l.static_input_scale, s.x_fp8, stream));
    return l.static_input_scale;
  }
  if (l.activation_group > 0) {
    TESSERA_RETURN_IF_ERROR(kc::QuantizeFp8PerTokenGroupPadded(
        x, rows, gemm_rows, l.k, l.activation_group, kernels::cpu::kFp8PerTokenGroupEps, s.x_fp8,
        s.x_scales, stream));
  } else {
    TESSERA_RETURN_IF_ERROR(kc::QuantizeFp8PerToken(
        x, rows, l.k, l.scale_ub, kernels::cpu::kFp8PerTokenMinScale, s.x_fp8, s.x_scales, stream));
  }
  return static_cast<const float*>(s.x_scales);
}

// The FP8 GEMM on the quantized activations in scratch.x_fp8 into y (f32, with the bias): straight
// from cuBLASLt where it can (Fp8GemmArgs::y_f32), else through bf16. Padded rows (block
// scaling) go through the bf16 scratch, since y holds only `rows`.
absl::Status RunFp8Gemm(const DeviceLinear& l, const float* x_scales, int64_t rows,
                        int64_t gemm_rows, float* y, const LinearScratch& s, kc::CublasLtGemm& lt,
                        cudaStream_t stream) {
  kc::Fp8GemmArgs args;
  args.w = l.fp8;
  args.w_scales = l.fp8_scales;
  args.x = s.x_fp8;
  args.x_scales = x_scales;
  args.m = gemm_rows;
  args.y = s.y_bf16;
  args.f32_scratch = s.y_f32;
  if (gemm_rows == rows) {
    args.y_f32 = y;
    args.bias = l.bias;
    return kc::Fp8Gemm(lt, l.fp8_problem, l.fp8_path, args, stream);
  }
  TESSERA_RETURN_IF_ERROR(kc::Fp8Gemm(lt, l.fp8_problem, l.fp8_path, args, stream));
  return kc::Bf16RowsToF32(s.y_bf16, rows, l.n, l.bias, y, stream);
}

// Prefixes a status from a kernel that served several layers with their module names.
absl::Status NameModules(absl::Span<const DeviceLinear* const> layers, absl::Status status) {
  if (status.ok()) return status;
  std::string modules;
  for (const DeviceLinear* l : layers) {
    absl::StrAppend(&modules, modules.empty() ? "" : ", ", l->module);
  }
  return absl::Status(status.code(), absl::StrCat(modules, ": ", status.message()));
}

}  // namespace

bool SharesFp8Activations(absl::Span<const DeviceLinear* const> layers) {
  for (const DeviceLinear* l : layers) {
    if (l->kind != DeviceLinearKind::kFp8W8A8 || l->static_input_scale != nullptr ||
        l->activation_group > 0 || l->k != layers[0]->k || l->scale_ub != layers[0]->scale_ub ||
        kc::Fp8GemmRows(l->fp8_problem, 1) != 1) {
      return false;
    }
  }
  return layers.size() >= 2;
}

int64_t StackedBf16Width(absl::Span<const DeviceLinear* const> layers) {
  if (layers.size() < 2 || layers.size() > static_cast<size_t>(kc::kMaxColumnSlices)) return 0;
  int64_t width = 0;
  for (const DeviceLinear* l : layers) {
    if (l->kind != DeviceLinearKind::kBf16 || l->k != layers[0]->k ||
        l->bf16 != layers[0]->bf16 + width * l->k) {
      return 0;
    }
    width += l->n;
  }
  return width;
}

absl::StatusOr<LinearScratch> LinearScratch::Carve(int64_t rows, int64_t x_elems, int64_t y_elems,
                                                   int64_t w_elems, int64_t fp4_scale_bytes,
                                                   int64_t stacked_elems, ArenaRegion& region) {
  LinearScratch s;
  s.rows = rows;
  s.x_elems = x_elems;
  s.y_elems = y_elems;
  s.w_elems = w_elems;
  s.fp4_scale_bytes = fp4_scale_bytes;
  if (fp4_scale_bytes > 0) {
    TESSERA_ASSIGN_OR_RETURN(s.x_fp4_scales,
                             region.AllocateArray<uint8_t>(fp4_scale_bytes, "x nvfp4 scales"));
  }
  if (w_elems > 0) {
    TESSERA_ASSIGN_OR_RETURN(s.w_bf16, region.AllocateArray<uint16_t>(w_elems, "w4 as bf16"));
  }
  TESSERA_ASSIGN_OR_RETURN(s.x_bf16, region.AllocateArray<uint16_t>(x_elems, "x bf16"));
  TESSERA_ASSIGN_OR_RETURN(s.x_fp8, region.AllocateArray<uint8_t>(x_elems, "x fp8"));
  TESSERA_ASSIGN_OR_RETURN(s.x_scales,
                           region.AllocateArray<float>(ScaleSlots(rows, x_elems), "x scales"));
  TESSERA_ASSIGN_OR_RETURN(s.y_bf16, region.AllocateArray<uint16_t>(y_elems, "y bf16"));
  s.y_f32_elems = std::max(y_elems, stacked_elems);
  TESSERA_ASSIGN_OR_RETURN(s.y_f32, region.AllocateArray<float>(s.y_f32_elems, "y f32"));
  return s;
}

absl::Status RunLinear(const DeviceLinear& l, const float* x, const uint16_t* x_bf16,
                       int64_t rows, float* y, const LinearScratch& s, kc::CublasLtGemm& lt,
                       cudaStream_t stream) {
  const bool fp8 = l.kind == DeviceLinearKind::kFp8W8A8;
  const bool fp4 = l.kind == DeviceLinearKind::kNvfp4W4A4;
  // The FP8 GEMM may run on more rows than `rows` (block scaling pads M to a multiple of 4).
  const int64_t gemm_rows = fp8 ? kc::Fp8GemmRows(l.fp8_problem, rows) : rows;
  TESSERA_RETURN_IF_ERROR(CheckScratch(l, rows, gemm_rows, s));
  if (rows == 0) return absl::OkStatus();
  if (!fp8 && !fp4 && x_bf16 == nullptr) {
    TESSERA_RETURN_IF_ERROR(kc::F32ToBf16(x, rows * l.k, s.x_bf16, stream));
    x_bf16 = s.x_bf16;
  }
  switch (l.kind) {
    case DeviceLinearKind::kBf16: {
      kc::LtGemmConfig config;
      config.kind = kc::LtGemmKind::kBf16;
      config.m = rows;
      config.n = l.n;
      config.k = l.k;
      config.f32_output = true;  // the residual stream stays f32, as on the CPU
      kc::LtGemmArgs args;
      args.weights = l.bf16;
      args.activations = x_bf16;
      args.out = y;
      TESSERA_RETURN_IF_ERROR(lt.Run(config, args, stream));
      if (l.bias != nullptr) TESSERA_RETURN_IF_ERROR(kc::AddBiasRows(y, l.bias, rows, l.n, stream));
      return absl::OkStatus();
    }
    case DeviceLinearKind::kW4A16: {
      if (rows < kc::kW4A16DequantMinRows || s.w_bf16 == nullptr || l.n * l.k > s.w_elems) {
        return kc::W4A16Gemm(l.w4, l.n, l.k, x_bf16, rows, l.bias, y, stream);
      }
      TESSERA_RETURN_IF_ERROR(kc::DequantizeW4ToBf16(l.w4, l.n, l.k, s.w_bf16, stream));
      kc::LtGemmConfig config;
      config.kind = kc::LtGemmKind::kBf16;
      config.m = rows;
      config.n = l.n;
      config.k = l.k;
      config.f32_output = true;
      kc::LtGemmArgs args;
      args.weights = s.w_bf16;
      args.activations = x_bf16;
      // W4A16Gemm's α: NVFP4's global scale on the f32 result, 1 for the other formats.
      args.alpha = l.w4.format == kc::W4Format::kNvfp4 ? l.w4.global_scale : 1.0f;
      args.out = y;
      TESSERA_RETURN_IF_ERROR(lt.Run(config, args, stream));
      if (l.bias != nullptr) TESSERA_RETURN_IF_ERROR(kc::AddBiasRows(y, l.bias, rows, l.n, stream));
      return absl::OkStatus();
    }
    case DeviceLinearKind::kFp8W8A8: {
      TESSERA_ASSIGN_OR_RETURN(const float* x_scales,
                               QuantizeFp8Activations(l, x, rows, gemm_rows, s, stream));
      return RunFp8Gemm(l, x_scales, rows, gemm_rows, y, s, lt, stream);
    }
    case DeviceLinearKind::kNvfp4W4A4: {
      // The static global scale for every row (stride 0), as the CPU's static W4A4 path does.
      TESSERA_RETURN_IF_ERROR(kc::QuantizeNvfp4Swizzled(x, rows, l.k, l.act_global_scale, 0,
                                                        s.x_fp8, s.x_fp4_scales, stream));
      kc::Nvfp4W4A4Args args;
      args.w = l.fp4;
      args.w_scales = l.fp4_scales;
      args.x = s.x_fp8;
      args.x_scales = s.x_fp4_scales;
      args.m = rows;
      args.alpha = l.fp4_alpha;
      args.y = s.y_bf16;
      TESSERA_RETURN_IF_ERROR(kc::Nvfp4W4A4Gemm(lt, l.n, l.k, args, stream));
      // The CPU adds the bias to the f32 result; cuBLASLt's BIAS epilogue is not used for FP4.
      return kc::Bf16RowsToF32(s.y_bf16, rows, l.n, l.bias, y, stream);
    }
  }
  return absl::InternalError("unknown device linear kind");
}

absl::Status RunLinears(absl::Span<const DeviceLinear* const> layers, const float* x,
                        const uint16_t* x_bf16, int64_t rows, absl::Span<float* const> ys,
                        const LinearScratch& scratch, kc::CublasLtGemm& lt, cudaStream_t stream) {
  if (layers.empty() || layers.size() != ys.size()) {
    return absl::InternalError(absl::StrCat("RunLinears: ", layers.size(), " layers, ",
                                            ys.size(), " outputs"));
  }
  const DeviceLinear& first = *layers[0];
  const int64_t stacked = StackedBf16Width(layers);
  if (stacked > 0 && rows <= kStackedBf16MaxRows && rows <= scratch.rows &&
      rows * stacked <= scratch.y_f32_elems && rows * first.k <= scratch.x_elems) {
    if (rows == 0) return absl::OkStatus();
    if (x_bf16 == nullptr) {
      TESSERA_RETURN_IF_ERROR(kc::F32ToBf16(x, rows * first.k, scratch.x_bf16, stream));
      x_bf16 = scratch.x_bf16;
    }
    kc::LtGemmConfig config;
    config.kind = kc::LtGemmKind::kBf16;
    config.m = rows;
    config.n = stacked;
    config.k = first.k;
    config.f32_output = true;
    kc::LtGemmArgs args;
    args.weights = first.bf16;
    args.activations = x_bf16;
    args.out = scratch.y_f32;
    std::array<kc::ColumnSlice, kc::kMaxColumnSlices> slices;
    for (size_t i = 0; i < layers.size(); ++i) slices[i] = {ys[i], layers[i]->bias, layers[i]->n};
    const absl::Status gemm = lt.Run(config, args, stream);
    if (gemm.ok()) {
      return NameModules(
          layers, kc::SplitColumns(scratch.y_f32, rows,
                                   absl::MakeConstSpan(slices.data(), layers.size()), stream));
    }
    // cuBLASLt refused the stacked shape while building its plan, before any launch: each
    // layer's own GEMM (below) has run before.
    if (gemm.code() != absl::StatusCode::kUnimplemented &&
        gemm.code() != absl::StatusCode::kInvalidArgument) {
      return NameModules(layers, gemm);
    }
  }
  if (SharesFp8Activations(layers)) {
    for (const DeviceLinear* l : layers) {
      TESSERA_RETURN_IF_ERROR(CheckScratch(*l, rows, rows, scratch));
    }
    if (rows == 0) return absl::OkStatus();
    TESSERA_ASSIGN_OR_RETURN(const float* x_scales,
                             QuantizeFp8Activations(first, x, rows, rows, scratch, stream));
    for (size_t i = 0; i < layers.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(
          RunFp8Gemm(*layers[i], x_scales, rows, rows, ys[i], scratch, lt, stream));
    }
    return absl::OkStatus();
  }
  bool group = x_bf16 != nullptr && rows < kc::kW4A16DequantMinRows && rows <= scratch.rows &&
               layers.size() <= static_cast<size_t>(kc::kW4A16MaxGroup);
  for (const DeviceLinear* l : layers) {
    group = group && l->kind == DeviceLinearKind::kW4A16 && l->k == first.k &&
            l->w4.format == first.w4.format && l->w4.group_size == first.w4.group_size;
  }
  if (!group) {
    for (size_t i = 0; i < layers.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(RunLinear(*layers[i], x, x_bf16, rows, ys[i], scratch, lt, stream));
    }
    return absl::OkStatus();
  }
  std::array<kc::W4A16GroupMember, kc::kW4A16MaxGroup> members;
  for (size_t i = 0; i < layers.size(); ++i) {
    members[i] = {&layers[i]->w4, layers[i]->n, layers[i]->bias, ys[i]};
  }
  return NameModules(layers, kc::W4A16GemmGroup(absl::MakeConstSpan(members.data(), layers.size()),
                                                first.k, x_bf16, rows, stream));
}

}  // namespace tessera::backend::cuda
