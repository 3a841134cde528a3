// A software model of the AMX tile instructions amx_panel_gemm.h uses, written from the pseudo-code
// of Intel's SDM (LDTILECFG, TILEZERO, TILELOADD, TILESTORED, TDPBF16PS, TDPBUSD, TILERELEASE), so
// the tile walk runs in tests on CPUs without AMX. Every operation checks what the hardware checks
// (palette 1, start_row 0 and zero reserved bytes, rows and bytes per row within 16 x 64, a
// configured tile for every operand, and for the products rows(C) ==
// rows(A), colsb(A) / 4 == rows(B), colsb(B) == colsb(C)) and fails the test where the hardware
// would fault. TDPBF16PS: bf16 inputs with a zero exponent read as zero, each of the two products
// per pair added to the f32 accumulator in turn (round to nearest even), denormal sums flushed.
// Also the bf16 walks on the model, as the AMX routes of the FP8 and FP4 panels take them.
#ifndef TESSERA_TESTS_KERNELS_CPU_AMX_MODEL_H_
#define TESSERA_TESTS_KERNELS_CPU_AMX_MODEL_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/amx_panel_gemm.h"

namespace tessera::kernels::cpu::fast::testing {

// One tile register: its configured shape and 16 rows of 64 bytes.
struct AmxModelTile {
  int rows = 0, colsb = 0;
  uint8_t data[16][64] = {};
};

struct AmxModel {
  using Tile = AmxModelTile;
  static inline thread_local bool configured = false;
  static inline thread_local Tile tiles[8];
  static inline thread_local int64_t configs = 0;  // LDTILECFGs since the test reset it
  static inline thread_local int64_t products = 0;

  static void Config(const amx::TileConfig& c) {
    ASSERT_EQ(c.palette_id, 1);
    ASSERT_EQ(c.start_row, 0);
    for (uint8_t r : c.reserved) ASSERT_EQ(r, 0);  // LDTILECFG faults on reserved bits
    for (int t = 0; t < 8; ++t) {
      ASSERT_LE(c.rows[t], 16);
      ASSERT_LE(c.colsb[t], 64);
      ASSERT_EQ(c.rows[t] == 0, c.colsb[t] == 0) << "tile " << t;
      tiles[t] = Tile{c.rows[t], c.colsb[t], {}};
    }
    configured = true;
    ++configs;
  }
  static Tile& Use(int t) {
    EXPECT_TRUE(configured);
    EXPECT_GT(tiles[t].rows, 0) << "tile " << t << " is not configured";
    return tiles[t];
  }
  template <int T>
  static void Zero() {
    std::memset(Use(T).data, 0, sizeof(Tile::data));
  }
  template <int T>
  static void Load(const void* p, int64_t stride) {
    Tile& t = Use(T);
    for (int r = 0; r < t.rows; ++r) {
      std::memcpy(t.data[r], static_cast<const uint8_t*>(p) + r * stride, t.colsb);
    }
  }
  template <int T>
  static void Store(void* p, int64_t stride) {
    const Tile& t = Use(T);
    for (int r = 0; r < t.rows; ++r) {
      std::memcpy(static_cast<uint8_t*>(p) + r * stride, t.data[r], t.colsb);
    }
  }
  // f(m, k, n) for each element of C (row m, column n) and each K group k of A's row m (a 4-byte
  // pair or quad) and B's row k, in the pseudo-code's order, once the shapes are checked.
  template <class F>
  static void EachProduct(const Tile& c, const Tile& a, const Tile& b, F f) {
    ASSERT_EQ(c.rows, a.rows);
    ASSERT_EQ(a.colsb / 4, b.rows);
    ASSERT_EQ(c.colsb, b.colsb);
    ++products;
    for (int m = 0; m < c.rows; ++m) {
      for (int k = 0; k < a.colsb / 4; ++k) {
        for (int n = 0; n < c.colsb / 4; ++n) f(m, k, n);
      }
    }
  }
  static float Bf16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    if ((h & 0x7F80) == 0) h &= 0x8000;  // denormal inputs read as zero
    const uint32_t bits = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  static float Flush(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f * v : v; }
  template <int C, int A, int B>
  static void DpBf16() {
    Tile &c = Use(C), &a = Use(A), &b = Use(B);
    EachProduct(c, a, b, [&](int m, int k, int n) {
      float acc;
      std::memcpy(&acc, &c.data[m][4 * n], 4);
      acc = Flush(acc + Bf16(&a.data[m][4 * k]) * Bf16(&b.data[k][4 * n]));
      acc = Flush(acc + Bf16(&a.data[m][4 * k + 2]) * Bf16(&b.data[k][4 * n + 2]));
      std::memcpy(&c.data[m][4 * n], &acc, 4);
    });
  }
  template <int C, int A, int B>
  static void DpBusd() {
    Tile &c = Use(C), &a = Use(A), &b = Use(B);
    EachProduct(c, a, b, [&](int m, int k, int n) {
      uint32_t acc;
      std::memcpy(&acc, &c.data[m][4 * n], 4);
      for (int i = 0; i < 4; ++i) {
        acc += static_cast<uint32_t>(int32_t{a.data[m][4 * k + i]} *
                                     int32_t{static_cast<int8_t>(b.data[k][4 * n + i])});
      }
      std::memcpy(&c.data[m][4 * n], &acc, 4);
    });
  }
  static void Release() { configured = false; }
};

// The bf16 walks of amx_panel_gemm.h on the model, with the signatures of amx.h's
// AmxBf16Gemms: over stored pair panels, and over tiles a maker writes (its two buffers first
// filled with NaN bf16, so that a maker must write every byte).
inline void ModelBf16Gemm(const FastWeights& w, const uint16_t* hi, const uint16_t* lo,
                          int64_t rows, const float* bias, float* y, int64_t n_begin,
                          int64_t n_end) {
  amx::PanelGemm<AmxModel>(amx::Bf16PanelGemm(w, hi, lo, rows, n_begin, n_end),
                           amx::Bf16Kind{bias, y});
}

inline void ModelMadeTilesGemm(amx::Bf16TileMaker make, const void* ctx, int64_t n, int64_t k,
                               const uint16_t* hi, const uint16_t* lo, int64_t rows,
                               const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  amx::MadeTiles tiles{make, ctx, {}};
  std::memset(tiles.buf, 0xFF, sizeof(tiles.buf));
  amx::PanelGemm<AmxModel>(amx::Bf16MadeTilesGemm(k, hi, lo, rows, n, n_begin, n_end),
                           amx::Bf16Kind{bias, y}, tiles);
}

inline void ModelGroupGemm(amx::Bf16TileMaker make, const void* make_ctx, const uint8_t* panels,
                           int64_t panel_bytes, int64_t n, int64_t k, int64_t group_tiles,
                           const uint16_t* hi, const uint16_t* lo, int64_t rows, int64_t n_begin,
                           int64_t n_end, const amx::GroupFolder& fold) {
  if (make == nullptr) {
    return amx::Bf16GroupGemm<AmxModel>(nullptr, nullptr, panels, panel_bytes, n, k, group_tiles,
                                        hi, lo, rows, n_begin, n_end, fold);
  }
  amx::MadeTiles tiles{make, make_ctx, {}};
  std::memset(tiles.buf, 0xFF, sizeof(tiles.buf));
  amx::GroupPanelGemm<AmxModel>(amx::Bf16MadeTilesGemm(k, hi, lo, rows, n, n_begin, n_end),
                                group_tiles, tiles, fold);
}

inline constexpr internal::AmxBf16Gemms kModelBf16Gemms{ModelBf16Gemm, ModelMadeTilesGemm,
                                                        ModelGroupGemm};

}  // namespace tessera::kernels::cpu::fast::testing

#endif  // TESSERA_TESTS_KERNELS_CPU_AMX_MODEL_H_
