// What the 16-column panel kernels share (bf16_dot_matmul, int8_dot_matmul): the panel geometry
// (one output column per 32-bit lane of a zmm), the store mask of a column range that need not
// start or end on a panel boundary, and the CPUID checks that gate them. Internal to
// kernels/cpu/fast.
#ifndef TESSERA_KERNELS_CPU_FAST_COLUMN_PANELS_H_
#define TESSERA_KERNELS_CPU_FAST_COLUMN_PANELS_H_

#include <algorithm>
#include <cstdint>

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

// AVX-512 F, BW and VL plus one extension ("avx512bf16", "avx512vnni"): the kernels' CPU check.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSERA_HAS_AVX512_WITH(extension)                                                  \
  (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&              \
   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports(extension))
#else
#define TESSERA_HAS_AVX512_WITH(extension) false
#endif

}  // namespace tessera::kernels::cpu::fast::panels

#endif  // TESSERA_KERNELS_CPU_FAST_COLUMN_PANELS_H_
