// GGUF Q3_K blocks rewritten as Q6_K blocks with the same values, bit for bit: a Q3_K weight is
// (d·(sc − 32))·q with a 6-bit scale per 16 values and q in [−4, 3], a Q6_K weight is (d·sc)·(u − 32)
// with an int8 scale per 16 values and u in [0, 63], so u = q + 32 and sc − 32 carry over unchanged
// under the same f16 d (ggml evaluates both products in the same order). Every CPU path that
// takes Q6_K (the int8-activation tiles on every ISA, the exact-activation panels, the reference)
// thereby runs Q3_K layers, at 6.5625 stored bits per weight instead of the file's 3.4375: decode
// streams 1.9x the file's bytes (there is no 3-bit tile layout yet).
#ifndef TESSERA_KERNELS_CPU_GGML_Q3K_AS_Q6K_H_
#define TESSERA_KERNELS_CPU_GGML_Q3K_AS_Q6K_H_

#include <cstdint>

namespace tessera::kernels::cpu {

inline constexpr int64_t kQ3KBlockBytes = 110;
inline constexpr int64_t kQ6KBlockBytes = 210;

// Writes `blocks` Q6_K blocks (210 bytes each) at `q6k` from as many Q3_K blocks (110 bytes
// each) at `q3k`; DequantizeGgmlBlocks gives the same floats for both.
void Q3KBlocksAsQ6K(const uint8_t* q3k, int64_t blocks, uint8_t* q6k);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_GGML_Q3K_AS_Q6K_H_
