// GGUF blocks to quant_panel_matmul.h's panels, one panel of 16 output columns at a time: Q4_K /
// Q5_K written directly in the K-quant header form; every other type's codes, scales and zero
// points unpacked from its blocks into a small FastQuantWeights of the panel's columns, which the
// panels' own repack writes in place.
#include "kernels/cpu/fast/ggml_quant_panels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/ggml_iq_dequant.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {
namespace {

float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return numeric::HalfToFloat(h);
}

// How a type sits on the panels: its code form, values per group, the codes' centre, whether
// every zero point is that centre, and whether its scales are the blocks' f16 d themselves (f16
// headers; the other types' products d·sc are rarely f16 values, so they keep f32 headers).
struct Mapping {
  QuantDecode decode;
  int64_t group;
  int centre;
  bool symmetric;
  bool half = false;
  bool kquant = false;  // K-quant panels: the blocks' own 6-bit scales and mins, f16 d and dmin
};

Mapping MappingOf(GgmlBlockType type) {
  switch (type) {
    case GgmlBlockType::kQ4_0:
      return {QuantDecode::kInt4, 32, 8, true, true};
    case GgmlBlockType::kQ4_1:
      return {QuantDecode::kInt4, 32, 8, false};
    case GgmlBlockType::kQ4_K:
      return {QuantDecode::kInt4, 32, 8, false, false, true};
    case GgmlBlockType::kQ5_0:
      return {QuantDecode::kInt8, 32, 16, true, true};
    case GgmlBlockType::kQ5_1:
      return {QuantDecode::kInt8, 32, 16, false};
    case GgmlBlockType::kQ5_K:
      return {QuantDecode::kInt8, 32, 16, false, false, true};
    case GgmlBlockType::kQ6_K:
      return {QuantDecode::kInt8, 16, 32, true};
    case GgmlBlockType::kQ8_0:
      return {QuantDecode::kInt8, 32, 128, true, true};
    case GgmlBlockType::kMxfp4:
      return {QuantDecode::kMxfp4, 32, 0, false};
    case GgmlBlockType::kIq4Nl:  // kvalues_iq4nl + 128 as byte codes under Q8_0's centre
      return {QuantDecode::kInt8, 32, 128, true, true};
    case GgmlBlockType::kIq4Xs:  // the same under f32 scales d·(ls − 32)
      return {QuantDecode::kInt8, 32, 128, true};
    // The grid types: their table values (ggml_iq_dequant.h) as byte codes under the smallest
    // power-of-two centre that holds them (IQ1 ±9 and IQ3_S ±15: 16, on the bf16 pairs; IQ2 ±43
    // and IQ3_XXS ±62: 64), f32 scales d·mult per group of one multiplier.
    case GgmlBlockType::kIq2Xxs:
    case GgmlBlockType::kIq3Xxs:
      return {QuantDecode::kInt8, 32, 64, true};
    case GgmlBlockType::kIq2Xs:
    case GgmlBlockType::kIq2S:
      return {QuantDecode::kInt8, 16, 64, true};
    case GgmlBlockType::kIq3S:
    case GgmlBlockType::kIq1S:
      return {QuantDecode::kInt8, 32, 16, true};
    case GgmlBlockType::kIq1M:
      return {QuantDecode::kInt8, 16, 16, true};
    case GgmlBlockType::kTq1_0:  // values −1..1 (TQ2_0: −1..2) + 4, on the bf16 pairs
    case GgmlBlockType::kTq2_0:
      return {QuantDecode::kInt8, 32, 4, true};
    case GgmlBlockType::kQ2_K:
    case GgmlBlockType::kQ3_K:
      break;  // no panels (GgmlQuantPanelsSupported)
  }
  return {QuantDecode::kInt4, 32, 8, true};
}

// One block's runs: codes (one per byte, element order), and per group its scale and offset o
// with w = s·q + o (affine types), or its scale (symmetric: w = s·(q − centre)), or (MXFP4) its
// E8M0 byte in scale_bytes.
void UnpackBlock(GgmlBlockType type, const uint8_t* b, uint8_t* codes, float* scales,
                 float* offsets, uint8_t* scale_bytes) {
  switch (type) {
    case GgmlBlockType::kQ4_0:
    case GgmlBlockType::kQ4_1:
    case GgmlBlockType::kMxfp4: {
      const int64_t head = type == GgmlBlockType::kQ4_1 ? 4 : type == GgmlBlockType::kQ4_0 ? 2 : 1;
      const uint8_t* qs = b + head;
      for (int j = 0; j < 16; ++j) {
        codes[j] = qs[j] & 0xF;
        codes[j + 16] = qs[j] >> 4;
      }
      if (type == GgmlBlockType::kMxfp4) {
        scale_bytes[0] = b[0];
      } else {
        scales[0] = Half(b);
        offsets[0] = type == GgmlBlockType::kQ4_1 ? Half(b + 2) : 0.0f;
      }
      return;
    }
    case GgmlBlockType::kQ5_0:
    case GgmlBlockType::kQ5_1: {
      const bool one = type == GgmlBlockType::kQ5_1;
      uint32_t qh;
      std::memcpy(&qh, b + (one ? 4 : 2), 4);
      const uint8_t* qs = b + (one ? 8 : 6);
      for (int j = 0; j < 16; ++j) {
        codes[j] = static_cast<uint8_t>((qs[j] & 0xF) | (((qh >> j) & 1) << 4));
        codes[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
      }
      scales[0] = Half(b);
      offsets[0] = one ? Half(b + 2) : 0.0f;
      return;
    }
    case GgmlBlockType::kQ8_0: {
      for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(b[2 + j] ^ 0x80);  // q + 128
      scales[0] = Half(b);
      offsets[0] = 0.0f;
      return;
    }
    case GgmlBlockType::kQ4_K:
    case GgmlBlockType::kQ5_K:
      return;  // RepackKQuantPanel reads them
    case GgmlBlockType::kQ6_K:
      Q6KCodes(b, codes, scales);
      std::fill(offsets, offsets + 16, 0.0f);
      return;
    case GgmlBlockType::kIq4Nl:
    case GgmlBlockType::kIq4Xs: {
      // w = d·kv (IQ4_XS: d·(ls − 32)·kv) = scale · (code − 128) with code = kv + 128.
      const bool xs = type == GgmlBlockType::kIq4Xs;
      for (int j = 0; j < (xs ? 8 : 1); ++j) {
        const uint8_t* qs = b + (xs ? 8 + 16 * j : 2);
        for (int l = 0; l < 16; ++l) {
          codes[32 * j + l] = static_cast<uint8_t>(kIq4NlValues[qs[l] & 0xF] + 128);
          codes[32 * j + l + 16] = static_cast<uint8_t>(kIq4NlValues[qs[l] >> 4] + 128);
        }
        scales[j] = xs ? Half(b) * static_cast<float>(Iq4XsScale(b, j)) : Half(b);
        offsets[j] = 0.0f;
      }
      return;
    }
    case GgmlBlockType::kIq2Xxs:
    case GgmlBlockType::kIq2Xs:
    case GgmlBlockType::kIq2S:
    case GgmlBlockType::kIq3Xxs:
    case GgmlBlockType::kIq3S:
    case GgmlBlockType::kIq1S:
    case GgmlBlockType::kIq1M:
    case GgmlBlockType::kTq1_0:
    case GgmlBlockType::kTq2_0: {
      // w = (d·mult)·table[u] (exact, as the reference) = scale · (code − centre).
      const Mapping m = MappingOf(type);
      const int8_t* table = IqGridTable(type);
      float d;
      uint8_t mults[16], u[256];
      IqGridCodes(type, b, &d, mults, u);
      for (int e = 0; e < 256; ++e) codes[e] = static_cast<uint8_t>(table[u[e]] + m.centre);
      for (int g = 0; g < 256 / m.group; ++g) {
        scales[g] = d * static_cast<float>(mults[g * m.group / 16]);
        offsets[g] = 0.0f;
      }
      return;
    }
    case GgmlBlockType::kQ2_K:
    case GgmlBlockType::kQ3_K:
      return;  // no panels (GgmlQuantPanelsSupported)
  }
}

// What FastMatmul must keep (see the header), from the block's own scale fields: an affine
// scale or offset is finite where its f16 d and m (K types: d and dmin, times 6-bit integers) are.
bool BlockHeld(GgmlBlockType type, const uint8_t* b) {
  switch (type) {
    case GgmlBlockType::kMxfp4:
      return b[0] != numeric::kE8m0NanCode;
    case GgmlBlockType::kQ4_1:
    case GgmlBlockType::kQ5_1:
    case GgmlBlockType::kQ4_K:
    case GgmlBlockType::kQ5_K:
      return std::isfinite(Half(b)) && std::isfinite(Half(b + 2));
    default:
      return true;
  }
}

// The columns [c0, c0 + cols) of the weight unpacked into a FastQuantWeights of `cols` rows.
struct PanelColumns {
  std::vector<uint8_t> codes, q, scale_bytes;
  std::vector<float> scales, zeros, offsets;
  FastQuantWeights w;

  PanelColumns(GgmlBlockType type, const Mapping& m, const uint8_t* blocks, int64_t k,
               int64_t c0, int64_t cols) {
    const GgmlBlockInfo info = GetGgmlBlockInfo(type);
    const int64_t nb = k / info.elements, per_block = info.elements / m.group;
    const int64_t groups = k / m.group;
    codes.resize(cols * k);
    scales.resize(cols * groups);
    offsets.resize(cols * groups);
    scale_bytes.resize(cols * groups);
    for (int64_t c = 0; c < cols; ++c) {
      const uint8_t* row = blocks + (c0 + c) * nb * info.bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t g = c * groups + b * per_block;
        UnpackBlock(type, row + b * info.bytes, codes.data() + c * k + b * info.elements,
                    &scales[g], &offsets[g], &scale_bytes[g]);
      }
    }
    w.decode = m.decode;
    w.n = cols;
    w.k = k;
    if (m.decode == QuantDecode::kMxfp4) {
      w.block_scales = scale_bytes.data();
    } else {
      // Offsets to zero points: s·(q − z) = s·q + o for z = −o / s. A zero scale (a Q4_1 / Q5_1
      // block whose values are all equal) makes every weight of the group o: codes c + 1 with
      // s = o and z = c give exactly that.
      zeros.resize(cols * groups);
      for (int64_t i = 0; i < cols * groups; ++i) {
        const float centre = static_cast<float>(m.centre);
        if (m.symmetric) {
          zeros[i] = centre;
        } else if (scales[i] == 0.0f) {
          const int64_t first = (i / groups) * k + (i % groups) * m.group;
          std::fill_n(codes.begin() + first, m.group, static_cast<uint8_t>(m.centre + 1));
          scales[i] = offsets[i];
          zeros[i] = centre;
        } else {
          zeros[i] = static_cast<float>(-static_cast<double>(offsets[i]) / scales[i]);
        }
      }
      w.scales = scales.data();
      w.zeros = zeros.data();
      w.scale_rows = 1;
      w.scale_row_stride = groups;
      w.scale_k = m.group;
    }
    if (m.decode == QuantDecode::kInt8) {
      w.q = codes.data();
    } else {  // nibble pairs: element 2j in byte j's low nibble
      q.resize(cols * k / 2);
      for (int64_t i = 0; i < cols * k / 2; ++i) {
        q[i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
      }
      w.q = q.data();
    }
  }
};

FastQuantWeights Described(const Mapping& m, int64_t n, int64_t k, bool pairs) {
  FastQuantWeights w;
  w.decode = m.decode;
  w.n = n;
  w.k = k;
  w.scale_rows = 1;
  w.scale_k = m.group;
  w.scale_row_stride = k / m.group;
  w.symmetric_panels = m.decode != QuantDecode::kMxfp4 && m.symmetric;
  w.half_panel_headers = m.half;
  w.kquant_panel_headers = m.kquant;
  w.panel_centre = m.centre;
  w.pair_panels = pairs;
  return w;
}

// Panel p of a Q4_K / Q5_K weight in the K-quant header form: per super-block its columns' f16 d
// and dmin as the file has them, per group of 32 their 6-bit scale and min bytes and codes.
void RepackKQuantPanel(GgmlBlockType type, const Mapping& m, const uint8_t* blocks, int64_t n,
                       int64_t k, bool pairs, int64_t p, uint8_t* panel) {
  const GgmlBlockInfo info = GetGgmlBlockInfo(type);
  const int64_t nb = k / info.elements;
  const internal::QuantPanelGeometry geo =
      internal::QuantPanelGeometryOf(Described(m, n, k, pairs));
  std::memset(panel, 0, geo.PanelBytes(k / m.group));
  const bool bytes = m.decode == QuantDecode::kInt8;
  for (int64_t c = 0; c < panels::kCols && p * panels::kCols + c < n; ++c) {
    const uint8_t* row = blocks + (p * panels::kCols + c) * nb * info.bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* block = row + b * info.bytes;
      uint8_t* super = panel + b * geo.SuperBytes();
      std::memcpy(super + 2 * c, block, 2);           // d
      std::memcpy(super + 32 + 2 * c, block + 2, 2);  // dmin
      for (int j = 0; j < 8; ++j) {
        uint8_t* head = panel + geo.GroupOffset(b * 8 + j);
        KQuantScaleMin(block + 4, j, &head[c], &head[16 + c]);
        uint8_t codes[32], packed[16];
        float scale, offset;
        (type == GgmlBlockType::kQ4_K ? Q4KSubBlock : Q5KSubBlock)(block, j, &scale, &offset,
                                                                   codes);
        for (int i = 0; i < 16; ++i) {
          packed[i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
        }
        internal::WriteCodeLanes(bytes ? codes : packed, bytes ? 32 : 16, bytes, pairs, m.centre,
                                 c, head + geo.head);
      }
    }
  }
}

}  // namespace

bool GgmlQuantPanelsSupported(GgmlBlockType type, const uint8_t* blocks, int64_t n, int64_t k) {
  const GgmlBlockInfo info = GetGgmlBlockInfo(type);
  if (type == GgmlBlockType::kQ2_K || type == GgmlBlockType::kQ3_K) return false;
  if (!QuantPanelAvailable() || blocks == nullptr || n <= 0 || k <= 0 ||
      k % info.elements != 0) {
    return false;
  }
  for (int64_t b = 0; b < n * (k / info.elements); ++b) {
    if (!BlockHeld(type, blocks + b * info.bytes)) return false;
  }
  return true;
}

QuantPanelForm GgmlQuantPanelForm(GgmlBlockType type) {
  return MappingOf(type).centre <= 32 && QuantPanelPairsAvailable() ? QuantPanelForm::kBf16Pairs
                                                                    : QuantPanelForm::kF32;
}

int64_t GgmlQuantPanelsBytes(GgmlBlockType type, int64_t n, int64_t k) {
  const Mapping m = MappingOf(type);
  const internal::QuantPanelGeometry geo =
      internal::QuantPanelGeometryOf(Described(m, n, k, false));
  return panels::Count(n) * geo.PanelBytes(k / geo.group);
}

FastQuantWeights RepackGgmlQuantPanels(GgmlBlockType type, const uint8_t* blocks, int64_t n,
                                       int64_t k, uint8_t* dst, QuantPanelForm form,
                                       ThreadPool* pool) {
  const Mapping m = MappingOf(type);
  if (GgmlQuantPanelForm(type) != QuantPanelForm::kBf16Pairs) form = QuantPanelForm::kF32;
  const int64_t panel_bytes = GgmlQuantPanelsBytes(type, panels::kCols, k);
  const internal::QuantPanelCoding coding{m.centre, m.symmetric, m.half};
  // MXFP4: whether every part's scaled weights are normal bf16 (the AMX route's condition,
  // quant_panel_amx.h), as RepackQuantPanelsAs finds per part.
  std::atomic<bool> fp4_bf16_products{true};
  auto repack = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      if (m.kquant) {
        RepackKQuantPanel(type, m, blocks, n, k, form == QuantPanelForm::kBf16Pairs, p,
                          dst + p * panel_bytes);
        continue;
      }
      const int64_t c0 = p * panels::kCols, cols = std::min<int64_t>(panels::kCols, n - c0);
      const PanelColumns part(type, m, blocks, k, c0, cols);
      if (!internal::RepackQuantPanelsAs(part.w, dst + p * panel_bytes, form, coding)
               .fp4_bf16_products) {
        fp4_bf16_products = false;
      }
    }
  };
  ParallelForOrInline(pool, panels::Count(n), 1, repack);
  FastQuantWeights w = Described(m, n, k, form == QuantPanelForm::kBf16Pairs);
  w.q = dst;
  w.fp4_bf16_products = m.decode == QuantDecode::kMxfp4 && fp4_bf16_products;
  return w;
}

}  // namespace tessera::kernels::cpu::fast
