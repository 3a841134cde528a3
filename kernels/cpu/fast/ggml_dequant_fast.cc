// Highway implementation of ggml_dequant_fast.h; compiled once per target by foreach_target.h.
// Each value is the scalar decoder's: the same integer code, converted exactly, then the same
// f32 operations in the same order (scale · code − offset for Q4_K / Q5_K, (d · sc) · code for
// Q6_K), with -ffp-contract=off on this file (CMakeLists.txt) so no multiply and subtract fuse.
#include "kernels/cpu/fast/ggml_dequant_fast.h"

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/ggml_dequant_fast.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/numeric/half.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {

// At most 16 lanes, so a step never crosses a Q6_K scale run (16 values) or a 32-value sub-block.
using DF = hn::CappedTag<float, 16>;
using DI = hn::RebindToSigned<DF>;
using D8 = hn::Rebind<uint8_t, DF>;

float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return numeric::HalfToFloat(h);
}

// y[l] = scale · code[l] − offset for the 32 codes of one Q4_K / Q5_K sub-block: the low or high
// nibbles of q[0..32), plus 16 where qh[l] has bit `fifth` (Q5_K; qh null for Q4_K).
void AffineSubBlock(const uint8_t* q, bool high, const uint8_t* qh, uint8_t fifth, float scale,
                    float offset, float* y) {
  const DF df;
  const DI di;
  const D8 d8;
  const auto vs = hn::Set(df, scale), vo = hn::Set(df, offset);
  for (size_t l = 0; l < 32; l += hn::Lanes(df)) {
    const auto bytes = hn::LoadU(d8, q + l);
    auto code =
        hn::PromoteTo(di, high ? hn::ShiftRight<4>(bytes) : hn::And(bytes, hn::Set(d8, 0x0F)));
    if (qh != nullptr) {
      const auto bit = hn::PromoteTo(di, hn::And(hn::LoadU(d8, qh + l), hn::Set(d8, fifth)));
      code = hn::Add(code, hn::IfThenElseZero(hn::Ne(bit, hn::Zero(di)), hn::Set(di, 16)));
    }
    hn::StoreU(hn::Sub(hn::Mul(vs, hn::ConvertTo(df, code)), vo), df, y + l);
  }
}

// Q4_K (144 bytes: d, dmin, 12 scale bytes, 128 nibble bytes) and Q5_K (176: the same with 32
// bytes of fifth bits before the nibbles), as dequantize_row_q4_K / q5_K.
void AffineBlock(const uint8_t* b, bool q5, float* y) {
  const uint8_t* qh = q5 ? b + 16 : nullptr;
  const uint8_t* q = b + (q5 ? 48 : 16);
  for (int c = 0; c < 4; ++c) {
    for (int half = 0; half < 2; ++half) {
      float scale, offset;
      KQuantScaleOffset(b, 2 * c + half, &scale, &offset);
      AffineSubBlock(q, half == 1, qh, static_cast<uint8_t>(1u << (2 * c + half)), scale, offset,
                     y + 64 * c + 32 * half);
    }
    q += 32;
  }
}

// Q6_K (210 bytes: 128 low-nibble bytes, 64 bytes of high bit pairs, 16 int8 scales, f16 d), as
// dequantize_row_q6_K.
void Q6KBlock(const uint8_t* b, float* y) {
  const DF df;
  const DI di;
  const D8 d8;
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = HalfAt(b + 208);
  const auto m4 = hn::Set(d8, 0x0F), m3 = hn::Set(d8, 3);
  const auto z = hn::Set(di, 32);
  auto store = [&](hn::Vec<D8> code, int scale_index, float* out) {
    const float scale = d * static_cast<float>(sc[scale_index]);
    const auto v = hn::ConvertTo(df, hn::Sub(hn::PromoteTo(di, code), z));
    hn::StoreU(hn::Mul(hn::Set(df, scale), v), df, out);
  };
  for (int h = 0; h < 2; ++h) {
    for (size_t l = 0; l < 32; l += hn::Lanes(df)) {
      const int is = static_cast<int>(l / 16);
      const auto lo = hn::LoadU(d8, ql + l), hi = hn::LoadU(d8, ql + l + 32);
      const auto pairs = hn::LoadU(d8, qh + l);
      store(hn::Or(hn::And(lo, m4), hn::ShiftLeft<4>(hn::And(pairs, m3))), is + 0, y + l);
      store(hn::Or(hn::And(hi, m4), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(pairs), m3))),
            is + 2, y + l + 32);
      store(hn::Or(hn::ShiftRight<4>(lo), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(pairs), m3))),
            is + 4, y + l + 64);
      store(hn::Or(hn::ShiftRight<4>(hi), hn::ShiftLeft<4>(hn::ShiftRight<6>(pairs))), is + 6,
            y + l + 96);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

}  // namespace

bool FastDequantizeKQuantsImpl(GgmlBlockType type, const uint8_t* src, int64_t blocks, float* dst) {
  switch (type) {
    case GgmlBlockType::kQ4_K:
      for (int64_t i = 0; i < blocks; ++i) AffineBlock(src + i * 144, false, dst + i * 256);
      return true;
    case GgmlBlockType::kQ5_K:
      for (int64_t i = 0; i < blocks; ++i) AffineBlock(src + i * 176, true, dst + i * 256);
      return true;
    case GgmlBlockType::kQ6_K:
      for (int64_t i = 0; i < blocks; ++i) Q6KBlock(src + i * 210, dst + i * 256);
      return true;
    default:
      return false;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(FastDequantizeKQuantsImpl);

void FastDequantizeGgmlBlocks(GgmlBlockType type, const uint8_t* src, int64_t blocks, float* dst) {
  if (!HWY_DYNAMIC_DISPATCH(FastDequantizeKQuantsImpl)(type, src, blocks, dst)) {
    DequantizeGgmlBlocks(type, src, blocks, dst);
  }
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
