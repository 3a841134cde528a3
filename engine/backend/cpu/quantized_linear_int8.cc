// QuantizedLinear's INT8 W8A8 path: int8 weights with int8 activations (compressed-tensors
// int-quantized, Quark int8) on the panel kernel of kernels/cpu/fast/int8_dot_matmul.h (VNNI, or
// AVX2's `vpmaddwd` without it).
// The activations are quantized by the reference quantizers' exact arithmetic (the dynamic
// symmetric one fused with the kernel's u8 shift) and the kernel is bit-identical to
// MatmulInt8W8A8, so this path and ForwardReference agree bit for bit. Also the byte tiles for
// INT8 / INT3 / INT2 weight-only layers under --cpu_int8_activations (InitIntBytesX16).
#include <vector>

#include "engine/backend/cpu/quantized_linear.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/parallel_repack.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/quant/activation_quant.h"

namespace tessera::backend::cpu {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;
using quant::ActivationFormat;
using quant::ScaleOrigin;
using quant::WeightFormat;

}  // namespace

void QuantizedLinear::InitIntBytesX16() {
  const auto& s = w_.spec;
  const kc::IntWeights iw = w_.AsInt();
  if (iw.packing != kc::IntWeightPacking::kU8 || iw.q == nullptr || iw.group_size % 32 != 0 ||
      iw.num_groups * iw.group_size != s.k || w_.zeros.size() != w_.scales.size()) {
    return;  // the reference path runs the same int8-activation scheme
  }
  kf::FastWeights src;
  src.format = kf::FastFormat::kU8Groups;
  src.data = iw.q;
  src.n = s.n;
  src.k = s.k;
  src.row_stride = s.k;
  src.group_scales = iw.scales;
  src.group_zeros = iw.zeros;
  src.group_size = iw.group_size;
  // The tiles copy the codes; the checkpoint-layout codes stay for the reference path and
  // DequantizeRow (as for the INT4 tiles).
  x16_ = kc::HugePageBuffer(kf::U8x16Bytes(s.n, s.k, iw.group_size));
  q8_ = kf::RepackGroupedOverPool(pool_, src,
                                  kf::U8x16Bytes(kf::kRepackGroupColumns, s.k, iw.group_size),
                                  x16_.data(), kf::RepackU8x16);
  q8_ok_ = true;
}

bool QuantizedLinear::InitInt8Dot() {
  const auto& s = w_.spec;
  if (s.weight_format != WeightFormat::kInt8 || s.activation != ActivationFormat::kInt8) {
    return false;
  }
  if (!kf::Int8DotUsable() || !kf::Int8DotSupportsK(s.k) || w_.q == nullptr) return false;
  if (s.activation_origin == ScaleOrigin::kStatic && !kf::Int8DotSupportsAzp(w_.input_zero_point)) {
    return false;
  }
  const kc::Int8Weights iw = w_.AsInt8();
  x16_ = kc::HugePageBuffer(kf::Int8QuadsBytes(s.n, s.k));
  int8_col_sums_.resize(s.n);
  kf::RepackInt8Quads(iw.q, s.n, s.k, x16_.data(), int8_col_sums_.data());
  int8_dot_ok_ = true;
  return true;
}

void QuantizedLinear::ForwardInt8Dot(const float* x, int64_t rows, float* y, ColumnSplit split,
                                     kc::ScratchFrame& scratch) const {
  const auto& s = w_.spec;
  const int64_t n = s.n, k = s.k, stride = kf::Int8DotActStride(k);
  uint8_t* up = scratch.Alloc<uint8_t>(rows * stride);
  kc::Int8Activations a;
  a.per_token = s.activation_origin != ScaleOrigin::kStatic;
  float* sp = scratch.Alloc<float>(a.per_token ? rows : 1);
  int32_t* zp = scratch.Alloc<int32_t>(a.per_token ? rows : 1);
  if (!a.per_token) {
    sp[0] = w_.input_scale;
    zp[0] = w_.input_zero_point;
    a.azp = w_.input_zero_point != 0 ? zp : nullptr;
  } else if (s.activation_asymmetric) {
    a.azp = zp;
  }
  a.scales = sp;
  const bool fused = a.per_token && !s.activation_asymmetric;
  int8_t* qp = fused ? nullptr : scratch.Alloc<int8_t>(rows * k);
  // Each row's codes depend on that row only, so splitting the rows over the pool changes nothing.
  auto quantize = [&](int64_t r0, int64_t r1) {
    if (fused) {
      kf::QuantizeInt8PerTokenSymmetricU8(x, k, r0, r1, sp, up);
      return;
    }
    if (!a.per_token) {
      kc::QuantizeInt8Static(x + r0 * k, (r1 - r0) * k, w_.input_scale, w_.input_zero_point,
                             qp + r0 * k);
    } else {
      kc::QuantizeInt8PerTokenAsymmetric(x + r0 * k, r1 - r0, k, qp + r0 * k, sp + r0, zp + r0);
    }
    kf::Int8ActsToU8(qp, k, r0, r1, up);
  };
  if (pool_ != nullptr && rows > 1) {
    pool_->ParallelFor(rows, 1, quantize);
  } else {
    quantize(0, rows);
  }
  if (a.per_token && a.azp != nullptr) {
    // A row far from zero gets a zero point outside int8's range; the reference sums in int64.
    // It is bit-identical to the kernel wherever both apply, so switching per call is invisible.
    for (int64_t r = 0; r < rows; ++r) {
      if (!kf::Int8DotSupportsAzp(zp[r])) return ForwardReferenceSorted(x, rows, y, split);
    }
  }
  const kc::Int8Weights iw = w_.AsInt8();
  const kf::Int8DotWeights w{x16_.data(), int8_col_sums_.data(), iw.scales, iw.per_row, n, k};
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  split(n, [&](int64_t b, int64_t e) { kf::Int8DotMatmul(w, up, a, rows, bias, y, b, e); });
}

}  // namespace tessera::backend::cpu
