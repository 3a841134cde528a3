// A typed, bounds-checked window onto one tensor's bytes inside a mapped checkpoint. Shapes are
// always in PyTorch order (outermost first, [N, K] for a linear weight), whichever container the
// tensor came from; the bytes were validated against shape × dtype when the file was opened, so a
// view never reaches outside its tensor.
#ifndef TESSERA_ENGINE_IO_TENSOR_VIEW_H_
#define TESSERA_ENGINE_IO_TENSOR_VIEW_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "engine/io/dtype.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::io {

template <typename T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType kValue = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType kValue = DType::kF64; };
template <> struct DTypeOf<int8_t> { static constexpr DType kValue = DType::kI8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType kValue = DType::kU8; };
template <> struct DTypeOf<int16_t> { static constexpr DType kValue = DType::kI16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType kValue = DType::kU16; };
template <> struct DTypeOf<int32_t> { static constexpr DType kValue = DType::kI32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType kValue = DType::kU32; };
template <> struct DTypeOf<int64_t> { static constexpr DType kValue = DType::kI64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType kValue = DType::kU64; };

#define TESSERA_IO_CHECK_DTYPE_(T)                                                           \
  if (dtype != DTypeOf<T>::kValue) {                                                         \
    return absl::InvalidArgumentError(absl::StrFormat("tensor '%s' has dtype %s, expected %s", \
                                                      name, DTypeName(dtype),                \
                                                      DTypeName(DTypeOf<T>::kValue)));       \
  }

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;       // PyTorch order
  absl::Span<const uint8_t> bytes;  // exactly ByteSizeFor(dtype, numel()) bytes

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int rank() const { return static_cast<int>(shape.size()); }
  std::string ShapeString() const;

  // The elements as T. Fails when the dtype is not T's or the data is misaligned for T (the
  // caller then uses CopyAs, which works at any alignment).
  template <typename T>
  absl::StatusOr<absl::Span<const T>> As() const {
    TESSERA_IO_CHECK_DTYPE_(T);
    if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(T) != 0) {
      return absl::FailedPreconditionError(
          absl::StrFormat("tensor '%s' data is not aligned for %s", name, DTypeName(dtype)));
    }
    return absl::Span<const T>(reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T));
  }

  template <typename T>
  absl::StatusOr<std::vector<T>> CopyAs() const {
    TESSERA_IO_CHECK_DTYPE_(T);
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }

  // Requires the exact shape; the message names the tensor and both shapes.
  absl::Status ExpectShape(absl::Span<const int64_t> expected) const;
};

// Decodes any float, integer or GGUF block dtype to f32 (scalar reference path; the engine
// calls it once per tensor at load, never per token). Packed F4 decodes low nibble first. With
// a `pool`, the element-wise dtypes are decoded in ranges on its threads (the same values): an
// online-quantized layer's f16 weights were 13% of its load on one core.
absl::StatusOr<std::vector<float>> ToFloat32(const TensorView& view,
                                             kernels::cpu::ThreadPool* pool = nullptr);

std::string ShapeToString(absl::Span<const int64_t> shape);

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_TENSOR_VIEW_H_
