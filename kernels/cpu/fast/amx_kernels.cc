// The AMX instantiations of amx_panel_gemm.h: the tile operations as instructions (compiled for
// AMX-TILE / AMX-BF16 / AMX-INT8 only, so no AVX-512 or FMA code is generated around them: the
// scalar epilogues stay the reference's separate multiplies and adds).
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/quant/int8_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// Everything below, the walk of amx_panel_gemm.h included, is compiled for AMX, so the tile
// operations inline into it (the standard and project headers above stay generic).
#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16,amx-int8")

#include "kernels/cpu/fast/amx_panel_gemm.h"

namespace tessera::kernels::cpu::fast::internal {
namespace {

// The intrinsics paste their tile numbers into the instruction text, so each tile the walk uses
// is spelled out (amx_panel_gemm.h: C tiles 0-3, A tiles 4-5, B tiles 6-7).
#define TESSERA_AMX_PER_TILE(T, op)    \
  if constexpr (T == 0) {              \
    op(0);                             \
  } else if constexpr (T == 1) {       \
    op(1);                             \
  } else if constexpr (T == 2) {       \
    op(2);                             \
  } else if constexpr (T == 3) {       \
    op(3);                             \
  } else if constexpr (T == 4) {       \
    op(4);                             \
  } else if constexpr (T == 5) {       \
    op(5);                             \
  } else if constexpr (T == 6) {       \
    op(6);                             \
  } else {                             \
    static_assert(T == 7, "tile 0-7"); \
    op(7);                             \
  }

// The four products of the walk: C(2r + j) += A(4 + r) · B(6 + j).
#define TESSERA_AMX_PER_PRODUCT(C, A, B, op)                                      \
  static_assert(C == 2 * (A - 4) + (B - 6), "C tile 2r + j for A tile 4 + r, B 6 + j"); \
  if constexpr (C == 0) {                                                         \
    op(0, 4, 6);                                                                  \
  } else if constexpr (C == 1) {                                                  \
    op(1, 4, 7);                                                                  \
  } else if constexpr (C == 2) {                                                  \
    op(2, 5, 6);                                                                  \
  } else {                                                                        \
    op(3, 5, 7);                                                                  \
  }

struct AmxInstructions {
  static void Config(const amx::TileConfig& c) { _tile_loadconfig(&c); }
  template <int T>
  static void Zero() {
#define TESSERA_AMX_ZERO(t) _tile_zero(t)
    TESSERA_AMX_PER_TILE(T, TESSERA_AMX_ZERO)
  }
  template <int T>
  static void Load(const void* p, int64_t stride) {
#define TESSERA_AMX_LOAD(t) _tile_loadd(t, p, stride)
    TESSERA_AMX_PER_TILE(T, TESSERA_AMX_LOAD)
  }
  template <int T>
  static void Store(void* p, int64_t stride) {
#define TESSERA_AMX_STORE(t) _tile_stored(t, p, stride)
    TESSERA_AMX_PER_TILE(T, TESSERA_AMX_STORE)
  }
  template <int C, int A, int B>
  static void DpBf16() {
    TESSERA_AMX_PER_PRODUCT(C, A, B, _tile_dpbf16ps)
  }
  template <int C, int A, int B>
  static void DpBusd() {
    TESSERA_AMX_PER_PRODUCT(C, A, B, _tile_dpbusd)
  }
  static void Release() { _tile_release(); }
};

}  // namespace

void AmxBf16DotMatmul(const FastWeights& w, const uint16_t* hi, const uint16_t* lo, int64_t rows,
                      const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  const amx::AmxGemm g{w.data,
                       w.row_stride,
                       Bf16PanelKTiles(w.k),
                       reinterpret_cast<const uint8_t*>(hi),
                       reinterpret_cast<const uint8_t*>(lo),
                       Bf16DotActStride(w.k) * 2,
                       rows,
                       w.n,
                       n_begin,
                       n_end};
  amx::PanelGemm<AmxInstructions>(g, amx::Bf16Kind{bias, y});
}

void AmxInt8DotMatmul(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& a,
                      int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  const amx::AmxGemm g{w.panels, Int8QuadsBytes(1, w.k), Int8PanelKTiles(w.k), u8, nullptr,
                       Int8DotActStride(w.k), rows, w.n, n_begin, n_end};
  amx::PanelGemm<AmxInstructions>(g, amx::Int8Kind{w.col_sums, w.scales, w.per_row, &a, bias, y});
}

}  // namespace tessera::kernels::cpu::fast::internal

#pragma GCC pop_options

#else  // not x86-64 GCC/Clang: never called (AmxAvailable() is false), defined for the link.

namespace tessera::kernels::cpu::fast::internal {
void AmxBf16DotMatmul(const FastWeights&, const uint16_t*, const uint16_t*, int64_t, const float*,
                      float*, int64_t, int64_t) {}
void AmxInt8DotMatmul(const Int8DotWeights&, const uint8_t*, const Int8Activations&, int64_t,
                      const float*, float*, int64_t, int64_t) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif
