// The host side of quant_panel_matmul.h: which layers and CPUs the panels take, their size, and
// the repack of a layer's codes, scales and zero points into either form at load.
#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/column_panels.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::fast {

namespace internal {

namespace {

// 16 scales, and 16 centred zero points unless symmetric, as f32 or f16.
int64_t IntegerHeadBytes(const FastQuantWeights& w) {
  if (w.kquant_panel_headers) return 32;  // 16 scale bytes, 16 min bytes
  return (w.symmetric_panels ? 16 : 32) * (w.half_panel_headers ? 2 : 4);
}

bool ExactInHalf(float v) { return numeric::HalfToFloat(numeric::FloatToHalf(v)) == v; }

}  // namespace

QuantPanelGeometry QuantPanelGeometryOf(const FastQuantWeights& w) {
  switch (w.decode) {
    case QuantDecode::kMxfp4:
      return {32, 16, 4};
    case QuantDecode::kNvfp4:
      return {16, 16, 4};
    case QuantDecode::kInt8:  // one group per row when scale_k >= k
      return {std::min(w.scale_k, w.k), IntegerHeadBytes(w), 8,
              w.kquant_panel_headers ? 64 : 0};
    default:
      return {w.scale_k, IntegerHeadBytes(w), 4, w.kquant_panel_headers ? 64 : 0};
  }
}

QuantPanelCoding QuantPanelCodingOf(const FastQuantWeights& w) {
  QuantPanelCoding coding;
  if (w.decode == QuantDecode::kInt8) {
    // Byte codes (INT8, INT3 / INT2 unpacked): 2^(bits − 1) for the bit length of the largest
    // code (INT8: 128), so that they fit a signed byte and the zero-point correction subtracts a
    // small (z − centre) · Σx. INT4's centre is 8 (its code table).
    const uint8_t top = w.n * w.k > 0 ? *std::max_element(w.q, w.q + w.n * w.k) : 0;
    int bits = 1;
    while (bits < 8 && (top >> bits) != 0) ++bits;
    coding.centre = 1 << (bits - 1);
  }
  if (w.decode == QuantDecode::kCodebook4) {
    // Scales alone (a codebook has no zero point), f16 where every one is exactly an f16.
    coding.symmetric = true;
    coding.half = std::all_of(w.scales, w.scales + w.n * w.scale_row_stride, ExactInHalf);
  } else if ((w.decode == QuantDecode::kInt4 || w.decode == QuantDecode::kInt8) &&
             w.zeros != nullptr) {
    const float centre = static_cast<float>(coding.centre);
    const int64_t groups = w.n * w.scale_row_stride;
    coding.symmetric =
        std::all_of(w.zeros, w.zeros + groups, [centre](float z) { return z == centre; });
    coding.half = std::all_of(w.scales, w.scales + groups, ExactInHalf) &&
                  (coding.symmetric ||
                   std::all_of(w.zeros, w.zeros + groups,
                               [centre](float z) { return ExactInHalf(z - centre); }));
  }
  return coding;
}

}  // namespace internal

namespace {

bool IsFourBit(QuantDecode d) {
  return d == QuantDecode::kInt4 || d == QuantDecode::kMxfp4 || d == QuantDecode::kNvfp4;
}

// Byte codes take the pair form up to 6 bits (`vpermt2w` reads 6 index bits): centre ≤ 32.
constexpr int kMaxPairByteCentre = 32;

// A chunk lane of the bf16-pair form from the checkpoint's 4 bytes (k = 2i in byte i's low
// nibble, 2i + 1 in its high one): the even k's nibbles in bits 0-15, the odd k's in bits 16-31.
uint32_t PairOrderLane(const uint8_t* b) {
  uint32_t even = 0, odd = 0;
  for (int i = 0; i < 4; ++i) {
    even |= static_cast<uint32_t>(b[i] & 0x0F) << (4 * i);
    odd |= static_cast<uint32_t>(b[i] >> 4) << (4 * i);
  }
  return even | odd << 16;
}

}  // namespace

bool QuantPanelAvailable() {
  // Without AVX-512 the f32 form runs its AVX2 kernel (quant_panel_avx2.cc).
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512f") || internal::Avx2PanelsInUse();
  return has;
}

const char* QuantPanelTargetName() { return internal::Avx2PanelsInUse() ? "avx2" : "avx512"; }

bool QuantPanelPairsAvailable() {
  static const bool has = TESSERA_HAS_AVX512_WITH("avx512bf16");
  return has;
}

bool QuantPanelInt16Available() {
  // No AVX-512 BF16 needed: the route's instantiations hold no bf16 instruction (objdump), so
  // Cascade Lake and Ice Lake servers run it on kInt16Pairs panels.
  static const bool has =
      QuantPanelAvailable() && Int16ActsAvailable() && TESSERA_HAS_AVX512_WITH("avx512vnni");
  return has;
}

int64_t QuantPanelGroupSumsCount(const FastQuantWeights& w, int64_t rows) {
  const bool folds =
      (w.decode == QuantDecode::kInt4 || w.decode == QuantDecode::kInt8) && !w.symmetric_panels;
  return folds ? rows * (w.k / internal::QuantPanelGeometryOf(w).group) : 0;
}

bool QuantPanelInt16Takes(const FastQuantWeights& w) {
  if (!QuantPanelInt16Available() || !QuantPanelSupported(w) ||
      w.decode == QuantDecode::kCodebook4) {
    return false;
  }
  FastQuantWeights as = w;
  as.pair_panels = true;
  as.kquant_panel_headers = false;
  return QuantPanelInt16Group(as) != 0;
}

int64_t QuantPanelInt16Group(const FastQuantWeights& w) {
  // K-quant headers (GGUF Q4_K / Q5_K) are left out: the engine never offers them int16
  // activations and no test covers that fold with int16 sums.
  if (!QuantPanelInt16Available() || !w.pair_panels || w.kquant_panel_headers) return 0;
  const int64_t group = internal::QuantPanelGeometryOf(w).group;
  return group % 16 == 0 && group <= 128 ? group : 0;
}

bool QuantPanelSupported(const FastQuantWeights& w) {
  if (!QuantPanelAvailable() || w.q == nullptr || w.n <= 0 || w.k <= 0 ||
      w.row_scale != nullptr || w.col_scale != nullptr || w.act_block_scales) {
    return false;
  }
  switch (w.decode) {
    case QuantDecode::kInt4:
      return w.scales != nullptr && w.zeros != nullptr && w.scale_k > 0 && w.scale_k % 8 == 0 &&
             w.k % w.scale_k == 0 && w.scale_rows == 1 && w.scale_row_stride == w.k / w.scale_k;
    case QuantDecode::kInt8: {
      const int64_t group = std::min(w.scale_k, w.k);
      return w.scales != nullptr && w.zeros != nullptr && group > 0 && group % 4 == 0 &&
             w.k % group == 0 && w.scale_rows == 1 && w.scale_row_stride == w.k / group;
    }
    case QuantDecode::kCodebook4:
      return w.scales != nullptr && w.codebook != nullptr && w.scale_k > 0 &&
             w.scale_k % 8 == 0 && w.k % w.scale_k == 0 && w.scale_rows == 1 &&
             w.scale_row_stride == w.k / w.scale_k;
    case QuantDecode::kMxfp4:
    case QuantDecode::kNvfp4: {
      const bool mx = w.decode == QuantDecode::kMxfp4;
      const int64_t group = mx ? 32 : 16;
      if (w.block_scales == nullptr || w.k % group != 0) return false;
      return std::none_of(w.block_scales, w.block_scales + w.n * (w.k / group), [mx](uint8_t b) {
        return mx ? b == numeric::kE8m0NanCode : (b & 0x7F) == numeric::kE4m3NanCode;
      });
    }
    default:
      return false;
  }
}

bool QuantPanelPairsSupported(const FastQuantWeights& w) {
  if (!QuantPanelPairsAvailable() || !QuantPanelSupported(w)) return false;
  // Codebook layers whose every value is a bf16 (NF4's are not: the engine rounds them for bf16
  // activations) read their codes through a bf16 table as INT4 does.
  if (w.decode == QuantDecode::kCodebook4) {
    return std::all_of(w.codebook, w.codebook + 16, [](float v) {
      return numeric::Bf16ToFloat(numeric::FloatToBf16(v)) == v;
    });
  }
  return IsFourBit(w.decode) || internal::QuantPanelCodingOf(w).centre <= kMaxPairByteCentre;
}

int64_t QuantPanelsBytes(const FastQuantWeights& w) {
  FastQuantWeights as = w;
  const internal::QuantPanelCoding coding = internal::QuantPanelCodingOf(w);
  as.symmetric_panels = coding.symmetric;
  as.half_panel_headers = coding.half;
  const internal::QuantPanelGeometry geo = internal::QuantPanelGeometryOf(as);
  return panels::Count(w.n) * geo.PanelBytes(w.k / geo.group);
}

FastQuantWeights RepackQuantPanels(const FastQuantWeights& w, uint8_t* dst, QuantPanelForm form,
                                   ThreadPool* pool) {
  return internal::RepackQuantPanelsAs(w, dst, form, internal::QuantPanelCodingOf(w), pool);
}

namespace internal {

FastQuantWeights RepackQuantPanelsAs(const FastQuantWeights& w, uint8_t* dst, QuantPanelForm form,
                                     QuantPanelCoding coding, ThreadPool* pool) {
  FastQuantWeights out = w;
  out.q = dst;
  const bool fp4 = w.decode == QuantDecode::kMxfp4 || w.decode == QuantDecode::kNvfp4;
  out.symmetric_panels = !fp4 && coding.symmetric;
  out.half_panel_headers = !fp4 && coding.half;
  out.kquant_panel_headers = false;
  out.panel_centre = coding.centre;
  const QuantPanelGeometry geo = QuantPanelGeometryOf(out);
  const int64_t groups = w.k / geo.group, gb = geo.GroupBytes();
  const bool bytes = w.decode == QuantDecode::kInt8;
  const int centre = coding.centre;
  const bool codebook = w.decode == QuantDecode::kCodebook4;
  const bool pairs = (form == QuantPanelForm::kBf16Pairs &&
                      (IsFourBit(w.decode) || codebook || (bytes && centre <= kMaxPairByteCentre))) ||
                     (form == QuantPanelForm::kInt16Pairs && (IsFourBit(w.decode) || bytes));
  out.pair_panels = pairs;
  // The smallest nonzero product 0.5 · 2^(e − 127) is normal from e = 2; the largest
  // 6 · 2^(e − 127) is finite in bf16 up to e = 252. UE4M3 · E2M1 products always are.
  out.fp4_bf16_products = w.decode == QuantDecode::kNvfp4 ||
                          (w.decode == QuantDecode::kMxfp4 &&
                           std::all_of(w.block_scales, w.block_scales + w.n * groups,
                                       [](uint8_t e) { return e >= 2 && e <= 252; }));
  // Each panel from its own columns: ranges of panels on different threads write the same bytes.
  auto repack = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint8_t* panel = dst + p * groups * gb;
      std::memset(panel, 0, groups * gb);
      for (int64_t c = 0; c < panels::kCols && p * panels::kCols + c < w.n; ++c) {
        const int64_t col = p * panels::kCols + c;
        for (int64_t g = 0; g < groups; ++g) {
          uint8_t* head = panel + g * gb;
          if (fp4) {
            head[c] = w.block_scales[col * groups + g];
          } else {
            // [centred zero points,] scales: 16 of each, f32 or (exactly) f16.
            const float scale = w.scales[col * groups + g];
            const int width = out.half_panel_headers ? 2 : 4;
            auto put = [&](uint8_t* at, float v) {
              if (out.half_panel_headers) {
                const uint16_t h = numeric::FloatToHalf(v);
                std::memcpy(at, &h, 2);
              } else {
                std::memcpy(at, &v, 4);
              }
            };
            if (out.symmetric_panels) {
              put(head + width * c, scale);
            } else {
              put(head + width * c, w.zeros[col * groups + g] - static_cast<float>(centre));
              put(head + 16 * width + width * c, scale);
            }
          }
          const int64_t row_bytes = w.k * geo.bits / 8, group_bytes = geo.group * geo.bits / 8;
          WriteCodeLanes(w.q + col * row_bytes + g * group_bytes, group_bytes, bytes, pairs, centre,
                         c, head + geo.head);
        }
      }
    }
  };
  ParallelForOrInline(pool, panels::Count(w.n), 1, repack);
  return out;
}

void WriteCodeLanes(const uint8_t* row_codes, int64_t count, bool bytes, bool pairs, int centre,
                    int64_t c, uint8_t* chunks) {
  // Chunk t's lane c: the row's 4 bytes of codes from k = (32 / bits) · t of the group.
  for (int64_t t = 0; t < count / 4; ++t) {
    uint8_t lane[4];
    for (int b = 0; b < 4; ++b) {
      lane[b] = bytes ? static_cast<uint8_t>(row_codes[4 * t + b] - centre) : row_codes[4 * t + b];
    }
    if (pairs && bytes) {  // k = 4t, 4t + 2 in the low half, 4t + 1, 4t + 3 in the high
      std::swap(lane[1], lane[2]);
    } else if (pairs) {
      const uint32_t v = PairOrderLane(lane);
      std::memcpy(lane, &v, 4);
    }
    std::memcpy(chunks + t * 64 + 4 * c, lane, 4);
  }
}

}  // namespace internal

}  // namespace tessera::kernels::cpu::fast
