#include "engine/io/dtype.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tessera::io {
namespace {

constexpr int kNumDTypes = static_cast<int>(DType::kTq2_0) + 1;

constexpr std::array<DTypeInfo, kNumDTypes> kInfos = {{
    {"BOOL", {1, 1}, false, false},
    {"U8", {1, 1}, false, false},
    {"I8", {1, 1}, false, false},
    {"U16", {1, 2}, false, false},
    {"I16", {1, 2}, false, false},
    {"U32", {1, 4}, false, false},
    {"I32", {1, 4}, false, false},
    {"U64", {1, 8}, false, false},
    {"I64", {1, 8}, false, false},
    {"F16", {1, 2}, true, false},
    {"BF16", {1, 2}, true, false},
    {"F32", {1, 4}, true, false},
    {"F64", {1, 8}, true, false},
    {"C64", {1, 8}, false, false},
    {"F8_E4M3", {1, 1}, true, false},
    {"F8_E5M2", {1, 1}, true, false},
    {"F8_E4M3FNUZ", {1, 1}, true, false},
    {"F8_E5M2FNUZ", {1, 1}, true, false},
    {"F8_E8M0", {1, 1}, true, false},
    {"F4", {2, 1}, false, false},
    {"F6_E2M3", {4, 3}, false, false},
    {"F6_E3M2", {4, 3}, false, false},
    {"Q4_0", {32, 18}, false, true},
    {"Q4_1", {32, 20}, false, true},
    {"Q5_0", {32, 22}, false, true},
    {"Q5_1", {32, 24}, false, true},
    {"Q8_0", {32, 34}, false, true},
    {"Q8_1", {32, 36}, false, true},
    {"Q2_K", {256, 84}, false, true},
    {"Q3_K", {256, 110}, false, true},
    {"Q4_K", {256, 144}, false, true},
    {"Q5_K", {256, 176}, false, true},
    {"Q6_K", {256, 210}, false, true},
    {"Q8_K", {256, 292}, false, true},
    {"MXFP4", {32, 17}, false, true},
    {"IQ4_NL", {32, 18}, false, true},
    {"IQ4_XS", {256, 136}, false, true},
    {"IQ2_XXS", {256, 66}, false, true},
    {"IQ2_XS", {256, 74}, false, true},
    {"IQ2_S", {256, 82}, false, true},
    {"IQ3_XXS", {256, 98}, false, true},
    {"IQ3_S", {256, 110}, false, true},
    {"IQ1_S", {256, 50}, false, true},
    {"IQ1_M", {256, 56}, false, true},
    {"TQ1_0", {256, 54}, false, true},
    {"TQ2_0", {256, 66}, false, true},
}};

struct GgmlMapping {
  uint32_t id;
  DType dtype;
};

// ggml.h type ids (quant-formats.md §11.2).
constexpr GgmlMapping kGgml[] = {
    {0, DType::kF32},   {1, DType::kF16},   {2, DType::kQ4_0},  {3, DType::kQ4_1},
    {6, DType::kQ5_0},  {7, DType::kQ5_1},  {8, DType::kQ8_0},  {9, DType::kQ8_1},
    {10, DType::kQ2_K}, {11, DType::kQ3_K}, {12, DType::kQ4_K}, {13, DType::kQ5_K},
    {14, DType::kQ6_K}, {15, DType::kQ8_K}, {24, DType::kI8},   {25, DType::kI16},
    {26, DType::kI32},  {27, DType::kI64},  {28, DType::kF64},  {30, DType::kBF16},
    {16, DType::kIq2Xxs}, {17, DType::kIq2Xs},  {18, DType::kIq3Xxs}, {19, DType::kIq1S},
    {20, DType::kIq4Nl},  {21, DType::kIq3S},   {22, DType::kIq2S},   {23, DType::kIq4Xs},
    {29, DType::kIq1M},   {34, DType::kTq1_0},  {35, DType::kTq2_0},  {39, DType::kMxfp4Gguf},
};

}  // namespace

const DTypeInfo& GetDTypeInfo(DType dtype) { return kInfos[static_cast<int>(dtype)]; }

absl::StatusOr<DType> ParseSafetensorsDType(absl::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (!kInfos[i].is_gguf_block && kInfos[i].name == name) return static_cast<DType>(i);
  }
  return absl::InvalidArgumentError(absl::StrFormat("unknown safetensors dtype '%s'", name));
}

std::optional<DType> DTypeFromGgmlType(uint32_t ggml_type) {
  for (const auto& m : kGgml) {
    if (m.id == ggml_type) return m.dtype;
  }
  return std::nullopt;
}

std::optional<uint32_t> GgmlTypeFromDType(DType dtype) {
  for (const auto& m : kGgml) {
    if (m.dtype == dtype) return m.id;
  }
  return std::nullopt;
}

std::optional<kernels::cpu::GgmlBlockType> GgmlBlockTypeOf(DType dtype) {
  using kernels::cpu::GgmlBlockType;
  switch (dtype) {
    case DType::kQ4_0: return GgmlBlockType::kQ4_0;
    case DType::kQ4_1: return GgmlBlockType::kQ4_1;
    case DType::kQ5_0: return GgmlBlockType::kQ5_0;
    case DType::kQ5_1: return GgmlBlockType::kQ5_1;
    case DType::kQ8_0: return GgmlBlockType::kQ8_0;
    case DType::kQ2_K: return GgmlBlockType::kQ2_K;
    case DType::kQ3_K: return GgmlBlockType::kQ3_K;
    case DType::kQ4_K: return GgmlBlockType::kQ4_K;
    case DType::kQ5_K: return GgmlBlockType::kQ5_K;
    case DType::kQ6_K: return GgmlBlockType::kQ6_K;
    case DType::kMxfp4Gguf: return GgmlBlockType::kMxfp4;
    case DType::kIq4Nl: return GgmlBlockType::kIq4Nl;
    case DType::kIq4Xs: return GgmlBlockType::kIq4Xs;
    case DType::kIq2Xxs: return GgmlBlockType::kIq2Xxs;
    case DType::kIq2Xs: return GgmlBlockType::kIq2Xs;
    case DType::kIq2S: return GgmlBlockType::kIq2S;
    case DType::kIq3Xxs: return GgmlBlockType::kIq3Xxs;
    case DType::kIq3S: return GgmlBlockType::kIq3S;
    case DType::kIq1S: return GgmlBlockType::kIq1S;
    case DType::kIq1M: return GgmlBlockType::kIq1M;
    case DType::kTq1_0: return GgmlBlockType::kTq1_0;
    case DType::kTq2_0: return GgmlBlockType::kTq2_0;
    default: return std::nullopt;
  }
}

absl::StatusOr<int64_t> ByteSizeFor(DType dtype, int64_t numel) {
  const DTypeInfo& info = GetDTypeInfo(dtype);
  if (numel < 0) return absl::InvalidArgumentError("negative element count");
  if (numel % info.block.block_elements != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d elements are not a whole number of %s blocks of %d", numel, info.name,
                        info.block.block_elements));
  }
  int64_t blocks = numel / info.block.block_elements;
  int64_t bytes;
  if (__builtin_mul_overflow(blocks, info.block.block_bytes, &bytes)) {
    return absl::InvalidArgumentError("tensor byte size overflows");
  }
  return bytes;
}

}  // namespace tessera::io
