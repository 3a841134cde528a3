// Test helpers for GGUF's grid and ternary types (ggml_iq_dequant.h): random super-blocks with a
// sane f16 d (IQ1_M keeps its d in the top nibbles of its four u16 scale words, TQ1_0 / TQ2_0 at
// the end of the block) and every code, sign, index and sub-block scale bit random.
#ifndef TESSERA_TESTS_KERNELS_CPU_IQ_GRID_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CPU_IQ_GRID_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu::testing {

inline constexpr GgmlBlockType kIqGridTypes[] = {
    GgmlBlockType::kIq2Xxs, GgmlBlockType::kIq2Xs, GgmlBlockType::kIq2S, GgmlBlockType::kIq3Xxs,
    GgmlBlockType::kIq3S,   GgmlBlockType::kIq1S,  GgmlBlockType::kIq1M};
// The grid types and the ternary ones: every type of the table-code tiles and panels.
inline constexpr GgmlBlockType kTableCodeTypes[] = {
    GgmlBlockType::kIq2Xxs, GgmlBlockType::kIq2Xs, GgmlBlockType::kIq2S,  GgmlBlockType::kIq3Xxs,
    GgmlBlockType::kIq3S,   GgmlBlockType::kIq1S,  GgmlBlockType::kIq1M,  GgmlBlockType::kTq1_0,
    GgmlBlockType::kTq2_0};

inline const char* IqGridName(GgmlBlockType type) {
  switch (type) {
    case GgmlBlockType::kIq2Xxs: return "IQ2_XXS";
    case GgmlBlockType::kIq2Xs: return "IQ2_XS";
    case GgmlBlockType::kIq2S: return "IQ2_S";
    case GgmlBlockType::kIq3Xxs: return "IQ3_XXS";
    case GgmlBlockType::kIq3S: return "IQ3_S";
    case GgmlBlockType::kIq1S: return "IQ1_S";
    case GgmlBlockType::kIq1M: return "IQ1_M";
    case GgmlBlockType::kTq1_0: return "TQ1_0";
    case GgmlBlockType::kTq2_0: return "TQ2_0";
    default: return "?";
  }
}

// IQ1_M's f16 d h as ggml stores it: nibble i of h in the top nibble of scale word i (bytes 48-55).
inline void SetIq1MHalf(uint8_t* block, uint16_t h) {
  for (int i = 0; i < 4; ++i) {
    uint16_t word;
    std::memcpy(&word, block + 48 + 2 * i, 2);
    word = static_cast<uint16_t>((word & 0x0FFF) | (((h >> (4 * i)) & 0xF) << 12));
    std::memcpy(block + 48 + 2 * i, &word, 2);
  }
}

// Sets a grid or ternary block's f16 d (TQ1_0's after 52 bytes, TQ2_0's after 64).
inline void SetIqGridHalf(GgmlBlockType type, uint8_t* block, uint16_t h) {
  if (type == GgmlBlockType::kIq1M) {
    SetIq1MHalf(block, h);
  } else {
    const int at = type == GgmlBlockType::kTq1_0 ? 52 : type == GgmlBlockType::kTq2_0 ? 64 : 0;
    std::memcpy(block + at, &h, 2);
  }
}

// n x k weights of a grid or ternary type: random bytes, each block's d uniform in ±d_max.
inline std::vector<uint8_t> RandomIqGridBlocks(GgmlBlockType type, int64_t n, int64_t k,
                                               std::mt19937& rng, float d_max = 0.004f) {
  const GgmlBlockInfo info = GetGgmlBlockInfo(type);
  const int64_t blocks = n * k / info.elements;
  std::vector<uint8_t> src(blocks * info.bytes);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(-d_max, d_max);
  for (int64_t b = 0; b < blocks; ++b) {
    SetIqGridHalf(type, &src[b * info.bytes], numeric::FloatToHalf(u(rng)));
  }
  return src;
}

}  // namespace tessera::kernels::cpu::testing

#endif  // TESSERA_TESTS_KERNELS_CPU_IQ_GRID_TEST_UTIL_H_
