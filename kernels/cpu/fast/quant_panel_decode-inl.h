// The decoders of quant_panel_matmul.cc, internal to it: the code values of each format, the
// pair form's `vpermw` / `vpermt2w` tables, FP4 group scales, the f32 form's code decode and the
// integer header readers (f32, f16, K-quant bytes). Include it only inside that file's AVX-512
// region (its HWY_PUSH_ATTRIBUTES), after <immintrin.h>, hwy/base.h and, outside the region, the
// standard headers below (whose inline functions must not take AVX-512 attributes; their include
// guards make these includes no-ops).
#ifndef TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_DECODE_INL_H_
#define TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_DECODE_INL_H_

#include <bit>
#include <cstdint>

#include "kernels/cpu/fast/fast_quant_matmul.h"

namespace tessera::kernels::cpu::fast::panel_decode {

// The format's code values, one per 4-bit index: INT4 q − 8, FP4 E2M1 (bit 3 the sign). Both
// forms decode through these: f32 lanes (vpermps) or their bf16 bits (PairTable, vpermw).
alignas(64) constexpr float kInt4Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1,
                                               0,  1,  2,  3,  4,  5,  6,  7};
alignas(64) constexpr float kE2m1Values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                               4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                               -2.0f, -3.0f, -4.0f, -6.0f};
// Codebook layers have no constant table (null: read at compile time, it fails to compile);
// their values come from the layer (CodeTable, LoadPairTable).
template <QuantDecode F>
inline constexpr const float* kCodeValues = F == QuantDecode::kInt4        ? kInt4Values
                                            : F == QuantDecode::kCodebook4 ? nullptr
                                                                           : kE2m1Values;

template <QuantDecode F>
HWY_INLINE __m512 CodeValues() {
  return _mm512_load_ps(kCodeValues<F>);
}

constexpr uint16_t Bf16Bits(float f) {
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16);
}

// The pair form's lookup of 16 columns' bf16 weight pairs from the index bits of each 16-bit
// word. 4-bit codes: `vpermw` over 32 entries, entry i the code value of (i mod 16), so that the
// fifth index bit (the next code's low bit after the shift) selects the same value. Byte codes of
// at most 6 bits (stored minus their centre, at most 32, so in [−32, 31]): `vpermt2w` over 64
// entries in two registers, entry i the 6-bit two's complement value of i; the byte's upper bits
// (its sign extension, the next code) are ignored. kInt16: the same values as int16 words for
// `vpdpwssd` (int16 activations), FP4's doubled (2 · e2m1 is an integer; the fold halves the
// scale), and byte codes by sign-extending each word's low byte (the stored code minus its
// centre), which takes 8-bit codes as well as 6-bit ones and needs no table.
template <QuantDecode F, bool kInt16 = false>
struct PairTable {
  static constexpr int kEntries = F == QuantDecode::kInt8 ? 64 : 32;
  static constexpr uint16_t Word(float v) {
    if constexpr (!kInt16) return Bf16Bits(v);
    const float scaled = F == QuantDecode::kInt4 || F == QuantDecode::kInt8 ? v : 2.0f * v;
    return static_cast<uint16_t>(static_cast<int16_t>(scaled));
  }
  static constexpr auto Make() {
    struct Words {
      alignas(64) uint16_t v[64];
    } t{};
    if (F == QuantDecode::kCodebook4) return t;  // none: each layer's own (LoadPairTable)
    for (int i = 0; i < kEntries; ++i) {
      t.v[i] = F == QuantDecode::kInt8 ? Word(static_cast<float>(i < 32 ? i : i - 64))
                                       : Word(kCodeValues<F>[i % 16]);
    }
    return t;
  }
  static constexpr auto kWords = Make();
  __m512i a, b;
  static HWY_INLINE PairTable Load() {
    return {_mm512_load_si512(kWords.v), _mm512_load_si512(kWords.v + 32)};
  }
  HWY_INLINE __m512i Decode(__m512i codes) const {
    if constexpr (F == QuantDecode::kInt8 && kInt16) {
      return _mm512_srai_epi16(_mm512_slli_epi16(codes, 8), 8);
    }
    if constexpr (F == QuantDecode::kInt8) return _mm512_permutex2var_epi16(a, codes, b);
    return _mm512_permutexvar_epi16(codes, a);
  }
};

// The pair form's table of a layer: the format's constants, or for a codebook layer its own
// values' bf16 bits (`words`: 32 entries, entry i the value of code i mod 16, every value exactly
// a bf16: QuantPanelPairsSupported).
template <QuantDecode F, bool kInt16>
HWY_INLINE PairTable<F, kInt16> LoadPairTable(const uint16_t* words) {
  if constexpr (F == QuantDecode::kCodebook4) {
    return {_mm512_loadu_si512(words), _mm512_setzero_si512()};
  } else {
    return PairTable<F, kInt16>::Load();
  }
}

// An FP4 group's 16 scales from its header bytes, exactly: UE4M3 as fast_quant_matmul.cc decodes
// E4M3 (the byte sign-extended and shifted into an f32's fields, times 2^120; the NaN code is
// excluded by QuantPanelSupported), E8M0 as 2^(e − 127) (e = 0 is the subnormal 2^-127).
template <QuantDecode F>
HWY_INLINE __m512 GroupScales(const uint8_t* head) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(head));
  if constexpr (F == QuantDecode::kNvfp4) {
    const __m512i v = _mm512_slli_epi32(_mm512_cvtepi8_epi32(bytes), 20);
    const __m512i bits = _mm512_and_si512(v, _mm512_set1_epi32(static_cast<int32_t>(0x87F00000u)));
    return _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(1.329227995784916e36f));
  } else {
    const __m512i e = _mm512_cvtepu8_epi32(bytes);
    const __m512i bits = _mm512_mask_mov_epi32(_mm512_slli_epi32(e, 23),
                                               _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()),
                                               _mm512_set1_epi32(0x00400000));
    return _mm512_castsi512_ps(bits);
  }
}

// The code in bits 0-3 of each lane of `codes` (16 columns) as the format's code value:
// `vpermps` reads only the low 4 bits of each index. Lane c of a chunk holds column c's eight
// codes (k = 8t + i in bits 4i to 4i + 3), so shifting the chunk right by 4 after each code walks
// k: one load and shifts per 128 weights, where 16-byte lines widened by `vpmovzxbd` took one
// more shuffle per 32 (INT4 0-5%, FP4 5-10% slower at batch 1). Neither zero points nor scales
// apply here: subtracting each column's zero point (INT4) or multiplying by its scale (FP4) per
// weight cost 13-19% of the batch-1 rate (bench/README.md).
// Byte codes (kInt8): lane c holds column c's four codes minus the centre as signed bytes; the
// low byte, sign-extended in place, converts exactly, and each next code is 8 bits further.
template <QuantDecode F>
inline constexpr int kCodeBits = F == QuantDecode::kInt8 ? 8 : 4;
template <QuantDecode F>
inline constexpr int kCodesPerLane = 32 / kCodeBits<F>;
// The pair form's pairs per 64-byte chunk: each 16-bit half of a lane holds kCodesPerLane / 2
// codes of one parity, kCodeBits apart.
template <QuantDecode F>
inline constexpr int kPairsPerChunk = kCodesPerLane<F> / 2;
inline constexpr bool IsInteger(QuantDecode f) {
  return f == QuantDecode::kInt4 || f == QuantDecode::kInt8;
}

// The f32 form's code table in a register: the format's constants, or a codebook layer's own
// 16 values (kCodebook4; byte codes need none).
template <QuantDecode F>
HWY_INLINE __m512 CodeTable(const float* codebook) {
  if constexpr (F == QuantDecode::kCodebook4) {
    return _mm512_loadu_ps(codebook);
  } else if constexpr (F == QuantDecode::kInt8) {
    return _mm512_setzero_ps();
  } else {
    return CodeValues<F>();
  }
}

// Formats whose group headers hold f32 / f16 scales (and integer codes' centred zero points):
// the integers, and codebook layers (scales alone, no zero point).
inline constexpr bool HasScaleHeader(QuantDecode f) {
  return IsInteger(f) || f == QuantDecode::kCodebook4;
}

template <QuantDecode F>
HWY_INLINE __m512 DecodeCode(__m512i codes, __m512 table) {
  if constexpr (F == QuantDecode::kInt8) {
    return _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(codes, 24), 24));
  } else {
    return _mm512_permutexvar_ps(codes, table);
  }
}

// Integer groups' header: f32 or f16 (centred zero points and) scales, or K-quant scale and min
// bytes under super-block f16 d and dmin. A template parameter of the tiles: a branch on it (or a
// blend of both loads) changed their register allocation, spilling an accumulator inside the K
// loop or leaving the group's folds in memory (GGUF Q4_0 at M = 128 -13-20%).
enum class Header { kF32, kF16, kKQuant };

// 16 header values (an integer group's scales or centred zero points): f32, or f16 converted
// exactly.
template <bool kHalf>
HWY_INLINE __m512 HeaderValues(const uint8_t* p) {
  if constexpr (kHalf) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
  }
}

// 16 unsigned header bytes (K-quant 6-bit scales or mins) as f32.
HWY_INLINE __m512 ByteValues(const uint8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

}  // namespace tessera::kernels::cpu::fast::panel_decode

#endif  // TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_DECODE_INL_H_
