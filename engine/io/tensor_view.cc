#include "engine/io/tensor_view.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_join.h"
#include "kernels/cpu/fast/half_convert.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::io {
namespace {

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// AMD FNUZ float8 (quant-formats.md §2.1): bias one higher than FN, a single NaN at 0x80, no -0.
float DecodeFnuz(uint8_t code, int exp_bits, int man_bits) {
  if (code == 0x80) return std::numeric_limits<float>::quiet_NaN();
  const int bias = (1 << (exp_bits - 1));
  const int sign = code >> 7;
  const int e = (code >> man_bits) & ((1 << exp_bits) - 1);
  const int m = code & ((1 << man_bits) - 1);
  float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - bias - man_bits)
                   : std::ldexp(static_cast<float>((1 << man_bits) | m), e - bias - man_bits);
  return sign ? -v : v;
}

// MX FP6 element (S.E.M, no inf/NaN) from a 6-bit code.
float DecodeFp6(uint8_t code, int exp_bits, int man_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int sign = (code >> 5) & 1;
  const int e = (code >> man_bits) & ((1 << exp_bits) - 1);
  const int m = code & ((1 << man_bits) - 1);
  float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - bias - man_bits)
                   : std::ldexp(static_cast<float>((1 << man_bits) | m), e - bias - man_bits);
  return sign ? -v : v;
}

}  // namespace

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string TensorView::ShapeString() const { return ShapeToString(shape); }

absl::Status TensorView::ExpectShape(absl::Span<const int64_t> expected) const {
  if (absl::Span<const int64_t>(shape) == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("tensor '%s' has shape %s, expected %s", name,
                                                    ShapeString(), ShapeToString(expected)));
}

absl::StatusOr<std::vector<float>> ToFloat32(const TensorView& view,
                                             kernels::cpu::ThreadPool* pool) {
  const int64_t n = view.numel();
  std::vector<float> out(static_cast<size_t>(n));
  const uint8_t* p = view.bytes.data();
  constexpr int64_t kGrain = int64_t{1} << 16;  // 64 Ki elements per range at least
  auto each = [&](int stride, auto fn) {
    auto range = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = fn(p + i * stride);
    };
    kernels::cpu::ParallelForOrInline(pool, n, kGrain, range);
  };
  switch (view.dtype) {
    case DType::kF32: each(4, [](const uint8_t* q) { return Load<float>(q); }); break;
    case DType::kF64:
      each(8, [](const uint8_t* q) { return static_cast<float>(Load<double>(q)); });
      break;
    case DType::kF16:
    case DType::kBF16: {
      // The element-wise lambdas above, vectorized: the same bits (half_convert.h).
      const auto convert = view.dtype == DType::kF16 ? kernels::cpu::fast::ConvertF16ToF32
                                                     : kernels::cpu::fast::ConvertBf16ToF32;
      kernels::cpu::ParallelForOrInline(pool, n, kGrain, [&](int64_t begin, int64_t end) {
        convert(p + 2 * begin, end - begin, out.data() + begin);
      });
      break;
    }
    case DType::kF8E4M3: each(1, [](const uint8_t* q) { return numeric::DecodeE4m3(*q); }); break;
    case DType::kF8E5M2: each(1, [](const uint8_t* q) { return numeric::DecodeE5m2(*q); }); break;
    case DType::kF8E8M0: each(1, [](const uint8_t* q) { return numeric::DecodeE8m0(*q); }); break;
    case DType::kF8E4M3Fnuz: each(1, [](const uint8_t* q) { return DecodeFnuz(*q, 4, 3); }); break;
    case DType::kF8E5M2Fnuz: each(1, [](const uint8_t* q) { return DecodeFnuz(*q, 5, 2); }); break;
    case DType::kBool:
    case DType::kU8: each(1, [](const uint8_t* q) { return static_cast<float>(*q); }); break;
    case DType::kI8:
      each(1, [](const uint8_t* q) { return static_cast<float>(static_cast<int8_t>(*q)); });
      break;
    case DType::kU16: each(2, [](const uint8_t* q) { return float(Load<uint16_t>(q)); }); break;
    case DType::kI16: each(2, [](const uint8_t* q) { return float(Load<int16_t>(q)); }); break;
    case DType::kU32: each(4, [](const uint8_t* q) { return float(Load<uint32_t>(q)); }); break;
    case DType::kI32: each(4, [](const uint8_t* q) { return float(Load<int32_t>(q)); }); break;
    case DType::kU64: each(8, [](const uint8_t* q) { return float(Load<uint64_t>(q)); }); break;
    case DType::kI64: each(8, [](const uint8_t* q) { return float(Load<int64_t>(q)); }); break;
    case DType::kF4:
      for (int64_t i = 0; i < n; ++i) {
        const uint8_t byte = p[i / 2];
        out[i] = numeric::DecodeE2m1((i % 2 == 0) ? (byte & 0xF) : (byte >> 4));
      }
      break;
    case DType::kF6E2M3:
    case DType::kF6E3M2: {
      const int eb = view.dtype == DType::kF6E2M3 ? 2 : 3;
      for (int64_t g = 0; g < n / 4; ++g) {
        const uint32_t w = p[3 * g] | (p[3 * g + 1] << 8) | (p[3 * g + 2] << 16);
        for (int j = 0; j < 4; ++j) out[4 * g + j] = DecodeFp6((w >> (6 * j)) & 63, eb, 5 - eb);
      }
      break;
    }
    case DType::kC64:
      return absl::UnimplementedError(
          absl::StrFormat("tensor '%s': complex dtype C64 has no f32 value", view.name));
    default: {
      auto block_type = GgmlBlockTypeOf(view.dtype);
      if (!block_type) {
        return absl::UnimplementedError(absl::StrFormat(
            "tensor '%s': dequantization of %s is not supported", view.name, DTypeName(view.dtype)));
      }
      const int64_t per_block = kernels::cpu::GetGgmlBlockInfo(*block_type).elements;
      kernels::cpu::DequantizeGgmlBlocks(*block_type, p, n / per_block, out.data());
    }
  }
  return out;
}

}  // namespace tessera::io
