// The AMX instantiations of amx_panel_gemm.h: the tile operations as instructions. Written as
// inline asm with full memory operands rather than GCC 12's intrinsics, which declare 8 of
// LDTILECFG's 64 bytes and none of TILELOADD's rows as read (the compiler could then drop or
// delay the stores that make them). The assembler knows the mnemonics; no target attribute is
// needed, so no AVX-512 or FMA code is generated around them either (the scalar epilogues stay
// the reference's separate multiplies and adds).
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/amx_panel_gemm.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/quant/int8_matmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

namespace tessera::kernels::cpu::fast::internal {
namespace {

// Each tile the walk uses spelled out (amx_panel_gemm.h: C tiles 0-3, A tiles 4-5, B tiles 6-7):
// the register is part of the instruction text.
#define TESSERA_AMX_PER_TILE(T, op)    \
  if constexpr (T == 0) {              \
    op("0");                           \
  } else if constexpr (T == 1) {       \
    op("1");                           \
  } else if constexpr (T == 2) {       \
    op("2");                           \
  } else if constexpr (T == 3) {       \
    op("3");                           \
  } else if constexpr (T == 4) {       \
    op("4");                           \
  } else if constexpr (T == 5) {       \
    op("5");                           \
  } else if constexpr (T == 6) {       \
    op("6");                           \
  } else {                             \
    static_assert(T == 7, "tile 0-7"); \
    op("7");                           \
  }

// The four products of the walk: C(2r + j) += A(4 + r) · B(6 + j). AT&T order: B, A, C.
#define TESSERA_AMX_PER_PRODUCT(C, A, B, mnemonic)                                          \
  static_assert(C == 2 * (A - 4) + (B - 6), "C tile 2r + j for A tile 4 + r, B 6 + j");     \
  if constexpr (C == 0) {                                                                   \
    __asm__ volatile(mnemonic " %%tmm6, %%tmm4, %%tmm0" ::: "memory");                     \
  } else if constexpr (C == 1) {                                                            \
    __asm__ volatile(mnemonic " %%tmm7, %%tmm4, %%tmm1" ::: "memory");                     \
  } else if constexpr (C == 2) {                                                            \
    __asm__ volatile(mnemonic " %%tmm6, %%tmm5, %%tmm2" ::: "memory");                     \
  } else {                                                                                  \
    __asm__ volatile(mnemonic " %%tmm7, %%tmm5, %%tmm3" ::: "memory");                     \
  }

struct AmxInstructions {
  static void Config(const amx::TileConfig& c) {
    __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory");
  }
  template <int T>
  static void Zero() {
#define TESSERA_AMX_ZERO(t) __asm__ volatile("tilezero %%tmm" t ::: "memory")
    TESSERA_AMX_PER_TILE(T, TESSERA_AMX_ZERO)
#undef TESSERA_AMX_ZERO
  }
  // The rows are read through `p` (the "memory" clobber: every store before it is done).
  template <int T>
  static void Load(const void* p, int64_t stride) {
#define TESSERA_AMX_LOAD(t) \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" t : : "r"(p), "r"(stride) : "memory")
    TESSERA_AMX_PER_TILE(T, TESSERA_AMX_LOAD)
#undef TESSERA_AMX_LOAD
  }
  template <int T>
  static void Store(void* p, int64_t stride) {
#define TESSERA_AMX_STORE(t) \
  __asm__ volatile("tilestored %%tmm" t ", (%0,%1,1)" : : "r"(p), "r"(stride) : "memory")
    TESSERA_AMX_PER_TILE(T, TESSERA_AMX_STORE)
#undef TESSERA_AMX_STORE
  }
  template <int C, int A, int B>
  static void DpBf16() {
    TESSERA_AMX_PER_PRODUCT(C, A, B, "tdpbf16ps")
  }
  template <int C, int A, int B>
  static void DpBusd() {
    TESSERA_AMX_PER_PRODUCT(C, A, B, "tdpbusd")
  }
  static void Release() { __asm__ volatile("tilerelease" ::: "memory"); }
};

}  // namespace

void AmxBf16DotMatmul(const FastWeights& w, const uint16_t* hi, const uint16_t* lo, int64_t rows,
                      const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  amx::PanelGemm<AmxInstructions>(amx::Bf16PanelGemm(w, hi, lo, rows, n_begin, n_end),
                                  amx::Bf16Kind{bias, y});
}

void AmxInt8DotMatmul(const Int8DotWeights& w, const uint8_t* u8, const Int8Activations& a,
                      int64_t rows, const float* bias, float* y, int64_t n_begin, int64_t n_end) {
  amx::PanelGemm<AmxInstructions>(amx::Int8PanelGemm(w, u8, rows, n_begin, n_end),
                                  amx::Int8Kind{w.col_sums, w.scales, w.per_row, &a, bias, y});
}

void AmxBf16MadeTilesMatmul(amx::Bf16TileMaker make, const void* ctx, int64_t n, int64_t k,
                            const uint16_t* hi, const uint16_t* lo, int64_t rows, const float* bias,
                            float* y, int64_t n_begin, int64_t n_end) {
  amx::MadeTiles tiles{make, ctx, {}};
  amx::PanelGemm<AmxInstructions>(amx::Bf16MadeTilesGemm(k, hi, lo, rows, n, n_begin, n_end),
                                  amx::Bf16Kind{bias, y}, tiles);
}

void AmxBf16GroupMatmul(amx::Bf16TileMaker make, const void* make_ctx, const uint8_t* panels,
                        int64_t panel_bytes, int64_t n, int64_t k, int64_t group_tiles,
                        const uint16_t* hi, const uint16_t* lo, int64_t rows, int64_t n_begin,
                        int64_t n_end, const amx::GroupFolder& fold) {
  amx::Bf16GroupGemm<AmxInstructions>(make, make_ctx, panels, panel_bytes, n, k, group_tiles, hi,
                                      lo, rows, n_begin, n_end, fold);
}

}  // namespace tessera::kernels::cpu::fast::internal

#else  // not x86-64 GCC/Clang: never called (AmxAvailable() is false), defined for the link.

namespace tessera::kernels::cpu::fast::internal {
void AmxBf16DotMatmul(const FastWeights&, const uint16_t*, const uint16_t*, int64_t, const float*,
                      float*, int64_t, int64_t) {}
void AmxInt8DotMatmul(const Int8DotWeights&, const uint8_t*, const Int8Activations&, int64_t,
                      const float*, float*, int64_t, int64_t) {}
void AmxBf16MadeTilesMatmul(amx::Bf16TileMaker, const void*, int64_t, int64_t, const uint16_t*,
                            const uint16_t*, int64_t, const float*, float*, int64_t, int64_t) {}
void AmxBf16GroupMatmul(amx::Bf16TileMaker, const void*, const uint8_t*, int64_t, int64_t, int64_t,
                        int64_t, const uint16_t*, const uint16_t*, int64_t, int64_t, int64_t,
                        const amx::GroupFolder&) {}
}  // namespace tessera::kernels::cpu::fast::internal

#endif
