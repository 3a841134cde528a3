// QuantizedLinear's int8-activation path (--cpu_int8_activations, and NVFP4 W4A4 always): each
// call quantizes its activation rows once (int8 blocks of 32, or NVFP4 straight into int8 codes)
// and runs the 16-column VNNI tiles of kernels/cpu/fast/int4_x16.h over the column split.
#include <algorithm>
#include <functional>
#include <vector>

#include "engine/backend/cpu/quantized_linear.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/cpu/quant/fp4_matmul.h"

namespace tessera::backend::cpu {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;
using quant::ActivationFormat;
using quant::ScaleOrigin;

}  // namespace

void QuantizedLinear::ForwardInt8Acts(const float* x, int64_t rows, float* y, ColumnSplit split,
                                      kc::ScratchFrame& scratch) const {
  // Activations are quantized once per call, before the column split, per row (batch
  // invariance), with the rows split over the pool, into the caller's scratch frame.
  const auto& s = w_.spec;
  const int64_t k = s.k, blocks = k / 32;
  int8_t* qp = scratch.Alloc<int8_t>(rows * k);
  float* dp = scratch.Alloc<float>(rows * blocks);
  float* d2p = scratch.Alloc<float>(rows * blocks);
  float* sp = scratch.Alloc<float>(rows * blocks);
  float* s2p = scratch.Alloc<float>(rows * blocks);
  kf::Int4x16Acts acts{rows, qp, dp, sp};
  std::vector<float> gscale, alpha;
  std::function<void(int64_t, int64_t)> quantize;
  if (s.activation == ActivationFormat::kNvfp4) {
    // W4A4: NVFP4 activation quantization (per-row dynamic or static global scale) straight into
    // int8 codes 2·e2m1 with half-block scales (kf::QuantizeNvfp4ActsInt4x16, bit-identical to
    // QuantizeNvfp4 + PackNvfp4ActsInt4x16). Blocks are independent once a row's global scale is
    // known, so a row is also split into block ranges across the pool (decode has one row).
    const bool dynamic = s.activation_origin != ScaleOrigin::kStatic;
    if (dynamic) {
      gscale.resize(rows);
      alpha.resize(rows);
      for (int64_t r = 0; r < rows; ++r) {
        gscale[r] = kf::Nvfp4DynamicGlobalScaleFast(x + r * k, k);
        alpha[r] = kc::Nvfp4Alpha(w_.global_scale, gscale[r]);
      }
    } else {
      gscale.assign(1, w_.input_global_scale);
      alpha.assign(1, kc::Nvfp4Alpha(w_.global_scale, w_.input_global_scale));
    }
    const int64_t stride = dynamic ? 1 : 0;
    const int64_t chunks = pool_ != nullptr && rows < pool_->size() ? pool_->size() : 1;
    auto quantize_units = [&, stride, chunks](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t m = u / chunks, c = u % chunks;
        const int64_t b0 = blocks * c / chunks, b1 = blocks * (c + 1) / chunks, len = (b1 - b0) * 32;
        if (len == 0) continue;
        const int64_t e0 = m * k + b0 * 32;  // first element of the range
        const int64_t o = m * blocks + b0;   // its first block of 32
        kf::QuantizeNvfp4ActsInt4x16(x + e0, len, gscale[m * stride], qp + e0, dp + o, d2p + o,
                                     sp + o, s2p + o);
      }
    };
    if (pool_ != nullptr && rows * chunks > 1) {
      pool_->ParallelFor(rows * chunks, 1, quantize_units);
    } else {
      quantize_units(0, rows * chunks);
    }
    quantize = nullptr;
    acts.d2 = d2p;
    acts.s2 = s2p;
    acts.row_scale = alpha.data();
    acts.row_scale_stride = stride;
  } else if (q8_.format == kf::FastFormat::kNvfp4x16) {
    // W4A16 with int8 blocks of 32: both halves share the block scale, the sums are per half.
    quantize = [&](int64_t r0, int64_t r1) {
      kf::QuantizeActsInt4x16(x, k, r0, r1, qp, dp, sp, s2p);
      std::copy(dp + r0 * blocks, dp + r1 * blocks, d2p + r0 * blocks);
    };
    acts.d2 = d2p;
    acts.s2 = s2p;
  } else {
    quantize = [&](int64_t r0, int64_t r1) { kf::QuantizeActsInt4x16(x, k, r0, r1, qp, dp, sp); };
  }
  if (quantize == nullptr) {
    // done above
  } else if (pool_ != nullptr && rows > 1) {
    pool_->ParallelFor(rows, 1, quantize);
  } else {
    quantize(0, rows);
  }
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  split(s.n, [&](int64_t b, int64_t e) { kf::Int4x16Matmul(q8_, acts, bias, y, b, e); });
}

}  // namespace tessera::backend::cpu
