#include "kernels/cpu/ggml_q3k_as_q6k.h"

#include <cstring>

#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu {

void Q3KBlocksAsQ6K(const uint8_t* q3k, int64_t blocks, uint8_t* q6k) {
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* src = q3k + i * kQ3KBlockBytes;
    uint8_t* dst = q6k + i * kQ6KBlockBytes;
    int8_t codes[256], scales[16];
    Q3KCodes(src, codes, scales);
    // Q6_K (quant-formats.md §11.3): per half h of 128, element 32c + l (c = 0..3) has its low
    // nibble in ql[64h + l + 32·(c % 2)] (low nibble for c < 2, high for c ≥ 2) and its top two
    // bits in bits 2c..2c+1 of qh[32h + l]; scale e / 16 is scales[e / 16].
    uint8_t* ql = dst;
    uint8_t* qh = dst + 128;
    std::memset(dst, 0, 192);
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, c = (e / 32) % 4, l = e % 32;
      const int u = codes[e] + 32;  // 28..35
      uint8_t& low = ql[64 * h + l + 32 * (c % 2)];
      low = static_cast<uint8_t>(low | ((u & 0xF) << (c < 2 ? 0 : 4)));
      qh[32 * h + l] = static_cast<uint8_t>(qh[32 * h + l] | ((u >> 4) << (2 * c)));
    }
    std::memcpy(dst + 192, scales, 16);
    std::memcpy(dst + 208, src + 108, 2);  // the f16 d
  }
}

}  // namespace tessera::kernels::cpu
