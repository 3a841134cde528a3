// The element types a checkpoint can hold, across both containers: the safetensors dtype strings
// (quant-formats.md §1) and the GGUF ggml types (§11.2). Every type is described by a block: a
// run of `block_elements` logical elements stored in `block_bytes` bytes (1 and 4 for F32, 2 and 1
// for packed F4, 32 and 18 for Q4_0), which is all the readers need to validate sizes.
#ifndef TESSERA_ENGINE_IO_DTYPE_H_
#define TESSERA_ENGINE_IO_DTYPE_H_

#include <cstdint>
#include <optional>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::io {

enum class DType : uint8_t {
  kBool, kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64,
  kF16, kBF16, kF32, kF64, kC64,
  kF8E4M3, kF8E5M2, kF8E4M3Fnuz, kF8E5M2Fnuz, kF8E8M0,
  kF4, kF6E2M3, kF6E3M2,
  // GGUF block types (ggml-common.h). Values run along ne0 (= K for a linear weight).
  kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ8_1, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kQ8_K,
  kMxfp4Gguf,
  kIq4Nl, kIq4Xs,  // ggml's non-linear 4-bit types (codes through kvalues_iq4nl)
  // ggml's grid types (kernels/cpu/ggml_iq_dequant.h)
  kIq2Xxs, kIq2Xs, kIq2S, kIq3Xxs, kIq3S, kIq1S, kIq1M,
  kTq1_0, kTq2_0,  // ggml's ternary types (the same header)
};

// Elements per block and bytes per block (design.md §2 "BlockParameters").
struct BlockParameters {
  int64_t block_elements;
  int64_t block_bytes;
};

struct DTypeInfo {
  absl::string_view name;  // safetensors spelling, or the ggml name for GGUF-only types
  BlockParameters block;
  bool is_float;     // a floating-point scalar type (usable as a scale)
  bool is_gguf_block;  // a ggml quantized block type
};

const DTypeInfo& GetDTypeInfo(DType dtype);
inline absl::string_view DTypeName(DType dtype) { return GetDTypeInfo(dtype).name; }

// Parses a safetensors header dtype string ("F8_E4M3", "BF16", ...).
absl::StatusOr<DType> ParseSafetensorsDType(absl::string_view name);

// Maps a ggml type id (GGUF tensor info) to a DType; nullopt for ids we do not support
// (IQ* but IQ4_NL / IQ4_XS, TQ*, and unknown future ids), so the caller can name the tensor in
// its error.
std::optional<DType> DTypeFromGgmlType(uint32_t ggml_type);
// The ggml type id of a DType that a GGUF file can hold; nullopt otherwise.
std::optional<uint32_t> GgmlTypeFromDType(DType dtype);

// The kernel-side block type of a GGUF block dtype; nullopt for others (and for Q8_1 and Q8_K,
// ggml's activation-only types, which have no dequantizer here).
std::optional<kernels::cpu::GgmlBlockType> GgmlBlockTypeOf(DType dtype);

// Bytes needed for `numel` elements; an error when numel is not a whole number of blocks or the
// product overflows.
absl::StatusOr<int64_t> ByteSizeFor(DType dtype, int64_t numel);

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_DTYPE_H_
