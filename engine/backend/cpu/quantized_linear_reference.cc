// QuantizedLinear's reference path: the scalar kernels of kernels/cpu/quant on the checkpoint's
// codes (after any activation scheme's rounding, so that they compute the same math as the fast
// kernels), the oracle the fast kernels are tested against and what runs where no fast kernel
// takes a layer.
#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "engine/backend/cpu/column_split.h"
#include "engine/backend/cpu/quantized_linear.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/numeric/half.h"

namespace tessera::backend::cpu {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;
using quant::ActivationFormat;
using quant::ScaleGranularity;
using quant::ScaleOrigin;
using quant::WeightFormat;

}  // namespace

void QuantizedLinear::ForwardReference(const float* x, int64_t rows, float* y) const {
  kc::ScratchFrame scratch;
  ForwardReferenceSorted(GatherActOrder(x, rows, scratch), rows, y,
                         [this, rows](int64_t n, const ColumnRun& run) {
                           RunColumnsOnPool(pool_, n, rows, run);
                         });
}

void QuantizedLinear::ForwardReferenceSorted(const float* x, int64_t rows, float* y,
                                             ColumnSplit split) const {
  const auto& s = w_.spec;
  const int64_t n = s.n, k = s.k;
  if (w_.q == nullptr) {  // DropReferenceCodes
    std::fill(y, y + rows * n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
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
  std::vector<float> x_q8;
  if (s.activation == ActivationFormat::kInt8Block32 && k % 32 == 0) {
    // The int8-activation scheme's math: the float kernel on x rounded to int8 blocks of 32.
    x_q8.resize(rows * k);
    std::vector<int8_t> q(k);
    std::vector<float> d(k / 32);
    for (int64_t r = 0; r < rows; ++r) {
      kf::QuantizeRowQ8Block32(x + r * k, k, q.data(), d.data());
      for (int64_t i = 0; i < k; ++i) x_q8[r * k + i] = static_cast<float>(q[i]) * d[i / 32];
    }
    x = x_q8.data();
  } else if (s.activation == ActivationFormat::kInt16Group) {
    x_q8.resize(rows * k);  // the int16-activation scheme's math: the float kernel on x̂
    RoundToInt16Groups(x, rows, x_q8.data());
    x = x_q8.data();
  } else if (s.activation == ActivationFormat::kBf16) {
    // The bf16-activation scheme's math: the float kernel on x rounded to bf16.
    x_q8.resize(rows * k);
    for (int64_t i = 0; i < rows * k; ++i) x_q8[i] = numeric::Bf16ToFloat(numeric::FloatToBf16(x[i]));
    x = x_q8.data();
  }

  switch (s.weight_format) {
    case WeightFormat::kFp8E4m3: {
      const kc::Fp8Weights fw = w_.AsFp8();
      if (s.activation == ActivationFormat::kFloat || s.activation == ActivationFormat::kBf16) {
        run = [&, fw](int64_t b, int64_t e) { kc::MatmulFp8W8A16(fw, n, k, x, rows, bias, y, b, e); };
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
      run = [&, fw](int64_t b, int64_t e) { kc::MatmulFp8W8A8(fw, n, k, fa, rows, bias, y, b, e); };
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
        run = [&, iw](int64_t b, int64_t e) { kc::MatmulInt8W8A8(iw, n, k, ia, rows, bias, y, b, e); };
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
    case WeightFormat::kBnb4bit: {
      const kc::Codebook4Weights cw = w_.AsCodebook4();
      run = [&, cw](int64_t b, int64_t e) { kc::MatmulCodebook4(cw, n, k, x, rows, bias, y, b, e); };
      break;
    }
    default:
      return;  // the plan never builds a QuantizedLinear for other formats
  }
  split(n, run);
}

}  // namespace tessera::backend::cpu
