// The 8-column-half tile walk of int4_x16_avx2.cc, included once per instruction set under that
// file's target attributes: TESSERA_X16_DPBUSD 0 emulates vpdpbusd with vpmaddubsw + vpmaddwd
// (AVX2), 1 uses the VEX vpdpbusd of AVX-VNNI, 2 the EVEX one of AVX-512 VL + VNNI (the same
// instruction on 256 bits: how the AVX-VNNI kernel is tested and measured on AVX-512 machines).
// TESSERA_X16_NS names the namespace of each copy. No include guard, by design.

namespace TESSERA_X16_NS {
namespace {

#if TESSERA_X16_DPBUSD == 1
inline __m256i Dpbusd(__m256i acc, __m256i u8, __m256i s8) {
  return _mm256_dpbusd_avx_epi32(acc, u8, s8);
}
#elif TESSERA_X16_DPBUSD == 2
inline __m256i Dpbusd(__m256i acc, __m256i u8, __m256i s8) {
  return _mm256_dpbusd_epi32(acc, u8, s8);
}
#endif

constexpr int64_t kCols = 16;
// Rows per tile: 2·MR f32 accumulators plus MR int32 and MR int16 sums, more than 16 ymm
// registers hold at 4 already (a few spill to L1); the decode of a code vector is shared by them.
constexpr int kMaxRows = 4;

enum class Codes {
  kQ4_0, kU4, kQ8_0, kU8, kQ6K, kQ3K, kQ2K, kQ4K, kQ5K, kMxfp4, kNvfp4, kIq4Nl, kIq4Xs, kIqGrid16,
  kIqGrid32
};

inline __m256i LoadHalf(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
// The 4 activation bytes at p in every int32 lane.
inline __m256i Bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
// 8 f16 values at p.
inline __m256 Halves8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// 8 unsigned bytes at p as f32.
inline __m256 UBytes8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
// 8 signed bytes at p as f32.
inline __m256 SBytes8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
// 8 UE4M3 codes (bit 7 ignored) times 2^-8, exactly: avx512_decode.h's shift into f16 bits.
inline __m256 Ue4m3TimesTwoToMinus8x8(const uint8_t* p) {
  const __m128i c =
      _mm_and_si128(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))),
                    _mm_set1_epi16(0x7F));
  return _mm256_cvtph_ps(_mm_slli_epi16(c, 7));
}

// The largest u the codes reach after decoding, and how many vpmaddubsw of them an int16 lane
// holds exactly (2·127·u_max·kFlush ≤ 32767).
template <Codes kCodes>
constexpr int kFlush = kCodes == Codes::kQ6K                                ? 2
                       : kCodes == Codes::kQ5K                              ? 4
                       : kCodes == Codes::kMxfp4 || kCodes == Codes::kNvfp4 ? 4
                                                                            : 8;

// Accumulators of rows [r0, r0 + MR) for one column group, halves h = 0 (columns 0-7) and 1
// (8-15): out[2r + h]. The walk of int4_x16_vnni.cc's Tile and TileNvfp4 with the halves inside
// each block (a record's bytes are read once, in order).
template <int MR, Codes kCodes>
void Tile(const uint8_t* group, const FastWeights& w, const Int4x16Acts& a, const int32_t* zs,
          int64_t r0, __m256* out) {
  constexpr bool kGroupScales = kCodes == Codes::kU4 || kCodes == Codes::kU8;
  constexpr bool kBytes = kCodes == Codes::kQ8_0 || kCodes == Codes::kU8;
  constexpr bool kFifth = kCodes == Codes::kQ5K;
  constexpr bool kE2m1 = kCodes == Codes::kMxfp4 || kCodes == Codes::kNvfp4;
  constexpr bool kAffine = kCodes == Codes::kQ4K || kCodes == Codes::kQ5K;
  // kIqGrid: a grid or ternary type's table in place of kvalues_iq4nl, per half block (kIqGrid16:
  // Q6_K's walk) or per block (kIqGrid32: IQ4_XS's).
  constexpr bool kIqGrid = kCodes == Codes::kIqGrid16 || kCodes == Codes::kIqGrid32;
  constexpr bool kIq4 = kCodes == Codes::kIq4Nl || kCodes == Codes::kIq4Xs || kIqGrid;
  // Without vpdpbusd, IQ4 codes are read as the signed kvalues_iq4nl themselves (kv + 128 times
  // 127 would saturate a vpmaddubsw pair) and multiplied with the sign trick, so their sums are
  // Σ kv·x from 0 and need no zero-point start.
  constexpr bool kIq4Signed = kIq4 && !TESSERA_X16_DPBUSD;
  constexpr bool kIntZero =
      kCodes == Codes::kQ4_0 || kCodes == Codes::kQ8_0 || kCodes == Codes::kMxfp4 || kIq4;
  // AVX2 without VNNI multiplies byte codes u as signed bytes u − 128 (dot_chunks). Q8_0's sums
  // then need no zero-point start (its z·Σx term is the same −128·Σx); the other byte codes' start
  // at +128·Σx instead, so that every sum is still Σu·x.
  constexpr bool kSignedBytes = kBytes && !TESSERA_X16_DPBUSD;
  constexpr bool kStartsAtZeroPoint = kIntZero && !kSignedBytes && !kIq4Signed;
  const int64_t k = w.k, blocks = k / 32;
  const X16Layout layout = X16Layout::Of(w.format, w.group_size);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  [[maybe_unused]] const __m256i ones = _mm256_set1_epi16(1);
  alignas(16) int8_t grid_table[16];
  if constexpr (kIqGrid) {
    for (int i = 0; i < 16; ++i) {
      grid_table[i] = static_cast<int8_t>(IqGridTable(w.ggml)[i] + (kIq4Signed ? 0 : 128));
    }
  }
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(
      kIqGrid      ? static_cast<const void*>(grid_table)
      : kIq4Signed ? static_cast<const void*>(kIq4Values)
      : kIq4       ? static_cast<const void*>(kIq4Plus128)
                   : static_cast<const void*>(kTwiceE2m1Plus12))));
  __m256 acc[2 * MR];
  for (int i = 0; i < 2 * MR; ++i) acc[i] = _mm256_setzero_ps();
  const int8_t* xrow[MR];
  for (int r = 0; r < MR; ++r) xrow[r] = a.q + (r0 + r) * k;

  // Nibble codes of chunk q of a block, half h: the low-nibble and high-nibble operands (K = 8q +
  // i and 8q + 4 + i), decoded to the unsigned codes the VNNI kernel multiplies.
  auto nibbles = [&](const uint8_t* codes, int q, int h, __m256i* lo, __m256i* hi) {
    const __m256i v = LoadHalf(codes + q * 64 + h * 32);
    *lo = _mm256_and_si256(v, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if constexpr (kE2m1 || kIq4) {
      *lo = _mm256_shuffle_epi8(lut, *lo);
      *hi = _mm256_shuffle_epi8(lut, *hi);
    }
    if constexpr (kFifth) {  // bits 2q and 2q + 1 of the plane: + 16 where set
      const __m256i fifth = LoadHalf(codes + 256 + h * 32), c16 = _mm256_set1_epi8(16);
      const __m256i b0 = _mm256_set1_epi8(static_cast<char>(1 << (2 * q)));
      const __m256i b1 = _mm256_set1_epi8(static_cast<char>(2 << (2 * q)));
      *lo = _mm256_add_epi8(
          *lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(fifth, b0), b0), c16));
      *hi = _mm256_add_epi8(
          *hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(fifth, b1), b1), c16));
    }
    if constexpr (kCodes == Codes::kQ6K) {  // the high bit pairs ORed back in
      const __m256i pairs = LoadHalf(codes + 256 + (q / 2) * 64 + h * 32);
      const __m256i hp = q % 2 == 0 ? pairs : _mm256_srli_epi16(pairs, 4);
      *lo = _mm256_or_si256(*lo, _mm256_and_si256(_mm256_slli_epi16(hp, 4), m30));
      *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_slli_epi16(hp, 2), m30));
    }
  };
  // isum[r] += Σ over chunks [q0, q1) of the block's codes (half h) times row r's activations,
  // through int16 sums of at most kFlush vpmaddubsw.
  auto dot_chunks = [&](const uint8_t* codes, int64_t b, int q0, int q1, int h, __m256i* isum) {
#if TESSERA_X16_DPBUSD
    // vpdpbusd sums 4 u8·s8 products straight into int32: no int16 stage, no nibble split.
    for (int q = q0; q < q1; ++q) {
      if constexpr (kBytes) {
        const __m256i v = LoadHalf(codes + q * 64 + h * 32);
        for (int r = 0; r < MR; ++r) isum[r] = Dpbusd(isum[r], v, Bcast4(xrow[r] + b * 32 + 4 * q));
      } else {
        __m256i lo, hi;
        nibbles(codes, q, h, &lo, &hi);
        for (int r = 0; r < MR; ++r) {
          const int8_t* x = xrow[r] + b * 32 + 8 * q;
          isum[r] = Dpbusd(Dpbusd(isum[r], lo, Bcast4(x)), hi, Bcast4(x + 4));
        }
      }
    }
#else
    if constexpr (kSignedBytes) {
      // Byte codes as signed q = u − 128 (u xor 0x80): llama.cpp's sign trick, |q| as the
      // unsigned operand and x with q's sign as the signed one, so that a vpmaddubsw pair
      // (≤ 2·128·127) never saturates and each one widens at once (see kSignedBytes for the
      // sums' start).
      const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
      for (int q = q0; q < q1; ++q) {
        const __m256i sq = _mm256_xor_si256(LoadHalf(codes + q * 64 + h * 32), flip);
        const __m256i aq = _mm256_abs_epi8(sq);
        for (int r = 0; r < MR; ++r) {
          const __m256i x = _mm256_sign_epi8(Bcast4(xrow[r] + b * 32 + 4 * q), sq);
          const __m256i pairs = _mm256_maddubs_epi16(aq, x);
          isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(pairs, ones));
        }
      }
    } else if constexpr (kIq4Signed) {
      // Signed kv (|kv| <= 127): |kv| times x with kv's sign, each pair <= 2·127·127, widened at
      // once, as the byte codes above.
      for (int q = q0; q < q1; ++q) {
        __m256i lo, hi;
        nibbles(codes, q, h, &lo, &hi);
        const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
        for (int r = 0; r < MR; ++r) {
          const int8_t* x = xrow[r] + b * 32 + 8 * q;
          const __m256i plo = _mm256_maddubs_epi16(alo, _mm256_sign_epi8(Bcast4(x), lo));
          const __m256i phi = _mm256_maddubs_epi16(ahi, _mm256_sign_epi8(Bcast4(x + 4), hi));
          const __m256i both =
              _mm256_add_epi32(_mm256_madd_epi16(plo, ones), _mm256_madd_epi16(phi, ones));
          isum[r] = _mm256_add_epi32(isum[r], both);
        }
      }
    } else {
      __m256i s16[MR];
      int pending = 0;
      for (int r = 0; r < MR; ++r) s16[r] = _mm256_setzero_si256();
      for (int q = q0; q < q1; ++q) {
        __m256i lo, hi;
        nibbles(codes, q, h, &lo, &hi);
        for (int r = 0; r < MR; ++r) {
          const int8_t* x = xrow[r] + b * 32 + 8 * q;
          s16[r] =
              _mm256_add_epi16(s16[r], _mm256_add_epi16(_mm256_maddubs_epi16(lo, Bcast4(x)),
                                                        _mm256_maddubs_epi16(hi, Bcast4(x + 4))));
        }
        pending += 2;
        if (pending + 2 > kFlush<kCodes> || q + 1 == q1) {
          for (int r = 0; r < MR; ++r) {
            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(s16[r], ones));
            s16[r] = _mm256_setzero_si256();
          }
          pending = 0;
        }
      }
    }
#endif
  };

  // kQ2K / kQ3K: isum[r] += half `half` of the block (columns half h) times row r's activations:
  // each 2-bit operand of the half's chunk (kQ3K: + 4 where the third-bit plane's bit 4·half + s
  // is set).
  [[maybe_unused]] auto two_bit_half = [&](const uint8_t* codes, int64_t b, int half, int h,
                                           __m256i* isum) {
    const __m256i v = LoadHalf(codes + half * 64 + h * 32);
    // kQ2K's block ends at byte 128: no plane to read there.
    [[maybe_unused]] const __m256i plane =
        kCodes == Codes::kQ3K ? LoadHalf(codes + 128 + h * 32) : _mm256_setzero_si256();
    const __m256i m3 = _mm256_set1_epi8(0x03), four = _mm256_set1_epi8(4);
#if !TESSERA_X16_DPBUSD
    __m256i s16[MR];  // four vpmaddubsw of codes <= 7 stay inside int16 (4·2·7·127)
    for (int r = 0; r < MR; ++r) s16[r] = _mm256_setzero_si256();
#endif
    for (int sh = 0; sh < 4; ++sh) {
      __m256i u = _mm256_and_si256(_mm256_srli_epi16(v, 2 * sh), m3);
      if constexpr (kCodes == Codes::kQ3K) {
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * half + sh)));
        u = _mm256_add_epi8(
            u, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(plane, bit), bit), four));
      }
      for (int r = 0; r < MR; ++r) {
        const __m256i x = Bcast4(xrow[r] + b * 32 + 16 * half + 4 * sh);
#if TESSERA_X16_DPBUSD
        isum[r] = Dpbusd(isum[r], u, x);
#else
        s16[r] = _mm256_add_epi16(s16[r], _mm256_maddubs_epi16(u, x));
#endif
      }
    }
#if !TESSERA_X16_DPBUSD
    for (int r = 0; r < MR; ++r) {
      isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(s16[r], ones));
    }
#endif
  };

  const int64_t per_record = layout.blocks_per_record, record_bytes = layout.record_bytes();
  const uint8_t* record = group;  // the record of block b; block b is its j-th
  for (int64_t b = 0, j = 0; b < blocks; ++b) {
    const uint8_t* codes = record + layout.scale_bytes + j * layout.code_bytes;
    for (int h = 0; h < 2; ++h) {
      if constexpr (kCodes == Codes::kQ2K) {  // per half, 2-bit codes, s = d·sc, o = dmin·m
        const __m256 d_sb = Halves8(record + h * 16), m_sb = Halves8(record + 32 + h * 16);
        for (int half = 0; half < 2; ++half) {
          const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
              reinterpret_cast<const __m128i*>(record + 64 + (j * 2 + half) * 16 + h * 8)));
          const __m256 sw = _mm256_mul_ps(
              d_sb, _mm256_cvtepi32_ps(_mm256_and_si256(sc, _mm256_set1_epi32(0xF))));
          const __m256 zv = _mm256_mul_ps(m_sb, _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4)));
          __m256i isum[MR];
          for (int r = 0; r < MR; ++r) isum[r] = _mm256_setzero_si256();
          two_bit_half(codes, b, half, h, isum);
          const float* xs = half == 0 ? a.s : a.s2;
          for (int r = 0; r < MR; ++r) {
            const int64_t off = (r0 + r) * blocks + b;
            const __m256 p = _mm256_mul_ps(sw, _mm256_cvtepi32_ps(isum[r]));
            const __m256 t = _mm256_fnmadd_ps(zv, _mm256_set1_ps(xs[off]), p);
            acc[2 * r + h] = _mm256_fmadd_ps(t, _mm256_set1_ps(a.d[off]), acc[2 * r + h]);
          }
        }
        continue;
      }
      if constexpr (kCodes == Codes::kQ6K || kCodes == Codes::kQ3K ||
                    kCodes == Codes::kIqGrid16) {  // per half, d·sc (kIqGrid16: f32 d, d·mult)
        constexpr bool kF32D = kCodes == Codes::kIqGrid16;
        const __m256 d_sb = kF32D ? _mm256_loadu_ps(reinterpret_cast<const float*>(record) + h * 8)
                                  : Halves8(record + h * 16);
        const int64_t mults = kF32D ? 64 : 32;
        for (int half = 0; half < 2; ++half) {
          const __m256 sw =
              _mm256_mul_ps(d_sb, SBytes8(record + mults + (j * 2 + half) * 16 + h * 8));
          __m256i isum[MR];
          for (int r = 0; r < MR; ++r) {
            isum[r] = kIq4Signed ? _mm256_setzero_si256()
                                 : _mm256_set1_epi32(zs[((r0 + r) * blocks + b) * 2 + half]);
          }
          if constexpr (kCodes == Codes::kQ3K) {
            two_bit_half(codes, b, half, h, isum);
          } else {
            dot_chunks(codes, b, 2 * half, 2 * half + 2, h, isum);
          }
          for (int r = 0; r < MR; ++r) {
            const int64_t off = (r0 + r) * blocks + b;
            acc[2 * r + h] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]),
                                _mm256_mul_ps(sw, _mm256_set1_ps(a.d[off])), acc[2 * r + h]);
          }
        }
        continue;
      }
      if constexpr (kCodes == Codes::kNvfp4) {
        // sf · 2^-8 times alpha · 128: int4_x16_vnni.cc's TileNvfp4.
        const __m256 sw_factor = _mm256_set1_ps(w.alpha * 128.0f);
        const uint8_t* sf = group + layout.Scales(b);
        const uint8_t* nv_codes = group + layout.Codes(b);
        for (int half = 0; half < 2; ++half) {
          const __m256 sw =
              _mm256_mul_ps(Ue4m3TimesTwoToMinus8x8(sf + half * kCols + h * 8), sw_factor);
          __m256i isum[MR];
          for (int r = 0; r < MR; ++r) {
            isum[r] = _mm256_set1_epi32(zs[((r0 + r) * blocks + b) * 2 + half]);
          }
          dot_chunks(nv_codes, b, 2 * half, 2 * half + 2, h, isum);
          const float* dx = half == 0 ? a.d : a.d2;
          for (int r = 0; r < MR; ++r) {
            const int64_t off = (r0 + r) * blocks + b;
            acc[2 * r + h] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]),
                                _mm256_mul_ps(sw, _mm256_set1_ps(dx[off])), acc[2 * r + h]);
          }
        }
        continue;
      }
      // kAffine: s = d·sc and o = dmin·m (exact); kGroupScales: scale and zero point; else the
      // scale (the zero point is in the sums' start, kIntZero).
      __m256 sw, zv = _mm256_setzero_ps();
      if constexpr (kGroupScales) {
        sw = _mm256_loadu_ps(reinterpret_cast<const float*>(record) + h * 8);
        zv = _mm256_loadu_ps(reinterpret_cast<const float*>(record + 64) + h * 8);
      } else if constexpr (kCodes == Codes::kIqGrid32) {  // d·mult, exact
        sw = _mm256_mul_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(record) + h * 8),
                           SBytes8(record + 64 + j * 16 + h * 8));
      } else if constexpr (kCodes == Codes::kIq4Xs) {  // d·(ls − 32), exact
        sw = _mm256_mul_ps(Halves8(record + h * 16), SBytes8(record + 32 + j * 16 + h * 8));
      } else if constexpr (kAffine) {
        sw = _mm256_mul_ps(Halves8(record + h * 16), UBytes8(record + 64 + j * 16 + h * 8));
        zv = _mm256_mul_ps(Halves8(record + 32 + h * 16), UBytes8(record + 192 + j * 16 + h * 8));
      } else if constexpr (kE2m1) {
        // numeric::DecodeE8m0 (e << 23; e = 0 the subnormal 2^-127) times 0.5.
        const __m256i e = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(record + j * kCols + h * 8)));
        const __m256i bits =
            _mm256_blendv_epi8(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00400000),
                               _mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
        sw = _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0.5f));
      } else {
        sw = Halves8(record + j * 32 + h * 16);
      }
      __m256i isum[MR];
      for (int r = 0; r < MR; ++r) {
        if constexpr (kStartsAtZeroPoint) {
          isum[r] = _mm256_set1_epi32(zs[(r0 + r) * blocks + b]);
        } else if constexpr (kSignedBytes && kCodes == Codes::kU8) {  // Σx is an exact integer
          isum[r] = _mm256_set1_epi32(128 * static_cast<int32_t>(a.s[(r0 + r) * blocks + b]));
        } else {
          isum[r] = _mm256_setzero_si256();
        }
      }
      dot_chunks(codes, b, 0, kBytes ? 8 : 4, h, isum);
      for (int r = 0; r < MR; ++r) {
        const int64_t off = (r0 + r) * blocks + b;
        __m256& o = acc[2 * r + h];
        if constexpr (kAffine) {
          const __m256 p = _mm256_mul_ps(sw, _mm256_cvtepi32_ps(isum[r]));
          const __m256 t = _mm256_fnmadd_ps(zv, _mm256_set1_ps(a.s[off]), p);
          o = _mm256_fmadd_ps(t, _mm256_set1_ps(a.d[off]), o);
        } else {
          const __m256 t = kIntZero ? _mm256_cvtepi32_ps(isum[r])
                                    : _mm256_fnmadd_ps(zv, _mm256_set1_ps(a.s[off]),
                                                       _mm256_cvtepi32_ps(isum[r]));
          o = _mm256_fmadd_ps(t, _mm256_mul_ps(sw, _mm256_set1_ps(a.d[off])), o);
        }
      }
    }
    if (++j == per_record) {
      j = 0;
      record += record_bytes;
    }
  }
  for (int i = 0; i < 2 * MR; ++i) out[i] = acc[i];
}

template <int MR>
void Rows(const FastWeights& w, const Int4x16Acts& a, const int32_t* zs, const float* bias,
          float* y, int64_t g, int64_t c0, int64_t c1, int64_t r0) {
  __m256 acc[2 * MR];
  const uint8_t* group = w.data + g * w.row_stride;
  switch (w.format) {
    case FastFormat::kNvfp4x16:
      Tile<MR, Codes::kNvfp4>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kU4x16:
      Tile<MR, Codes::kU4>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kU8x16:
      Tile<MR, Codes::kU8>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kQ8_0x16:
      Tile<MR, Codes::kQ8_0>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kQ6_Kx16:
      Tile<MR, Codes::kQ6K>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kQ3_Kx16:
      Tile<MR, Codes::kQ3K>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kQ2_Kx16:
      Tile<MR, Codes::kQ2K>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kQ4_Kx16:
      Tile<MR, Codes::kQ4K>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kQ5_Kx16:
      Tile<MR, Codes::kQ5K>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kMxfp4x16:
      Tile<MR, Codes::kMxfp4>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kIq4Nlx16:
      Tile<MR, Codes::kIq4Nl>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kIq4Xsx16:
      Tile<MR, Codes::kIq4Xs>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kIqGrid16x16:
      Tile<MR, Codes::kIqGrid16>(group, w, a, zs, r0, acc);
      break;
    case FastFormat::kIqGrid32x16:
      Tile<MR, Codes::kIqGrid32>(group, w, a, zs, r0, acc);
      break;
    default:
      Tile<MR, Codes::kQ4_0>(group, w, a, zs, r0, acc);
      break;
  }
  // Columns [c0, c1) of the group (other callers' columns and the padding stay untouched): the
  // VNNI kernel's masked epilogue, staged through a 16-float buffer.
  const int64_t n0 = g * kCols;
  for (int r = 0; r < MR; ++r) {
    alignas(32) float v[kCols], b[kCols] = {};
    _mm256_store_ps(v, acc[2 * r]);
    _mm256_store_ps(v + 8, acc[2 * r + 1]);
    if (bias != nullptr) std::copy(bias + n0 + c0, bias + n0 + c1, b + c0);
    for (int h = 0; h < 2; ++h) {
      __m256 t = _mm256_load_ps(v + 8 * h);
      const __m256 bv = _mm256_load_ps(b + 8 * h);
      if (a.row_scale != nullptr) {  // fma(acc, α, bias), as the portable loop
        const __m256 rs = _mm256_set1_ps(a.row_scale[(r0 + r) * a.row_scale_stride]);
        t = bias != nullptr ? _mm256_fmadd_ps(t, rs, bv) : _mm256_mul_ps(t, rs);
      } else if (bias != nullptr) {
        t = _mm256_add_ps(t, bv);
      }
      _mm256_store_ps(v + 8 * h, t);
    }
    std::copy(v + c0, v + c1, y + (r0 + r) * w.n + n0 + c0);
  }
}

using RowTileFn = void (*)(const FastWeights&, const Int4x16Acts&, const int32_t*, const float*,
                           float*, int64_t, int64_t, int64_t, int64_t);
constexpr RowTileFn kRowTiles[kMaxRows] = {Rows<1>, Rows<2>, Rows<3>, Rows<4>};

}  // namespace

void MatmulTiles(const FastWeights& w, const Int4x16Acts& a, const int32_t* zero_sums,
                 const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  // Rows per tile without vpdpbusd: byte codes took 3 when they kept two int16 sums per row
  // (their nibble halves: Q8_0 M = 128 115 -> 131-140 GOP/s); with the sign trick 3 and 4 measure
  // the same (Q8_0 and INT8 g128, M = 16 and 128, two alternations), and 3 stayed. Q4_K's affine
  // epilogue (two scale vectors per half block) spills at 4: 3 rows ran M = 128 218-239 GOP/s
  // against 155-222 (1.1b shapes, two alternations; Q6_K the other way, 164-189 against
  // 182-207). The rest do best with 4. Q2_K has Q4_K's epilogue and takes 3 by that measure.
  const bool three = w.format == FastFormat::kQ8_0x16 || w.format == FastFormat::kU8x16 ||
                     w.format == FastFormat::kQ4_Kx16 || w.format == FastFormat::kQ2_Kx16;
  const int64_t max_rows = three && !TESSERA_X16_DPBUSD ? 3 : kMaxRows;
  for (int64_t g = n_begin / kCols; g * kCols < n_end; ++g) {
    const int64_t c0 = std::max<int64_t>(n_begin - g * kCols, 0);
    const int64_t c1 = std::min<int64_t>(n_end - g * kCols, kCols);
    for (int64_t r0 = 0; r0 < a.rows; r0 += max_rows) {
      kRowTiles[std::min<int64_t>(max_rows, a.rows - r0) - 1](w, a, zero_sums, bias, y, g, c0, c1,
                                                              r0);
    }
  }
}

}  // namespace TESSERA_X16_NS
