#include "engine/backend/cpu/quantized_linear.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/quant/activation_quant.h"

namespace tessera::backend::cpu {
namespace {

namespace kc = kernels::cpu;
using quant::ActivationFormat;
using quant::ScaleGranularity;
using quant::ScaleOrigin;
using quant::WeightFormat;

}  // namespace

int64_t QuantizedLinear::weight_bytes() const {
  const auto& s = w_.spec;
  return s.n * s.k * quant::WeightBits(s.weight_format) / 8;
}

std::string QuantizedLinear::Describe() const {
  return absl::StrCat(w_.spec.SchemeName(), " / ", w_.spec.kernel);
}

void QuantizedLinear::Forward(const float* x, int64_t rows, float* y) const {
  const auto& s = w_.spec;
  const int64_t n = s.n, k = s.k;
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  std::function<void(int64_t, int64_t)> run;
  // Activation buffers live for this call; quantization happens once, before the column split.
  std::vector<uint8_t> qa, qa_scales;
  std::vector<int8_t> qa8;
  std::vector<float> sa, alpha, gscale;
  std::vector<int32_t> azp;
  kc::Fp8Activations fa;
  kc::Int8Activations ia;
  kc::Nvfp4Activations na;

  switch (s.weight_format) {
    case WeightFormat::kFp8E4m3: {
      const kc::Fp8Weights fw = w_.AsFp8();
      if (s.activation == ActivationFormat::kFloat) {
        run = [&](int64_t b, int64_t e) { kc::MatmulFp8W8A16(fw, n, k, x, rows, bias, y, b, e); };
        break;
      }
      qa.resize(rows * k);
      fa.q = qa.data();
      if (s.activation_origin == ScaleOrigin::kStatic) {
        kc::QuantizeFp8Static(x, rows * k, w_.input_scale, kc::Fp8ScaleOp::kDivide, qa.data());
        sa.assign(1, w_.input_scale);
        fa.layout = kc::Fp8ActScaleLayout::kPerTensor;
      } else if (s.activation_scale == ScaleGranularity::kGroup) {
        sa.resize(rows * kc::NumGroups(k, s.activation_group));
        kc::QuantizeFp8PerTokenGroup(x, rows, k, s.activation_group, kc::kFp8PerTokenGroupEps, qa.data(), sa.data());
        fa.layout = kc::Fp8ActScaleLayout::kPerTokenGroup;
        fa.group_size = s.activation_group;
      } else {
        sa.resize(rows);
        const float ub = s.activation_scale_ub.value_or(0.0f);
        kc::QuantizeFp8PerToken(x, rows, k, s.activation_scale_ub ? &ub : nullptr,
                                kc::kFp8PerTokenMinScale, qa.data(), sa.data());
        fa.layout = kc::Fp8ActScaleLayout::kPerToken;
      }
      fa.scales = sa.data();
      run = [&](int64_t b, int64_t e) { kc::MatmulFp8W8A8(fw, n, k, fa, rows, bias, y, b, e); };
      break;
    }
    case WeightFormat::kInt8:
      if (s.activation == ActivationFormat::kInt8) {
        const kc::Int8Weights iw = w_.AsInt8();
        qa8.resize(rows * k);
        ia.q = qa8.data();
        if (s.activation_origin == ScaleOrigin::kStatic) {
          kc::QuantizeInt8Static(x, rows * k, w_.input_scale, w_.input_zero_point, qa8.data());
          sa.assign(1, w_.input_scale);
          azp.assign(1, w_.input_zero_point);
          ia.per_token = false;
          ia.azp = w_.input_zero_point != 0 ? azp.data() : nullptr;
        } else if (s.activation_asymmetric) {
          sa.resize(rows);
          azp.resize(rows);
          kc::QuantizeInt8PerTokenAsymmetric(x, rows, k, qa8.data(), sa.data(), azp.data());
          ia.azp = azp.data();
        } else {
          sa.resize(rows);
          kc::QuantizeInt8PerTokenSymmetric(x, rows, k, qa8.data(), sa.data());
        }
        ia.scales = sa.data();
        run = [&](int64_t b, int64_t e) { kc::MatmulInt8W8A8(iw, n, k, ia, rows, bias, y, b, e); };
        break;
      }
      [[fallthrough]];
    case WeightFormat::kInt4:
    case WeightFormat::kInt3:
    case WeightFormat::kInt2:
    case WeightFormat::kInt4Awq: {
      const kc::IntWeights iw = w_.AsInt();
      run = [&, iw](int64_t b, int64_t e) { kc::MatmulIntWeightOnly(iw, n, k, x, rows, bias, y, b, e); };
      break;
    }
    case WeightFormat::kNvfp4: {
      const kc::Nvfp4Weights nw = w_.AsNvfp4();
      if (s.activation != ActivationFormat::kNvfp4) {
        run = [&, nw](int64_t b, int64_t e) { kc::MatmulNvfp4W4A16(nw, n, k, x, rows, bias, y, b, e); };
        break;
      }
      qa.resize(rows * k / 2);
      qa_scales.resize(rows * k / 16);
      if (s.activation_origin == ScaleOrigin::kStatic) {
        gscale.assign(1, w_.input_global_scale);
        alpha.assign(1, kc::Nvfp4Alpha(nw.global_scale, w_.input_global_scale));
      } else {
        // Dynamic global scale per row (a per-tensor amax would couple the rows of a batch).
        gscale.resize(rows);
        kc::Nvfp4DynamicGlobalScalePerRow(x, rows, k, gscale.data());
        alpha.resize(rows);
        for (int64_t r = 0; r < rows; ++r) alpha[r] = kc::Nvfp4Alpha(nw.global_scale, gscale[r]);
      }
      const int64_t stride = gscale.size() == 1 ? 0 : 1;
      kc::QuantizeNvfp4(x, rows, k, gscale.data(), stride, qa.data(), qa_scales.data());
      na = {qa.data(), qa_scales.data(), alpha.data(), stride};
      run = [&, nw](int64_t b, int64_t e) { kc::MatmulNvfp4W4A4(nw, n, k, na, rows, bias, y, b, e); };
      break;
    }
    case WeightFormat::kMxfp4: {
      const kc::Mxfp4Weights mw = w_.AsMxfp4();
      run = [&, mw](int64_t b, int64_t e) { kc::MatmulMxfp4W4A16(mw, n, k, x, rows, bias, y, b, e); };
      break;
    }
    default:
      return;  // the plan never builds a QuantizedLinear for other formats
  }
  if (pool_ != nullptr) {
    pool_->ParallelFor(n, 16, run);
  } else {
    run(0, n);
  }
}

}  // namespace tessera::backend::cpu
