#include "engine/backend/cpu/quantized_linear.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/column_split.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/fp8_act_quant.h"
#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/parallel_repack.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/fast/quant_panel_amx.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::backend::cpu {
namespace {

namespace kc = kernels::cpu;
using quant::ActivationFormat;
using quant::ScaleGranularity;
using quant::ScaleOrigin;
using quant::WeightFormat;
namespace kf = kernels::cpu::fast;

// The W8A8 fast path folds the weight scale into the epilogue and decodes bare codes.
constexpr float kUnitScale = 1.0f;

// Decodes NVFP4 activation codes (e2m1 · sf, exact in f32) straight into the fast kernel's 4-bit
// lane order (kf::FastQuantPermuteActivations): per 32 elements the even ones, then the odd ones.
void DecodeNvfp4ActivationsPermuted(const uint8_t* packed, const uint8_t* sf, int64_t rows,
                                    int64_t k, float* out) {
  for (int64_t b = 0; b < rows * k / 32; ++b) {
    for (int l = 0; l < 16; ++l) {
      const float s = numeric::DecodeUe4m3(sf[2 * b + l / 8]);
      const uint8_t byte = packed[b * 16 + l];
      out[b * 32 + l] = numeric::DecodeE2m1(numeric::LowNibble(byte)) * s;
      out[b * 32 + 16 + l] = numeric::DecodeE2m1(numeric::HighNibble(byte)) * s;
    }
  }
}

}  // namespace

void QuantizedLinear::InitFast() {
  // bitsandbytes 4-bit under bf16 activations: the codebook rounded to bf16 for every path, the
  // reference included (the weights bitsandbytes' bf16 compute dtype holds, to 2^-9).
  if (w_.spec.weight_format == WeightFormat::kBnb4bit &&
      w_.spec.activation == ActivationFormat::kBf16) {
    for (float& v : w_.codebook) v = numeric::Bf16ToFloat(numeric::FloatToBf16(v));
  }
  // Escape hatch for A/B measurements and bisecting: keep every layer on the reference kernels.
  if (std::getenv("TESSERA_QUANT_REFERENCE") != nullptr) return;
  if (InitInt8Dot()) return;
  const auto& s = w_.spec;
  const bool nvfp4_int_acts = s.weight_format == WeightFormat::kNvfp4 &&
                              (s.activation == ActivationFormat::kNvfp4 ||
                               s.activation == ActivationFormat::kInt8Block32);
  const bool tiles_fast = kf::Int4x16TilesVectorized();
  if (nvfp4_int_acts && s.k % 32 == 0 && tiles_fast) {
    // NVFP4 codes times int8 activation codes (VNNI or AVX2): exact per half block, so W4A4 takes
    // it by default; W4A16 only with int8 activations (--cpu_int8_activations, or by default
    // without AVX-512). A NaN block scale (never written by a producer) keeps the layer on the
    // float paths, which propagate it.
    const kc::Nvfp4Weights nw = w_.AsNvfp4();
    bool nan_scale = false;
    for (int64_t i = 0; i < s.n * s.k / 16; ++i) nan_scale |= (nw.block_scales[i] & 0x7F) == 0x7F;
    if (!nan_scale && nw.packed != nullptr) {
      q8_.format = kf::FastFormat::kNvfp4Pairs;
      q8_.data = nw.packed;
      q8_.n = s.n;
      q8_.k = s.k;
      q8_.row_stride = s.k / 2;
      q8_.block_scales = nw.block_scales;
      q8_.alpha = s.activation == ActivationFormat::kNvfp4 ? 1.0f : nw.global_scale;
      x16_ = kc::HugePageBuffer(kf::Nvfp4x16Bytes(s.n, s.k));
      q8_ = kf::RepackNvfp4x16OverPool(pool_, q8_, x16_.data());
      q8_ok_ = true;
      return;
    }
  }
  if (s.weight_format == WeightFormat::kMxfp4 && s.activation == ActivationFormat::kInt8Block32 &&
      s.k % 32 == 0 && tiles_fast) {
    // MXFP4 codes times int8 activation codes (VNNI or AVX2; --cpu_int8_activations). A NaN scale
    // (0xFF, never written by a producer) leaves the layer to the reference path, which
    // propagates it.
    const kc::Mxfp4Weights mw = w_.AsMxfp4();
    if (mw.packed != nullptr && mw.scales != nullptr &&
        std::none_of(mw.scales, mw.scales + s.n * s.k / kc::kMxfp4BlockSize,
                     [](uint8_t e) { return e == numeric::kE8m0NanCode; })) {
      x16_ = kc::HugePageBuffer(kf::Mxfp4x16Bytes(s.n, s.k));
      q8_ = kf::RepackMxfp4x16OverPool(pool_, mw.packed, mw.scales, s.n, s.k, x16_.data());
      q8_ok_ = true;
      return;
    }
  }
  if (s.activation == ActivationFormat::kInt8Block32) {
    const bool int4 = s.weight_format == WeightFormat::kInt4 || s.weight_format == WeightFormat::kInt4Awq;
    const bool bytes = s.weight_format == WeightFormat::kInt8 || s.weight_format == WeightFormat::kInt3 ||
                       s.weight_format == WeightFormat::kInt2;
    if ((!int4 && !bytes) || !w_.g_idx.empty() || s.k % 32 != 0) return;
    if (bytes) {
      InitIntBytesX16();
      return;
    }
    w_.PackInt4Pairs();
    const kc::IntWeights iw = w_.AsInt();
    if (iw.packing != kc::IntWeightPacking::kU4Pairs || iw.group_size % 32 != 0 ||
        iw.num_groups * iw.group_size != s.k || w_.zeros.size() != w_.scales.size()) {
      return;
    }
    q8_.format = kf::FastFormat::kU4Groups;
    q8_.data = iw.q;
    q8_.n = s.n;
    q8_.k = s.k;
    q8_.row_stride = s.k / 2;
    q8_.group_scales = iw.scales;
    q8_.group_zeros = iw.zeros;
    q8_.group_size = iw.group_size;
    // 16-column tiles (int4_x16.h): reduction-free VNNI for one row and for batches. They copy
    // the codes; the nibble pairs stay for the reference path (ForwardReference, the tests).
    x16_ = kc::HugePageBuffer(kf::U4x16Bytes(s.n, s.k, iw.group_size));
    q8_ = kf::RepackGroupedOverPool(pool_, q8_,
                                    kf::U4x16Bytes(kf::kRepackGroupColumns, s.k, iw.group_size),
                                    x16_.data(), kf::RepackU4x16);
    q8_ok_ = true;
    return;
  }
  kf::FastQuantWeights f;
  f.n = s.n;
  f.k = s.k;
  switch (s.weight_format) {
    case WeightFormat::kFp8E4m3: {
      const kc::Fp8Weights fw = w_.AsFp8();
      bool block_w8a8 = false;
      if (s.activation == ActivationFormat::kFloat || s.activation == ActivationFormat::kBf16) {
        f.scales = fw.scales;
        if (fw.layout == kc::Fp8WeightScaleLayout::kBlock) {
          if (fw.block_n <= 0 || fw.block_k <= 0) return;
          f.scale_rows = fw.block_n;
          f.scale_row_stride = kc::NumGroups(s.k, fw.block_k);
          f.scale_k = fw.block_k;
        } else {
          const bool per_row = fw.layout == kc::Fp8WeightScaleLayout::kPerRow;
          f.scale_rows = per_row ? 1 : std::max<int64_t>(1, s.n);
          f.scale_row_stride = per_row ? 1 : 0;
          f.scale_k = s.k;
        }
      } else {
        const bool group_acts = s.activation_origin != ScaleOrigin::kStatic &&
                                s.activation_scale == ScaleGranularity::kGroup;
        if (fw.layout == kc::Fp8WeightScaleLayout::kBlock) {
          // Block weights (DeepSeek / FineGrainedFP8): both scales fold into each K-block's sum
          // (the BF16 kernel's act_block_scales), the reference's per-block order. Where that
          // kernel does not take the layer (no AVX-512 BF16: AVX2 CPUs, AVX-512 before Cooper
          // Lake / Zen 4; blocks not 32 wide; TESSERA_FP8_BF16=0) the Highway kernel takes the
          // same terms as (code · act scale) · (code · weight scale), summed along K: the
          // reassociation FastQuantMatmul's bound allows, instead of the scalar reference; the FMA
          // panels (fp8_panel_matmul.h, zmm or ymm) take those terms where their block shapes fit.
          if (fw.block_n <= 0 || fw.block_k <= 0) return;
          if (group_acts && s.activation_group != fw.block_k) return;
          f.scales = fw.scales;
          f.scale_rows = fw.block_n;
          f.scale_row_stride = kc::NumGroups(s.k, fw.block_k);
          f.scale_k = fw.block_k;
          block_w8a8 = true;
        } else {
          // Bare codes; the weight scale goes to the epilogue, as in the reference.
          if (group_acts) return;
          f.scales = &kUnitScale;
          f.scale_rows = std::max<int64_t>(1, s.n);
          f.scale_k = s.k;
        }
      }
      f.decode = kf::QuantDecode::kFp8;
      f.q = fw.q;
      if (fw.q == nullptr || kf::Fp8HasNanCodes(fw.q, s.n * s.k)) return;
      if (block_w8a8) {  // the BF16 kernel where it takes the layer, else scaled activations
        f.act_block_scales = kf::FastQuantUsesBf16(f);
        fp8_scaled_acts_ = !f.act_block_scales;
      }
      break;
    }
    case WeightFormat::kInt4:
    case WeightFormat::kInt4Awq: {
      if (!w_.g_idx.empty() || s.k % 32 != 0) return;  // g_idx left: groups of unequal size
      w_.PackInt4Pairs();
      const kc::IntWeights iw = w_.AsInt();
      f.decode = kf::QuantDecode::kInt4;
      f.q = iw.q;
      f.scales = iw.scales;
      f.zeros = iw.zeros;
      f.scale_row_stride = iw.num_groups;
      f.scale_k = iw.group_size;
      if (iw.num_groups * iw.group_size != s.k) return;
      fast_permute_ = true;
      break;
    }
    case WeightFormat::kInt8:
    case WeightFormat::kInt3:
    case WeightFormat::kInt2: {  // one code per byte (the loaders unpack INT3 / INT2)
      const kc::IntWeights iw = w_.AsInt();
      const bool float_or_int16 =
          s.activation == ActivationFormat::kFloat || s.activation == ActivationFormat::kInt16Group;
      if (!float_or_int16 || !w_.g_idx.empty() || w_.scales.empty() ||
          iw.packing != kc::IntWeightPacking::kU8 || iw.num_groups * iw.group_size < s.k ||
          w_.zeros.size() != w_.scales.size()) {
        return;
      }
      f.decode = kf::QuantDecode::kInt8;
      f.q = iw.q;
      f.scales = iw.scales;
      f.zeros = iw.zeros;
      f.scale_row_stride = iw.num_groups;
      f.scale_k = iw.group_size;
      break;
    }
    case WeightFormat::kNvfp4: {
      const kc::Nvfp4Weights nw = w_.AsNvfp4();
      f.decode = kf::QuantDecode::kNvfp4;
      f.q = nw.packed;
      f.block_scales = nw.block_scales;
      f.alpha = s.activation == ActivationFormat::kNvfp4 ? 1.0f : nw.global_scale;
      fast_permute_ = true;
      break;
    }
    case WeightFormat::kMxfp4: {
      const kc::Mxfp4Weights mw = w_.AsMxfp4();
      f.decode = kf::QuantDecode::kMxfp4;
      f.q = mw.packed;
      f.block_scales = mw.scales;
      fast_permute_ = true;
      break;
    }
    case WeightFormat::kBnb4bit: {
      // Exact activations: the f32 form (NF4 / FP4 values are not bf16 ones). bf16 activations:
      // the codebook rounded above, which the pair form reads through its table where the CPU
      // has AVX-512 BF16 (the f32 form elsewhere).
      if (s.activation != ActivationFormat::kFloat && s.activation != ActivationFormat::kBf16) {
        return;
      }
      const kc::Codebook4Weights cw = w_.AsCodebook4();
      f.decode = kf::QuantDecode::kCodebook4;
      f.q = cw.packed;
      f.scales = cw.scales;
      f.codebook = cw.codebook;
      f.scale_k = cw.group;
      f.scale_row_stride = s.k / cw.group;
      break;
    }
    default:
      return;
  }
  fast_ = f;
  fast_ok_ = kf::FastQuantSupported(fast_);
  // FP8 with per-tensor / per-row weight scales runs on 16-column panels (fp8_panel_matmul.h),
  // for every activation form: W8A8's E4M3 codes and bf16 activations take hi alone, exact f32
  // ones the hi + lo split; 2-D block scales stay on the row-major kernel (where the BF16 kernel
  // does not run the FMA panels take them, and every other form); TESSERA_FP8_BF16=0 sends FP8
  // to the Highway f32 kernel. The panels were as fast at one row and faster from 16
  // (bench/README.md, eleventh session), with bit-identical rows at any row count.
  const bool panel_acts = s.activation == ActivationFormat::kFp8 ||
                          s.activation == ActivationFormat::kBf16 ||
                          s.activation == ActivationFormat::kFloat;
  if (fast_ok_ && panel_acts && kf::Fp8PanelSupported(fast_) && kf::FastQuantUsesBf16(fast_)) {
    x16_ = kc::HugePageBuffer(kf::Fp8PairsBytes(s.n, s.k));
    fast_ = kf::RepackFp8Pairs(fast_, x16_.data(), pool_);
    fp8_panels_ok_ = true;
    kf::AmxBf16Usable();  // the panels run as AMX tiles there: its one-time self-check at load
  } else if (fast_ok_ && panel_acts && kf::Fp8PanelFmaSupported(fast_)) {
    // Without the BF16 kernel: the same panels in f32 FMA (zmm on AVX-512, ymm on AVX2), exact
    // activations.
    x16_ = kc::HugePageBuffer(kf::Fp8PairsBytes(s.n, s.k));
    fast_ = kf::RepackFp8Pairs(fast_, x16_.data(), pool_);
    fp8_panels_ok_ = true;
    fp8_fma_ = true;
  }
  // Weight-only integer codes (INT4, and INT8 / INT3 / INT2 as bytes), MXFP4 and NVFP4 W4A16
  // with f32, bf16 or int16 activations: 16-column panels with the scales beside the codes
  // (quant_panel_matmul.h), activations in their natural order (bench/README.md, twelfth
  // session: 0.33-0.41x -> 0.41-0.48x oneDNN bf16 at M = 128, batch 1 10-140% faster). A W4A8
  // spec (compressed-tensors int8 / fp8 input_activations) stays where it was.
  const bool float_acts = s.activation == ActivationFormat::kFloat ||
                          s.activation == ActivationFormat::kBf16 ||
                          s.activation == ActivationFormat::kInt16Group;
  const bool integer =
      (f.decode == kf::QuantDecode::kInt4 || f.decode == kf::QuantDecode::kInt8) && float_acts;
  const bool fp4 = float_acts &&
                   (f.decode == kf::QuantDecode::kMxfp4 || f.decode == kf::QuantDecode::kNvfp4);
  // On AVX-512 BF16 the 4-bit codes (and byte codes of up to 6 bits) take the bf16-pair form:
  // exact activations as the hi + lo split, bf16 ones as hi alone, int16 ones on its int16 route
  // (bench/README.md, thirteenth and nineteenth sessions).
  // Without AVX-512 FastQuantMatmul has no 4-bit decoder: the f32 panels' AVX2 kernel alone
  // takes those layers (quant_panel_avx2.cc), under FastQuantSupported's shape rules, which the
  // plan's "-fast" label follows (CpuKernelSelector).
  const bool four_bit = f.decode == kf::QuantDecode::kInt4 || fp4;
  // Codebook layers (bitsandbytes NF4 / FP4) have no row kernel: the panels alone, everywhere.
  const bool codebook = f.decode == kf::QuantDecode::kCodebook4;
  const bool panels_alone = codebook || (!fast_ok_ && four_bit && !kf::FastQuant4BitAvailable() &&
                                         s.k % 32 == 0 && (fp4 || f.scale_k % 32 == 0));
  if ((fast_ok_ || panels_alone) && (integer || fp4 || codebook) &&
      kf::QuantPanelSupported(fast_)) {
    // int16 activations on 8-bit byte codes: the int16 route's own pair form.
    const bool int16_only = s.activation == ActivationFormat::kInt16Group &&
                            !kf::QuantPanelPairsSupported(fast_) && kf::QuantPanelInt16Takes(fast_);
    quant_pairs_ = kf::QuantPanelPairsSupported(fast_) || int16_only;
    x16_ = kc::HugePageBuffer(kf::QuantPanelsBytes(fast_));
    fast_ = kf::RepackQuantPanels(fast_, x16_.data(),
                                  int16_only     ? kf::QuantPanelForm::kInt16Pairs
                                  : quant_pairs_ ? kf::QuantPanelForm::kBf16Pairs
                                                 : kf::QuantPanelForm::kF32,
                                  pool_);
    fast_permute_ = false;
    quant_panels_ok_ = true;
    fast_ok_ = true;
    // 4-bit pair panels run as AMX tiles where granted (quant_panel_amx.h: FP4, INT4 in groups
    // of whole 32s): the one-time self-check at load, not in the first request.
    if (kf::QuantPanelAmxTakes(fast_)) kf::AmxBf16Usable();
  }
}

bool QuantizedLinear::ForwardFast(const float* x, int64_t rows, float* y, ColumnSplit split,
                                  kc::ScratchFrame& scratch) const {
  const auto& s = w_.spec;
  const int64_t n = s.n, k = s.k;
  kf::FastQuantWeights f = fast_;
  // Per-call buffers: decoded / permuted activations and the epilogue's row scales. Everything is
  // computed once per call, before the column split, and per row (batch-invariant).
  std::vector<float> xa, sa;
  std::vector<uint8_t> qa, qa_scales;
  if (s.activation == ActivationFormat::kInt16Group && ForwardInt16(x, rows, y, split, scratch)) {
    return true;  // else x is now x̂, for the float kernels below
  }
  const float* xin = x;
  // The per-row quantizers run over row ranges on the pool: each row's codes depend only on that
  // row, so the split changes nothing (batch invariance), and a batch's rows no longer wait on
  // one thread.
  auto for_rows = [&](const std::function<void(int64_t, int64_t)>& fn) {
    if (pool_ != nullptr && rows > 1) {
      pool_->ParallelFor(rows, 1, fn);
    } else {
      fn(0, rows);
    }
  };
  if (s.activation == ActivationFormat::kBf16) {
    // bf16 activations (--cpu_bf16_activations): x rounded once; the kernel then sees exact
    // bf16 values and takes one vdpbf16ps per weight pair.
    xa.resize(rows * k);
    for_rows([&](int64_t r0, int64_t r1) {
      for (int64_t i = r0 * k; i < r1 * k; ++i) xa[i] = numeric::Bf16ToFloat(numeric::FloatToBf16(x[i]));
    });
    xin = xa.data();
    if (fast_permute_) {  // a 4-bit layer left on FastQuantMatmul (an FP4 NaN scale code)
      const std::vector<float> rounded = std::move(xa);
      xa.resize(rows * k);
      for_rows([&](int64_t r0, int64_t r1) {
        kf::FastQuantPermuteActivations(rounded.data() + r0 * k, r1 - r0, k, xa.data() + r0 * k);
      });
      xin = xa.data();
    }
  } else if (s.weight_format == WeightFormat::kFp8E4m3 && s.activation == ActivationFormat::kFp8) {
    const kc::Fp8Weights fw = w_.AsFp8();
    qa.resize(rows * k);
    xa.resize(rows * k);
    const bool per_token = s.activation_origin != ScaleOrigin::kStatic;
    const bool per_group = per_token && s.activation_scale == ScaleGranularity::kGroup;
    const int64_t groups = per_group ? kc::NumGroups(k, s.activation_group) : 1;
    if (per_token) {
      sa.resize(rows * groups);
    } else {
      sa.assign(1, w_.input_scale);
    }
    const float ub = s.activation_scale_ub.value_or(0.0f);
    const float* ub_ptr = s.activation_scale_ub ? &ub : nullptr;
    for_rows([&](int64_t r0, int64_t r1) {
      const int64_t b = r0 * k, e = r1 * k;
      // The vectorized quantizers give the reference's bytes and scales, and the codes' values.
      if (per_group) {
        kf::FastQuantizeFp8PerTokenGroup(x + b, r1 - r0, k, s.activation_group, kc::kFp8PerTokenGroupEps,
                                         qa.data() + b, sa.data() + r0 * groups, xa.data() + b);
      } else if (per_token) {
        kf::FastQuantizeFp8PerToken(x + b, r1 - r0, k, ub_ptr, kc::kFp8PerTokenMinScale, qa.data() + b,
                                    sa.data() + r0, xa.data() + b);
      } else {
        kf::FastEncodeE4m3Divide(x + b, e - b, w_.input_scale, qa.data() + b, xa.data() + b);
      }
    });
    if (fp8_scaled_acts_) {
      // Each activation group (a whole row when per token, the tensor when static) times its
      // scale, in place.
      const int64_t width = per_group ? s.activation_group : k;
      for_rows([&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t g = 0, i0 = 0; i0 < k; ++g, i0 += width) {
            const float scale = per_group ? sa[r * groups + g] : per_token ? sa[r] : sa[0];
            float* row = xa.data() + r * k;
            for (int64_t i = i0; i < std::min(k, i0 + width); ++i) row[i] *= scale;
          }
        }
      });
    } else if (f.act_block_scales) {
      f.act_block_scale = sa.data();
      f.act_block_row_stride = per_group ? groups : per_token ? 1 : 0;
      f.act_block_stride = per_group ? 1 : 0;
    } else {
      f.row_scale = sa.data();
      f.row_scale_stride = per_token ? 1 : 0;
      f.col_scale = fw.scales;
      f.col_scale_stride = fw.layout == kc::Fp8WeightScaleLayout::kPerRow ? 1 : 0;
    }
    xin = xa.data();
  } else if (s.weight_format == WeightFormat::kNvfp4 && s.activation == ActivationFormat::kNvfp4) {
    if (k % 32 != 0) return false;
    qa.resize(rows * k / 2);
    qa_scales.resize(rows * k / 16);
    xa.resize(rows * k);
    const bool dynamic = s.activation_origin != ScaleOrigin::kStatic;
    std::vector<float> gscale;
    if (dynamic) {
      gscale.resize(rows);
      sa.resize(rows);
    } else {
      gscale.assign(1, w_.input_global_scale);
      sa.assign(1, kc::Nvfp4Alpha(w_.global_scale, w_.input_global_scale));
    }
    const int64_t stride = dynamic ? 1 : 0;
    for_rows([&](int64_t r0, int64_t r1) {
      const int64_t nr = r1 - r0;
      if (dynamic) {
        kc::Nvfp4DynamicGlobalScalePerRow(x + r0 * k, nr, k, gscale.data() + r0);
        for (int64_t r = r0; r < r1; ++r) sa[r] = kc::Nvfp4Alpha(w_.global_scale, gscale[r]);
      }
      kc::QuantizeNvfp4(x + r0 * k, nr, k, gscale.data() + r0 * stride, stride,
                        qa.data() + r0 * k / 2, qa_scales.data() + r0 * k / 16);
      DecodeNvfp4ActivationsPermuted(qa.data() + r0 * k / 2, qa_scales.data() + r0 * k / 16, nr, k,
                                     xa.data() + r0 * k);
    });
    f.row_scale = sa.data();
    f.row_scale_stride = stride;
    xin = xa.data();
  } else if (fast_permute_) {
    xa.resize(rows * k);
    for_rows([&](int64_t r0, int64_t r1) {
      kf::FastQuantPermuteActivations(x + r0 * k, r1 - r0, k, xa.data() + r0 * k);
    });
    xin = xa.data();
  }
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  // The integer folds' group sums Σx once per call: each column range computed every row's.
  float* group_sums = nullptr;
  if (const int64_t count = quant_panels_ok_ ? kf::QuantPanelGroupSumsCount(f, rows) : 0;
      count > 0) {
    group_sums = scratch.Alloc<float>(count);
    for_rows([&](int64_t r0, int64_t r1) { kf::QuantPanelGroupSums(f, xin, r0, r1, group_sums); });
  }
  if (quant_panels_ok_ && !quant_pairs_) {
    split(n, [&](int64_t b, int64_t e) {
      kf::QuantPanelMatmul(f, xin, rows, bias, y, b, e, group_sums);
    });
    return true;
  }
  if (fp8_fma_) {  // f32 activations as they are (W8A8: the E4M3 values; bf16: rounded)
    split(n, [&](int64_t b, int64_t e) { kf::Fp8PanelFmaMatmul(f, xin, rows, bias, y, b, e); });
    return true;
  }
  if (fp8_panels_ok_ || quant_pairs_) {
    // W8A8's E4M3 codes and --cpu_bf16_activations' rounding are bf16 values: hi alone. Exact
    // f32 activations (W8A16, W4A16) take the hi + lo split.
    const bool split_acts =
        s.activation == ActivationFormat::kFloat || s.activation == ActivationFormat::kInt16Group;
    const int64_t stride = kf::Bf16DotActStride(k);
    // Uninitialized: RoundActsToBf16 writes every element of its rows, the padding included.
    uint16_t* hi = scratch.Alloc<uint16_t>(rows * stride);
    uint16_t* lo = split_acts ? scratch.Alloc<uint16_t>(rows * stride) : nullptr;
    for_rows([&](int64_t r0, int64_t r1) { kf::RoundActsToBf16(xin, k, r0, r1, hi, lo, nullptr); });
    if (quant_pairs_) {
      split(n, [&](int64_t b, int64_t e) {
        kf::QuantPanelPairMatmul(f, xin, hi, lo, rows, bias, y, b, e, group_sums);
      });
    } else {
      split(n, [&](int64_t b, int64_t e) { kf::Fp8PanelMatmul(f, hi, lo, rows, bias, y, b, e); });
    }
    return true;
  }
  split(n, [&](int64_t b, int64_t e) { kf::FastQuantMatmul(f, xin, rows, bias, y, b, e); });
  return true;
}

std::string QuantizedLinear::Describe() const {
  // Layers on the int16 route never reach AMX's (those it skips run the pair kernel on x̂).
  const bool amx = (fp8_panels_ok_ ||
                    (quant_panels_ok_ && kf::QuantPanelAmxTakes(fast_) && !uses_int16_route())) &&
                   kf::AmxBf16Usable();
  // FMA panels: FP8 in zmm or ymm (fp8_panel_matmul.h), the quantized panels' f32 form on AVX2.
  const char* fma_panels =
      fp8_fma_ ? kf::FloatPanelTargetName()
      : quant_panels_ok_ && std::string_view(kf::QuantPanelTargetName()) == "avx2" ? "avx2"
                                                                                   : nullptr;
  // The selector labels from the spec alone; the values (an FP4 NaN scale code without AVX-512)
  // can still keep a layer off its fast kernel, which the plan then says.
  const bool reference = !uses_fast_path() && w_.spec.kernel.ends_with("-fast");
  return absl::StrCat(w_.spec.SchemeName(), " / ", w_.spec.kernel,
                      amx                     ? " (cpu-amx-bf16)"
                      : fma_panels != nullptr ? absl::StrCat(" (cpu-", fma_panels, "-panels)")
                      : reference ? " (scalar reference: the fast kernel does not take this layer)"
                                  : "");
}

void QuantizedLinear::Forward(const float* x, int64_t rows, float* y) const {
  ForwardColumns(x, rows, y, [this, rows](int64_t n, const ColumnRun& run) {
    RunColumnsOnPool(pool_, n, rows, run);
  });
}

void QuantizedLinear::ForwardColumns(const float* x, int64_t rows, float* y,
                                     ColumnSplit split) const {
  // Per-call buffers: alive until split returns, distinct from a sibling layer's.
  kc::ScratchFrame scratch;
  x = GatherActOrder(x, rows, scratch);
  if (int8_dot_ok_ && rows > 0) return ForwardInt8Dot(x, rows, y, split, scratch);
  if (q8_ok_ && rows > 0) return ForwardInt8Acts(x, rows, y, split, scratch);
  if (fast_ok_ && rows > 0 && ForwardFast(x, rows, y, split, scratch)) return;
  ForwardReferenceSorted(x, rows, y, split);
}

}  // namespace tessera::backend::cpu
