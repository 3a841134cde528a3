#include "engine/backend/cpu/dense_linear.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera::backend::cpu {

absl::StatusOr<kernels::cpu::WeightEncoding> EncodingForDType(const io::TensorView& view) {
  kernels::cpu::WeightEncoding enc;
  switch (view.dtype) {
    case io::DType::kF32: enc.dense = kernels::cpu::DenseType::kF32; break;
    case io::DType::kBF16: enc.dense = kernels::cpu::DenseType::kBF16; break;
    case io::DType::kF16: enc.dense = kernels::cpu::DenseType::kF16; break;
    default:
      enc.ggml = io::GgmlBlockTypeOf(view.dtype);
      if (!enc.ggml) {
        return absl::UnimplementedError(absl::StrFormat(
            "tensor '%s': weight dtype %s has no CPU kernel", view.name, io::DTypeName(view.dtype)));
      }
  }
  return enc;
}

absl::StatusOr<std::unique_ptr<DenseLinear>> DenseLinear::Create(const io::TensorView& weight,
                                                                 std::vector<float> bias,
                                                                 kernels::cpu::ThreadPool* pool) {
  if (weight.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s' has shape %s, expected a 2-D [out, in] weight", weight.name, weight.ShapeString()));
  }
  auto enc = EncodingForDType(weight);
  if (!enc.ok()) return enc.status();
  if (!bias.empty() && static_cast<int64_t>(bias.size()) != weight.shape[0]) {
    return absl::InvalidArgumentError(absl::StrFormat("bias of '%s' has %d values, expected %d",
                                                      weight.name, bias.size(), weight.shape[0]));
  }
  return std::make_unique<DenseLinear>(*enc, weight, std::move(bias), pool);
}

void DenseLinear::Forward(const float* x, int64_t rows, float* y) const {
  const int64_t n = out_features(), k = in_features();
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  auto run = [&](int64_t b, int64_t e) {
    kernels::cpu::MatmulReference(enc_, weight_.bytes.data(), n, k, x, rows, bias, y, b, e);
  };
  if (pool_ != nullptr) {
    pool_->ParallelFor(n, 16, run);
  } else {
    run(0, n);
  }
}

std::string DenseLinear::Describe() const {
  return absl::StrCat(io::DTypeName(weight_.dtype), " / cpu-reference");
}

}  // namespace tessera::backend::cpu
