// What the 16-column panel kernels share (bf16_dot_matmul, float_panel_matmul, fp8_panel_matmul,
// int8_dot_matmul, quant_panel_matmul): the panel geometry (one output column per 32-bit lane of a zmm), the repack of
// weight rows into panels, the store mask of a column range that need not start or end on a panel
// boundary, and the CPUID checks that gate them. Internal to kernels/cpu/fast.
#ifndef TESSERA_KERNELS_CPU_FAST_COLUMN_PANELS_H_
#define TESSERA_KERNELS_CPU_FAST_COLUMN_PANELS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/isa_limit.h"

namespace tessera::kernels::cpu::fast::panels {

inline constexpr int64_t kCols = 16;

inline int64_t Count(int64_t n) { return (n + kCols - 1) / kCols; }

// Lanes of panel p that fall inside [n_begin, n_end), as a __mmask16.
inline uint16_t StoreMask(int64_t p, int64_t n_begin, int64_t n_end) {
  const int64_t lo = std::max<int64_t>(0, n_begin - p * kCols);
  const int64_t hi = std::min<int64_t>(kCols, n_end - p * kCols);
  if (hi <= lo) return 0;
  return static_cast<uint16_t>(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// Bytes of a panel of 16-bit elements: a K pair of the 16 columns per 64-byte line.
inline int64_t PairPanelBytes(int64_t k) { return (k + 1) / 2 * 64; }

// Repacks rows of kElem-byte elements (n rows of k at src + r · row_stride) into 16-column
// panels of `bytes` each at dst: element k = i of column c of panel p goes to element slot
// slot(i, c) of the panel, every other byte is zero (+0 for f32 / f16 / bf16 / E4M3 alike).
template <int kElem, class Slot>
void RepackPanels(const uint8_t* src, int64_t row_stride, int64_t n, int64_t k, int64_t bytes,
                  uint8_t* dst, Slot slot) {
  for (int64_t p = 0; p < Count(n); ++p) {
    uint8_t* panel = dst + p * bytes;
    std::memset(panel, 0, bytes);
    for (int64_t c = 0; c < kCols && p * kCols + c < n; ++c) {
      const uint8_t* row = src + (p * kCols + c) * row_stride;
      for (int64_t i = 0; i < k; ++i) {
        std::memcpy(panel + slot(i, c) * kElem, row + kElem * i, kElem);
      }
    }
  }
}

// RepackPanels of src's 16-bit or 32-bit elements (rows n at src.data + n · src.row_stride) into
// panels of `bytes` (at least PairPanelBytes(k) for 16-bit ones); returns the `format` view.
template <int kElem, class Slot>
FastWeights RepackFloatPanels(const FastWeights& src, FastFormat format, int64_t bytes,
                              uint8_t* dst, Slot slot) {
  RepackPanels<kElem>(src.data, src.row_stride, src.n, src.k, bytes, dst, slot);
  FastWeights w;
  w.format = format;
  w.data = dst;
  w.n = src.n;
  w.k = src.k;
  w.row_stride = bytes;
  return w;
}

// AVX-512 F, BW and VL plus one extension ("avx512bf16", "avx512vnni"): the kernels' CPU check
// (and not turned off by TESSERA_CPU_ISA: isa_limit.h).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSERA_HAS_AVX512_WITH(extension)                                                  \
  (::tessera::kernels::cpu::fast::Avx512Allowed() && __builtin_cpu_supports("avx512f") &&  \
   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&              \
   __builtin_cpu_supports(extension) &&                                                    \
   ::tessera::kernels::cpu::fast::Avx512ExtensionAllowed(extension))
#else
#define TESSERA_HAS_AVX512_WITH(extension) false
#endif

}  // namespace tessera::kernels::cpu::fast::panels

#endif  // TESSERA_KERNELS_CPU_FAST_COLUMN_PANELS_H_
